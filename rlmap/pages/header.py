"""A profile's header and glossary, read without its pages: what ``show`` and ``graph`` need of it.

:func:`load_profile_basics` reads the profile file and checks its ``[profile]`` table and its
glossary with the very code :func:`rlmap.pages.profile.load_profile` uses, and nothing more:
the pages, prose, symptoms and claims are checked by the commands that render or audit them
(``generate``, ``audit``, ``diff``).  A warm ``rlmap show`` spends a third of a second in all;
the whole profile took a sixth of that, and this module imports none of the section schemas
or claim kinds.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Protocol

import msgspec

from rlmap.config import convert, read_text, read_toml
from rlmap.errors import ConfigError
from rlmap.index.vocabulary import EXTENSIONS
from rlmap.model.pointsto import CAP, CAP_RANGE
from rlmap.pages.curated import Term, load_glossary

PROFILE_FILE = "profile.toml"
# A file, package or extension the header names (the constraint of rlmap.pages.sections.specs.Name,
# written here so that reading a header imports none of the section schemas).
Name = Annotated[str, msgspec.Meta(min_length=1, max_length=500)]
# a data file of the profile: a plain relative path inside the profile's directory
DataFile = Annotated[
    str, msgspec.Meta(pattern=r"^(?!(.*/)?\.\.?(/|$))[A-Za-z0-9_.-]{1,100}(/[A-Za-z0-9_.-]{1,100}){0,4}$")
]
TABLES = ("profile", "pages", "prose")


class Header(msgspec.Struct, forbid_unknown_fields=True):
    """The ``[profile]`` table."""

    name: Annotated[str, msgspec.Meta(min_length=1, max_length=100)] | None = None
    glossary: DataFile | None = None
    symptoms: DataFile | None = None
    claims: DataFile | None = None  # the checks that back the curated words (rlmap.pages.claims)
    focus: list[Name] = []  # packages whose helpers the audit checks (default: the documented package)
    extensions: list[Name] = []  # analyses beyond plain Python the profile turns on (rlmap.index.vocabulary)
    # the values a variable of the value flow keeps (rlmap.model.valueflow): the first to arrive,
    # so where a variable drops values past it, the order of the solve decides which
    value_cap: Annotated[int, msgspec.Meta(ge=CAP_RANGE[0], le=CAP_RANGE[1])] = CAP


@dataclass(frozen=True, slots=True)
class ProfileBasics:
    """What ``show`` and ``graph`` read of a profile: the analyses it turns on and its glossary."""

    name: str
    origin: str  # file name shown in messages, never an absolute path
    glossary: tuple[Term, ...] = ()
    focus: tuple[str, ...] = ()
    extensions: tuple[str, ...] = ()
    value_cap: int = CAP


class _Analysed(Protocol):
    @property
    def extensions(self) -> tuple[str, ...]: ...

    @property
    def value_cap(self) -> int: ...


def analysis_of(profile: _Analysed | None) -> tuple[tuple[str, ...], int]:
    """What a model is computed with under ``profile`` (its basics or the whole profile): the
    extensions it turns on and the value flow's cap; without a profile, none and the default."""
    return (profile.extensions, profile.value_cap) if profile is not None else ((), CAP)


def builtin_profile_path(package: str) -> Path | None:
    """``rlmap/profiles/<package>/profile.toml`` when rlmap ships a profile for ``package``."""
    if len(package) > 200 or not package.replace(".", "_").isidentifier():
        return None  # no profile has that name; locate_source reports the bad name
    candidate = resources.files("rlmap.profiles").joinpath(package, PROFILE_FILE)
    return Path(str(candidate)) if candidate.is_file() else None


def builtin_profile_folder(package: str) -> str:
    """Where rlmap's own profile for ``package`` is installed, as messages name it (a folder
    inside site-packages: a model to copy, never to edit)."""
    found = builtin_profile_path(package)
    return str(found.parent) if found is not None else f"rlmap/profiles/{package}/"


def profile_file(path: Path, display: str | None = None) -> tuple[Path, str]:
    """The profile's TOML file (``path``, or ``profile.toml`` in it when it is a directory) and
    the name messages show for it."""
    given = display or str(path)  # a profile passed is named as given (its name alone hides where it is)
    if path.is_dir():
        shown = f"{given.rstrip('/')}/{PROFILE_FILE}"
        return data_file(path / PROFILE_FILE, PROFILE_FILE, shown), shown  # (not a link out of the folder)
    if display is None and not os.path.lexists(path):
        raise ConfigError(f"profile '{path}' does not exist", "pass --profile a profile file or the folder holding one")
    return path, given


def read_profile(path: Path, origin: str) -> tuple[str, dict[str, Any], Header]:
    """The profile file's text, its tables, and its checked ``[profile]`` header."""
    raw_text = read_text(path, origin)
    data = read_toml(path, origin, raw_text)
    if not data:  # (an empty file: the model would be built without the profile's extensions, silently)
        raise ConfigError(
            f"{origin}: the profile is empty",
            "give it a [profile] table (extensions, glossary...) and [pages.<name>] tables, or pass no --profile",
        )
    unknown = set(data) - set(TABLES)
    if unknown:
        raise ConfigError(
            f"{origin}: unknown table(s) {', '.join(sorted(unknown))}",
            "a profile holds only [profile], [pages.*] and [prose.*] tables",
        )
    for table in TABLES:
        if not isinstance(data.get(table, {}), dict):
            raise ConfigError(f"{origin}: '{table}' must be a table", f"write it as [{table}] or [{table}.<page>]")
    header = convert(data.get("profile", {}), Header, f"{origin}: [profile]")
    unknown_extensions = sorted(set(header.extensions) - set(EXTENSIONS))
    if unknown_extensions:
        raise ConfigError(
            f"{origin}: [profile] extensions: {', '.join(unknown_extensions)} is not an extension rlmap has",
            f"use one of {', '.join(sorted(EXTENSIONS))}",
        )
    return raw_text, data, header


def join(folder: str, name: str) -> str:
    return f"{folder}/{name}" if folder else name


def glossary_of(path: Path, origin: str, header: Header) -> tuple[Term, ...]:
    """The profile's glossary (empty when it names none)."""
    if not header.glossary:
        return ()
    return load_glossary(data_file(path, header.glossary, origin), join(origin.rpartition("/")[0], header.glossary))


def data_file(path: Path, name: str, origin: str) -> Path:
    """The data file ``name`` of the profile at ``path``; one that a link takes out of the
    profile's directory is refused (a profile from a branch must not read ``/etc/passwd``)."""
    target = path.parent / name
    if not target.resolve().is_relative_to(path.parent.resolve()):
        raise ConfigError(f"{origin}: '{name}' leads out of the profile's directory", "keep the profile's files in it")
    return target


def default_name(path: Path, header: Header) -> str:
    return header.name or (path.parent.name if path.name == PROFILE_FILE else path.stem)


def load_profile_basics(path: Path, display: str | None = None) -> ProfileBasics:
    """The header and glossary of the profile at ``path`` (a file, or a directory holding
    ``profile.toml``), checked as :func:`rlmap.pages.profile.load_profile` checks them."""
    path, origin = profile_file(path, display)
    _, _, header = read_profile(path, origin)
    return ProfileBasics(
        name=default_name(path, header),
        origin=origin,
        glossary=glossary_of(path, origin, header),
        focus=tuple(header.focus),
        extensions=tuple(header.extensions),
        value_cap=header.value_cap,
    )
