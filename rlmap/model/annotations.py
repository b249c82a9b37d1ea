"""What a parameter's annotation admits: the classes whose instances the value flow lets in.

A flow-insensitive solver merges every call of a function: a transform passed where another
caller passes a tensordict ends up in the same parameter, and from there everywhere the
parameter goes.  An annotation that names classes says which objects the parameter holds, so
the solver keeps only instances of those classes (or of their subclasses) and outside objects.

Only annotations that name classes plainly are read: ``C``, ``"C"``, ``Optional[C]``,
``Union[C, D]``, ``C | None``.  Anything else (a generic, a ``Callable``, a ``TypeVar``, a
``Protocol``, a name that does not resolve, an outside class other than a few value types)
admits everything: no annotation filters less than the code says.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rlmap.index.records import CLASS
from rlmap.index.summaries import dotted
from rlmap.model.mro import derives_from

if TYPE_CHECKING:
    from rlmap.model.resolve import Resolver

# Outside classes no class of the source is an instance of unless it derives from them.
_VALUE_TYPES = frozenset(
    {"torch.Tensor", "builtins.int", "builtins.float", "builtins.str", "builtins.bool", "builtins.bytes"}
)
_BUILTIN_VALUES = {name.removeprefix("builtins."): name for name in _VALUE_TYPES if name.startswith("builtins.")}
# Containers: a parameter annotated with one holds a container the source builds (or a class
# deriving from one), never an object of another class (its elements are not read here).
CONTAINER = "<container>"
_CONTAINERS = {
    "dict": "builtins.dict",
    "list": "builtins.list",
    "tuple": "builtins.tuple",
    "set": "builtins.set",
    "frozenset": "builtins.frozenset",
    "Dict": "builtins.dict",
    "List": "builtins.list",
    "Tuple": "builtins.tuple",
    "Set": "builtins.set",
    "FrozenSet": "builtins.frozenset",
    "Sequence": "collections.abc.Sequence",
    "MutableSequence": "collections.abc.MutableSequence",
    "Mapping": "collections.abc.Mapping",
    "MutableMapping": "collections.abc.MutableMapping",
}
_OPTIONAL = frozenset({"Optional", "typing.Optional"})
_UNION = frozenset({"Union", "typing.Union"})
_SELF = frozenset({"Self", "typing.Self", "typing_extensions.Self"})
_STRUCTURAL = frozenset({"typing.Protocol", "typing_extensions.Protocol", "Protocol"})


@dataclass(frozen=True, slots=True)
class Declared:
    """The classes an annotation names (qualnames of the source, or outside dotted names)."""

    classes: frozenset[str]

    def admits(self, bases: Mapping[str, tuple[str, ...]], cls: str) -> bool:
        """Whether an instance of ``cls`` is an instance of one of the classes."""
        return derives_from(bases, cls, self.classes)


def declared_types(resolver: Resolver, params: Mapping[str, tuple[str, ...]]) -> dict[str, Declared]:
    """``function.parameter`` -> what its annotation admits, for every parameter whose annotation
    names classes only (``params``: each function's parameter names as the flow facts write them)."""
    reader = _Reader(resolver)
    found: dict[str, Declared] = {}
    for function in sorted(params):
        symbol = resolver.symbols.get(function)
        if symbol is None or not symbol.params:
            continue
        annotations = dict(symbol.params)
        for name in params[function]:
            if name.startswith("*"):  # ``*args: C`` annotates the elements
                continue
            bare = name.removeprefix("kw:")
            text = annotations.get(bare, "")
            if text:
                declared = reader.read(function, text)
                if declared is not None:
                    found[f"{function}.{bare}"] = declared
    return found


class _Reader:
    def __init__(self, resolver: Resolver) -> None:
        self.resolver = resolver
        self._memo: dict[tuple[str, str], Declared | None] = {}
        self._trees: dict[str, ast.expr | None] = {}  # text -> its expression (the same in every scope)

    def read(self, function: str, text: str) -> Declared | None:
        scope = function.rpartition(".")[0]  # annotations are evaluated where the ``def`` is
        key = (scope, text)
        if key not in self._memo:
            self._memo[key] = self._parse(function, scope, text)
        return self._memo[key]

    def _parse(self, function: str, scope: str, text: str) -> Declared | None:
        node = self._tree(text)
        if node is None:
            return None
        classes = self._classes(node, function, scope, 0)
        return Declared(frozenset(classes)) if classes is not None else None

    def _tree(self, text: str) -> ast.expr | None:
        """The expression ``text`` holds (``None`` if it is not one), parsed once per text: the
        trees are only read."""
        if text in self._trees:
            return self._trees[text]
        try:
            node: ast.expr | None = ast.parse(text.strip(), mode="eval").body
        except (SyntaxError, ValueError):
            node = None
        self._trees[text] = node
        return node

    def _classes(self, node: ast.expr, function: str, scope: str, depth: int) -> set[str] | None:
        if depth > 8:
            return None
        if isinstance(node, ast.Constant):
            if node.value is None:
                return set()
            if isinstance(node.value, str):  # a forward reference
                inner = self._tree(node.value)
                if inner is None:
                    return None
                return self._classes(inner, function, scope, depth + 1)
            return None
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            return _union(
                self._classes(node.left, function, scope, depth + 1),
                self._classes(node.right, function, scope, depth + 1),
            )
        if isinstance(node, ast.Subscript):
            head = ".".join(dotted(node.value))
            members = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            if head in _OPTIONAL and len(members) == 1:
                return self._classes(members[0], function, scope, depth + 1)
            if head in _UNION:
                result: set[str] | None = set()
                for member in members:
                    result = _union(result, self._classes(member, function, scope, depth + 1))
                return result
            return self._container(head)
        name = ".".join(dotted(node))
        if not name:
            return None
        return self._container(name) or self._named(name, function, scope)

    def _container(self, name: str) -> set[str] | None:
        """A container type, by its written name (``dict``, ``typing.Sequence``, ``abc.Mapping``)."""
        last = name.rpartition(".")[2]
        outside = _CONTAINERS.get(last)
        if outside is None or (name != last and name.partition(".")[0] not in ("typing", "collections", "abc")):
            return None
        return {CONTAINER, outside, "typing." + last, last}

    def _named(self, name: str, function: str, scope: str) -> set[str] | None:
        resolver = self.resolver
        if name in _SELF:
            cls = resolver.enclosing_class(function)
            return {cls} if cls else None
        module = resolver.module_of(function)
        parts = tuple(name.split("."))
        found = resolver.resolve_dotted(module, scope, parts)
        if found is not None:
            symbol = resolver.symbols.get(found)
            if symbol is None or symbol.kind != CLASS or _structural(resolver, found):
                return None
            return {found}
        outside = resolver.external_name(module, scope, parts)
        if outside is None and name in _BUILTIN_VALUES:
            outside = _BUILTIN_VALUES[name]
        return {outside} if outside in _VALUE_TYPES else None


def _structural(resolver: Resolver, cls: str) -> bool:
    """Whether ``cls`` is a ``Protocol`` (its instances need not derive from it)."""
    stack, seen = [cls], {cls}
    while stack:
        for base in resolver.bases.get(stack.pop(), ()):
            if base in _STRUCTURAL or base.endswith(".Protocol"):
                return True
            if base not in seen:
                seen.add(base)
                stack.append(base)
    return False


def _union(left: set[str] | None, right: set[str] | None) -> set[str] | None:
    return None if left is None or right is None else left | right
