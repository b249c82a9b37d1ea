"""Configuration: ``[tool.rlmap]`` in the documented repository's pyproject.toml, or ``--config``.

Command-line options override the file; the file overrides the built-in defaults.  Relative
paths in a file are relative to that file's directory.
"""

from __future__ import annotations

import difflib
import os
import re
import stat
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Annotated, Any

import msgspec

from rlmap.errors import ConfigError
from rlmap.gitread import find_checkout

FORMATS = ("rst", "md")  # the pages in reStructuredText for Sphinx, and Markdown for GitHub / MyST

# A path as a configuration file may write it: no control character (a NUL would reach the OS).
_PATH = r"^[^\x00-\x1f\x7f]+$"
_PathText = Annotated[str, msgspec.Meta(pattern=_PATH, max_length=1024)]
# A file pattern (``fnmatch`` over a path in the package, e.g. ``*/tests/*``): no control character.
_Glob = Annotated[str, msgspec.Meta(pattern=_PATH, max_length=300)]
PACKAGE_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]{0,99}(\.[A-Za-z_][A-Za-z0-9_]{0,99}){0,9}$"
_URL = r"^https://[A-Za-z0-9.:/_~-]+$"
# What a value matching each pattern is, in words (an error shows these, not the expression).
_PATTERN_WORDS = {
    _PATH: ("a path or pattern: not empty, and no control character", "fix the value, or leave the key out"),
    PACKAGE_PATTERN: ("a dotted Python package name", "write it as an import does, e.g. torchrl or torchrl.envs"),
    _URL: ("an https:// URL", "give the repository's address, e.g. https://github.com/pytorch/rl"),
}


class _Table(msgspec.Struct, forbid_unknown_fields=True, rename="kebab"):
    """``[tool.rlmap]`` as written: the schema every configuration file is validated against."""

    source: _PathText | None = None
    package: Annotated[str, msgspec.Meta(pattern=PACKAGE_PATTERN)] = "torchrl"
    # the packages indexed together (calls and inherited members resolve into them); default:
    # the documented package and its usual companions (torchrl: tensordict)
    packages: list[Annotated[str, msgspec.Meta(pattern=PACKAGE_PATTERN)]] | None = None
    out: _PathText | None = None
    formats: list[str] | None = None
    templates: _PathText | None = None
    profile: _PathText | None = None
    repo_url: Annotated[str, msgspec.Meta(pattern=_URL, max_length=300)] | None = None
    docs: list[_PathText] = []
    audit_min_callers: Annotated[int, msgspec.Meta(ge=0)] = 3
    audit_min_accesses: Annotated[int, msgspec.Meta(ge=0)] = 10
    exclude: list[_Glob] = []  # files docstring coverage leaves out


_KEYS = tuple(sorted(field.encode_name for field in msgspec.structs.fields(_Table)))


@dataclass(frozen=True, slots=True)
class Config:
    source: Path | None = None
    package: str = "torchrl"
    packages: tuple[str, ...] | None = None  # None: the package's default companions
    out: Path = Path("generated_docs")
    formats: tuple[str, ...] = ("rst", "md")
    templates: Path | None = None
    profile: Path | None = None
    repo_url: str | None = None
    docs: tuple[Path, ...] = ()
    audit_min_callers: int = 3  # orphaned-symbol: a private helper with this many callers is central
    audit_min_accesses: int = 10  # orphaned-symbol: an attribute read or written this often is central
    exclude: tuple[str, ...] = ()  # coverage: files left out (fnmatch patterns over package paths)
    origin: str = "built-in defaults"
    extra: dict[str, Any] = field(default_factory=dict)
    # the pyproject.toml files with a [tool.rlmap] table passed over: owned by another user (see _trusted)
    passed_over: tuple[str, ...] = ()

    def override(self, **values: Any) -> Config:
        """A copy with every value that is not ``None`` replaced.  A configured ``profile`` the
        command line does not replace must exist: said here, where the file that names it is known."""
        if values.get("profile") is None and self.profile is not None and not os.path.lexists(self.profile):
            raise ConfigError(
                f"{self.origin}: [tool.rlmap] profile '{self.profile}' does not exist",
                "point it at a profile file or the folder holding one (relative to that file), or pass --profile",
            )
        return replace(self, **{name: value for name, value in values.items() if value is not None})


