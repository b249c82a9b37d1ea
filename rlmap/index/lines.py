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
from itertools import accumulate
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
STATEMENT = "stmt"  # a simple statement (:func:`index_lines`)

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


def one_line(text: str) -> str:
    """Source text on one line, as if written there: runs of white space one space, none just
    inside brackets (``f(\n    a, b\n)`` -> ``f(a, b)``)."""
    text = _SPACES.sub(" ", text).strip()
    return _INNER_SPACE.sub(lambda match: match.group(1) or match.group(2), text)


def shorten(text: str) -> str:
    """Source text on one line, cut to ``TEXT_LIMIT`` characters."""
    if " " not in text and text.isprintable():  # a name or a call without spaces: nothing to fold
        return text if len(text) <= TEXT_LIMIT else _cut(text)
    text = one_line(text)
    return text if len(text) <= TEXT_LIMIT else _cut(text)


def _cut(text: str) -> str:
    """``text``, longer than ``TEXT_LIMIT``, cut to it with ``...``: before a dotted name the limit
    would cut in two (``self._wrapped_policy_uncompile...`` reads as another name), unless that
    name starts in the first half."""
    cut = TEXT_LIMIT - 3
    if _in_name(text[cut - 1]) and _in_name(text[cut]):
        start = cut
        while start > 0 and (_in_name(text[start - 1]) or text[start - 1] == "."):  # (a dotted name whole)
            start -= 1
        if start > TEXT_LIMIT // 2:
            cut = start
    return text[:cut] + "..."


def _in_name(character: str) -> bool:
    return character.isalnum() or character == "_"


def _line_starts(source: bytes) -> list[int]:
    """Byte offset of each line's start, with Python's line breaks (``\\n``, ``\\r\\n``, ``\\r``)."""
    if b"\r" in source:
        return [0, *(match.end() for match in _LINE_BREAK.finditer(source))]
    lengths = [len(line) + 1 for line in source.split(b"\n")]
    del lengths[-1]  # the text after the last newline starts a line and ends none
    return list(accumulate(lengths, initial=0))


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
    return _index(tree, source, limit, flat=False)


def index_lines(tree: ast.Module, source: bytes, limit: int) -> tuple[dict[str, list[Position]], Nesting | None]:
    """The positions :class:`PairedPositions` hands out, and the module's :class:`Nesting` if it
    passes ``limit`` (else ``None``: the depth is only computed exactly where it could pass it).

    The cheap form of :func:`index_ast`: most statements are written on one line, and every
    node inside a one-line simple statement is on that line, so their expressions are not
    visited: each simple statement gets a ``STATEMENT`` entry, and only those spread over
    lines (and the headers of compound statements) get expression-level positions.  The one
    text wanted inside a one-line statement, a callee that is not a dotted name, is read from
    its ``ast`` statement on demand (:meth:`PairedPositions.statement`).
    """
    positions, nesting = _index(tree, source, limit, flat=True)
    if nesting.depth <= limit:
        return positions, None
    return positions, index_ast(tree, source, limit)[1]  # the exact figures, for the message


# ``ast`` simple statements: libcst's small statements, one to one, in source order; the check
# is the class name, with libcst's for ``del``.
_SIMPLE_STATEMENTS: dict[type, str] = {
    kind: ("Del" if kind is ast.Delete else kind.__name__)
    for kind in (
        ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return, ast.Raise, ast.Import, ast.ImportFrom,
        ast.Pass, ast.Break, ast.Continue, ast.Delete, ast.Global, ast.Nonlocal, ast.Assert,
        *((ast.TypeAlias,) if hasattr(ast, "TypeAlias") else ()),
    )
}  # fmt: skip
# A one-line statement's nodes nest at most one level per byte of it, plus a few levels that
# take no text of their own (``Expr`` over its call, a context marker); beyond this bound its
# nodes are walked for their depth.
_LEVELS_PER_BYTE = 2
_LEVELS_WITHOUT_TEXT = 16


