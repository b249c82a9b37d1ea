"""Name resolution over a whole package: imports, re-exports, class hierarchies, call targets.

Generic: nothing here knows about torchrl.  ``Resolver(modules)`` builds the symbol table;
``resolve_call(site)`` returns the call's targets, each with how it was found:

=============  ============================================================================
how            meaning
=============  ============================================================================
direct         a name or dotted path bound by a definition or an import (certain)
constructor    ``Class(...)`` -> ``Class.__init__`` (or the class when none is defined)
self           ``self.m()`` / ``cls.m()`` -> the definition found in the class hierarchy
override       ``self.m()`` -> an override of ``m`` in a subclass (virtual dispatch)
super          ``super().m()`` -> the next definition in the hierarchy
property       a property read (``self.p``) -> its getter
annotation     receiver type read from an annotation (``self.env: EnvBase``, ``env: EnvBase``)
assignment     receiver type read from an assignment (``self.x = Cls(...)``, ``x = Cls()``)
unique-name    ``self.x.m()`` with ``self.x`` untyped -> the package's only method ``m`` (likely)
attribute      ``self.fn()`` where ``self.fn`` is an attribute holding a callable
external       resolved to a name outside the package (``torch.cat``)
unresolved     nothing found; kept as a node named after the expression
=============  ============================================================================
"""

from __future__ import annotations

import ast
import builtins
import re
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from rlmap.index.records import (
    ATTRIBUTE,
    CLASS,
    FUNCTION,
    METHOD,
    MODULE,
    PROPERTY,
    VARIABLE,
    AttributeAccess,
    CallSite,
    LocalBinding,
    ModuleIndex,
    Symbol,
)

_KEY_BINDINGS = frozenset({"literal", "alias", "loop"})
CERTAIN = frozenset({"direct", "constructor", "self", "super", "property", "external"})
_BUILTINS = frozenset(dir(builtins))
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")
_ANNOTATION_NOISE = frozenset(
    {"None", "Optional", "Union", "typing", "type", "Type", "ClassVar", "Final", "Any", "str", "int"}
)


@dataclass(frozen=True, slots=True)
class Target:
    """One resolved target of a call: a qualname and how it was found."""

    qualname: str
    how: str
    external: bool = False