def load_config(explicit: Path | None = None, cwd: Path | None = None) -> Config:
    """``--config FILE`` if given (it must exist), else the nearest ``pyproject.toml`` with a
    ``[tool.rlmap]`` table in the working directory or above it (as ruff and pytest look), up to
    the root of the repository holding it."""
    if explicit is not None:
        if explicit.is_dir():
            raise ConfigError(f"config file '{explicit}' is a directory", "pass --config a TOML file in it")
        if not explicit.is_file():
            what = "is not a regular file" if explicit.exists() else "does not exist"
            raise ConfigError(f"config file '{explicit}' {what}", "pass --config an existing TOML file")
        return _from_file(explicit, required=True, display=str(explicit))  # named as given
    start = (cwd or Path.cwd()).absolute()
    passed_over: list[str] = []
    for folder in (start, *start.parents):
        candidate = folder / "pyproject.toml"
        data: dict[str, Any] = {}
        if candidate.is_file():
            if _trusted(candidate):
                data = read_toml(candidate, candidate.name)
            elif _configures_rlmap(candidate):
                passed_over.append(str(candidate))  # (and the search stops at its checkout's root below)
        tool = data.get("tool")
        if isinstance(tool, dict) and "rlmap" in tool:  # read once, here (an unreadable file is an error)
            found = _from_file(candidate, required=False, display=os.path.relpath(candidate, start), data=data)
            return replace(found, passed_over=tuple(passed_over))
        if (folder / ".git").exists():
            break  # no configuration above the repository applies to it
    return Config(passed_over=tuple(passed_over))


def _configures_rlmap(path: Path) -> bool:
    """Whether a file :func:`_trusted` refuses holds a ``[tool.rlmap]`` table: then the run says
    it was passed over.  Read under the same bounds as any configuration; a file that cannot be
    read is passed over without a word (it configures nothing either way)."""
    try:
        tool = read_toml(path, path.name).get("tool")
    except ConfigError:
        return False
    return isinstance(tool, dict) and "rlmap" in tool


def _trusted(path: Path) -> bool:
    """Whether a ``pyproject.toml`` found above the working directory may configure rlmap: owned by
    the user running it or by its folder's owner (git's rule for a repository): another user's
    file in a shared folder (``/tmp/pyproject.toml``) could send the output or the profile anywhere."""
    if not hasattr(os, "geteuid"):
        return True
    try:
        owner, holder = path.stat().st_uid, path.parent.stat().st_uid
    except OSError:
        return False
    return owner in (os.geteuid(), holder)


def _from_file(path: Path, required: bool, display: str | None = None, data: dict[str, Any] | None = None) -> Config:
    shown = display or path.name  # what messages call the file
    data = read_toml(path, shown) if data is None else data
    tool = data.get("tool", {})
    table = tool.get("rlmap") if isinstance(tool, dict) else None
    if table is None and path.name != "pyproject.toml":
        table = data if data and not set(data) - set(_KEYS) else None
        if table is None:
            raise ConfigError(f"{shown}: no [tool.rlmap] table", "put the settings under [tool.rlmap] (see the README)")
    if table is None:
        if required:
            raise ConfigError(f"{shown}: no [tool.rlmap] table", "put the settings under [tool.rlmap]")
        return Config()
    if not isinstance(table, dict):
        raise ConfigError(f"{shown}: tool.rlmap must be a table", "write the settings under a [tool.rlmap] header")
    parsed = convert(table, _Table, f"{shown}: [tool.rlmap]")
    base = path.parent

    home = find_checkout(base) or base  # what the file may make rlmap read: its repository, or its folder

    def relative(value: str | None, key: str) -> Path | None:
        return _inside(base, home, value, f"{shown}: [tool.rlmap] {key}")

    config = Config(
        source=relative(parsed.source, "source"),
        package=parsed.package,
        packages=tuple(parsed.packages) if parsed.packages is not None else None,
        out=_confined(base, parsed.out, f"{shown}: [tool.rlmap] out") or base / "generated_docs",
        formats=tuple(parsed.formats) if parsed.formats is not None else ("rst", "md"),
        templates=relative(parsed.templates, "templates"),
        profile=relative(parsed.profile, "profile"),
        repo_url=parsed.repo_url,
        docs=tuple(_inside(base, home, entry, f"{shown}: [tool.rlmap] docs") or base for entry in parsed.docs),
        audit_min_callers=parsed.audit_min_callers,
        audit_min_accesses=parsed.audit_min_accesses,
        exclude=tuple(parsed.exclude),
        origin=shown,
    )
    validate_formats(config.formats, f"{config.origin}: [tool.rlmap].formats")
    return config


