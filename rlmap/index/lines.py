"""Line numbers for libcst nodes, paired from the stdlib ``ast`` instead of a metadata provider.

libcst's ``PositionProvider`` re-generates the whole module to compute positions and costs
two to three times the parse itself (DESIGN.md, performance model).  ``ast.parse`` of the same
bytes is ten times cheaper than libcst's parse and gives every node a position, so the index
pairs the two trees: for each node category below, the k-th libcst node met in a source-order
walk is the k-th ``ast`` node of that category in source order.  Each pair is checked on a
cheap property (a name); any disagreement makes the caller fall back to ``PositionProvider``
for that file, so the result is exact either way.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Callable
from dataclasses import dataclass

CALL = "call"
ATTR = "attr"
SUBSCRIPT = "sub"
FUNC = "func"
CLASS = "class"
COMPARE = "cmp"
IF = "if"
WHILE = "while"
FOR = "for"
EXCEPT = "except"
ASSIGN = "assign"
ANN_ASSIGN = "annassign"
AUG_ASSIGN = "augassign"
IMPORT = "import"
RETURN = "return"

# (line, end_line, check, texts) per node; ``check`` is a name the libcst side must agree
# with, ``texts`` the source text of the parts the index prints (see ``_texts``).
Position = tuple[int, int, str, tuple[str, ...]]

_AST_CATEGORY: dict[type, str] = {
    ast.Call: CALL,
    ast.Attribute: ATTR,
    ast.Subscript: SUBSCRIPT,
    ast.FunctionDef: FUNC,
    ast.AsyncFunctionDef: FUNC,
    ast.ClassDef: CLASS,
    ast.Compare: COMPARE,
    ast.If: IF,
    ast.While: WHILE,
    ast.For: FOR,
    ast.AsyncFor: FOR,
    ast.ExceptHandler: EXCEPT,
    ast.Assign: ASSIGN,
    ast.AnnAssign: ANN_ASSIGN,
    ast.AugAssign: AUG_ASSIGN,
    ast.Import: IMPORT,
    ast.ImportFrom: IMPORT,
    ast.Return: RETURN,
}

TEXT_LIMIT = 160
_LINE_BREAK = re.compile(rb"\r\n?|\n")
_SPACES = re.compile(r"\s+")
_INNER_SPACE = re.compile(r"([(\[{]) | ([)\]}])")  # "( a )" of a reflowed expression -> "(a)"


class PositionMismatch(Exception):
    """The two trees disagree; the caller must use libcst's own positions for this file."""


def _check_value(node: ast.AST) -> str:
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Name):
            return func.id
        if isinstance(func, ast.Attribute):
            return func.attr
        return ""
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return node.name
    return ""


def shorten(text: str) -> str:
    """Source text on one line, cut to ``TEXT_LIMIT`` characters."""
    text = _SPACES.sub(" ", text).strip()
    text = _INNER_SPACE.sub(lambda match: match.group(1) or match.group(2), text)
    return text if len(text) <= TEXT_LIMIT else text[: TEXT_LIMIT - 3] + "..."


def _line_starts(source: bytes) -> list[int]:
    """Byte offset of each line's start, with Python's line breaks (``\\n``, ``\\r\\n``, ``\\r``)."""
    if b"\r" in source:
        return [0, *(match.end() for match in _LINE_BREAK.finditer(source))]
    starts = [0]
    newline = source.find(b"\n")
    while newline != -1:
        starts.append(newline + 1)
        newline = source.find(b"\n", newline + 1)
    return starts


def _segment_reader(source: bytes, starts: list[int]) -> Callable[[ast.AST | None], str]:
    def segment(node: ast.AST | None) -> str:
        if node is None:
            return ""
        begin = starts[node.lineno - 1] + node.col_offset  # type: ignore[attr-defined]
        end = starts[node.end_lineno - 1] + node.end_col_offset  # type: ignore[attr-defined]
        return shorten(source[begin:end].decode("utf-8", errors="replace"))

    return segment


