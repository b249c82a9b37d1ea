"""Directive options -> a section's parameters, checked by the same msgspec schema the profile uses.

A directive's options are strings; each is read by the type of the field it names (a list of
names split on spaces and commas, a number, a flag), then the whole table goes through
:func:`rlmap.config.convert` with the kind's :mod:`~rlmap.pages.sections.specs` class, so a
misspelt option or a bad value is the same error a profile gets ("did you mean ...").
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

from rlmap.config import convert
from rlmap.errors import ConfigError
from rlmap.pages.sections.specs import SECTION_SPECS, Spec
from rlmap.query.lookup import parse_key

# The kinds a directive can show: those built from the code alone (the glossary, the symptoms,
# the contents and prose need a page of the profile around them).
DIRECTIVE_KINDS = (
    "flow",
    "callees",
    "calls",
    "quotes",
    "dispatch",
    "returns",
    "accesses",
    "keys",
    "callers",
    "symbols",
    "caveats",
    "subclasses",
    "inventory",
)
# Fields every spec has that a hand-written page supplies itself: its headings and its words.
PAGE_FIELDS = ("id", "title", "prose", "lead")

# "a b,c" -> a, b, c; a key written as a tuple, ``("collector", "traj_ids")``, stays one item.
_ITEM = re.compile(r"\([^()]{0,500}\)|[^\s,()]+")


def option_names(kinds: tuple[str, ...] = DIRECTIVE_KINDS) -> list[str]:
    """Every parameter name of ``kinds`` as the profile writes it (``class``, not ``class_``)."""
    names = {
        field.encode_name
        for kind in kinds
        for field in msgspec.structs.fields(SECTION_SPECS[kind])
        if field.encode_name not in PAGE_FIELDS
    }
    return sorted(names)


def split_items(value: str) -> list[str]:
    return _ITEM.findall(value)


def section_parameters(kind: str, options: dict[str, Any], where: str) -> Spec:
    """The checked spec of ``kind`` from a directive's ``options`` (strings, or ``None`` for a flag)."""
    if kind not in DIRECTIVE_KINDS:
        raise ConfigError(f"{where}: ':kind: {kind}' is not a section a directive can show", _kinds_hint())
    schema = SECTION_SPECS[kind]
    fields = {field.encode_name: field for field in msgspec.inspect.type_info(schema).fields}  # type: ignore[attr-defined]
    table: dict[str, Any] = {}
    for name, raw in options.items():
        field = fields.get(name)
        if field is None or name in PAGE_FIELDS:
            table[name] = raw  # convert() names it, with a suggestion
            continue
        table[name] = _read(name, raw, field.type, where)
    return convert(table, schema, f"{where}: option")


def _read(name: str, raw: str | None, kind: Any, where: str) -> Any:
    info = msgspec.inspect
    if isinstance(kind, info.UnionType):
        kind = next((member for member in kind.types if not isinstance(member, info.NoneType)), kind)
    text = (raw or "").strip()
    if isinstance(kind, info.BoolType):
        if text.lower() in ("", "true", "yes", "1"):
            return True
        if text.lower() in ("false", "no", "0"):
            return False
        raise ConfigError(f"{where}: option '{name}' is a flag, not {text[:40]!r}", f"write :{name}: or :{name}: false")
    if isinstance(kind, info.IntType):
        if not re.fullmatch(r"-?[0-9]{1,9}", text):
            raise ConfigError(f"{where}: option '{name}' takes a number, not {text[:40]!r}", "write a whole number")
        return int(text)
    if isinstance(kind, info.ListType):
        items = split_items(text)
        return [key_value(item) for item in items] if name == "keys" else items
    if isinstance(kind, info.DictType):
        raise ConfigError(
            f"{where}: option '{name}' is a table, which a directive cannot take", "declare this section in a profile"
        )
    return text


def key_value(item: str) -> str | list[str]:
    """``is_init`` -> ``"is_init"``; ``collector.traj_ids`` or ``("collector", "traj_ids")`` -> a list."""
    key = parse_key(item)
    if key is None:
        return item  # refused by the schema or by the section, naming it
    return key[0] if len(key) == 1 else list(key)


def _kinds_hint() -> str:
    return f"kinds a directive shows: {', '.join(DIRECTIVE_KINDS)}"