def _confined(base: Path, value: str | None, where: str) -> Path | None:
    """A path the configuration file asks rlmap to *write*: it must stay inside that file's directory.

    A configuration file may come from a stranger's branch; the command line may send output
    anywhere, a file may not send it out of its own repository (``/etc``, ``../../``, a link).
    """
    if not value:
        return None
    target = base / value
    root = base.resolve()
    if Path(value).is_absolute() or not target.resolve().is_relative_to(root) or target.resolve() == root:
        raise ConfigError(
            f"{where} = {value!r} is not a subdirectory of the directory of the file that sets it",
            "give a subdirectory of the repository, or pass --out on the command line",
        )
    # (``.GIT`` is the folder too where names ignore case, ``.git.`` where trailing dots go)
    if any(part.lower().rstrip(". ") == ".git" for part in target.resolve().relative_to(root).parts):
        # git's own folder: the pages would replace it, or sit among its hooks and config
        raise ConfigError(
            f"{where} = {value!r} is inside the repository's .git folder",
            "give a subdirectory of the working tree, or pass --out on the command line",
        )
    return target


def _inside(base: Path, home: Path, value: str | None, where: str) -> Path | None:
    """A path the configuration file in ``base`` asks rlmap to *read* (source, docs, templates,
    profile): it must be inside ``home``, the repository holding that file (or its folder).

    Pages and the ``--check`` diff print what rlmap reads: a file from a stranger's branch must
    not make it read ``/`` or ``../..`` (``templates = "/"`` let a template include
    ``/proc/self/environ``; ``docs = ["../victim"]`` let ``audit --fix`` rewrite files outside the
    repository).  The command line may name any path.
    """
    if not value:
        return None
    target = base / value  # (an absolute value stays itself: allowed when it is inside)
    if not target.resolve().is_relative_to(home.resolve()):
        raise ConfigError(
            f"{where} = {value!r} is outside the repository of the file that sets it",
            "give a path inside the repository, or pass it on the command line",
        )
    return target


MAX_CONFIG_BYTES = 1 << 20  # no profile, glossary or pyproject.toml comes near this (the built-in claims: 94 kB)
# Python's TOML parser keeps a tuple per prefix of a dotted key: a key of N parts costs N**2 (a
# 40 kB key of 20,000 parts took 2.4 GB).  The dots of each dotted key (a table header's, or one
# before ``=``), squared and summed, bound that cost; above this a file is refused before it is
# parsed (the built-in profile: 477; a float or a dot in a string value counts nothing).
MAX_KEY_PARTS_COST = 1 << 16
# A part of a key (bare, or quoted), and a dotted key: one starting where no key part or dot
# ends (so a run of parts is tried once: linear), followed by ``=`` or a header's ``]``.
_KEY_PART = r"(?:[A-Za-z0-9_-]++|\"(?:[^\"\\\n]|\\.)*+\"|'[^'\n]*+')"
_DOTTED_KEY = re.compile(rf"(?<![\w.\-\"']){_KEY_PART}(?:\.{_KEY_PART})++(?=[ \t]*+[=\]])")
_SPACED_DOT = re.compile(r"[ \t]++\.[ \t]*+|\.[ \t]++")  # ``a . b`` is the key ``a.b``


def read_text(path: Path, display: str) -> str:
    """A configuration file's text: a regular file of sane size, UTF-8, or a :class:`ConfigError`.

    Opened without blocking and checked before reading, so a FIFO or ``/dev/zero`` named as a
    profile or glossary is an error, not a hang or an exhausted memory.
    """
    try:
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except (OSError, ValueError) as error:
        reason = error.strerror if isinstance(error, OSError) else "invalid path"
        raise ConfigError(f"cannot read '{display}': {reason}", "check the path and its permissions") from None
    try:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode):
            raise ConfigError(f"'{display}' is not a regular file", "point the setting at a TOML file")
        if info.st_size > MAX_CONFIG_BYTES:
            raise ConfigError(f"'{display}' is larger than {MAX_CONFIG_BYTES >> 20} MiB", "is this the right file?")
        data = os.read(descriptor, MAX_CONFIG_BYTES + 1)
    except OSError as error:
        raise ConfigError(f"cannot read '{display}': {error.strerror}", "check the path and its permissions") from None
    finally:
        os.close(descriptor)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ConfigError(
            f"{display}: not valid UTF-8 (byte {error.start})", "save the file as UTF-8, as TOML requires"
        ) from None


def read_toml(path: Path, display: str, text: str | None = None) -> dict[str, Any]:
    """A TOML file as data; every way it can be unreadable is a :class:`ConfigError` naming it."""
    text = read_text(path, display) if text is None else text
    if _key_parts_cost(text) > MAX_KEY_PARTS_COST:
        raise ConfigError(
            f"{display}: dotted keys of too many parts to read (a key of N parts costs N² to parse)",
            "is this the right file? no configuration needs keys of hundreds of parts",
        )
    try:
        # (a byte-order mark, which some editors write, is not TOML's: the rest is read)
        return tomllib.loads(text.removeprefix("\ufeff"))
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{display}: invalid TOML: {error}", "fix the file's syntax") from None
    except RecursionError:
        raise ConfigError(f"{display}: invalid TOML: nested too deeply", "fix the file's syntax") from None
    except ValueError as error:  # an integer past Python's digit limit
        raise ConfigError(f"{display}: invalid TOML: {error}", "fix the file's syntax") from None


