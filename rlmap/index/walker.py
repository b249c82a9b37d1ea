"""The visitor's state and traversal: scopes, guards, positions, and the records it collects.

:class:`Walker` walks a libcst tree in source order with a hand-rolled walker (libcst's
generic visitor rebuilds every node it passes and costs four times more): a node whose type
has a handler in :attr:`Walker.handlers` goes to it, any other node is walked into, both by one
lookup of its type in :attr:`Walker.dispatch`.  The handlers live in the mixins that subclass it
(definitions, statements, accesses, keys); the class that combines them is
:class:`rlmap.index.extract.Extractor`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import libcst as cst

from rlmap.index import lines as L
from rlmap.index.records import (
    FUNCTION,
    MODULE,
    PLAIN,
    AttributeAccess,
    CallSite,
    ImportRecord,
    KeyAccess,
    LocalBinding,
    ReturnSite,
    Symbol,
)
from rlmap.index.syntax import (
    CHILD_FIELDS,
    child_fields,
    dotted_parts,
    literal_strings,
    quoted,
    string_value,
    tuple_text,
)
from rlmap.index.vocabulary import KeyVocabulary
from rlmap.literals import holds_word


@dataclass(slots=True)
class Scope:
    qualname: str
    kind: str  # module / class / function
    owner: str = ""  # class whose ``self`` is in reach
    self_name: str = ""
    # a function whose result is a plain mapping, by its name (``__getstate__``, ``state_dict``) or
    # its return annotation (``-> dict[str, Any]``): a dict it returns stays plain (see let_escape)
    plain_result: bool = False


class Walker:
    """One walk over one module; collects records into lists."""

    handlers: ClassVar[dict[type, Callable[[Any, Any], None]]] = {}
    # the node types a walk enters: :func:`rlmap.index.syntax.walked_types` of the handlers
    walked: ClassVar[frozenset[Any]] = frozenset()
    # each type of ``walked``: its handler, or :meth:`walk_children` (set with ``walked``, in
    # :mod:`rlmap.index.extract`); a node's type is looked up once, then its function called
    dispatch: ClassVar[dict[type, Callable[[Any, Any], None]]] = {}

    def __init__(
        self,
        module: cst.Module,
        module_name: str,
        path: str,
        positions: Any,
        vocabulary: KeyVocabulary | None = None,
    ) -> None:
        self.module = module
        self.module_name = module_name
        self.path = path
        self.positions = positions
        # the line, end line and texts of a node (see :func:`rlmap.index.lines.index_ast`): the
        # position source's own method, called directly (it runs for most nodes of the tree)
        self.position: Callable[..., tuple[int, int, tuple[Any, ...]]] = positions.take
        self.vocabulary = vocabulary  # ``None``: no extension enabled, no key access recorded
        self.scopes: list[Scope] = [Scope(module_name, MODULE)]
        self.guards: list[str] = []
        self.symbols: list[Symbol] = []
        self.calls: list[CallSite] = []
        self.attributes: list[AttributeAccess] = []
        self.keys: list[KeyAccess] = []
        self.copies: dict[str, set[str]] = {}  # function -> locals last bound to a copy (``td.select(...)``)
        # function -> local -> whether it is a plain dict that stays in the function (see plain_dicts)
        self.dict_locals: dict[str, dict[str, bool]] = {}
        # the tensordict constructors met inside another's dict (their keys are recorded as nested there)
        self.nested_constructors: set[int] = set()  # (by id: the nodes live through the walk)
        self.imports: list[ImportRecord] = []
        self.locals: list[LocalBinding] = []
        self.returns: list[ReturnSite] = []
        self.exports: tuple[str, ...] | None = None
        self.package_parts = module_name.split(".")
        self.line_count = 1
        self.callee: cst.CSTNode | None = None
        self.mutated: tuple[cst.CSTNode, str] | None = None  # ``self.x`` about to be changed in place, and how
        # ``self.x`` handed to a call as an argument, as ``mutated``: the node, its kind and how
        self.handed: tuple[cst.CSTNode, str, str] | None = None
        self.exit_guard = ""
        self.source_lines: list[str] = []

    # -- helpers ---------------------------------------------------------------------------
    def text(self, node: cst.CSTNode) -> str:
        """Source text of a node by code generation; only for rare constructs."""
        return L.shorten(self.module.code_for_node(node))

    def name_text(self, node: cst.BaseExpression) -> str:
        parts = dotted_parts(node)
        return ".".join(parts) if parts else self.text(node)

    def line_holding(self, needle: str, start: int, end: int) -> int:
        """The first line in ``start..end`` whose text holds ``needle`` (a key literal or a name)
        as a whole word: key ``reward`` is not on a line that names only ``reward_model``."""
        if needle and end > start:
            for number in range(start, min(end, len(self.source_lines)) + 1):
                if holds_word(self.source_lines[number - 1], needle):
                    return number
        return start

    def bind_local(self, name: str, plain: bool, function: str = "") -> None:
        """A local of ``function`` (default: the current one) bound: to a plain dict made there
        (``plain``: ``{}``, a dict comprehension, ``dict(...)``, ``asdict(x)``, ``vars(x)``,
        ``x.__dict__.copy()``) or to anything else (a parameter, a loop's or ``with``'s target, a
        walrus).  Only under a key vocabulary."""
        if self.vocabulary is None:
            return
        table = self.dict_locals.setdefault(function or self.function_scope(), {})
        table[name] = table.get(name, True) and plain

    def let_escape(self, node: cst.BaseExpression | None) -> None:
        """The locals ``node`` names leave the function or enter another object: stored into an
        attribute or an item, handed to a call, returned or yielded, copied (``d.copy()``), or
        named inside a tuple, list or dict display, a conditional or a boolean expression that
        does so.  A plain dict that does so may become a tensordict's contents (``source[group] =
        agent_dict``, ``obs.update(reward_and_done)``): its items stay keys.  A name an inner
        function uses leaves the function that binds it too.  (Returned by a function whose
        result is a plain mapping, ``-> dict`` or ``__getstate__``, a dict is not said to leave:
        the model tells whether a tensordict is made from that result.)"""
        if node is None or self.vocabulary is None:
            return
        kind = type(node)
        if kind is cst.Name:
            name: str = node.value  # type: ignore[attr-defined]
            for scope in reversed(self.scopes):  # (the function's own, then those it is nested in)
                table = self.dict_locals.get(scope.qualname) if scope.kind == FUNCTION else None
                if table is not None and name in table:
                    table[name] = False
                    return
        elif kind is cst.Tuple or kind is cst.List or kind is cst.Dict or kind is cst.Set:
            for element in node.elements:  # type: ignore[attr-defined]
                self.let_escape(element.value)
        elif kind is cst.IfExp:
            self.let_escape(node.body)  # type: ignore[attr-defined]
            self.let_escape(node.orelse)  # type: ignore[attr-defined]
        elif kind is cst.BooleanOperation:
            self.let_escape(node.left)  # type: ignore[attr-defined]
            self.let_escape(node.right)  # type: ignore[attr-defined]
        elif kind is cst.Call and type(node.func) is cst.Attribute and node.func.attr.value == "copy":  # type: ignore[attr-defined]
            self.let_escape(node.func.value)  # type: ignore[attr-defined]

    def plain_dicts(self) -> list[LocalBinding]:
        """The locals every binding of which, in their function, makes a plain dict, and that
        stay in it or are returned as its plain mapping (:meth:`let_escape`): their items are
        no tensordict's keys (``kwargs = {}`` then ``kwargs["device"] = d``; ``state =
        self.__dict__.copy()`` in ``__getstate__``)."""
        return [
            LocalBinding(function, name, ("dict",), PLAIN)
            for function, table in self.dict_locals.items()
            for name, plain in table.items()
            if plain
        ]

    @property
    def scope(self) -> Scope:
        return self.scopes[-1]

    def key_text(self, node: cst.BaseExpression) -> str:
        """A key-holding expression as text the model evaluates: a string, a tuple of strings, or
        a name it resolves (:meth:`resolvable`); ``""`` for anything else."""
        text = string_value(node)
        if text is not None:
            return quoted(text)
        strings = literal_strings(node) if isinstance(node, cst.Tuple) and node.elements else None
        if strings:
            return tuple_text(strings)
        parts = dotted_parts(node)
        return ".".join(parts) if self.resolvable(parts) else ""

    def resolvable(self, parts: Sequence[str]) -> bool:
        """Whether a dotted name is one the model resolves to keys: a local, ``self.x``, or a field
        of an object ``self.x`` holds (``self.tensor_keys.reward``)."""
        return len(parts) == 1 or (2 <= len(parts) <= 3 and bool(parts[0]) and parts[0] == self.scope.self_name)

    def function_scope(self) -> str:
        for scope in reversed(self.scopes):
            if scope.kind == FUNCTION:
                return scope.qualname
        return self.module_name

    @property
    def is_package(self) -> bool:
        return self.path.endswith("/__init__.py") or self.path == "__init__.py"

    # -- walking ---------------------------------------------------------------------------
    def walk(self, node: cst.CSTNode) -> None:
        self.dispatch.get(node.__class__, Walker.walk_children)(self, node)

    def walk_children(self, node: cst.CSTNode) -> None:
        """Into the children that may hold code, in source order; this runs for most nodes of
        the tree, so each child goes straight to its handler (or is walked into) by one lookup
        of its type in :attr:`dispatch`, not by ``isinstance`` nor a call of :meth:`walk`."""
        dispatch = self.dispatch
        fields = CHILD_FIELDS.get(node.__class__)
        if fields is None:
            fields = child_fields(node.__class__)
        for name in fields:
            value: Any = getattr(node, name)
            kind = value.__class__
            handler = dispatch.get(kind)
            if handler is not None:
                handler(self, value)
            elif kind is tuple or kind is list:
                for item in value:
                    handler = dispatch.get(item.__class__)
                    if handler is not None:
                        handler(self, item)

    def walk_all(self, nodes: Sequence[cst.CSTNode]) -> None:
        for node in nodes:
            self.walk(node)

    def walk_guarded(self, guard: str, body: cst.CSTNode) -> None:
        self.guards.append(guard)
        try:
            self.walk(body)
        finally:
            self.guards.pop()

    def walk_in_scope(self, scope: Scope, body: cst.CSTNode) -> None:
        """Walk a class or function body in its own scope, under no guard of the enclosing code."""
        saved_guards, self.guards = self.guards, []
        self.scopes.append(scope)
        try:
            self.walk(body)
        finally:
            self.scopes.pop()
            self.guards = saved_guards
