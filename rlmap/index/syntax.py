"""Pure helpers over libcst nodes: child order, dotted names, literals, parameters, docstrings.

Nothing here records anything: each function reads a node and returns plain values, so the
visitor modules (:mod:`rlmap.index.walker` and the modules built on it) share one reading of
the syntax.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

import libcst as cst

# Fields that never hold anything the index reads: punctuation and whitespace.
_SKIPPED_FIELDS = frozenset(
    {
        "lpar",
        "rpar",
        "comma",
        "semicolon",
        "leading_lines",
        "lines_after_decorators",
        "trailing_whitespace",
        "header",
        "footer",
        "equal",
        "colon",
        "dot",
        "star",
        "asynchronous",
        "operator",
        "whitespace_after_at",
        "lbracket",
        "rbracket",
        "lbrace",
        "rbrace",
        "first_line",
        "empty_lines",
        "indent",
        "newline",
    }
)
# Node types whose declared field order differs from source order.
_FIELD_ORDER: dict[type, tuple[str, ...]] = {
    cst.FunctionDef: ("decorators", "name", "params", "returns", "body"),
    cst.ClassDef: ("decorators", "name", "bases", "keywords", "body"),
    cst.IfExp: ("body", "test", "orelse"),
    cst.Parameters: ("posonly_params", "params", "star_arg", "kwonly_params", "star_kwarg"),
}
_FIELDS_CACHE: dict[type, tuple[str, ...]] = {}

_EXITS = (cst.Return, cst.Raise, cst.Continue, cst.Break)
_PROPERTY_DECORATORS = frozenset({"property", "cached_property", "setter", "getter", "deleter"})


def child_fields(node_type: type) -> tuple[str, ...]:
    """The fields of a libcst node type that may hold code, in source order (not its text:
    ``Name.value`` is a ``str``)."""
    names = _FIELDS_CACHE.get(node_type)
    if names is None:
        names = _FIELD_ORDER.get(node_type) or tuple(
            field.name
            for field in dataclasses.fields(node_type)
            if not field.name.startswith("whitespace") and field.name not in _SKIPPED_FIELDS and field.type is not str
        )
        _FIELDS_CACHE[node_type] = names
    return names


def _node_types() -> frozenset[type]:
    """Every libcst node class (a set lookup by ``type(value)`` is far cheaper than
    ``isinstance(value, CSTNode)``, which goes through ``ABCMeta`` on every call)."""
    found: set[type] = set()
    pending: list[type] = [cst.CSTNode]
    while pending:
        subclasses: list[type] = pending.pop().__subclasses__()
        for subclass in subclasses:
            if subclass not in found:
                found.add(subclass)
                pending.append(subclass)
    return frozenset(found)


def walked_types(handled: Iterable[type]) -> frozenset[type]:
    """The libcst node types a walk must enter: those it handles, and those whose fields may
    hold code (a ``Name`` or a number holds none, so a walk need not enter it)."""
    handled = set(handled)
    return frozenset(
        kind for kind in _node_types() if kind in handled or (dataclasses.is_dataclass(kind) and child_fields(kind))
    )


def dotted_parts(node: cst.BaseExpression) -> tuple[str, ...]:
    """``a.b.c`` -> ``("a", "b", "c")``; ``super().m`` -> ``("super()", "m")``; else ``()``.

    Nodes are told by ``type(...) is``: libcst's node classes have no subclasses, and
    ``isinstance`` goes through ``ABCMeta`` (this runs for most expressions of a module)."""
    parts: list[str] = []
    kind = type(node)
    while kind is cst.Attribute:
        parts.append(node.attr.value)  # type: ignore[attr-defined]
        node = node.value  # type: ignore[attr-defined]
        kind = type(node)
    if kind is cst.Name:
        parts.append(node.value)  # type: ignore[attr-defined]
    elif kind is cst.Call and type(node.func) is cst.Name and node.func.value == "super":  # type: ignore[attr-defined]
        parts.append("super()")
    else:
        return ()
    parts.reverse()
    return tuple(parts)


def compact_text(node: cst.BaseExpression, fallback: str) -> str:
    """A callee expression with argument lists and subscripts elided: ``f(...).g``."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{compact_text(node.value, fallback)}.{node.attr.value}"
    if isinstance(node, cst.Call):
        return f"{compact_text(node.func, fallback)}(...)"
    if isinstance(node, cst.Subscript):
        return f"{compact_text(node.value, fallback)}[...]"
    return fallback if len(fallback) <= 40 else "<expression>"


def string_value(node: cst.BaseExpression) -> str | None:
    """The value of a string literal (plain or implicitly concatenated); ``None`` for anything else."""
    if isinstance(node, (cst.SimpleString, cst.ConcatenatedString)):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    return None


def literal_strings(node: cst.BaseExpression) -> tuple[str, ...] | None:
    """The strings of a list or tuple made only of string literals (``__all__ = [...]``)."""
    if not isinstance(node, (cst.List, cst.Tuple)):
        return None
    names = []
    for element in node.elements:
        if not isinstance(element, cst.Element):
            return None
        value = string_value(element.value)
        if value is None:
            return None
        names.append(value)
    return tuple(names)


def call_name(func: cst.BaseExpression) -> str:
    """The name a call's callee ends in (``f`` of ``f()``, ``g`` of ``a.g()``); ``""`` otherwise."""
    kind = type(func)
    if kind is cst.Name:
        return func.value  # type: ignore[attr-defined]
    if kind is cst.Attribute:
        return func.attr.value  # type: ignore[attr-defined]
    return ""


def all_params(params: cst.Parameters) -> list[cst.Param]:
    """Every parameter in source order: positional-only, plain, ``*args``, keyword-only, ``**kw``."""
    found = [*params.posonly_params, *params.params]
    if isinstance(params.star_arg, cst.Param):
        found.append(params.star_arg)
    found.extend(params.kwonly_params)
    if params.star_kwarg is not None:
        found.append(params.star_kwarg)
    return found


def positional_names(params: cst.Parameters) -> list[str]:
    """The names of the parameters that can be passed by position (``self`` is the first)."""
    return [param.name.value for param in [*params.posonly_params, *params.params]]


def first_line(docstring: str | None) -> str:
    """The first non-blank line of a docstring; ``""`` for none or a whitespace-only one."""
    lines = docstring.strip().splitlines() if docstring else []
    return lines[0].strip() if lines else ""


def is_property(decorator: str) -> bool:
    """Whether a decorator's name makes a method a property (``property``, ``x.setter``...)."""
    last = decorator.rsplit(".", 1)[-1]
    return last in _PROPERTY_DECORATORS or decorator.endswith("_property")


def ends_in_exit(body: cst.BaseSuite) -> bool:
    """Whether a suite's last statement leaves the block (return, raise, continue, break)."""
    if isinstance(body, cst.SimpleStatementSuite):
        return bool(body.body) and isinstance(body.body[-1], _EXITS)
    if isinstance(body, cst.IndentedBlock) and body.body:
        last = body.body[-1]
        return isinstance(last, cst.SimpleStatementLine) and bool(last.body) and isinstance(last.body[-1], _EXITS)
    return False
