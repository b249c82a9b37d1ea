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
from functools import partial
from typing import Any

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
# with, ``texts`` the source text of the parts the index prints (see ``_TEXTS``; a call's are
# not all text).
Position = tuple[int, int, str, tuple[Any, ...]]

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


def shorten(text: str) -> str:
    """Source text on one line, cut to ``TEXT_LIMIT`` characters."""
    if " " not in text and text.isprintable():  # a name or a call without spaces: nothing to fold
        return text if len(text) <= TEXT_LIMIT else text[: TEXT_LIMIT - 3] + "..."
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


def _call_texts(node: ast.Call, segment: Callable[[ast.AST | None], str]) -> tuple[Any, ...]:
    """The callee's text, as a function that makes it (the index reads it only for a callee that
    is not a dotted name: one call in fourteen in torchrl), and the line where the callee's name
    ends: ``.clone`` in a call chain spread over lines."""
    return (partial(segment, node.func), node.func.end_lineno or node.lineno)


def _for_texts(node: ast.For | ast.AsyncFor, segment: Callable[[ast.AST | None], str]) -> tuple[str, ...]:
    return (segment(node.target), segment(node.iter))


def _annotated_texts(node: ast.AnnAssign, segment: Callable[[ast.AST | None], str]) -> tuple[str, ...]:
    return (segment(node.annotation), segment(node.value))


def _function_texts(
    node: ast.FunctionDef | ast.AsyncFunctionDef, segment: Callable[[ast.AST | None], str]
) -> tuple[str, ...]:
    return _signature(node.args, node.returns, segment)


# The source texts the index prints, per category: a condition, a loop's target and iterable,
# an exception type, an assigned or returned value, an annotation, a callee, a signature.
_TEXTS: dict[str, Callable[[Any, Callable[[ast.AST | None], str]], tuple[Any, ...]]] = {
    IF: lambda node, segment: (segment(node.test),),
    WHILE: lambda node, segment: (segment(node.test),),
    FOR: _for_texts,
    EXCEPT: lambda node, segment: (segment(node.type),),
    ASSIGN: lambda node, segment: (segment(node.value),),
    AUG_ASSIGN: lambda node, segment: (segment(node.value),),
    RETURN: lambda node, segment: (segment(node.value),),
    ANN_ASSIGN: _annotated_texts,
    CALL: _call_texts,
    FUNC: _function_texts,
}


def _call_check(node: ast.Call) -> str:
    func = node.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ""


# The name a libcst node of the category must agree with: a callee's last name, an attribute's
# name, a definition's name.
_CHECKS: dict[str, Callable[[Any], str]] = {
    CALL: _call_check,
    ATTR: lambda node: node.attr,
    FUNC: lambda node: node.name,
    CLASS: lambda node: node.name,
}


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
    pop, push, category_of, fields_of = stack.pop, stack.append, _AST_CATEGORY.get, _CHILD_FIELDS.get
    while stack:
        node, depth, line = pop()
        kind = type(node)
        depth += 1
        line = getattr(node, "lineno", line)
        if kind in _FLATTENED:
            depth += _flattened_depth(node, source, starts, (limit - depth) if limit else 0)
        if depth > deepest:
            deepest, deepest_line = depth, line
        fields = fields_of(kind)
        if fields is None:
            fields = _CHILD_FIELDS[kind] = _child_fields(kind)
        if kind is ast.JoinedStr:  # its constant parts carry the whole literal's position
            for child in node.values:  # type: ignore[attr-defined]
                if type(child) is ast.FormattedValue:
                    push((child, depth, line))
            continue
        for name in fields:
            value = getattr(node, name, None)
            if value.__class__ is list:
                for child in value:
                    if isinstance(child, ast.AST):
                        push((child, depth, line))
            elif isinstance(value, ast.AST):
                if value.__class__ in _CONTEXTS:
                    # a load/store/del marker: a leaf, the last field, popped right after its
                    # node, so only its depth counts (and it is counted here, in the same order)
                    if depth + 1 > deepest:
                        deepest, deepest_line = depth + 1, line
                else:
                    push((value, depth, line))
        category = category_of(kind)
        if category is None:
            continue
        check = _CHECKS.get(category)
        texts = _TEXTS.get(category)
        end_line = node.end_lineno or line  # type: ignore[attr-defined]
        found.setdefault(category, []).append(
            (
                line,
                node.col_offset,  # type: ignore[attr-defined]
                -end_line,
                -(node.end_col_offset or 0),  # type: ignore[attr-defined]
                end_line,
                check(node) if check is not None else "",
                texts(node, segment) if texts is not None else (),
            )
        )
    result: dict[str, list[Position]] = {}
    for category, entries in found.items():
        entries.sort()
        result[category] = [(entry[0], entry[4], entry[5], entry[6]) for entry in entries]
    return result, Nesting(deepest, deepest_line)


_CONTEXTS = frozenset({ast.Load, ast.Store, ast.Del})
_CHILD_FIELDS: dict[type, tuple[str, ...]] = {}


def _child_fields(kind: type) -> tuple[str, ...]:
    """The fields of an ``ast`` node type, the order :func:`ast.iter_child_nodes` reads them in."""
    return tuple(getattr(kind, "_fields", ()))


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

    def take(
        self,
        node: object,  # noqa: ARG002 - the signature of every position source (the walker's ``position``)
        category: str,
        check: str | None = None,
    ) -> tuple[int, int, tuple[Any, ...]]:
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
