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
from typing import Any

from rlmap.config import read_toml
from rlmap.curated import Symptom, Term, load_glossary, load_symptoms
from rlmap.errors import ConfigError
from rlmap.pages import SECTIONS

PAGES = ("collectors", "recurrent", "advantages", "helpers", "glossary", "debugging", "index")

# Allowed keys per page table, with the expected type.
_PAGE_KEYS: dict[str, dict[str, type]] = {
    "collectors": {
        "title": str,
        "class": str,
        "rollout": str,
        "loop": str,
        "carrier": str,
        "former_carrier_names": list,
        "sync_attributes": list,
        "sync_selector": str,
        "device_flags": list,
        "traj_symbols": list,
        "traj_key": list,
        "hooks": list,
        "scope": list,
    },
    "recurrent": {
        "title": str,
        "modules": list,
        "entry": str,
        "helpers_of": dict,
        "quote_pattern": str,
        "mode_symbols": list,
        "mode_readers_of": list,
        "keys": list,
        "caveats_of": list,
        "scope": list,
    },
    "advantages": {
        "title": str,
        "estimators": list,
        "entry_points": list,
        "kernels_module": str,
        "mask_key": list,
        "mask_scope": list,
        "symbols": list,
    },
    "helpers": {"title": str, "scope": list, "limit": int},
    "glossary": {"title": str},
    "debugging": {"title": str},
    "index": {"title": str, "related": list},
}
_REQUIRED_PAGE_KEYS = {"title"}


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
    candidate = resources.files("rlmap.profiles").joinpath(f"{package}.toml")
    return Path(str(candidate)) if candidate.is_file() else None


def load_profile(path: Path, display: str | None = None) -> Profile:
    origin = display or path.name
    data = read_toml(path, origin)
    raw_text = path.read_bytes().decode("utf-8")
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


def _validate_page(origin: str, page: str, table: Any) -> None:
    if page not in _PAGE_KEYS:
        raise ConfigError(f"{origin}: [pages.{page}] is not a page rlmap knows", f"pages are {', '.join(PAGES)}")
    allowed = _PAGE_KEYS[page]
    for key, value in table.items():
        if key not in allowed:
            raise ConfigError(
                f"{origin}: [pages.{page}] has an unknown key '{key}'", f"allowed keys: {', '.join(sorted(allowed))}"
            )
        if not isinstance(value, allowed[key]):
            raise ConfigError(
                f"{origin}: [pages.{page}] {key} must be a {allowed[key].__name__}",
                "see rlmap/profiles/torchrl.toml for an example",
            )
        if isinstance(value, list) and key != "related" and not all(_is_name(item) for item in value):
            raise ConfigError(
                f"{origin}: [pages.{page}] {key} must list strings (or lists of strings for nested keys)",
                'write e.g. ["collector", "traj_ids"]',
            )
    missing = _REQUIRED_PAGE_KEYS - set(table)
    if missing:
        raise ConfigError(f"{origin}: [pages.{page}] lacks {', '.join(sorted(missing))}", "add it")


def _is_name(item: Any) -> bool:
    if isinstance(item, str):
        return bool(item)
    return isinstance(item, list) and bool(item) and all(isinstance(part, str) and part for part in item)


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
