"""Constant values of tensordict key expressions: the strings ``init_key`` or ``self.done_key`` can hold.

:class:`KeyConstants` is the layer of :class:`rlmap.model.resolve.Resolver` that turns a key written
as a name (a local bound to a literal, an alias of ``self.<attr>``, a loop over ``self.<attrs>``)
into the string constants assigned to it, searched along the class hierarchy.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from rlmap.index.records import ATTRIBUTE, ModuleIndex
from rlmap.model.mro import first_in_mro
from rlmap.model.symbols import SymbolTable


class KeyConstants(SymbolTable):
    """String constants of key expressions, from literals and ``self.<attr>`` assignments."""

    def __init__(self, modules: Iterable[ModuleIndex]) -> None:
        super().__init__(modules)
        self._constants: dict[tuple[str, str], tuple[str, ...]] = {}
        self._constant_memo: dict[str, dict[str, Any]] = defaultdict(dict)

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
                values.update(self._loop_constants(cls, binding.parts[1]))
        return tuple(sorted(values))

    def _loop_constants(self, cls: str, attribute: str) -> tuple[str, ...]:
        """``for init_key in self.init_keys``: the constants of ``init_keys``, else of ``init_key``."""
        found = self.attribute_constants(cls, attribute)
        if not found and attribute.endswith("s"):
            found = self.attribute_constants(cls, attribute[:-1])  # init_keys built from init_key
        return found

    def attribute_constants(self, cls: str, attribute: str) -> tuple[str, ...]:
        """String constants assigned to ``self.<attribute>`` (or the class attribute) in ``cls``."""
        key = (cls, attribute)
        if key in self._constants:
            return self._constants[key]
        self._constants[key] = ()
        found = first_in_mro(
            self.bases, cls, self._constant_memo[attribute], lambda owner: self._own_constants(owner, attribute)
        )
        result: tuple[str, ...] = found or ()
        self._constants[key] = result
        return result

    def _own_constants(self, owner: str, attribute: str) -> tuple[str, ...] | None:
        """The string constants ``owner`` itself assigns to ``attribute``; ``None`` when none."""
        values: set[str] = set()
        declared = self.members.get(owner, {}).get(attribute)
        if declared is not None and declared.kind == ATTRIBUTE:
            values.update(string_constants(declared.value))
        for access in self.attribute_writes.get((owner, attribute), ()):
            found = string_constants(access.value)
            if not found and len(access.value_parts) == 1:
                for binding in self.key_bindings.get(access.function, {}).get(access.value_parts[0], ()):
                    if binding.how == "literal":
                        found += (binding.parts[0],)
            values.update(found)
        return tuple(sorted(values)) if values else None


def string_constants(text: str) -> tuple[str, ...]:
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