def _index(tree: ast.Module, source: bytes, limit: int, flat: bool) -> tuple[dict[str, list[Position]], Nesting]:
    """The walk of :func:`index_ast`; ``flat``: as :func:`index_lines` (its depth is exact only
    past ``limit``... and then not necessarily its line: callers redo the exact walk)."""
    starts = _line_starts(source)
    segment = _segment_reader(source, starts)
    found: dict[str, list[tuple[int, int, int, int, int, str, tuple[Any, ...]]]] = {}
    deepest, deepest_line = 0, 1
    # (node, depth of its parent, line of the nearest node that has one: contexts, operators
    # and ``arguments`` have none)
    stack: list[tuple[ast.AST, int, int]] = [(tree, 0, 1)]
    pop, push, category_of, fields_of = stack.pop, stack.append, _AST_CATEGORY.get, _CHILD_FIELDS.get
    simple = _SIMPLE_STATEMENTS if flat else {}
    # where the depth is only a bound (``flat``), a name is not pushed: its depth is counted
    # where it is met (the exact walk pops it in order, for the line of the first deepest node)
    leaf = ast.Name if flat else None
    while stack:
        node, depth, line = pop()
        kind = type(node)
        depth += 1
        line = getattr(node, "lineno", line)
        if kind in simple and _statement(found, node, simple[kind], line, segment):
            # one line: its nodes are not paired; walked for their depth only if it could pass the limit
            width = node.end_col_offset - node.col_offset  # type: ignore[attr-defined]
            if limit and depth + _LEVELS_PER_BYTE * width + _LEVELS_WITHOUT_TEXT > limit:
                room = max(1, limit - depth + 1)
                nested = _index(node, source, room, flat=False)[1].depth + depth - 1  # type: ignore[arg-type]
                if nested > deepest:
                    deepest, deepest_line = nested, line
            elif depth > deepest:
                deepest, deepest_line = depth, line
            continue
        if kind in _FLATTENED:
            depth += _flattened_depth(node, source, starts, (limit - depth) if limit else 0)
        fields = fields_of(kind)
        if depth > deepest:
            deepest, deepest_line = depth, line
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
                    if child.__class__ is leaf:  # a name and its context: two levels
                        if depth + 2 > deepest:
                            deepest, deepest_line = depth + 2, child.lineno
                    elif isinstance(child, ast.AST):
                        push((child, depth, line))
            elif value.__class__ is leaf:
                if depth + 2 > deepest:
                    deepest, deepest_line = depth + 2, value.lineno
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


def _statement(
    found: dict[str, list[Any]], node: ast.AST, check: str, line: int, segment: Callable[[ast.AST | None], str]
) -> bool:
    """Record a simple statement's ``STATEMENT`` entry, and if it is on one line its own
    category's entry (it is then not walked); whether it is on one line."""
    end_line = node.end_lineno or line  # type: ignore[attr-defined]
    key = (line, node.col_offset, -end_line, -(node.end_col_offset or 0), end_line)  # type: ignore[attr-defined]
    found.setdefault(STATEMENT, []).append((*key, check, (node, segment)))
    if end_line != line:
        return False
    category = _AST_CATEGORY.get(type(node))
    if category is not None:
        texts = _TEXTS.get(category)
        found.setdefault(category, []).append((*key, "", texts(node, segment) if texts is not None else ()))
    return True


_CONTEXTS = frozenset({ast.Load, ast.Store, ast.Del})
_CHILD_FIELDS: dict[type, tuple[str, ...]] = {}


