"""Pure helpers over libcst nodes: child order, dotted names, literals, parameters, docstrings.

Nothing here records anything: each function reads a node and returns plain values, so the
visitor modules (:mod:`rlmap.index.walker` and the modules built on it) share one reading of
the syntax.
"""

from __future__ import annotations

import dataclasses
from ast import literal_eval
from collections.abc import Iterable, Sequence
from inspect import cleandoc

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
# :func:`child_fields` of each type met so far (the walker reads it first: a dict lookup is cheaper than a call)
CHILD_FIELDS: dict[type, tuple[str, ...]] = {}

_EXITS = frozenset({cst.Return, cst.Raise, cst.Continue, cst.Break})
# What a docstring is looked for in: a block, a one-line suite, a line of simple statements
_SUITES = frozenset({cst.IndentedBlock, cst.SimpleStatementSuite, cst.SimpleStatementLine})
_PROPERTY_DECORATORS = frozenset({"property", "cached_property", "setter", "getter", "deleter"})
# the annotations (by their last name) of a plain mapping: its items are no tensordict's keys
MAPPINGS = frozenset({"dict", "Dict", "Mapping", "MutableMapping", "defaultdict", "OrderedDict"})


def child_fields(node_type: type) -> tuple[str, ...]:
    """The fields of a libcst node type that may hold code, in source order (not its text:
    ``Name.value`` is a ``str``)."""
    names = CHILD_FIELDS.get(node_type)
    if names is None:
        names = _FIELD_ORDER.get(node_type) or tuple(
            field.name
            for field in dataclasses.fields(node_type)
            if not field.name.startswith("whitespace") and field.name not in _SKIPPED_FIELDS and field.type is not str
        )
        CHILD_FIELDS[node_type] = names
    return names


def node_types() -> frozenset[type]:
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
        kind for kind in node_types() if kind in handled or (dataclasses.is_dataclass(kind) and child_fields(kind))
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
    """A callee expression with argument lists and subscripts elided: ``f(...).g``.  ``fallback``
    is the text of ``node`` itself, for a node of another kind (a lambda called)."""
    kind = type(node)  # libcst's node classes have no subclasses: no ``isinstance`` (ABCMeta)
    if kind is cst.Name:
        return node.value  # type: ignore[attr-defined]
    if kind is cst.Attribute:
        return f"{compact_text(node.value, _inner(node.value))}.{node.attr.value}"  # type: ignore[attr-defined]
    if kind is cst.Call:
        return f"{compact_text(node.func, _inner(node.func))}(...)"  # type: ignore[attr-defined]
    if kind is cst.Subscript:
        return f"{compact_text(node.value, _inner(node.value))}[...]"  # type: ignore[attr-defined]
    return fallback if len(fallback) <= 40 else "<expression>"


def _inner(node: cst.BaseExpression) -> str:
    """The text of a part of a callee that is neither a name nor a call, a subscript or an
    attribute: a literal's own (``", ".join``), else ``<expression>`` (the fallback given for the
    whole callee is not this part's text: ``", ".join.join``)."""
    if type(node) is cst.SimpleString:
        return node.value  # type: ignore[attr-defined]
    if type(node) in (cst.Integer, cst.Float, cst.Imaginary):
        return f"({node.value})"  # type: ignore[attr-defined]  # (``1.to_bytes`` is no Python)
    return "<expression>"


def literal_value(raw: str) -> str | bytes:
    """What :func:`ast.literal_eval` makes of a string literal's source text (libcst's
    ``SimpleString.evaluated_value``), without compiling it when the text is its value: a literal
    with no prefix and no backslash (most of them) is the text between its quotes."""
    quote = raw[0]
    if quote in ('"', "'") and "\\" not in raw:
        return raw[3:-3] if len(raw) >= 6 and raw[1] == quote and raw[2] == quote else raw[1:-1]
    return literal_eval(raw)


def _evaluated(node: cst.BaseExpression) -> str | bytes | None:
    """A string literal's value (``evaluated_value``); ``None`` for anything else."""
    kind = type(node)
    if kind is cst.SimpleString:
        return literal_value(node.value)  # type: ignore[attr-defined]
    if kind is cst.ConcatenatedString:
        return node.evaluated_value  # type: ignore[attr-defined]
    return None


def string_value(node: cst.BaseExpression) -> str | None:
    """The value of a string literal (plain or implicitly concatenated); ``None`` for anything else."""
    value = _evaluated(node)
    return value if type(value) is str else None


def docstring(node: cst.Module | cst.ClassDef | cst.FunctionDef) -> str | None:
    """The node's ``get_docstring()`` (cleaned as :func:`inspect.cleandoc` does), reading the
    literal with :func:`literal_value`."""
    body = node.body
    if type(body) is tuple or type(body) is list:
        if not body:
            return None
        expression: cst.CSTNode = body[0]
    else:
        expression = body  # type: ignore[assignment]
    while type(expression) in _SUITES:
        if not expression.body:  # type: ignore[attr-defined]
            return None
        expression = expression.body[0]  # type: ignore[attr-defined]
    if type(expression) is not cst.Expr:
        return None
    value = _evaluated(expression.value)
    return cleandoc(value) if type(value) is str else None


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


def quoted(text: str) -> str:
    """A string as the index writes it in an expression: in double quotes, as the code mostly
    writes it (``repr``'s quotes where it holds one, or a backslash)."""
    return f'"{text}"' if '"' not in text and "\\" not in text else repr(text)


def tuple_text(strings: Sequence[str]) -> str:
    """A tuple of strings as the index writes it in an expression: ``("next", "truncated")``."""
    return f"({', '.join(quoted(part) for part in strings)},)"


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
    if type(params.star_arg) is cst.Param:
        found.append(params.star_arg)
    found.extend(params.kwonly_params)
    if params.star_kwarg is not None:
        found.append(params.star_kwarg)
    return found


def positional_names(params: cst.Parameters) -> list[str]:
    """The names of the parameters that can be passed by position (``self`` is the first)."""
    return [param.name.value for param in [*params.posonly_params, *params.params]]


def mapping_annotation(text: str) -> bool:
    """Whether an annotation is a plain mapping, or one or ``None`` (``dict[str, Any] | None``)."""
    heads = [part.split("[", 1)[0].strip().rsplit(".", 1)[-1] for part in text.split("|")]
    kept = [head for head in heads if head != "None"]
    return bool(kept) and all(head in MAPPINGS for head in kept)


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
    kind = type(body)  # told by ``type(...)``, as in :func:`dotted_parts`
    if kind is cst.SimpleStatementSuite:
        return bool(body.body) and type(body.body[-1]) in _EXITS
    if kind is cst.IndentedBlock and body.body:
        last = body.body[-1]
        return type(last) is cst.SimpleStatementLine and bool(last.body) and type(last.body[-1]) in _EXITS  # type: ignore[attr-defined]
    return False
