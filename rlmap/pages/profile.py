"""Profiles: which pages exist, the sections each is made of, and the curated prose they carry.

A profile is a TOML file (or a directory holding ``profile.toml``, glossary and symptom files
and an optional ``templates/`` folder of overrides).  ``[pages.<page>]`` declares a page (its
file name, title and summary) and, in ``[[pages.<page>.sections]]``, the generic sections it is
made of (:mod:`rlmap.pages.sections.specs`); ``[prose.<page>]`` tables hold the words no code
can say, written as jinja text that refers to code only through ``sym("Name")``/``key("name")``.
rlmap ships the TorchRL profile (``rlmap/profiles/torchrl/``); a documented repository can point
``[tool.rlmap] profile`` at its own.  Validation happens on load and names the file, the line
and the entry at fault; nothing here resolves names against the code (see
:mod:`rlmap.pages.compose`).
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import msgspec

from rlmap.config import convert
from rlmap.errors import ConfigError
from rlmap.model.pointsto import CAP
from rlmap.pages.claims import Claims, check_coverage, load_claims
from rlmap.pages.curated import Symptom, Term, check_markup, load_symptoms
from rlmap.pages.header import (
    PROFILE_FILE,
    builtin_profile_path,
    data_file,
    default_name,
    glossary_of,
    join,
    profile_file,
    read_profile,
)
from rlmap.pages.sections.specs import SECTION_SPECS, Spec, Summary, Title, shown_words

__all__ = ["PROFILE_FILE", "Page", "Profile", "Prose", "Section", "builtin_profile_path", "load_profile"]
_SLUG = r"^[a-z][a-z0-9_]{0,60}$"


class _PageTable(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """A ``[pages.<page>]`` table as written (its sections are checked one by one after)."""

    title: Title
    slug: Annotated[str, msgspec.Meta(pattern=_SLUG)]
    summary: Summary
    template: Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z0-9_][A-Za-z0-9_./-]{0,100}\.j2$")] = "page.j2"
    listed: bool = True  # shown in the contents and in other pages' "see also"
    see_also: bool = True  # ends with links to the listed pages
    sections: list[dict[str, Any]] = []


@dataclass(frozen=True, slots=True)
class Prose:
    """One curated text: its jinja source and where it came from (for error messages)."""

    page: str
    name: str
    text: str
    origin: str  # "profiles/torchrl/profile.toml:42"


@dataclass(frozen=True, slots=True)
class Section:
    """One declared section: its kind, its checked parameters and where it was written."""

    kind: str
    spec: Spec
    where: str  # "profile.toml:57 [pages.collectors] section 3 (accesses)"
    lead: Prose | None

    @property
    def id(self) -> str | None:
        return self.spec.id

    @property
    def title(self) -> str | None:
        return self.spec.title

    @property
    def prose(self) -> str | None:
        return self.spec.prose


@dataclass(frozen=True, slots=True)
class Page:
    name: str
    slug: str
    title: str
    summary: str
    template: str
    listed: bool
    see_also: bool
    sections: tuple[Section, ...]

    def titles(self) -> dict[str, str]:
        """Section id -> title, for headings and links."""
        return {s.spec.id: s.spec.title for s in self.sections if s.spec.id and s.spec.title}


@dataclass(frozen=True, slots=True)
class Profile:
    name: str
    origin: str  # file name shown in messages, never an absolute path
    pages: dict[str, Page]
    prose: dict[str, dict[str, Prose]]
    glossary: tuple[Term, ...] = ()
    symptoms: tuple[Symptom, ...] = ()
    claims: Claims = field(default_factory=Claims)
    focus: tuple[str, ...] = ()
    extensions: tuple[str, ...] = ()
    value_cap: int = CAP
    templates: Path | None = None  # the profile's own template overrides
    builtin: bool = False


def load_profile(path: Path, display: str | None = None, builtin: bool = False) -> Profile:
    """The profile at ``path`` (a file, or a directory holding ``profile.toml``)."""
    path, origin = profile_file(path, display)
    raw_text, data, header = read_profile(path, origin)
    prose = _load_prose(origin, raw_text, data.get("prose", {}))
    pages = {
        name: _load_page(origin, raw_text, name, table, prose.get(name, {}))
        for name, table in data.get("pages", {}).items()
    }
    slugs: dict[str, str] = {}
    for name, declared in pages.items():  # two pages of one slug: one file, the other page lost
        if declared.slug in slugs:
            raise ConfigError(
                f"{origin}: [pages.{name}] has the slug '{declared.slug}' of [pages.{slugs[declared.slug]}]",
                "give every page its own slug (it names the page's file)",
            )
        slugs[declared.slug] = name
    for page in prose:
        if page not in pages:
            raise ConfigError(f"{origin}: [prose.{page}] is not a page", f"pages are {', '.join(pages) or '(none)'}")
    folder = origin.rpartition("/")[0]
    glossary = glossary_of(path, origin, header)
    symptoms: tuple[Symptom, ...] = ()
    if header.symptoms:
        sections = {name: page.titles() for name, page in pages.items()}
        symptoms = load_symptoms(data_file(path, header.symptoms, origin), join(folder, header.symptoms), sections)
    claims = Claims()
    if header.claims:
        claims = load_claims(data_file(path, header.claims, origin), join(folder, header.claims))
        check_coverage(claims, curated_texts(prose, glossary, symptoms))
    templates = path.parent / "templates"
    return Profile(
        name=default_name(path, header),
        origin=origin,
        pages=pages,
        prose=prose,
        glossary=glossary,
        symptoms=symptoms,
        claims=claims,
        focus=tuple(header.focus),
        extensions=tuple(header.extensions),
        value_cap=header.value_cap,
        templates=templates if templates.is_dir() and not templates.is_symlink() else None,
        builtin=builtin,
    )


def curated_texts(
    prose: dict[str, dict[str, Prose]], glossary: tuple[Term, ...], symptoms: tuple[Symptom, ...]
) -> dict[str, str]:
    """Text id (``prose:recurrent.intro``, ``term:is_init``, ``symptom:<id>``) -> its words, folded."""
    texts = {
        f"prose:{page}.{name}": " ".join(entry.text.split())
        for page, entries in prose.items()
        for name, entry in entries.items()
    }
    texts.update({f"term:{term.term}": term.definition for term in glossary})
    # a symptom's headline is what the user sees; its cause is what the code does
    texts.update({f"symptom:{symptom.id}": symptom.cause for symptom in symptoms})
    return texts


def _load_prose(origin: str, raw_text: str, tables: dict[str, Any]) -> dict[str, dict[str, Prose]]:
    prose: dict[str, dict[str, Prose]] = {}
    for page, entries in tables.items():
        if not isinstance(entries, dict):
            raise ConfigError(f"{origin}: prose.{page} must be a table", f"write it as [prose.{page}]")
        prose[page] = {}
        for name, text in entries.items():
            if not isinstance(text, str) or not text.strip():
                raise ConfigError(
                    f"{origin}: [prose.{page}] {name} is empty or not text", "write the text or remove it"
                )
            check_markup(text, f"{origin}: [prose.{page}] {name}")
            prose[page][name] = Prose(page, name, text.strip(), f"{origin}:{_line_of(raw_text, page, name)}")
    return prose


def _load_page(origin: str, raw_text: str, name: str, table: Any, prose: dict[str, Prose]) -> Page:
    if not isinstance(table, dict):
        raise ConfigError(f"{origin}: pages.{name} must be a table", f"write it as [pages.{name}]")
    page = convert(table, _PageTable, f"{origin}: [pages.{name}]")
    for what, words in (("title", page.title), ("summary", page.summary)):
        check_markup(words, f"{origin}: [pages.{name}] '{what}'")
    lines = _section_lines(raw_text, name)
    sections: list[Section] = []
    for index, raw in enumerate(page.sections, start=1):
        line = lines[index - 1] if index <= len(lines) else _page_line(raw_text, name)
        section = _load_section(f"{origin}:{line}: [pages.{name}] section {index}", name, raw, prose)
        if section.id and section.id in {other.id for other in sections}:
            raise ConfigError(f"{section.where}: id '{section.id}' is used twice in the page", "give each its own id")
        sections.append(section)
    if page.template == "page.j2":  # a page of the shipped template shows only what its sections name
        _check_prose_shown(name, prose, {s.prose for s in sections if s.prose} | {"intro"})
    return Page(name, page.slug, page.title, page.summary, page.template, page.listed, page.see_also, tuple(sections))


def _load_section(where: str, page: str, raw: dict[str, Any], prose: dict[str, Prose]) -> Section:
    """One ``[[pages.<page>.sections]]`` table, checked against its kind's schema."""
    kind = raw.get("kind")
    if not isinstance(kind, str) or kind not in SECTION_SPECS:
        close = difflib.get_close_matches(str(kind), list(SECTION_SPECS), n=1)
        raise ConfigError(
            f"{where}: 'kind' is {kind!r}, not a section kind",
            (f"did you mean '{close[0]}'? " if close else "") + f"kinds are {', '.join(SECTION_SPECS)}",
        )
    where = f"{where} ({kind})"
    spec = convert({k: v for k, v in raw.items() if k != "kind"}, SECTION_SPECS[kind], where)
    if spec.title and not spec.id:
        raise ConfigError(f"{where}: a section with a title needs an id", 'add id = "..." (used in its label)')
    if kind == "prose" and not spec.prose:
        raise ConfigError(f'{where}: a prose section needs prose = "<entry of [prose.{page}]>"', "name the entry")
    if spec.prose and spec.prose not in prose:
        raise ConfigError(
            f"{where}: prose '{spec.prose}' is not in [prose.{page}]",
            f"add it there or fix the name (the page has: {', '.join(sorted(prose)) or 'no prose'})",
        )
    for what, words in shown_words(spec):
        check_markup(words, f"{where}: '{what}'")
    for text in (spec.lead, getattr(spec, "none", None)):
        if text:
            check_markup(text, f"{where} lead" if text == spec.lead else f"{where} none")
    lead = Prose(page, "lead", spec.lead.strip(), where) if spec.lead else None
    return Section(kind, spec, where, lead)


