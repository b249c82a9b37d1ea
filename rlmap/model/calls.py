"""Call resolution: the targets of one call site or property read, each with how it was found.

:class:`CallResolution` is the last layer of :class:`rlmap.model.resolve.Resolver`: it dispatches a
call by its shape (``super().m()``, ``self.m()``, ``f()``, ``a.b.m()``) to the symbol table, the
class hierarchy and type inference below it.  The ``how`` vocabulary is in :mod:`rlmap.model.target`.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable

from rlmap.index.records import ATTRIBUTE, CLASS, METHOD, PROPERTY, CallSite, ModuleIndex
from rlmap.index.syntax import mapping_annotation
from rlmap.model.inference import TypeInference
from rlmap.model.mro import mro
from rlmap.model.target import Target, unresolved


class CallResolution(TypeInference):
    """``resolve_call(site)`` and ``resolve_read(site)``."""

    def __init__(self, modules: Iterable[ModuleIndex]) -> None:
        super().__init__(modules)
        self._receivers: dict[tuple[str, tuple[str, ...], tuple[str, ...]], Target | None] = {}
        # ``f()`` in a scope and ``self.m()`` in a class: functions of the tables alone, asked
        # again by every call site that writes them
        self._plain: dict[tuple[str, str], tuple[Target, ...]] = {}
        self._on_self: dict[tuple[str, str], tuple[Target, ...]] = {}
        self._imports_of: dict[str, frozenset[str]] = {}
        self._called_attribute: dict[tuple[str, str], tuple[Target, ...]] = {}

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
                found.extend(self._property_overrides(receiver.qualname, name))
            return found
        if receiver is None and _is_private(name) and self._is_local(module, site.caller, parts[0]):
            definers = [q for q in self.methods_by_name.get(name, ()) if self.symbols[q].kind == PROPERTY]
            if (
                len(definers) == 1
                and len(self.methods_by_name[name]) == 1
                and self._guessable(definers[0], site.caller)
            ):
                return [Target(definers[0], "unique-name")]
        return []

    def _property_overrides(self, cls: str, name: str) -> list[Target]:
        return [Target(o, "override") for o in self.overrides(cls, name) if self.symbols[o].kind == PROPERTY]

    def _receiver_memo(self, module: str, site: CallSite, receiver: tuple[str, ...]) -> Target | None:
        guards = site.guards
        if guards and not any("isinstance(" in guard for guard in guards):
            guards = ()  # guards that narrow nothing (see TypeInference._narrowed): the same type
        key = (site.caller, receiver, guards)
        if key not in self._receivers:
            self._receivers[key] = self.receiver_type(module, site, receiver)
        return self._receivers[key]

    def _is_local(self, module: str, function: str, name: str) -> bool:
        """A name that is neither a global of the module nor an import (a parameter or local)."""
        return self.resolve_name(module, function, name) is None and self.import_target(module, function, name) is None

    # -- calls -----------------------------------------------------------------------------
    def resolve_call(self, site: CallSite) -> list[Target]:
        """The targets of ``site`` (a property read goes to :meth:`resolve_read`)."""
        if site.attribute_read:
            return self.resolve_read(site)
        parts = site.parts
        if not parts:
            return [unresolved(site.callee_text)]
        if parts[0] == "super()":
            return self._resolve_super(site)
        if parts == ("super",):
            return []  # the ``super()`` in ``super().m()``: the edge goes to ``m``
        module = self.module_of(site.caller)
        self_name, cls = self.self_name(site.caller)
        on_self = bool(self_name) and parts[0] == self_name
        if on_self and cls and len(parts) == 2:
            key = (cls, parts[1])
            found = self._on_self.get(key)
            if found is None:
                found = self._on_self[key] = tuple(self._resolve_self_method(cls, parts[1]))
            if found and found[0].how == "attribute" and not _type_tested(site):
                # ``self.loss_module(batch)`` with ``self.loss_module: LossModule``
                called = self._called_attribute.get(key)
                if called is None:
                    typed = None if self._declared_callable(*key) else self.attribute_type(*key)
                    called = self._called_attribute[key] = tuple(self._instance_called(typed))
                return [found[0], *called, *found[1:]]
            return list(found)
        if len(parts) == 1:
            key = (site.caller, parts[0])
            found = self._plain.get(key)
            if found is None:
                found = self._plain[key] = tuple(self._resolve_plain(module, site, parts[0]))
            return list(found)
        return self._resolve_attribute_call(module, site, on_self)

    def _resolve_attribute_call(self, module: str, site: CallSite, on_self: bool) -> list[Target]:
        """``a.b.m()``: a dotted global, else a method of the receiver's type, else a guess."""
        parts = site.parts
        is_global = not on_self and self.local_binding(site.caller, parts[0]) is None
        if is_global:
            found = self.resolve_dotted(module, site.caller, parts)
            if found is not None:
                return [self._callable(found, "direct")]
        # a real site's receiver is asked once per scope and guards; a site made up to type a
        # call's result (deeper in, where inference stops at a depth) is not kept
        receiver = (
            self._receiver_memo(module, site, parts[:-1])
            if self._depth == 0
            else self.receiver_type(module, site, parts[:-1])
        )
        method = parts[-1]
        typed = self._on_receiver(receiver, method) if receiver is not None else []
        if typed:
            return typed
        if is_global:
            outside = self.external_name(module, site.caller, parts)
            if outside is not None:
                return [Target(outside, "external", external=True)]
        if receiver is None and (on_self or _is_private(method)):
            # ``self.env.m()`` with no type for ``self.env``, or ``x._m()``: the package's only
            # method of that name, if there is exactly one.
            unique = self._by_unique_name(method, site.caller)
            if unique:
                return unique
        return [unresolved(site.callee_text)]

    def _on_receiver(self, receiver: Target, method: str) -> list[Target]:
        """``method`` on a receiver of known type (and its overrides); ``[]`` when not a member."""
        if receiver.external:
            return [Target(f"{receiver.qualname}.{method}", receiver.how, external=True)]
        target = self.member(receiver.qualname, method)
        if target is None:
            # the declared type lacks the method: the subclasses that define it (``self.input_spec.get``
            # where only ``Composite`` has ``get``), marked as such
            return [Target(o, "subclass") for o in self.overrides(receiver.qualname, method)]
        typed = [self._callable(target, receiver.how)]
        if self.symbols[target].kind in (METHOD, PROPERTY, ATTRIBUTE):
            typed.extend(Target(o, "override") for o in self.overrides(receiver.qualname, method))
        return typed

    def _callable(self, qualname: str, how: str) -> Target:
        if self.is_kind(qualname, CLASS):
            init = self.member(qualname, "__init__")
            return Target(init or qualname, "constructor", cls=qualname)
        return Target(qualname, how)

    def _resolve_plain(self, module: str, site: CallSite, name: str) -> list[Target]:
        found = self.resolve_name(module, site.caller, name)
        if found is not None:
            return [self._callable(found, "direct")]
        outside = self.external_name(module, site.caller, (name,))
        if outside is not None:
            return [Target(outside, "external", external=True)]
        local = self.local_binding(site.caller, name)
        if local is not None and not _type_tested(site) and not _admits_callable(local[1]):
            # ``loss_module(batch)``, a parameter ``loss_module: LossModule``
            called = self._instance_called(self.receiver_type(module, site, (name,)))
            if called:
                return called
        return [unresolved(name)]

    def _declared_callable(self, cls: str, attribute: str) -> bool:
        """Whether an annotation of ``self.<attribute>`` in ``cls`` or a base, or of the parameter
        assigned to it, admits a callable (``EnvBase | Callable[[], EnvBase]``): calling it may
        call a factory, not an instance of the class it also names."""
        for owner in mro(self.bases, cls):
            declared = self.members.get(owner, {}).get(attribute)
            if declared is not None and declared.kind == ATTRIBUTE and _CALLABLE.search(declared.annotation or ""):
                return True
            for access in self.attribute_writes.get((owner, attribute), ()):
                if _CALLABLE.search(access.annotation or ""):
                    return True
                if len(access.value_parts) == 1:
                    local = self.locals.get(access.function, {}).get(access.value_parts[0])
                    if local is not None and _admits_callable(local):
                        return True
        return False

    def returns_mapping(self, function: str, parts: tuple[str, ...]) -> bool:
        """Whether the call ``parts(...)`` made in ``function`` returns a plain mapping, by the
        return annotation of what it resolves to (``self._run_eval(...)`` with ``-> dict[str, Any]``)."""
        site = CallSite(caller=function, callee_text=".".join(parts), parts=parts, line=0)
        for target in self.resolve_call(site):
            symbol = self.symbols.get(target.qualname) if not target.external else None
            if symbol is not None and symbol.returns and target.how != "constructor":
                return mapping_annotation(symbol.returns)
        return False

    def _instance_called(self, receiver: Target | None) -> list[Target]:
        """What calling an instance of ``receiver``'s class runs: its ``__call__`` defined in the
        package, else its ``forward`` (``torch.nn.Module.__call__`` runs it), with the overrides
        of either; ``[]`` when the type is not a class of the package, or neither is its member."""
        if receiver is None or receiver.external or not self.is_kind(receiver.qualname, CLASS):
            return []
        if any(_base_name(base) == "Protocol" for base in self.symbols[receiver.qualname].bases):
            return []  # a protocol's ``__call__`` is a stub: what runs is a class that need not derive from it
        for method in ("__call__", "forward"):
            found = self.member(receiver.qualname, method)
            if found is not None and self.symbols[found].kind == METHOD:
                return [
                    Target(found, "instance"),
                    *(Target(o, "override") for o in self.overrides(receiver.qualname, method)),
                ]
        return []  # (not every subclass's ``forward``: a module typed by a base outside the package)

    def _resolve_self_method(self, cls: str, name: str) -> list[Target]:
        if name == "__class__":  # ``self.__class__(...)``: this class or any subclass
            constructors = [self._callable(cls, "constructor")]
            constructors.extend(Target(o, "override") for o in self.overrides(cls, "__init__"))
            return constructors
        found = self.member(cls, name)
        if found is not None:
            kind = self.symbols[found].kind
            targets = [self._callable(found, "self") if kind == CLASS else Target(found, "self")]
            # a subclass may define the name as a method, over a base's attribute too
            targets.extend(Target(override, "override") for override in self.overrides(cls, name))
            return targets
        owner = self.attribute_owner(cls, name)
        if owner:
            # ``self.fn()`` where ``self.fn`` holds a callable: an edge to the attribute (and, when
            # its type is known, to what calling one runs: see resolve_call).
            found_attribute = [Target(f"{owner}.{name}", "attribute")]
            return found_attribute + [Target(override, "override") for override in self.overrides(cls, name)]
        overrides = self.overrides(cls, name)
        if overrides:
            return [Target(override, "override") for override in overrides]
        return [unresolved(f"self.{name}")]

    def _resolve_super(self, site: CallSite) -> list[Target]:
        cls = self.enclosing_class(site.caller)
        if not cls or len(site.parts) < 2:
            return [unresolved(site.callee_text)]
        name = site.parts[1]
        for base in self.bases.get(cls, ()):
            found = self.member(base, name)  # the first definition after cls in its MRO
            if found is not None:
                return [Target(found, "super")]
        return [unresolved(f"super().{name}")]

    def _by_unique_name(self, name: str, caller: str) -> list[Target]:
        if not name.isidentifier() or (name.startswith("__") and name.endswith("__")):
            return []
        definers = self.methods_by_name.get(name, [])
        if len(definers) == 1 and self._guessable(definers[0], caller):
            return [Target(definers[0], "unique-name")]
        return []

    def _guessable(self, definer: str, caller: str) -> bool:
        """Whether the package's only method of a name is a fair guess for a call of that name on a
        receiver of unknown type in ``caller``.  Not when the name is also a method of a type
        every program holds (``format`` of ``str``, ``setdefault`` of ``dict``, ``acquire`` of a
        lock), nor when the definer's class has a base from outside the package, whose method
        it may override (``LossModule.parameters``, ``torch.nn.Module``'s, called on any module).
        Into another package (a companion), only a private name, and only from a package that
        imports that one: torchrl's tensors are not tensordict's ``TensorDictBase.exp``, and
        tensordict never calls torchrl."""
        name = definer.rpartition(".")[2]
        public = not _is_private(name)
        if public and name in _COMMON_METHODS:
            return False
        home, there = caller.partition(".")[0], definer.partition(".")[0]
        if home != there and (public or there not in self._imported_packages(home)):
            return False
        return not (public and self._outside_ancestry(definer.rpartition(".")[0]))

    def _imported_packages(self, package: str) -> frozenset[str]:
        """The top-level packages the modules of ``package`` import from."""
        found = self._imports_of.get(package)
        if found is None:
            found = self._imports_of[package] = frozenset(
                target.partition(".")[0]
                for scope, names in self.imports.items()
                if scope.partition(".")[0] == package
                for target in names.values()
            )
        return found

    def _outside_ancestry(self, cls: str) -> bool:
        """Whether ``cls`` or a class it derives from in the package names a base the package does
        not define (``object``, ``ABC``, ``Generic[...]`` and ``Protocol`` aside)."""
        for current in mro(self.bases, cls):
            symbol = self.symbols.get(current)
            if symbol is None or symbol.kind != CLASS:
                continue
            named = [text for text in symbol.bases if _base_name(text) not in _NEUTRAL_BASES]
            if len(named) > len([base for base in self.bases.get(current, ()) if base]):
                return True
        return False