def _signature(
    args: ast.arguments, returns: ast.AST | None, segment: Callable[[ast.AST | None], str]
) -> tuple[str, ...]:
    """``(a: int, b=1, *, c) -> T``, ``T``, then each parameter's annotation text in order."""
    pieces: list[str] = []
    annotations: list[str] = []

    def render(arg: ast.arg, default: ast.AST | None, prefix: str = "") -> str:
        annotation = segment(arg.annotation)
        annotations.append(annotation)
        text = prefix + arg.arg + (f": {annotation}" if annotation else "")
        if default is not None:
            text += f" = {segment(default)}" if annotation else f"={segment(default)}"
        return text

    positional = [*args.posonlyargs, *args.args]
    defaults: list[ast.AST | None] = [None] * (len(positional) - len(args.defaults))
    defaults.extend(args.defaults)
    for index, arg in enumerate(positional):
        pieces.append(render(arg, defaults[index]))
        if args.posonlyargs and index == len(args.posonlyargs) - 1:
            pieces.append("/")
    if args.vararg is not None:
        pieces.append(render(args.vararg, None, "*"))
    elif args.kwonlyargs:
        pieces.append("*")
    for arg, default in zip(args.kwonlyargs, args.kw_defaults, strict=False):
        pieces.append(render(arg, default))
    if args.kwarg is not None:
        pieces.append(render(args.kwarg, None, "**"))
    signature = "(" + ", ".join(pieces) + ")"
    returned = segment(returns)
    if returned:
        signature += f" -> {returned}"
    return (signature, returned, *annotations)


def _texts(node: ast.AST, segment: Callable[[ast.AST | None], str]) -> tuple[str, ...]:
    if isinstance(node, (ast.If, ast.While)):
        return (segment(node.test),)
    if isinstance(node, (ast.For, ast.AsyncFor)):
        return (segment(node.target), segment(node.iter))
    if isinstance(node, ast.ExceptHandler):
        return (segment(node.type),)
    if isinstance(node, (ast.Assign, ast.AugAssign, ast.Return)):
        return (segment(node.value),)
    if isinstance(node, ast.AnnAssign):
        return (segment(node.annotation), segment(node.value))
    if isinstance(node, ast.Call):
        # the line where the callee's name ends: ``.clone`` in a call chain spread over lines
        return (segment(node.func), str(node.func.end_lineno or node.lineno))
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return _signature(node.args, node.returns, segment)
    return ()


@dataclass(frozen=True, slots=True)
class Nesting:
    """How deep the libcst tree of a module will be (an estimate from its ``ast``), and where."""

    depth: int
    line: int


def index_ast(tree: ast.Module, source: bytes, limit: int = 0) -> tuple[dict[str, list[Position]], Nesting]:
    """Positions of every node of the paired categories, each list in source (pre-)order, and
    the :class:`Nesting` of the module, in one walk.

    ``source`` is the UTF-8 text ``tree`` was parsed from.  libcst
    nests a few constructs that ``ast`` keeps flat (``a or b or c``, ``"a" "b" "c"``,
    ``import a.b.c``); the depth counts them as libcst will.  ``limit`` (0: none) is where
    the caller stops: string literals are only counted exactly when they could pass it.
    """
    starts = _line_starts(source)
    segment = _segment_reader(source, starts)
    found: dict[str, list[tuple[int, int, int, int, int, str, tuple[str, ...]]]] = {}
    deepest, deepest_line = 0, 1
    # (node, depth of its parent, line of the nearest node that has one: contexts, operators
    # and ``arguments`` have none)
    stack: list[tuple[ast.AST, int, int]] = [(tree, 0, 1)]
    pop, push, children, category_of = stack.pop, stack.append, ast.iter_child_nodes, _AST_CATEGORY.get
    while stack:
        node, depth, line = pop()
        kind = type(node)
        depth += 1
        line = getattr(node, "lineno", line)
        if kind in _FLATTENED:
            depth += _flattened_depth(node, source, starts, (limit - depth) if limit else 0)
        if depth > deepest:
            deepest, deepest_line = depth, line
        if kind is ast.JoinedStr:  # its constant parts carry the whole literal's position
            for child in children(node):
                if type(child) is ast.FormattedValue:
                    push((child, depth, line))
            continue
        for child in children(node):
            push((child, depth, line))
        category = category_of(kind)
        if category is None:
            continue
        col = node.col_offset  # type: ignore[attr-defined]
        end_line = node.end_lineno or line  # type: ignore[attr-defined]
        end_col = node.end_col_offset or 0  # type: ignore[attr-defined]
        found.setdefault(category, []).append(
            (line, col, -end_line, -end_col, end_line, _check_value(node), _texts(node, segment))
        )
    result: dict[str, list[Position]] = {}
    for category, entries in found.items():
        entries.sort()
        result[category] = [(entry[0], entry[4], entry[5], entry[6]) for entry in entries]
    return result, Nesting(deepest, deepest_line)


