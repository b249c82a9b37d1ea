"""The package's symbol table: definitions, imports and re-exports, class bases, name lookup.

:class:`SymbolTable` is the first layer of :class:`rlmap.model.resolve.Resolver`: it holds the
tables built from the index and answers what a name or a dotted path denotes (following imports,
star imports and re-exports to the defining qualname), and what a class or module member is.
"""

from __future__ import annotations

import builtins
from collections import defaultdict
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from rlmap.index.records import (
    ATTRIBUTE,
    CLASS,
    FUNCTION,
    HANDED,
    ITEMS,
    METHOD,
    MODULE,
    PLAIN,
    PROPERTY,
    RESULT_HANDED,
    VARIABLE,
    CallSite,
)
from rlmap.model.mro import first_in_mro

if TYPE_CHECKING:  # annotations only
    from rlmap.index.records import AttributeAccess, LocalBinding, ModuleIndex, Symbol

_KEY_BINDINGS = frozenset({"literal", "alias", "loop", "each", "value", ITEMS})
_BUILTINS = frozenset(dir(builtins))
_MAX_DEPTH = 30  # re-export chains longer than this are not followed


def _rebinds(existing: Symbol, symbol: Symbol) -> bool:
    """Whether ``symbol`` is a later ``def`` of the function ``existing`` that Python binds the name
    to: same file, same kind, further down, and not a property's setter or deleter
    (``@implement_for("torch", None, "2.6.0")`` then ``@implement_for("torch", "2.6.0")`` stubs and
    their implementation, ``@overload`` signatures and their implementation)."""
    return (
        symbol.kind == existing.kind
        and symbol.kind in (FUNCTION, METHOD)
        and symbol.path == existing.path
        and symbol.line > existing.line
        and not any(name.endswith((".setter", ".deleter")) for name in symbol.decorators)
    )


def replaces(existing: Symbol, symbol: Symbol) -> bool:
    """Whether ``symbol``, met after ``existing`` under the same qualname, is the one the name
    denotes: a definition wins over a same-named annotation (``tensor_keys: T`` + ``@property``),
    and a function redefined in the same file is the later ``def``, the one Python binds."""
    if existing.kind in (ATTRIBUTE, VARIABLE):
        return symbol.kind in (FUNCTION, METHOD, PROPERTY, CLASS)
    return _rebinds(existing, symbol)


