"""Profiles: what the generated pages cover (symbols by name) and the curated prose they carry.

A profile is a TOML file.  ``[pages.<page>]`` tables name the code each page is about;
``[prose.<page>]`` tables hold the words no code can say, written as jinja text that refers
to code only through ``sym("Name")`` / ``key("name")``.  rlmap ships the TorchRL profile
(``rlmap/profiles/torchrl.toml``); a documented repository can point ``[tool.rlmap] profile``
at its own.  Validation happens on load and names the file and the entry at fault.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Annotated, Any

import msgspec

from rlmap.config import convert, read_text, read_toml
from rlmap.errors import ConfigError
from rlmap.pages.curated import Symptom, Term, check_markup, load_glossary, load_symptoms
from rlmap.pages.kinds import SECTIONS

PAGES = ("collectors", "recurrent", "advantages", "helpers", "glossary", "debugging", "index")

Name = Annotated[str, msgspec.Meta(min_length=1, max_length=500)]
Names = list[Name]
KeyNames = list[Name | list[Name]]  # "is_init" or ["collector", "traj_ids"]


class _Page(msgspec.Struct, forbid_unknown_fields=True):
    title: Annotated[str, msgspec.Meta(min_length=1, max_length=200)]


class _Collectors(_Page, forbid_unknown_fields=True):
    class_: Name | None = msgspec.field(default=None, name="class")
    rollout: Name | None = None
    loop: Name | None = None
    carrier: Name | None = None
    former_carrier_names: Names = []
    sync_attributes: Names = []
    sync_selector: Name | None = None
    device_flags: Names = []
    traj_symbols: Names = []
    traj_key: Names = []
    hooks: Names = []
    scope: Names = []


class _Recurrent(_Page, forbid_unknown_fields=True):
    modules: Names = []
    entry: Name | None = None
    helpers_of: dict[str, Names] = {}
    # Substrings that make a line worth quoting (no regular expression: a profile cannot make
    # rlmap backtrack over a long source line).
    quote_markers: Names = []
    mode_symbols: Names = []
    mode_readers_of: Names = []
    keys: KeyNames = []
    caveats_of: Names = []
    scope: Names = []


class _Advantages(_Page, forbid_unknown_fields=True):
    estimators: Names = []
    entry_points: Names = []
    kernels_module: Name | None = None
    mask_key: Names = []
    mask_scope: Names = []
    symbols: Names = []


class _Helpers(_Page, forbid_unknown_fields=True):
    scope: Names = []
    limit: Annotated[int, msgspec.Meta(ge=1, le=10_000)] = 50


class _Link(msgspec.Struct, forbid_unknown_fields=True):
    title: Name
    doc: Name | None = None
    url: Annotated[str, msgspec.Meta(pattern=r"^https://[^\s<>`]+$", max_length=500)] | None = None


class _Index(_Page, forbid_unknown_fields=True):
    related: list[_Link] = []


# The schema of each ``[pages.<page>]`` table.
_PAGE_SCHEMAS: dict[str, type[_Page]] = {
    "collectors": _Collectors,
    "recurrent": _Recurrent,
    "advantages": _Advantages,
    "helpers": _Helpers,
    "glossary": _Page,
    "debugging": _Page,
    "index": _Index,
}


@dataclass(frozen=True, slots=True)
class Prose:
    """One curated text: its jinja source and where it came from (for error messages)."""

    page: str
    name: str
    text: str
    origin: str  # "profiles/torchrl.toml:42"


@dataclass(frozen=True, slots=True)
class Profile:
    name: str
    origin: str  # file name shown in messages, never an absolute path
    pages: dict[str, dict[str, Any]]
    prose: dict[str, dict[str, Prose]]
    glossary: tuple[Term, ...] = ()
    symptoms: tuple[Symptom, ...] = ()

    def page(self, name: str) -> dict[str, Any]:
        return self.pages.get(name, {})

    def text(self, page: str, name: str) -> Prose | None:
        return self.prose.get(page, {}).get(name)


def builtin_profile_path(package: str) -> Path | None:
    if len(package) > 200 or not package.replace(".", "_").isidentifier():
        return None  # no profile file has that name; locate_source reports the bad name
    candidate = resources.files("rlmap.profiles").joinpath(f"{package}.toml")
    return Path(str(candidate)) if candidate.is_file() else None


def load_profile(path: Path, display: str | None = None) -> Profile:
    origin = display or path.name
    raw_text = read_text(path, origin)
    data = read_toml(path, origin, raw_text)
    unknown = set(data) - {"profile", "pages", "prose"}
    for table in ("profile", "pages", "prose"):
        if not isinstance(data.get(table, {}), dict):
            raise ConfigError(f"{origin}: '{table}' must be a table", f"write it as [{table}] or [{table}.<page>]")
    header = data.get("profile", {})
    bad = set(header) - {"name", "glossary", "symptoms"}
    if bad:
        raise ConfigError(
            f"{origin}: [profile] has unknown key(s) {', '.join(sorted(bad))}", "allowed: name, glossary, symptoms"
        )
    if unknown:
        raise ConfigError(
            f"{origin}: unknown table(s) {', '.join(sorted(unknown))}",
            "a profile holds only [profile], [pages.*] and [prose.*] tables",
        )
    pages = data.get("pages", {})
    for page, table in pages.items():
        if not isinstance(table, dict):
            raise ConfigError(f"{origin}: pages.{page} must be a table", f"write it as [pages.{page}]")
        _validate_page(origin, page, table)
    prose: dict[str, dict[str, Prose]] = {}
    for page, entries in data.get("prose", {}).items():
        if page not in PAGES:
            raise ConfigError(f"{origin}: [prose.{page}] is not a page", f"pages are {', '.join(PAGES)}")
        prose[page] = {}
        if not isinstance(entries, dict):
            raise ConfigError(f"{origin}: prose.{page} must be a table", f"write it as [prose.{page}]")
        for name, text in entries.items():
            if not isinstance(text, str) or not text.strip():
                raise ConfigError(
                    f"{origin}: [prose.{page}] {name} is empty or not text", "write the text or remove it"
                )
            check_markup(text, f"{origin}: [prose.{page}] {name}")
            prose[page][name] = Prose(page, name, text.strip(), f"{origin}:{_line_of(raw_text, page, name)}")
    name = str(header.get("name", path.stem))
    folder = origin.rpartition("/")[0]
    glossary: tuple[Term, ...] = ()
    symptoms: tuple[Symptom, ...] = ()
    for entry in ("glossary", "symptoms", "name"):
        if entry in header and not isinstance(header[entry], str):
            raise ConfigError(f"{origin}: [profile] {entry} must be a string", 'write e.g. glossary = "glossary.toml"')
    if header.get("glossary"):
        glossary = load_glossary(path.parent / header["glossary"], _join(folder, header["glossary"]))
    if header.get("symptoms"):
        symptoms = load_symptoms(path.parent / header["symptoms"], _join(folder, header["symptoms"]), SECTIONS)
    return Profile(name=name, origin=origin, pages=pages, prose=prose, glossary=glossary, symptoms=symptoms)


def _join(folder: str, name: str) -> str:
    return f"{folder}/{name}" if folder else name


def _validate_page(origin: str, page: str, table: dict[str, Any]) -> None:
    """``table`` checked against its page's schema; the table itself is kept as written."""
    if page not in _PAGE_SCHEMAS:
        raise ConfigError(f"{origin}: [pages.{page}] is not a page rlmap knows", f"pages are {', '.join(PAGES)}")
    convert(table, _PAGE_SCHEMAS[page], f"{origin}: [pages.{page}]")


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