def _key_parts_cost(text: str) -> int:
    """The sum over dotted keys of the square of their dots: a bound on what the parser's dotted
    keys cost (see :data:`MAX_KEY_PARTS_COST`), in linear time (a key's text inside a string
    counts too: an over-estimate only)."""
    return sum(found.group().count(".") ** 2 for found in _DOTTED_KEY.finditer(_SPACED_DOT.sub(".", text)))


# words a profile shows as written (a title, a name, a summary, a column): one line, no control
# character (a newline in a title started a directive of its own in the rst page)
ONE_LINE = r"^[^\x00-\x1f\x7f-\x9f\u2028\u2029]+$"
_UNKNOWN = re.compile(r"Object contains unknown field `([^`]+)`")
_WHERE = re.compile(r" - at `\$((?:\.[\w-]+|\[\d+\])*)`$")


def convert(data: Any, schema: type[Any], where: str) -> Any:
    """``data`` validated against a msgspec schema; an error names the key and what to do."""
    try:
        return msgspec.convert(data, schema, str_keys=True)
    except msgspec.ValidationError as error:
        message = str(error)
        located = _WHERE.search(message)
        path = located.group(1) if located else ""
        message = message[: located.start()] if located else message
        unknown = _UNKNOWN.match(message)
        if unknown:
            name = unknown.group(1)
            allowed = [field.encode_name for field in msgspec.structs.fields(schema)]
            close = difflib.get_close_matches(name, allowed, n=1)
            hint = f"did you mean '{close[0]}'?" if close else f"allowed keys: {', '.join(sorted(allowed))}"
            raise ConfigError(f"{where}{path}: unknown key '{name}'", hint) from None
        if message.startswith("Expected `str` matching regex") and repr(ONE_LINE) in message:
            raise ConfigError(
                f"{where}{path}: expected one line of words", "remove the line break or control character"
            ) from None
        for pattern, (what, how) in _PATTERN_WORDS.items():
            if message.startswith(f"Expected `str` matching regex {pattern!r}"):
                raise ConfigError(f"{where}{path}: expected {what}", how) from None
        worded = _TYPE.sub(_in_toml_words, message)  # msgspec's type names, in TOML's words
        keys = re.findall(r"\.([\w-]+)", path)
        listed = worded.startswith("Expected a list")
        key = keys[-1] if keys else "key"
        if not listed:
            hint = "fix its value"
        elif _lists_tables(schema, keys):
            hint = f"write one [[...{key}]] table per entry"
        else:
            hint = f'write a list: {key} = ["...", "..."]'
        raise ConfigError(f"{where}{path}: {worded[0].lower() + worded[1:]}", hint) from None


_TYPE = re.compile(r"`([^`]+)`")


def _lists_tables(schema: type[Any], keys: list[str]) -> bool:
    """Whether the value at ``keys`` (field names from ``schema`` down) is a list of tables."""
    from msgspec import inspect

    def bare(info: Any) -> Any:  # an optional value: its one type besides None
        while isinstance(info, inspect.UnionType):
            info = next((kind for kind in info.types if not isinstance(kind, inspect.NoneType)), None)
        return info

    info: Any = inspect.type_info(schema)
    for key in keys:
        info = bare(info)
        if isinstance(info, inspect.DictType):
            info = info.value_type
            continue
        fields = {field.encode_name: field.type for field in getattr(info, "fields", ())}
        if key not in fields:
            return False
        info = fields[key]
    info = bare(info)
    return isinstance(info, inspect.ListType) and isinstance(info.item_type, inspect.StructType)


def _in_toml_words(found: re.Match[str]) -> str:
    """``array | null`` -> ``a list`` (an optional key is left out, not null)."""
    names = [name.strip() for name in found.group(1).split("|")]
    return " or ".join(_TOML_WORDS.get(name, f"`{name}`") for name in names if name != "null") or "nothing"


_TOML_WORDS = {
    "array": "a list",
    "str": "a string",
    "int": "an integer",
    "float": "a number",
    "bool": "true or false",
    "object": "a table",
}


def validate_formats(formats: tuple[str, ...], origin: str) -> None:
    """``origin``: ``--format``, or where a configuration file sets ``formats``."""
    unknown = [fmt for fmt in formats if fmt not in FORMATS]
    if unknown or not formats:
        example = "--format rst,md" if origin.startswith("--") else 'formats = ["rst", "md"]'
        raise ConfigError(
            f"{origin}: unknown format(s) {', '.join(unknown)}" if unknown else f"{origin}: no format given",
            f"use one or more of {', '.join(FORMATS)} (e.g. {example})",
        )
