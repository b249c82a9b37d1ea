"""Calls and attribute accesses: every call site, attribute reads that may be property calls, ``self.x`` accesses.

A call is anchored on the line where its callee's name is written; the attribute read that is
a call's callee is not recorded again as a read.  Accesses to attributes of ``self`` (or of
whatever the method's first parameter is called) are recorded with their kind, the enclosing
guards and, for writes, the assigned expression.
"""

from __future__ import annotations

import libcst as cst

from rlmap.index import lines as L
from rlmap.index.keys import KeyVisitor
from rlmap.index.records import FUNCTION, MUTATE, READ, WRITE, AttributeAccess, CallSite
from rlmap.index.syntax import call_name, compact_text, dotted_parts

# Methods that change the container they are called on (list, dict, set, deque).
_MUTATORS = frozenset(
    {"append", "extend", "insert", "remove", "pop", "popitem", "clear", "update", "setdefault", "add", "discard",
     "appendleft", "extendleft", "popleft", "sort", "reverse"}
)  # fmt: skip


# Builtins that only read what they are given: passing ``self.x`` to them is a read.
_READS_ONLY = frozenset(
    {"print", "len", "isinstance", "issubclass", "getattr", "hasattr", "id", "type", "repr", "str", "bool",
     "int", "float", "list", "tuple", "dict", "set", "frozenset", "sorted", "any", "all", "min", "max",
     "sum", "enumerate", "zip", "range", "iter", "hash", "format", "callable", "vars", "dir", "abs"}
)  # fmt: skip


class AccessVisitor(KeyVisitor):
    """Handlers for calls and attributes; a call's key arguments go to :class:`KeyVisitor`."""

    def visit_attribute(
        self,
        node: cst.Attribute,
        kind: str = READ,
        value: cst.BaseExpression | None = None,
        value_text: str = "",
        annotation: str = "",
    ) -> None:
        line, _, _ = self.position(node, L.ATTR, node.attr.value)
        scope = self.scope
        is_callee, self.callee = node is self.callee, None
        operation = ""
        if self.mutated is not None and node is self.mutated[0]:
            kind, operation, self.mutated = MUTATE, self.mutated[1], None
        elif kind == READ and self.handed is not None and node is self.handed[0]:
            _, kind, operation = self.handed
            self.handed = None
        on_self = bool(scope.self_name) and type(node.value) is cst.Name and node.value.value == scope.self_name
        if kind == READ and not is_callee and not on_self and scope.kind == FUNCTION:
            self.record_attribute_read(node, line)
        if on_self:
            self.record_self_access(node, kind, line, value, value_text, annotation, operation)
        self.walk(node.value)

    def record_attribute_read(self, node: cst.Attribute, line: int) -> None:
        """``env.device``: a read that becomes a call edge if it resolves to a property getter."""
        parts = dotted_parts(node)
        if len(parts) > 1 and parts[0] != "super()":
            self.calls.append(
                CallSite(
                    caller=self.scope.qualname,
                    callee_text=".".join(parts),
                    parts=parts,
                    line=line,
                    guards=tuple(self.guards),
                    attribute_read=True,
                )
            )

    def record_self_access(
        self,
        node: cst.Attribute,
        kind: str,
        line: int,
        value: cst.BaseExpression | None,
        value_text: str,
        annotation: str,
        operation: str = "",
    ) -> None:
        value_parts: tuple[str, ...] = ()
        is_call = False
        if value is not None:
            if type(value) is cst.Call:
                value_parts, is_call = dotted_parts(value.func), True  # type: ignore[attr-defined]
            else:
                value_parts = dotted_parts(value)
        self.attributes.append(
            AttributeAccess(
                owner=self.scope.owner,
                attribute=node.attr.value,
                kind=kind,
                function=self.function_scope(),
                line=line,
                guards=tuple(self.guards),
                value=value_text,
                value_parts=value_parts,
                value_is_call=is_call,
                annotation=annotation,
                operation=operation,
            )
        )

    def mutates(self, method: str, call: cst.Call) -> bool:
        """Whether calling ``method`` changes its receiver in place: the common containers'
        mutators, torch's trailing-underscore convention (``zero_``), an extension's methods that
        write a key (``set``), and any call passing ``inplace=True``."""
        if method in _MUTATORS or (method.endswith("_") and not method.startswith("_")):
            return True
        inplace = any(
            arg.keyword is not None and arg.keyword.value == "inplace" and isinstance(arg.value, cst.Name)
            and arg.value.value == "True"
            for arg in call.args
        )  # fmt: skip
        vocabulary = self.vocabulary  # a method that writes a key changes its receiver
        if vocabulary is not None and vocabulary.methods.get(method) == WRITE:
            return True
        return inplace  # ``exclude`` returns a copy unless told otherwise

    def visit_call(self, node: cst.Call) -> None:
        func = node.func
        # a call is anchored where its callee's name is written; ``func_text()`` makes its text
        start, end, (func_text, line) = self.position(node, L.CALL, call_name(func))
        parts = dotted_parts(func)
        self.calls.append(
            CallSite(
                caller=self.function_scope(),
                callee_text=".".join(parts) if parts else compact_text(func, func_text()),
                parts=parts,
                line=line,
                guards=tuple(self.guards),
            )
        )
        self.record_call_keys(node, line, start, end)
        self.callee = func  # the attribute read that is this call's callee is not a read
        if type(func) is cst.Attribute and self.mutates(func.attr.value, node):
            self.mutated = (func.value, func.attr.value)
        self.walk(func)
        name = ".".join(parts) if parts else "a call"
        handing = name not in _READS_ONLY
        for arg in node.args:
            value = arg.value
            if handing and type(value) is cst.Attribute and type(value.value) is cst.Name and not arg.star:
                # ``f(self.x)`` may change self.x in place; ``g(..., out=self.x)`` does
                keyword = arg.keyword.value if arg.keyword is not None else ""
                kind, how = (MUTATE, f"out= of {name}") if keyword == "out" else (READ, f"passed to {name}")
                self.handed = (value, kind, how)
            self.walk(arg)
            self.handed = None