class Resolver:
    """Symbol table and resolution rules for one package."""

    def __init__(self, modules: Iterable[ModuleIndex]) -> None:
        self.modules: dict[str, ModuleIndex] = {}
        self.symbols: dict[str, Symbol] = {}
        self.members: dict[str, dict[str, Symbol]] = defaultdict(dict)
        self.imports: dict[str, dict[str, str]] = defaultdict(dict)  # scope -> name -> target
        self.stars: dict[str, list[str]] = defaultdict(list)
        self.locals: dict[str, dict[str, tuple[tuple[str, ...], str]]] = defaultdict(dict)
        self.methods_by_name: dict[str, list[str]] = defaultdict(list)
        self.key_bindings: dict[str, dict[str, list[LocalBinding]]] = defaultdict(dict)
        self._constants: dict[tuple[str, str], tuple[str, ...]] = {}
        self._member_memo: dict[str, dict[str, Any]] = defaultdict(dict)
        self._owner_memo: dict[str, dict[str, str]] = defaultdict(dict)
        self._type_memo: dict[str, dict[str, Any]] = defaultdict(dict)
        self._constant_memo: dict[str, dict[str, Any]] = defaultdict(dict)
        self._overrides: dict[tuple[str, str], tuple[str, ...]] = {}
        self._definer_memo: dict[str, frozenset[str]] = {}
        self._above_memo: dict[str, frozenset[str]] = {}
        self._level_memo: dict[str, int] | None = None
        self._levels_known = False
        self._canonical: dict[str, str | None] = {}
        self._attribute_types: dict[tuple[str, str], Target | None] = {}
        self._local_types: dict[tuple[str, str], Target | None] = {}
        self._receivers: dict[tuple[str, tuple[str, ...]], Target | None] = {}
        self._depth = 0
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
        for qualname, symbol in self.symbols.items():
            if symbol.kind == CLASS:
                resolved = tuple(base for base in (self._resolve_base(qualname, text) for text in symbol.bases) if base)
                self.bases[qualname] = resolved
                for base in resolved:
                    self.subclasses[base].append(qualname)
        self.attribute_writes: dict[tuple[str, str], list[AttributeAccess]] = defaultdict(list)
        self.written: set[tuple[str, str]] = set()
        self._written_names: set[str] = set()
        for module in self.modules.values():
            for access in module.attributes:
                if access.kind == "write":
                    self.written.add((access.owner, access.attribute))
                    self._written_names.add(access.attribute)
                    self.attribute_writes[(access.owner, access.attribute)].append(access)

    # -- table -----------------------------------------------------------------------------
    def _add_module(self, module: ModuleIndex) -> None:
        self.modules[module.module] = module
        for symbol in module.symbols:
            existing = self.symbols.get(symbol.qualname)
            if existing is not None and not (
                existing.kind in (ATTRIBUTE, VARIABLE) and symbol.kind in (FUNCTION, METHOD, PROPERTY, CLASS)
            ):
                continue  # a property setter, an overload or a conditional redefinition
            # a definition wins over a same-named annotation (``tensor_keys: T`` + ``@property``)
            self.symbols[symbol.qualname] = symbol
            if symbol.kind != MODULE:
                parent, _, name = symbol.qualname.rpartition(".")
                self.members[parent][name] = symbol
                if symbol.kind in (METHOD, PROPERTY):
                    self.methods_by_name[name].append(symbol.qualname)
        for record in module.imports:
            if record.name == "*":
                self.stars[record.scope].append(record.target)
            else:
                self.imports[record.scope].setdefault(record.name, record.target)
        for binding in module.locals:
            if binding.how in _KEY_BINDINGS:
                self.key_bindings[binding.function].setdefault(binding.name, []).append(binding)
            else:
                self.locals[binding.function].setdefault(binding.name, (binding.parts, binding.how))

    def module_of(self, qualname: str) -> str:
        """The module a qualname is defined in (longest module prefix)."""
        candidate = qualname
        while candidate:
            if candidate in self.modules:
                return candidate
            candidate = candidate.rpartition(".")[0]
        return ""

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
        if depth > 30:
            return None
        if dotted in self.symbols:
            return dotted
        module = self.module_of(dotted)
        if not module:
            return None
        rest = dotted[len(module) + 1 :].split(".")
        head = self._lookup_in_module(module, rest[0], depth)
        if head is None:
            return None
        current = head
        for part in rest[1:]:
            found = self.member(current, part)
            if found is None:
                nested = self.canonical(f"{current}.{part}", depth + 1)
                if nested is None:
                    return None
                found = nested
            current = found
        return current

    def _lookup_in_module(self, module: str, name: str, depth: int) -> str | None:
        qualname = f"{module}.{name}"
        if qualname in self.symbols:
            return qualname
        target = self.imports.get(module, {}).get(name)
        if target is not None:
            return self.canonical(target, depth + 1)
        for star in self.stars.get(module, ()):
            exports = self.modules[star].exports if star in self.modules else None
            if exports is not None and name not in exports:
                continue
            if exports is None and name.startswith("_"):
                continue
            found = self._lookup_in_module(star, name, depth + 1) if star in self.modules else None
            if found:
                return found
        if qualname in self.modules:  # a submodule not imported explicitly
            return qualname
        return None

    def external_name(self, module: str, scope: str, parts: tuple[str, ...]) -> str | None:
        """The dotted name outside the package that ``parts`` denotes, if any."""
        target = self._import_target(module, scope, parts[0])
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
        if _depth > 30 or dotted == module:
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

    def _import_target(self, module: str, scope: str, name: str) -> str | None:
        for candidate in _scope_chain(scope, module):
            target = self.imports.get(candidate, {}).get(name)
            if target is not None:
                return target
        return None

    def resolve_name(self, module: str, scope: str, name: str) -> str | None:
        """A bare name in ``scope`` (a function or the module): nested defs, imports, globals."""
        for candidate in _scope_chain(scope, module):
            enclosing = self.symbols.get(candidate)
            if candidate != module and enclosing is not None and enclosing.kind == CLASS:
                continue  # a class body is not an enclosing scope for its methods
            qualname = f"{candidate}.{name}"
            symbol = self.symbols.get(qualname)
            if symbol is not None and (candidate == module or symbol.kind in (FUNCTION, CLASS)):
                return qualname
            target = self.imports.get(candidate, {}).get(name)
            if target is not None:
                return self.canonical(target)
        return self._lookup_in_module(module, name, 0)

    def resolve_dotted(self, module: str, scope: str, parts: tuple[str, ...]) -> str | None:
        head = self.resolve_name(module, scope, parts[0])
        if head is None:
            return None
        current = head
        for part in parts[1:]:
            found = self.member(current, part)
            if found is None:
                found = self.canonical(f"{current}.{part}")
                if found is None:
                    return None
            current = found
        return current

    def _resolve_base(self, class_qualname: str, text: str) -> str | None:
        parts = tuple(text.split("[", 1)[0].split("."))
        if not all(part.isidentifier() for part in parts):
            return None
        module = self.module_of(class_qualname)
        scope = class_qualname.rpartition(".")[0]
        found = self.resolve_dotted(module, scope, parts)
        symbol = self.symbols.get(found) if found else None
        return found if symbol is not None and symbol.kind == CLASS else None

    # -- classes ---------------------------------------------------------------------------
    # Hierarchy walks are iterative (a 3,000-level chain must not hit the recursion limit) and
    # memoized per name, so that asking every class of a deep chain costs the chain once, not once
    # per class: no MRO tuple is materialized per class (that alone is quadratic in the depth).
    def mro(self, cls: str) -> tuple[str, ...]:
        """Depth-first, left-to-right, first occurrence: close to C3 for real hierarchies."""
        order: list[str] = []
        seen: set[str] = set()
        stack = [cls]
        while stack:
            current = stack.pop()
            if current in seen:
                continue
            seen.add(current)
            order.append(current)
            stack.extend(reversed(self.bases.get(current, ())))
        return tuple(order)

    def _first_in_mro(self, cls: str, memo: dict[str, Any], own: Callable[[str], Any]) -> Any:
        """The first non-``None`` ``own(c)`` for ``c`` in :meth:`mro` order of ``cls``.

        ``memo`` (one per question, e.g. per member name) maps a class to the answer for its own
        hierarchy, so each class is asked at most once per question, however many subclasses ask.
        """
        if cls in memo:
            return memo[cls]
        found = own(cls)
        if found is not None:
            memo[cls] = found
            return found
        visited = {cls}
        stack = [(cls, iter(self.bases.get(cls, ())))]
        while stack:
            node, pending = stack[-1]
            base = next(pending, None)
            if base is None:
                stack.pop()
                memo[node] = None
                continue
            if base in visited:
                continue
            visited.add(base)
            if base in memo:
                found = memo[base]
            else:
                found = own(base)
                if found is None:
                    stack.append((base, iter(self.bases.get(base, ()))))
                    continue
                memo[base] = found
            if found is not None:
                for frame, _ in stack:
                    memo[frame] = found
                return found
        return None

    def _last_in_mro(self, cls: str, memo: dict[str, str], test: Callable[[str], bool]) -> str:
        """The last class ``c`` in :meth:`mro` order of ``cls`` with ``test(c)``, or ``""``."""
        path: list[str] = []
        on_path: set[str] = set()
        node: str | None = cls
        value = ""
        while node is not None:
            if node in memo:
                value = memo[node]
                break
            bases = self.bases.get(node, ())
            if len(bases) > 1:  # multiple inheritance: walk this class's whole MRO once
                value = next((c for c in reversed(self.mro(node)) if test(c)), "")
                memo[node] = value
                break
            on_path.add(node)
            path.append(node)
            node = bases[0] if bases and bases[0] not in on_path else None
        for node in reversed(path):
            if not value and test(node):
                value = node
            memo[node] = value
        return value

    def member(self, owner: str, name: str) -> str | None:
        """``owner.name`` where owner is a class (searched along the MRO) or a module."""
        symbol = self.symbols.get(owner)
        if symbol is None:
            return None
        if symbol.kind == CLASS:
            if name not in self._class_member_names:
                return None
            return self._first_in_mro(
                owner,
                self._member_memo[name],
                lambda cls: f"{cls}.{name}" if name in self.members.get(cls, {}) else None,
            )
        if symbol.kind == MODULE:
            return self._lookup_in_module(owner, name, 0)
        return None

    def all_subclasses(self, cls: str) -> list[str]:
        found: list[str] = []
        stack = list(self.subclasses.get(cls, ()))
        seen: set[str] = set()
        while stack:
            current = stack.pop()
            if current in seen:
                continue
            seen.add(current)
            found.append(current)
            stack.extend(self.subclasses.get(current, ()))
        return sorted(found)

    def overrides(self, cls: str, name: str) -> list[str]:
        """``sub.name`` for every (indirect) subclass ``sub`` of ``cls`` that defines method ``name``.

        Only the part of the hierarchy that leads to a definer is walked: a class with no
        definer below it answers at once, so a deep chain is not walked once per class.
        """
        key = (cls, name)
        cached = self._overrides.get(key)
        if cached is None:
            cached = self._overrides_uncached(cls, name)
            self._overrides[key] = cached
        return list(cached)

    def _overrides_uncached(self, cls: str, name: str) -> tuple[str, ...]:
        definers = self._definers(name)
        if not definers:
            return ()
        levels = self._levels()
        if levels is not None and cls in levels and not any(levels.get(d, -1) > levels[cls] for d in definers):
            return ()  # no definer is deep enough in the hierarchy to be below cls
        above = self._above(name)
        if cls not in above:
            return ()
        found: list[str] = []
        seen: set[str] = set()
        stack = list(self.subclasses.get(cls, ()))
        while stack:
            current = stack.pop()
            if current in seen:
                continue
            seen.add(current)
            if current in definers:
                found.append(current)
            if current in above:
                stack.extend(self.subclasses.get(current, ()))
        return tuple(f"{sub}.{name}" for sub in sorted(found))

    def _definers(self, name: str) -> frozenset[str]:
        """The classes that define ``name`` as a method or property."""
        found = self._definer_memo.get(name)
        if found is None:
            found = frozenset(
                owner
                for owner in (qualname.rpartition(".")[0] for qualname in self.methods_by_name.get(name, ()))
                if name in self.members.get(owner, {}) and self.members[owner][name].kind in (METHOD, PROPERTY)
            )
            self._definer_memo[name] = found
        return found

    def _above(self, name: str) -> frozenset[str]:
        """Every class with a definer of ``name`` among its (indirect) subclasses."""
        found = self._above_memo.get(name)
        if found is None:
            reached: set[str] = set()
            stack = [base for definer in self._definers(name) for base in self.bases.get(definer, ())]
            while stack:
                current = stack.pop()
                if current not in reached:
                    reached.add(current)
                    stack.extend(self.bases.get(current, ()))
            found = frozenset(reached)
            self._above_memo[name] = found
        return found

    def _levels(self) -> dict[str, int] | None:
        """Each class's longest distance to a root of the hierarchy; ``None`` when bases form a cycle.

        A subclass is always deeper than its bases, which rules most classes out of
        :meth:`overrides` at once.
        """
        if not self._levels_known:
            self._levels_known = True
            self._level_memo = self._compute_levels()
        return self._level_memo

    def _compute_levels(self) -> dict[str, int] | None:
        levels: dict[str, int] = {}
        active: set[str] = set()
        for start in self.bases:
            stack = [(start, False)]
            while stack:
                node, ready = stack.pop()
                if node in levels:
                    continue
                bases = self.bases.get(node, ())
                if ready:
                    active.discard(node)
                    levels[node] = 1 + max((levels[base] for base in bases), default=-1)
                    continue
                if node in active:
                    return None  # a cycle: no levels, every question walks the hierarchy
                active.add(node)
                stack.append((node, True))
                for base in bases:
                    if base in active:
                        return None
                    if base not in levels:
                        stack.append((base, False))
        return levels

    # -- types of receivers ----------------------------------------------------------------
    def class_from_annotation(self, module: str, scope: str, text: str) -> Target | None:
        """The first name in an annotation that is a class (inside or outside the package)."""
        external: Target | None = None
        for name in _IDENTIFIER.findall(text):
            if name.split(".")[0] in _ANNOTATION_NOISE:
                continue
            parts = tuple(name.split("."))
            found = self.resolve_dotted(module, scope, parts)
            if found is not None and self.symbols[found].kind == CLASS:
                return Target(found, "annotation")
            if external is None:
                outside = self.external_name(module, scope, parts)
                if outside is not None and not outside.startswith("builtins."):
                    external = Target(outside, "annotation", external=True)
        return external

    def attribute_type(self, cls: str, attribute: str) -> Target | None:
        """What ``self.<attribute>`` holds in ``cls``, from annotations and assignments."""
        key = (cls, attribute)
        if key in self._attribute_types:
            return self._attribute_types[key]
        self._attribute_types[key] = None
        result = self._attribute_type_uncached(cls, attribute)
        self._attribute_types[key] = result
        return result

    def _attribute_type_uncached(self, cls: str, attribute: str) -> Target | None:
        member = self.member(cls, attribute)
        if member is not None and self.symbols[member].kind == PROPERTY:
            returns = self.symbols[member].returns
            if returns:
                return self.class_from_annotation(self.module_of(member), member, returns)
            return None
        return self._first_in_mro(
            cls, self._type_memo[attribute], lambda owner: self._own_attribute_type(owner, attribute)
        )

    def _own_attribute_type(self, owner: str, attribute: str) -> Target | None:
        """What ``owner`` itself says ``self.<attribute>`` holds (annotation, then assigned value)."""
        module = self.module_of(owner)
        declared = self.members.get(owner, {}).get(attribute)
        if declared is not None and declared.kind == ATTRIBUTE and declared.annotation:
            found = self.class_from_annotation(module, owner, declared.annotation)
            if found is not None:
                return found
        writes = self.attribute_writes.get((owner, attribute), ())
        for access in writes:
            if access.annotation:
                found = self.class_from_annotation(module, access.function, access.annotation)
                if found is not None:
                    return found
        for access in writes:
            if access.value_is_call and access.value_parts:
                found = self.call_result_type(access.function, access.value_parts)
                if found is not None:
                    return found
            elif len(access.value_parts) == 1:
                local = self.locals.get(access.function, {}).get(access.value_parts[0])
                if local is not None:
                    found = self._local_type(module, access.function, access.value_parts[0], local)
                    if found is not None:
                        return found
        return None

    def call_result_type(self, function: str, parts: tuple[str, ...]) -> Target | None:
        """The class a call returns: the class itself for a constructor, else the return annotation."""
        if self._depth > 12:
            return None  # deep chains of inferred types are not worth following
        site = CallSite(caller=function, callee_text=".".join(parts), parts=parts, line=0)
        self._depth += 1
        try:
            targets = self.resolve_call(site)
        finally:
            self._depth -= 1
        for target in targets:
            if target.external or target.how in ("override", "unique-name", "attribute"):
                continue
            symbol = self.symbols.get(target.qualname)
            if symbol is None:
                continue
            if target.how == "constructor":
                cls = target.qualname if symbol.kind == CLASS else target.qualname.rpartition(".")[0]
                return Target(cls, "assignment")
            if symbol.returns:
                found = self.class_from_annotation(self.module_of(target.qualname), target.qualname, symbol.returns)
                if found is not None:
                    return Target(found.qualname, "annotation", found.external)
            return None
        return None

    def attribute_owner(self, cls: str, attribute: str) -> str:
        """The most basic class in ``cls``'s hierarchy that assigns ``self.<attribute>``."""
        if attribute not in self._written_names:
            return ""
        return self._last_in_mro(cls, self._owner_memo[attribute], lambda owner: (owner, attribute) in self.written)

    def _local_type(self, module: str, scope: str, name: str, binding: tuple[tuple[str, ...], str]) -> Target | None:
        key = (scope, name)
        if key in self._local_types:
            return self._local_types[key]
        self._local_types[key] = None  # ``x = x.f()`` refers to itself
        found = self._type_from_local(module, scope, binding)
        self._local_types[key] = found
        return found

    def _type_from_local(self, module: str, scope: str, binding: tuple[tuple[str, ...], str]) -> Target | None:
        parts, how = binding
        if how == "annotation":
            return self.class_from_annotation(module, scope, parts[0])
        return self.call_result_type(scope, parts)

    def receiver_type(self, module: str, site: CallSite, receiver: tuple[str, ...]) -> Target | None:
        """The class of ``a.b`` in ``a.b.m()``, as far as it can be told statically."""
        self_name, cls = self.self_name(site.caller)
        if self_name and receiver[0] == self_name and cls:
            current: Target | None = Target(cls, "self")
            rest = receiver[1:]
        else:
            local = self._local_binding(site.caller, receiver[0])
            if local is not None:
                current = self._local_type(module, local[0], receiver[0], local[1])
            else:
                found = self.resolve_name(module, site.caller, receiver[0])
                symbol = self.symbols.get(found) if found else None
                current = Target(found, "direct") if found and symbol and symbol.kind == CLASS else None
            rest = receiver[1:]
        for part in rest:
            if current is None or current.external:
                return None
            current = self.attribute_type(current.qualname, part)
        return current

    def _local_binding(self, function: str, name: str) -> tuple[str, tuple[tuple[str, ...], str]] | None:
        scope = function
        while scope and scope in self.symbols and self.symbols[scope].kind not in (MODULE, CLASS):
            binding = self.locals.get(scope, {}).get(name)
            if binding is not None:
                return scope, binding
            scope = scope.rpartition(".")[0]
        return None

    # -- constant key values ---------------------------------------------------------------
    def key_values(self, function: str, expression: str) -> tuple[str, ...]:
        """The string constants a key expression (``init_key``, ``self.done_key``) can hold."""
        self_name, cls = self.self_name(function)
        parts = expression.split(".")
        if len(parts) == 2:
            return self.attribute_constants(cls, parts[1]) if cls and parts[0] == self_name else ()
        values: set[str] = set()
        for binding in self.key_bindings.get(function, {}).get(expression, ()):
            if binding.how == "literal":
                values.add(binding.parts[0])
            elif cls and binding.how == "alias":
                values.update(self.attribute_constants(cls, binding.parts[1]))
            elif cls and binding.how == "loop":
                attribute = binding.parts[1]
                found = self.attribute_constants(cls, attribute)
                if not found and attribute.endswith("s"):
                    # ``for init_key in self.init_keys`` where init_keys is built from init_key
                    found = self.attribute_constants(cls, attribute[:-1])
                values.update(found)
        return tuple(sorted(values))

    def attribute_constants(self, cls: str, attribute: str) -> tuple[str, ...]:
        """String constants assigned to ``self.<attribute>`` (or the class attribute) in ``cls``."""
        key = (cls, attribute)
        if key in self._constants:
            return self._constants[key]
        self._constants[key] = ()
        found = self._first_in_mro(
            cls, self._constant_memo[attribute], lambda owner: self._own_constants(owner, attribute)
        )
        result: tuple[str, ...] = found or ()
        self._constants[key] = result
        return result

    def _own_constants(self, owner: str, attribute: str) -> tuple[str, ...] | None:
        """The string constants ``owner`` itself assigns to ``attribute``; ``None`` when none."""
        values: set[str] = set()
        declared = self.members.get(owner, {}).get(attribute)
        if declared is not None and declared.kind == ATTRIBUTE:
            values.update(_string_constants(declared.value))
        for access in self.attribute_writes.get((owner, attribute), ()):
            found = _string_constants(access.value)
            if not found and len(access.value_parts) == 1:
                for binding in self.key_bindings.get(access.function, {}).get(access.value_parts[0], ()):
                    if binding.how == "literal":
                        found += (binding.parts[0],)
            values.update(found)
        return tuple(sorted(values)) if values else None

    # -- attribute reads -------------------------------------------------------------------
    def resolve_read(self, site: CallSite) -> list[Target]:
        """``a.b.p`` read in ``site.caller``: its property getter (and overrides), if ``p`` is one."""
        module = self.module_of(site.caller)
        parts = site.parts
        name = parts[-1]
        receiver = self._receiver_memo(module, site, parts[:-1])
        if receiver is not None and not receiver.external:
            member = self.member(receiver.qualname, name)
            found: list[Target] = []
            if member is not None and self.symbols[member].kind == PROPERTY:
                found.append(Target(member, receiver.how))
            if member is None or self.symbols[member].kind in (PROPERTY, ATTRIBUTE):
                found.extend(
                    Target(o, "override")
                    for o in self.overrides(receiver.qualname, name)
                    if self.symbols[o].kind == PROPERTY
                )
            return found
        if receiver is None and _is_private(name) and self._is_local(module, site.caller, parts[0]):
            definers = [q for q in self.methods_by_name.get(name, ()) if self.symbols[q].kind == PROPERTY]
            if len(definers) == 1 and len(self.methods_by_name[name]) == 1:
                return [Target(definers[0], "unique-name")]
        return []

    def _receiver_memo(self, module: str, site: CallSite, receiver: tuple[str, ...]) -> Target | None:
        key = (site.caller, receiver)
        if key not in self._receivers:
            self._receivers[key] = self.receiver_type(module, site, receiver)
        return self._receivers[key]

    def _is_local(self, module: str, function: str, name: str) -> bool:
        """A name that is neither a global of the module nor an import (a parameter or local)."""
        return self.resolve_name(module, function, name) is None and self._import_target(module, function, name) is None

    # -- calls -----------------------------------------------------------------------------
    def resolve_call(self, site: CallSite) -> list[Target]:
        if site.attribute_read:
            return self.resolve_read(site)
        module = self.module_of(site.caller)
        parts = site.parts
        if not parts:
            return [Target(f"?:{site.callee_text}", "unresolved", external=True)]
        if parts[0] == "super()":
            return self._resolve_super(site)
        if parts == ("super",):
            return []  # the ``super()`` in ``super().m()``: the edge goes to ``m``
        self_name, cls = self.self_name(site.caller)
        if self_name and parts[0] == self_name and cls and len(parts) == 2:
            return self._resolve_self_method(cls, parts[1])
        if len(parts) == 1:
            return self._resolve_plain(module, site, parts[0])
        found = None
        if not (self_name and parts[0] == self_name) and self._local_binding(site.caller, parts[0]) is None:
            found = self.resolve_dotted(module, site.caller, parts)
        if found is not None:
            return [self._callable(found, "direct")]
        receiver = self.receiver_type(module, site, parts[:-1])
        method = parts[-1]
        if receiver is not None and not receiver.external:
            target = self.member(receiver.qualname, method)
            if target is not None:
                typed = [self._callable(target, receiver.how)]
                if self.symbols[target].kind in (METHOD, PROPERTY):
                    typed.extend(Target(o, "override") for o in self.overrides(receiver.qualname, method))
                return typed
        if receiver is not None and receiver.external:
            return [Target(f"{receiver.qualname}.{method}", receiver.how, external=True)]
        on_self = bool(self_name) and parts[0] == self_name
        if not on_self and self._local_binding(site.caller, parts[0]) is None:
            outside = self.external_name(module, site.caller, parts)
            if outside is not None:
                return [Target(outside, "external", external=True)]
        if receiver is None and (on_self or _is_private(method)):
            # ``self.env.m()`` with no type for ``self.env``, or ``x._m()``: the package's only
            # method of that name, if there is exactly one.
            unique = self._by_unique_name(method)
            if unique:
                return unique
        return [Target(f"?:{site.callee_text}", "unresolved", external=True)]

    def _callable(self, qualname: str, how: str) -> Target:
        symbol = self.symbols.get(qualname)
        if symbol is not None and symbol.kind == CLASS:
            init = self.member(qualname, "__init__")
            return Target(init or qualname, "constructor")
        return Target(qualname, how)

    def _resolve_plain(self, module: str, site: CallSite, name: str) -> list[Target]:
        found = self.resolve_name(module, site.caller, name)
        if found is not None:
            return [self._callable(found, "direct")]
        outside = self.external_name(module, site.caller, (name,))
        if outside is not None:
            return [Target(outside, "external", external=True)]
        return [Target(f"?:{name}", "unresolved", external=True)]

    def _resolve_self_method(self, cls: str, name: str) -> list[Target]:
        targets: list[Target] = []
        if name == "__class__":  # ``self.__class__(...)``: this class or any subclass
            constructors = [self._callable(cls, "constructor")]
            constructors.extend(Target(o, "override") for o in self.overrides(cls, "__init__"))
            return constructors
        found = self.member(cls, name)
        if found is not None:
            symbol = self.symbols[found]
            if symbol.kind == ATTRIBUTE:
                return [Target(found, "self")]
            targets.append(self._callable(found, "self") if symbol.kind == CLASS else Target(found, "self"))
            targets.extend(Target(override, "override") for override in self.overrides(cls, name))
            return targets
        owner = self.attribute_owner(cls, name)
        if owner:
            # ``self.fn()`` where ``self.fn`` holds a callable: an edge to the attribute.
            return [Target(f"{owner}.{name}", "attribute")]
        overrides = self.overrides(cls, name)
        if overrides:
            return [Target(override, "override") for override in overrides]
        return [Target(f"?:self.{name}", "unresolved", external=True)]

    def _resolve_super(self, site: CallSite) -> list[Target]:
        cls = self.enclosing_class(site.caller)
        if not cls or len(site.parts) < 2:
            return [Target(f"?:{site.callee_text}", "unresolved", external=True)]
        name = site.parts[1]
        for base in self.bases.get(cls, ()):
            found = self.member(base, name)  # the first definition after cls in its MRO
            if found is not None:
                return [Target(found, "super")]
        return [Target(f"?:super().{name}", "unresolved", external=True)]

    def _by_unique_name(self, name: str) -> list[Target]:
        if not name.isidentifier() or (name.startswith("__") and name.endswith("__")):
            return []
        definers = self.methods_by_name.get(name, [])
        if len(definers) == 1:
            return [Target(definers[0], "unique-name")]
        return []


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.endswith("__")


def _string_constants(text: str) -> tuple[str, ...]:
    """``"is_init"`` -> ("is_init",); ``["a", "b"]`` -> ("a", "b"); anything else -> ()."""
    if not text or text[0] not in "\"'[(":
        return ()
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, (list, tuple)) and all(isinstance(item, str) for item in value):
        return tuple(value)
    return ()


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