# Fields that never hold a node: names, flags, comments (a list of names for ``global``), and a
# literal's value; skipping them spares a read and three type tests per field of every node.
_SCALAR_FIELDS = frozenset(
    {"name", "id", "attr", "arg", "asname", "module", "level", "kind", "simple", "conversion", "is_async",
     "type_comment", "rest", "kwd_attrs", "tag"}
)  # fmt: skip
_SCALAR_FIELDS_OF: dict[type, frozenset[str]] = {
    ast.Constant: frozenset({"value"}),
    ast.MatchSingleton: frozenset({"value"}),
    ast.Global: frozenset({"names"}),
    ast.Nonlocal: frozenset({"names"}),
}


def _child_fields(kind: type) -> tuple[str, ...]:
    """The fields of an ``ast`` node type that may hold nodes, in the order
    :func:`ast.iter_child_nodes` reads them in."""
    scalar = _SCALAR_FIELDS_OF.get(kind, frozenset())
    return tuple(name for name in getattr(kind, "_fields", ()) if name not in _SCALAR_FIELDS and name not in scalar)


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
    """Hands out ast positions to a libcst walk that meets nodes in source order.

    With the entries of :func:`index_lines`, the walk announces each simple statement
    (:meth:`statement`); inside a one-line statement, the walk's position source is
    :meth:`take_flat`, which answers for the expressions without pairing them.
    """

    __slots__ = ("_cursor", "_flat_calls", "_flat_line", "_flat_node", "_positions", "_statement", "_statements")

    def __init__(self, positions: dict[str, list[Position]]) -> None:
        self._positions = positions
        self._cursor: dict[str, int] = dict.fromkeys(positions, 0)
        self._statements = positions.get(STATEMENT, [])
        self._statement = 0  # the cursor of ``STATEMENT``, kept apart: :meth:`statement` runs for every one
        self._flat_line = 0
        self._flat_node: tuple[Any, ...] = ()
        self._flat_calls = 0

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

    def statement(self, node: object) -> bool:
        """Pair the next simple statement (a libcst small statement); whether it is on one line,
        the line :meth:`take_flat` then gives its expressions."""
        index = self._statement
        if index >= len(self._statements):
            raise PositionMismatch(f"more {STATEMENT} nodes in libcst than in ast")
        line, end_line, expected, texts = self._statements[index]
        if type(node).__name__ != expected:
            raise PositionMismatch(f"{STATEMENT} #{index}: {type(node).__name__!r} != {expected!r} at line {line}")
        self._statement = index + 1
        if line != end_line:
            return False
        self._flat_line, self._flat_node, self._flat_calls = line, texts, 0
        return True

    def take_flat(self, node: object, category: str, check: str | None = None) -> tuple[int, int, tuple[Any, ...]]:
        """:meth:`take` inside a one-line statement: its own entry is paired, its expressions
        are on its line (a call's callee text is read from the ``ast`` statement when asked)."""
        if category not in _FLAT:
            return self.take(node, category, check)
        line = self._flat_line
        if category == CALL:
            index = self._flat_calls
            self._flat_calls = index + 1
            return line, line, (partial(_flat_callee, self._flat_node, index, check), line)
        return line, line, ()

    def verify_exhausted(self) -> None:
        self._cursor[STATEMENT] = self._statement
        for category, entries in self._positions.items():
            if self._cursor.get(category, 0) != len(entries):
                raise PositionMismatch(f"fewer {category} nodes in libcst than in ast")


# The categories of expressions: inside a one-line statement, not paired.
_FLAT = frozenset({CALL, ATTR, SUBSCRIPT, COMPARE})


def _flat_callee(statement: tuple[Any, ...], index: int, check: str | None) -> str:
    """The callee text of the ``index``-th call (source pre-order) of a one-line ``ast`` statement."""
    node, segment = statement
    calls = sorted(
        (call for call in ast.walk(node) if type(call) is ast.Call),
        key=lambda call: (call.col_offset, -(call.end_col_offset or 0)),
    )
    if index >= len(calls) or (check is not None and _call_check(calls[index]) != check):
        raise PositionMismatch(f"call #{index} of the statement at line {node.lineno}")
    return segment(calls[index].func)
