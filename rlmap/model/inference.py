"""Static type inference of receivers: what ``self.x``, a local or a call's result holds.

:class:`TypeInference` is the third layer of :class:`rlmap.model.resolve.Resolver`.  A type is
read from annotations (of attributes, locals and return values) and from assignments
(``self.x = Cls(...)``, ``x = f()``); it is a :class:`~rlmap.model.target.Target` whose ``how``
says which, and may be a class outside the package.  Nothing is imported or run.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from rlmap.index.records import ATTRIBUTE, CLASS, MODULE, PROPERTY, CallSite, ModuleIndex
from rlmap.model.hierarchy import ClassHierarchy
from rlmap.model.mro import first_in_mro
from rlmap.model.target import Target

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")
_ANNOTATION_NOISE = frozenset(
    {"None", "Optional", "Union", "typing", "type", "Type", "ClassVar", "Final", "Any", "str", "int"}
)
_CLASS_NAME = re.compile(r"_?[A-Z][A-Za-z0-9]*[a-z][A-Za-z0-9]*$")  # CapWords, not a CONSTANT
_SELF = frozenset({"Self", "typing.Self", "typing_extensions.Self"})
_ISINSTANCE = re.compile(r"isinstance\(\s*([A-Za-z_][A-Za-z0-9_]*)\s*,\s*([A-Za-z_][A-Za-z0-9_.]*)\s*\)")
_MAX_CALL_DEPTH = 12  # deep chains of inferred types are not worth following
_UNTYPED = frozenset({"override", "unique-name", "attribute"})  # targets too uncertain to type by

Binding = tuple[tuple[str, ...], str]  # (parts, how) of a local assignment or annotation


class TypeInference(ClassHierarchy):
    """The class of an attribute, a local, a call's result or a receiver, as far as it can be told."""

    def __init__(self, modules: Iterable[ModuleIndex]) -> None:
        super().__init__(modules)
        self._type_memo: dict[str, dict[str, Any]] = defaultdict(dict)
        self._attribute_types: dict[tuple[str, str], Target | None] = {}
        self._local_types: dict[tuple[str, str], Target | None] = {}
        self._depth = 0

    def resolve_call(self, site: CallSite) -> list[Target]:
        """The targets of a call (see :class:`rlmap.model.calls.CallResolution`)."""
        raise NotImplementedError

    def class_from_annotation(self, module: str, scope: str, text: str) -> Target | None:
        """The first name in an annotation that is a class (inside or outside the package).

        A ``Callable[...]`` annotation types nothing: the value is a function, whose result
        the annotation's arguments describe, not an instance of ``Callable`` or of them.
        ``Self`` (``typing.Self``) in a method is the method's class.
        """
        external: Target | None = None
        for name in _IDENTIFIER.findall(text):
            if name in _SELF:
                cls = self.enclosing_class(scope)
                if cls:
                    return Target(cls, "annotation")
                continue
            if name.split(".")[0] in _ANNOTATION_NOISE:
                continue
            if name.rsplit(".", 1)[-1] == "Callable":
                return None
            parts = tuple(name.split("."))
            found = self.resolve_dotted(module, scope, parts) or self._nested_class(scope, parts)
            if found is not None and self.symbols[found].kind == CLASS:
                return Target(found, "annotation")
            if external is None:
                outside = self.external_name(module, scope, parts)
                if outside is not None and not outside.startswith("builtins."):
                    external = Target(outside, "annotation", external=True)
        return external

    def _nested_class(self, scope: str, parts: tuple[str, ...]) -> str | None:
        """A class nested in the class whose body or method ``scope`` is, named by an annotation
        there (``def tensor_keys(self) -> _AcceptedKeys``, ``tensor_keys: _AcceptedKeys``): at run
        time a method does not see its class's names, but a type checker reads an annotation in
        the class's scope."""
        symbol = self.symbols.get(scope)
        cls = scope if symbol is not None and symbol.kind == CLASS else self.enclosing_class(scope)
        if not cls:
            return None
        found = self.member(cls, parts[0])
        return self._follow_members(found, parts[1:], 0) if found is not None else None

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
            # ``tensor_keys: _AcceptedKeys`` in a subclass narrows what the inherited property returns
            declared = first_in_mro(
                self.bases,
                cls,
                self._type_memo[attribute + " (declared)"],
                lambda owner: self._declared_attribute_type(owner, attribute),
            )
            if declared is not None:
                return declared
            returns = self.symbols[member].returns
            if returns:
                return self.class_from_annotation(self.module_of(member), member, returns)
            return None
        return first_in_mro(
            self.bases, cls, self._type_memo[attribute], lambda owner: self._own_attribute_type(owner, attribute)
        )

    def _own_attribute_type(self, owner: str, attribute: str) -> Target | None:
        """What ``owner`` itself says ``self.<attribute>`` holds (annotation, then assigned value)."""
        return self._declared_attribute_type(owner, attribute) or self._assigned_attribute_type(owner, attribute)

    def _declared_attribute_type(self, owner: str, attribute: str) -> Target | None:
        """The class an annotation of ``self.<attribute>`` in ``owner`` names (body, then methods)."""
        module = self.module_of(owner)
        declared = self.members.get(owner, {}).get(attribute)
        if declared is not None and declared.kind == ATTRIBUTE and declared.annotation:
            found = self.class_from_annotation(module, owner, declared.annotation)
            if found is not None:
                return found
        for access in self.attribute_writes.get((owner, attribute), ()):
            if access.annotation:
                found = self.class_from_annotation(module, access.function, access.annotation)
                if found is not None:
                    return found
        return None

    def _assigned_attribute_type(self, owner: str, attribute: str) -> Target | None:
        """The class of a value ``owner`` assigns to ``self.<attribute>``: a call's result or a local."""
        for access in self.attribute_writes.get((owner, attribute), ()):
            found = None
            if access.value_is_call and access.value_parts:
                found = self.call_result_type(access.function, access.value_parts)
            elif len(access.value_parts) == 1:
                local = self.locals.get(access.function, {}).get(access.value_parts[0])
                if local is not None:
                    found = self._local_type(self.module_of(owner), access.function, access.value_parts[0], local)
            if found is not None:
                return found
        return None

    def call_result_type(self, function: str, parts: tuple[str, ...]) -> Target | None:
        """The class a call returns: the class itself for a constructor, else the return annotation."""
        if self._depth > _MAX_CALL_DEPTH:
            return None
        site = CallSite(caller=function, callee_text=".".join(parts), parts=parts, line=0)
        self._depth += 1
        try:
            targets = self.resolve_call(site)
        finally:
            self._depth -= 1
        for target in targets:
            if target.external and target.how == "external" and _CLASS_NAME.match(target.qualname.rpartition(".")[2]):
                # ``threading.Thread(...)``: an instance of the outside class (by its CapWords name), so
                # that ``self._thread.start()`` is ``threading.Thread.start``, not a same-named method here
                return Target(target.qualname, "assignment", external=True)
            if target.external or target.how in _UNTYPED:
                continue
            symbol = self.symbols.get(target.qualname)
            if symbol is None:
                continue
            if target.how == "constructor":
                # ``C()`` is a ``C``, whichever base defines the ``__init__`` it runs
                cls = target.cls or (target.qualname if symbol.kind == CLASS else target.qualname.rpartition(".")[0])
                return Target(cls, "assignment")
            if symbol.returns:
                found = self.class_from_annotation(self.module_of(target.qualname), target.qualname, symbol.returns)
                if found is not None:
                    return Target(found.qualname, "annotation", found.external)
            return None
        return None

    def _local_type(self, module: str, scope: str, name: str, binding: Binding) -> Target | None:
        key = (scope, name)
        if key in self._local_types:
            return self._local_types[key]
        self._local_types[key] = None  # ``x = x.f()`` refers to itself
        parts, how = binding
        if how == "annotation":
            found = self.class_from_annotation(module, scope, parts[0])
        else:
            found = self.call_result_type(scope, parts)
        self._local_types[key] = found
        return found

    def receiver_type(self, module: str, site: CallSite, receiver: tuple[str, ...]) -> Target | None:
        """The class of ``a.b`` in ``a.b.m()``, as far as it can be told statically."""
        current = self._head_type(module, site, receiver[0])
        for part in receiver[1:]:
            if current is None or current.external:
                return None
            current = self.attribute_type(current.qualname, part)
        return current

    def _head_type(self, module: str, site: CallSite, name: str) -> Target | None:
        """The class of the first name of a receiver: ``self``, a typed local, or a class name."""
        self_name, cls = self.self_name(site.caller)
        narrowed = self._narrowed(module, site, name)
        if narrowed is not None:
            return narrowed
        if self_name and name == self_name and cls:
            return Target(cls, "self")
        local = self.local_binding(site.caller, name)
        if local is not None:
            return self._local_type(module, local[0], name, local[1])
        found = self.resolve_name(module, site.caller, name)
        return Target(found, "direct") if found and self.is_kind(found, CLASS) else None

    def _narrowed(self, module: str, site: CallSite, name: str) -> Target | None:
        """The class an enclosing ``if isinstance(name, C):`` guard narrows ``name`` to (the innermost)."""
        for guard in reversed(site.guards):
            if not guard.startswith(("if ", "elif ", "while ")) or f"isinstance({name}," not in guard:
                continue
            for match in _ISINSTANCE.finditer(guard):
                negated = guard[: match.start()].rstrip().endswith("not")
                if match.group(1) != name or negated:
                    continue
                found = self.resolve_dotted(module, site.caller, tuple(match.group(2).split(".")))
                if found is not None and self.is_kind(found, CLASS):
                    return Target(found, "narrowed")
        return None

    def local_binding(self, function: str, name: str) -> tuple[str, Binding] | None:
        """(scope, binding) of ``name`` as a local of ``function`` or of a function enclosing it."""
        scope = function
        while scope and scope in self.symbols and self.symbols[scope].kind not in (MODULE, CLASS):
            binding = self.locals.get(scope, {}).get(name)
            if binding is not None:
                return scope, binding
            scope = scope.rpartition(".")[0]
        return None