def _check_prose_shown(page: str, prose: dict[str, Prose], shown: set[str]) -> None:
    for entry in sorted(set(prose) - shown):
        raise ConfigError(
            f"{prose[entry].origin}: [prose.{page}] {entry} is shown by no section of the page",
            f'name it in a section\'s prose = "{entry}", or fix the key (the page shows: '
            f"{', '.join(sorted(shown & set(prose))) or 'no prose'})",
        )


def _line_of(text: str, page: str, name: str) -> int:
    """The line of ``name = ...`` inside ``[prose.<page>]`` (1 when it cannot be told)."""
    header = re.compile(rf"^\s*\[prose\.{re.escape(page)}\]\s*$")
    entry = re.compile(rf"^\s*{re.escape(name)}\s*=")
    inside = False
    for number, line in enumerate(text.splitlines(), start=1):
        if line.lstrip().startswith("["):
            inside = bool(header.match(line))
            continue
        if inside and entry.match(line):
            return number
    return 1


def _section_lines(text: str, page: str) -> list[int]:
    """The line of each ``[[pages.<page>.sections]]`` header, in order."""
    header = re.compile(rf"^\s*\[\[\s*pages\.{re.escape(page)}\.sections\s*\]\]\s*(#.*)?$")
    return [number for number, line in enumerate(text.splitlines(), start=1) if header.match(line)]


def _page_line(text: str, page: str) -> int:
    header = re.compile(rf"^\s*\[\s*pages\.{re.escape(page)}\s*\]")
    return next((n for n, line in enumerate(text.splitlines(), start=1) if header.match(line)), 1)