_FLATTENED = frozenset({ast.BoolOp, ast.Import, ast.ImportFrom, ast.Constant, ast.JoinedStr})


def _flattened_depth(node: ast.AST, source: bytes, starts: list[int], room: int) -> int:
    """The levels libcst adds below ``node`` where ``ast`` has none."""
    if isinstance(node, ast.BoolOp):
        return len(node.values) - 1  # ``a or b or c``: BooleanOperation(a, or, BooleanOperation(b, ...))
    if isinstance(node, ast.Import):
        return max(alias.name.count(".") for alias in node.names)  # ``a.b.c``: nested Attribute
    if isinstance(node, ast.ImportFrom):
        return (node.module or "").count(".")
    if isinstance(node, ast.Constant) and not isinstance(node.value, (str, bytes)):
        return 0
    # A string literal: implicitly concatenated parts nest (ConcatenatedString(a, ConcatenatedString(b, ...))).
    begin = starts[node.lineno - 1] + node.col_offset  # type: ignore[attr-defined]
    end = starts[node.end_lineno - 1] + node.end_col_offset  # type: ignore[attr-defined]
    if room <= 0 or end - begin < 2 * room:
        return 0  # no limit, already past it, or too short to reach it (a part takes two bytes at least)
    text = source[begin:end]
    if (text.count(b'"') + text.count(b"'")) // 2 < room:
        return 0
    try:
        readline = io.StringIO("(" + text.decode("utf-8", errors="replace") + ")").readline
        return max(0, sum(token.type == tokenize.STRING for token in tokenize.generate_tokens(readline)) - 1)
    except (tokenize.TokenError, SyntaxError):
        return (text.count(b'"') + text.count(b"'")) // 2  # at most one part per two quotes


class PairedPositions:
    """Hands out ast positions to a libcst walk that meets nodes in source order."""

    __slots__ = ("_cursor", "_positions")

    def __init__(self, positions: dict[str, list[Position]]) -> None:
        self._positions = positions
        self._cursor: dict[str, int] = dict.fromkeys(positions, 0)

    def take(self, category: str, check: str | None = None) -> tuple[int, int, tuple[str, ...]]:
        """The position of the next node of ``category``; ``check`` must match its name."""
        index = self._cursor.get(category, 0)
        entries = self._positions.get(category)
        if entries is None or index >= len(entries):
            raise PositionMismatch(f"more {category} nodes in libcst than in ast")
        line, end_line, expected, texts = entries[index]
        if check is not None and check != expected:
            raise PositionMismatch(f"{category} #{index}: {check!r} != {expected!r} at line {line}")
        self._cursor[category] = index + 1
        return line, end_line, texts

    def verify_exhausted(self) -> None:
        for category, entries in self._positions.items():
            if self._cursor.get(category, 0) != len(entries):
                raise PositionMismatch(f"fewer {category} nodes in libcst than in ast")