class SymbolTable:
    """Definitions, members, imports and local bindings of one package, and name lookup over them."""

    def __init__(self, modules: Iterable[ModuleIndex]) -> None:
        self.modules: dict[str, ModuleIndex] = {}
        self.symbols: dict[str, Symbol] = {}
        self.members: dict[str, dict[str, Symbol]] = defaultdict(dict)
        self.imports: dict[str, dict[str, str]] = defaultdict(dict)  # scope -> name -> target
        self.stars: dict[str, list[str]] = defaultdict(list)
        self.locals: dict[str, dict[str, tuple[tuple[str, ...], str]]] = defaultdict(dict)
        self.methods_by_name: dict[str, list[str]] = defaultdict(list)
        self.key_bindings: dict[str, dict[str, list[LocalBinding]]] = defaultdict(dict)
        self.handed: dict[str, set[str]] = defaultdict(set)  # function -> locals a tensordict is made from
        self.plain_dicts: dict[str, set[str]] = defaultdict(set)  # function -> locals made as plain dicts (PLAIN)
        # the calls whose result a tensordict is made from (see Resolver.made_into_tensordict)
        self.handed_calls: list[CallSite] = []
        self._member_memo: dict[str, dict[str, Any]] = defaultdict(dict)
        self._canonical: dict[str, str | None] = {}
        # Answers that depend only on the tables (and on canonical names, memoized once found),
        # asked again for every call site: each is computed once.
        self._module_of: dict[str, str] = {}
        self._self_names: dict[str, tuple[str, str]] = {}
        self._names: dict[tuple[str, str, str], str | None] = {}
        self._imported: dict[tuple[str, str, str], str | None] = {}
        self._class_members: dict[tuple[str, str], str | None] = {}
        for module in modules:
            self._add_module(module)
        self._class_member_names = {
            name
            for owner, names in self.members.items()
            if owner in self.symbols and self.symbols[owner].kind == CLASS
            for name in names
        }
        self.bases: dict[str, tuple[str, ...]] = {}
        self.subclasses: dict[str, list[str]] = defaultdict(list)
        self._add_bases()
        self.attribute_writes: dict[tuple[str, str], list[AttributeAccess]] = defaultdict(list)
        self.written: set[tuple[str, str]] = set()
        self._written_names: set[str] = set()
        for module in self.modules.values():
            for access in module.attributes:
                if access.kind == "write":
                    self.written.add((access.owner, access.attribute))
                    self._written_names.add(access.attribute)
                    self.attribute_writes[(access.owner, access.attribute)].append(access)

    def _add_module(self, module: ModuleIndex) -> None:
        self.modules[module.module] = module
        for symbol in module.symbols:
            existing = self.symbols.get(symbol.qualname)
            if existing is not None and not replaces(existing, symbol):
                continue  # a property setter or deleter, or a redefinition of another kind
            self.symbols[symbol.qualname] = symbol
            if symbol.kind != MODULE:
                parent, _, name = symbol.qualname.rpartition(".")
                self.members[parent][name] = symbol
                if symbol.kind in (METHOD, PROPERTY) and existing is None:
                    self.methods_by_name[name].append(symbol.qualname)
        for record in module.imports:
            if record.name == "*":
                self.stars[record.scope].append(record.target)
            else:
                self.imports[record.scope].setdefault(record.name, record.target)
        wanted: set[tuple[str, tuple[str, ...]]] = set()  # (caller, callee) of the calls handed_calls keeps
        for binding in module.locals:
            if binding.how in _KEY_BINDINGS:
                self.key_bindings[binding.function].setdefault(binding.name, []).append(binding)
            elif binding.how == HANDED:
                self.handed[binding.function].add(binding.name)
            elif binding.how == PLAIN:
                self.plain_dicts[binding.function].add(binding.name)
            elif binding.how == RESULT_HANDED:
                wanted.add((binding.function, binding.parts[1:]))
            else:
                self.locals[binding.function].setdefault(binding.name, (binding.parts, binding.how))
        for binding in module.locals:  # ``obs = self._build_obs_dict(s)`` then ``TensorDict({**obs, ...})``
            if binding.how == HANDED:
                bound = self.locals.get(binding.function, {}).get(binding.name)
                if bound is not None and bound[1] == "assignment" and bound[0]:
                    wanted.add((binding.function, bound[0]))
        if wanted:
            self.handed_calls.extend(
                site for site in module.calls if not site.attribute_read and (site.caller, site.parts) in wanted
            )

    def _add_bases(self) -> None:
        """Resolve every class's bases, in symbol order (a base resolved later is not seen earlier)."""
        for qualname, symbol in self.symbols.items():
            if symbol.kind == CLASS:
                resolved = tuple(base for base in (self._resolve_base(qualname, text) for text in symbol.bases) if base)
                self.bases[qualname] = resolved
                for base in resolved:
                    self.subclasses[base].append(qualname)

    def _resolve_base(self, class_qualname: str, text: str) -> str | None:
        parts = base_parts(text)
        if parts is None:
            return None
        module = self.module_of(class_qualname)
        scope = class_qualname.rpartition(".")[0]
        found = self.resolve_dotted(module, scope, parts)
        return found if self.is_kind(found, CLASS) else None

    # -- where a qualname lives --------------------------------------------------------------
    def is_kind(self, qualname: str | None, kind: str) -> bool:
        """Whether ``qualname`` is a symbol of the package of ``kind``."""
        symbol = self.symbols.get(qualname) if qualname else None
        return symbol is not None and symbol.kind == kind

    def module_of(self, qualname: str) -> str:
        """The module a qualname is defined in (longest module prefix)."""
        found = self._module_of.get(qualname)
        if found is None:
            found = ""
            candidate = qualname
            while candidate:
                if candidate in self.modules:
                    found = candidate
                    break
                candidate = candidate.rpartition(".")[0]
            self._module_of[qualname] = found
        return found

    def enclosing_class(self, qualname: str) -> str:
        """The class whose method (or nested function of a method) ``qualname`` is."""
        candidate = qualname.rpartition(".")[0]
        while candidate:
            symbol = self.symbols.get(candidate)
            if symbol is None or symbol.kind == MODULE:
                return ""
            if symbol.kind == CLASS:
                return candidate
            candidate = candidate.rpartition(".")[0]
        return ""

    def self_name(self, function: str) -> tuple[str, str]:
        """(``self`` parameter name, class) for a method or a function nested in one."""
        found = self._self_names.get(function)
        if found is None:
            found = self._self_names[function] = self._self_name(function)
        return found

    def _self_name(self, function: str) -> tuple[str, str]:
        candidate = function
        while candidate:
            symbol = self.symbols.get(candidate)
            if symbol is None or symbol.kind in (MODULE, CLASS):
                return "", ""
            if symbol.kind in (METHOD, PROPERTY):
                if "staticmethod" in symbol.decorators or not symbol.params:
                    return "", ""
                return symbol.params[0][0], candidate.rpartition(".")[0]
            candidate = candidate.rpartition(".")[0]
        return "", ""

    # -- names -----------------------------------------------------------------------------
    def canonical(self, dotted: str, _depth: int = 0) -> str | None:
        """Follow imports and re-exports to the defining qualname; ``None`` if outside."""
        if dotted in self._canonical:
            return self._canonical[dotted]
        self._canonical[dotted] = None  # cycle guard
        result = self._canonical_uncached(dotted, _depth)
        self._canonical[dotted] = result
        return result

    def _canonical_uncached(self, dotted: str, depth: int) -> str | None:
        if depth > _MAX_DEPTH:
            return None
        if dotted in self.symbols:
            return dotted
        module = self.module_of(dotted)
        if not module:
            return None
        rest = dotted[len(module) + 1 :].split(".")
        head = self._lookup_in_module(module, rest[0], depth)
        return self._follow_members(head, rest[1:], depth + 1)

    def _follow_members(self, head: str | None, parts: Iterable[str], depth: int) -> str | None:
        """``head.a.b...`` as members (or re-exported names) of one another; ``None`` on a miss."""
        current = head
        for part in parts:
            if current is None:
                return None
            found = self.member(current, part)
            current = found if found is not None else self.canonical(f"{current}.{part}", depth)
        return current

    def _lookup_in_module(self, module: str, name: str, depth: int, seen: dict[str, int] | None = None) -> str | None:
        """``name`` in ``module``: defined there, imported, or from a ``*`` import.  A module of a
        chain of ``*`` imports is asked again only from a shorter chain (``seen``: the depth each
        was asked at), so a module that star-imports itself, or two that star-import each other,
        end the walk, and a module first met past the depth limit is still found by a shorter way."""
        if depth > _MAX_DEPTH:
            return None
        qualname = f"{module}.{name}"
        if qualname in self.symbols:
            return qualname
        target = self.imports.get(module, {}).get(name)
        if target is not None:
            return self.canonical(target, depth + 1)
        for star in self.stars.get(module, ()):
            if star not in self.modules:
                continue
            exports = self.modules[star].exports
            if exports is not None and name not in exports:
                continue
            if exports is None and name.startswith("_"):
                continue
            seen = {module: depth} if seen is None else seen
            if seen.get(star, depth + 2) <= depth + 1:
                continue
            seen[star] = depth + 1
            found = self._lookup_in_module(star, name, depth + 1, seen)
            if found:
                return found
        if qualname in self.modules:  # a submodule not imported explicitly
            return qualname
        return None

    def member(self, owner: str, name: str) -> str | None:
        """``owner.name`` where owner is a class (searched along the MRO) or a module."""
        symbol = self.symbols.get(owner)
        if symbol is None:
            return None
        if symbol.kind == CLASS:
            if name not in self._class_member_names:
                return None
            key = (owner, name)
            if key in self._class_members:  # what the walk below memoizes for ``owner`` anyway
                return self._class_members[key]
            found = self._class_members[key] = self._class_member(owner, name)
            return found
        if symbol.kind == MODULE:
            return self._lookup_in_module(owner, name, 0)
        return None

    def _class_member(self, owner: str, name: str) -> str | None:
        # An annotation without a value (``tensor_keys: _AcceptedKeys``) declares a type,
        # not a member: a definition further up the MRO (the inherited property) wins.
        found = first_in_mro(self.bases, owner, self._member_memo[name], lambda cls: self._defined(cls, name))
        if found is None:
            found = first_in_mro(
                self.bases,
                owner,
                self._member_memo[name + " (declared)"],
                lambda cls: f"{cls}.{name}" if name in self.members.get(cls, {}) else None,
            )
        return found

    def _defined(self, cls: str, name: str) -> str | None:
        """``cls.name`` when ``cls`` itself defines ``name`` (an annotation alone does not)."""
        symbol = self.members.get(cls, {}).get(name)
        if symbol is None or (symbol.kind == ATTRIBUTE and not symbol.value):
            return None
        return f"{cls}.{name}"

    def external_name(self, module: str, scope: str, parts: tuple[str, ...]) -> str | None:
        """The dotted name outside the package that ``parts`` denotes, if any."""
        target = self.import_target(module, scope, parts[0])
        if target is not None:
            return self.outside_name(".".join([target, *parts[1:]]))
        if parts[0] in _BUILTINS:
            return "builtins." + ".".join(parts)
        return None

    def outside_name(self, dotted: str, _depth: int = 0) -> str | None:
        """Follow re-exports of an imported name until it leaves the package.

        ``torchrl.envs.utils.set_exploration_type`` (imported there from ``tensordict.nn``)
        -> ``tensordict.nn.set_exploration_type``; ``None`` for a name the package defines.
        """
        module = self.module_of(dotted)
        if not module:
            return dotted
        if _depth > _MAX_DEPTH or dotted == module:
            return None
        head, _, rest = dotted[len(module) + 1 :].partition(".")
        if f"{module}.{head}" in self.symbols:
            return None
        target = self.imports.get(module, {}).get(head)
        if target is None:
            for star in self.stars.get(module, ()):
                if star not in self.modules:
                    return ".".join(filter(None, (star, head, rest)))
            return None
        return self.outside_name(".".join(filter(None, (target, rest))), _depth + 1)

    def import_target(self, module: str, scope: str, name: str) -> str | None:
        """What ``name`` is imported as in ``scope`` or an enclosing scope, as written."""
        key = (module, scope, name)
        if key in self._imported:
            return self._imported[key]
        found = self._imported[key] = self._import_target(module, scope, name)
        return found

    def _import_target(self, module: str, scope: str, name: str) -> str | None:
        for candidate in _scope_chain(scope, module):
            target = self.imports.get(candidate, {}).get(name)
            if target is not None:
                return target
        return None

    def resolve_name(self, module: str, scope: str, name: str) -> str | None:
        """A bare name in ``scope`` (a function or the module): nested defs, imports, globals."""
        key = (module, scope, name)
        if key in self._names:
            return self._names[key]
        found = self._names[key] = self._resolve_name(module, scope, name)
        return found

    def _resolve_name(self, module: str, scope: str, name: str) -> str | None:
        """The scopes from ``scope`` out to the module (see :func:`_scope_chain`), the first that
        binds ``name``; the rest of the walk is the enclosing scope's, memoized (the functions of
        a module share the walk of its globals)."""
        if not scope or len(scope) < len(module):  # past the module: its star imports, submodules
            return self._lookup_in_module(module, name, 0)
        if scope == module or not self.is_kind(scope, CLASS):  # a class body does not enclose its methods
            qualname = f"{scope}.{name}"
            symbol = self.symbols.get(qualname)
            if symbol is not None and (scope == module or symbol.kind in (FUNCTION, CLASS)):
                return qualname
            target = self.imports.get(scope, {}).get(name)
            if target is not None:
                return self.canonical(target)
        if scope == module:
            return self._lookup_in_module(module, name, 0)
        return self.resolve_name(module, scope.rpartition(".")[0], name)

    def resolve_dotted(self, module: str, scope: str, parts: tuple[str, ...]) -> str | None:
        """``a.b.c`` in ``scope``: ``a`` as a name, then each part as a member of the previous."""
        return self._follow_members(self.resolve_name(module, scope, parts[0]), parts[1:], 0)


def _scope_chain(scope: str, module: str) -> list[str]:
    """``pkg.mod.f.g`` -> [``pkg.mod.f.g``, ``pkg.mod.f``, ``pkg.mod``]."""
    chain = []
    current = scope
    while current and len(current) >= len(module):
        chain.append(current)
        if current == module:
            break
        current = current.rpartition(".")[0]
    return chain


def base_parts(text: str) -> tuple[str, ...] | None:
    """A class's base as written, as a dotted name (``Generic[T]``: ``("Generic",)``); ``None``
    for one that is no dotted name (``make_base()``)."""
    parts = tuple(text.split("[", 1)[0].split("."))
    return parts if all(part.isidentifier() for part in parts) else None