# Methods of the types any Python program holds: a call of one of these names on a value of
# unknown type is no sign that it reaches the package's own method of that name.  (Read from this
# interpreter's own types, never from the analysed code.)
_COMMON_METHODS = frozenset(
    name
    for kind in (
        str,
        bytes,
        bytearray,
        dict,
        list,
        set,
        frozenset,
        tuple,
        int,
        float,
        complex,
        type(threading.Lock()),
        threading.Event,
        threading.Condition,
        threading.Semaphore,
        threading.Thread,
    )
    for name in dir(kind)
    if not name.startswith("_")
)
_NEUTRAL_BASES = frozenset({"object", "ABC", "Generic", "Protocol"})


def _base_name(text: str) -> str:
    """A base as written, by its last name: ``typing.Protocol[T]`` -> ``Protocol``."""
    return text.split("[", 1)[0].rpartition(".")[2]


_CALLABLE = re.compile(r"\b[Cc]allable\b")


def _admits_callable(binding: tuple[tuple[str, ...], str]) -> bool:
    """Whether a local's annotation admits a callable (``env_fun: EnvBase | Callable``)."""
    parts, how = binding
    return how == "annotation" and bool(parts) and _CALLABLE.search(parts[0]) is not None


def _type_tested(site: CallSite) -> bool:
    """Whether a guard of ``site`` tests the type of the object it calls (``if not
    isinstance(env_fun, EnvBase): env_fun()``, ``if callable(fn)``): its declared type is in doubt
    there, and what calling it runs is left to the value flow."""
    text = site.callee_text
    return any(f"isinstance({text}," in guard or f"callable({text})" in guard for guard in site.guards)


def _is_private(name: str) -> bool:
    """``_helper`` and ``__mangled``, not ``__dunder__``: the resolver's one test of privacy.

    It counts a name-mangled ``__x`` as private; the pages and the audit test dotted names
    (one part starting with a single underscore) and do not.
    """
    return name.startswith("_") and not name.endswith("__")
