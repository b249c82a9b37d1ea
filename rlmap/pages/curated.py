"""Curated data: glossary terms and debugging symptoms, loaded and validated from TOML.

Words are written by people; code is named by symbol or key only, and every name is resolved
when the pages are generated.  A malformed file fails with the file and the entry at fault.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import msgspec

from rlmap.config import convert, read_toml
from rlmap.errors import ConfigError

_Text = Annotated[str, msgspec.Meta(max_length=20_000)]
_Names = list[Annotated[str, msgspec.Meta(max_length=500)]]
_Keys = list[Annotated[str, msgspec.Meta(max_length=500)] | list[Annotated[str, msgspec.Meta(max_length=500)]]]


class _TermEntry(msgspec.Struct, forbid_unknown_fields=True):
    """A ``[[term]]`` as written (types and sizes); meaning is checked by :func:`load_glossary`."""

    term: _Text = ""
    definition: _Text = ""
    aliases: _Names = []
    former: _Names = []
    former_attributes: _Names = []
    symbols: _Names = []
    keys: _Keys = []


class _SymptomEntry(msgspec.Struct, forbid_unknown_fields=True):
    """A ``[[symptom]]`` as written."""

    id: _Text = ""
    symptom: _Text = ""
    cause: _Text = ""
    look: _Names = []
    keys: _Keys = []
    see: _Names = []


@dataclass(frozen=True, slots=True)
class Term:
    term: str
    definition: str
    aliases: tuple[str, ...]
    former: tuple[str, ...]  # names the thing had before (``shuttle``): audit's stale-alias rule
    former_attributes: tuple[str, ...]  # the old names as written in code (``_shuttle``)
    symbols: tuple[str, ...]
    keys: tuple[tuple[str, ...], ...]
    origin: str  # "rlmap/profiles/torchrl/glossary.toml: term 'carrier'"

    @property
    def slug(self) -> str:
        return slugify(self.term)

    def names(self) -> tuple[str, ...]:
        return (self.term, *self.aliases, *self.former)


@dataclass(frozen=True, slots=True)
class Symptom:
    id: str
    symptom: str
    cause: str
    look: tuple[str, ...]
    keys: tuple[tuple[str, ...], ...]
    see: tuple[tuple[str, str], ...]  # (page, section)
    origin: str


# What curated text may not hold: it is rendered into rst and Markdown pages that a docs build
# turns into HTML, and a profile may come from a stranger's branch.  Words, ``literals``,
# *emphasis* and sym()/key()/term() calls are all curated text needs.
_FORBIDDEN_MARKUP = (
    (re.compile(r"(?m)^[ \t]*\.\.(?:[ \t]|$)"), "an rst directive, comment or target ('..')"),
    (re.compile(r"(?m)^[ \t]*(?:`{3,}|~{3,}|:{3,})"), "a Markdown fence or MyST directive"),
    (re.compile(r":[A-Za-z][\w:+.-]{0,40}:`"), "a hand-written role (use sym(), key() or term())"),
    (re.compile(r"\{[A-Za-z][\w:+.-]{0,40}\}`"), "a MyST role (use sym(), key() or term())"),
    (re.compile(r"<[A-Za-z!/?]"), "HTML or a link target ('<...')"),
    (re.compile(r"(?i)\b(?:javascript|vbscript|data|file):(?=\S)"), "a script or file URI"),
    (re.compile(r"\]\("), "a Markdown link"),
)


def check_markup(text: str, where: str) -> None:
    """Refuse curated text carrying markup that could inject into the built docs.  A line starts
    after every break the page writer splits on (``str.splitlines``: ``\x85``, ``\u2028``, ``\x0c``
    too, not only ``\n``)."""
    text = "\n".join(text.splitlines())
    for pattern, what in _FORBIDDEN_MARKUP:
        if pattern.search(text):
            raise ConfigError(
                f"{where}: holds {what}, which curated text may not carry",
                "write plain words; refer to code with sym(), key() and term() only",
            )


def slugify(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _read(path: Path, display: str) -> dict[str, Any]:
    return read_toml(path, display)


def _entries(path: Path, display: str, table: str) -> list[dict[str, Any]]:
    """The ``[[table]]`` entries of a data file; any other table is an error."""
    data = _read(path, display)
    unknown = set(data) - {table}
    if unknown:
        message = f"{display}: unknown table(s) {', '.join(sorted(unknown))}"
        raise ConfigError(message, f"the file holds [[{table}]] entries only")
    entries = data.get(table, [])
    if not isinstance(entries, list) or not all(isinstance(entry, dict) for entry in entries):
        raise ConfigError(f"{display}: '{table}' must be an array of tables", f"write each entry as [[{table}]]")
    return entries


def _strings(value: Any, where: str, field: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(item, str) and item.strip() for item in value):
        raise ConfigError(f"{where}: '{field}' must be a list of non-empty strings", "fix the entry")
    return tuple(value)


def _keys(value: Any, where: str) -> tuple[tuple[str, ...], ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise ConfigError(f"{where}: 'keys' must be a list", 'write keys as "is_init" or ["collector", "traj_ids"]')
    keys = []
    for item in value:
        if isinstance(item, str) and item:
            keys.append((item,))
        elif isinstance(item, list) and item and all(isinstance(part, str) and part for part in item):
            keys.append(tuple(item))
        else:
            raise ConfigError(f"{where}: key {item!r} is neither a string nor a list of strings", "fix the entry")
    return tuple(keys)


def _text(entry: dict[str, Any], field: str, where: str) -> str:
    value = entry.get(field)
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{where}: '{field}' is missing or empty", f"write the {field}")
    check_markup(value, f"{where}: '{field}'")
    return " ".join(value.split())


def load_glossary(path: Path, display: str) -> tuple[Term, ...]:
    terms: list[Term] = []
    seen: dict[str, str] = {}
    for index, entry in enumerate(_entries(path, display, "term"), start=1):
        name = entry.get("term")
        where = f"{display}: term {name!r}" if isinstance(name, str) else f"{display}: term #{index}"
        convert(entry, _TermEntry, where)
        term = Term(
            term=_text(entry, "term", where),
            definition=_text(entry, "definition", where),
            aliases=_strings(entry.get("aliases"), where, "aliases"),
            former=_strings(entry.get("former"), where, "former"),
            former_attributes=_strings(entry.get("former_attributes"), where, "former_attributes"),
            symbols=_strings(entry.get("symbols"), where, "symbols"),
            keys=_keys(entry.get("keys"), where),
            origin=where,
        )
        for alias in term.names():
            folded = alias.lower()
            if folded in seen:
                raise ConfigError(f"{where}: '{alias}' is already a term or alias of {seen[folded]}", "merge or rename")
            seen[folded] = repr(term.term)
        terms.append(term)
    return tuple(terms)


def load_symptoms(path: Path, display: str, sections: dict[str, dict[str, str]]) -> tuple[Symptom, ...]:
    found: list[Symptom] = []
    ids: set[str] = set()
    for index, entry in enumerate(_entries(path, display, "symptom"), start=1):
        ident = entry.get("id")
        where = f"{display}: symptom {ident!r}" if isinstance(ident, str) else f"{display}: symptom #{index}"
        convert(entry, _SymptomEntry, where)
        ident = _text(entry, "id", where)
        if ident in ids:
            raise ConfigError(f"{where}: duplicate id", "give every symptom its own id")
        ids.add(ident)
        see = []
        for target in _strings(entry.get("see"), where, "see"):
            page, _, section = target.partition(":")
            if section not in sections.get(page, {}):
                choices = ", ".join(f"{p}:{s}" for p, table in sections.items() for s in table)
                raise ConfigError(f"{where}: 'see' names an unknown section '{target}'", f"use one of {choices}")
            see.append((page, section))
        look = _strings(entry.get("look"), where, "look")
        if not look:
            raise ConfigError(f"{where}: 'look' is empty", "name the symbols to inspect")
        found.append(
            Symptom(
                id=ident,
                symptom=_text(entry, "symptom", where),
                cause=_text(entry, "cause", where),
                look=look,
                keys=_keys(entry.get("keys"), where),
                see=tuple(see),
                origin=where,
            )
        )
    return tuple(found)
