"""Configuration: ``[tool.rlmap]`` in the documented repository's pyproject.toml, or ``--config``.

Command-line options override the file; the file overrides the built-in defaults.  Relative
paths in a file are relative to that file's directory.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from rlmap.errors import ConfigError
from rlmap.pages import FORMATS

_KEYS: dict[str, type | tuple[type, ...]] = {
    "source": str,
    "package": str,
    "out": str,
    "formats": list,
    "templates": str,
    "profile": str,
    "repo-url": str,
    "docs": list,
    "audit-min-callers": int,
    "audit-min-accesses": int,
}


@dataclass(frozen=True, slots=True)
class Config:
    source: Path | None = None
    package: str = "torchrl"
    out: Path = Path("generated_docs")
    formats: tuple[str, ...] = ("rst", "md")
    templates: Path | None = None
    profile: Path | None = None
    repo_url: str | None = None
    docs: tuple[Path, ...] = ()
    audit_min_callers: int = 3  # orphaned-symbol: a private helper with this many callers is central
    audit_min_accesses: int = 10  # orphaned-symbol: an attribute read or written this often is central
    origin: str = "built-in defaults"
    extra: dict[str, Any] = field(default_factory=dict)

    def override(self, **values: Any) -> Config:
        """A copy with every value that is not ``None`` replaced."""
        return replace(self, **{name: value for name, value in values.items() if value is not None})


def load_config(explicit: Path | None = None, cwd: Path | None = None) -> Config:
    """``--config FILE`` if given (it must exist), else ``./pyproject.toml`` if it has ``[tool.rlmap]``."""
    if explicit is not None:
        if not explicit.is_file():
            raise ConfigError(f"config file '{explicit}' does not exist", "pass --config an existing TOML file")
        return _from_file(explicit, required=True)
    candidate = (cwd or Path.cwd()) / "pyproject.toml"
    if candidate.is_file():
        return _from_file(candidate, required=False)
    return Config()


def _from_file(path: Path, required: bool) -> Config:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path.name}: invalid TOML: {error}", "fix the file's syntax") from None
    except OSError as error:
        raise ConfigError(f"cannot read '{path}': {error.strerror}", "check the path and its permissions") from None
    table = data.get("tool", {}).get("rlmap")
    if table is None and path.name != "pyproject.toml":
        table = {key: value for key, value in data.items() if key in _KEYS} if not set(data) - set(_KEYS) else None
        if table is None:
            raise ConfigError(
                f"{path.name}: no [tool.rlmap] table", "put the settings under [tool.rlmap] (see the README)"
            )
    if table is None:
        if required:
            raise ConfigError(f"{path.name}: no [tool.rlmap] table", "put the settings under [tool.rlmap]")
        return Config()
    for key, value in table.items():
        if key not in _KEYS:
            raise ConfigError(
                f"{path.name}: [tool.rlmap] has an unknown key '{key}'",
                f"allowed keys: {', '.join(sorted(_KEYS))}",
            )
        if not isinstance(value, _KEYS[key]):
            expected = _KEYS[key].__name__ if isinstance(_KEYS[key], type) else "value"  # type: ignore[union-attr]
            raise ConfigError(f"{path.name}: [tool.rlmap] {key} must be a {expected}", "fix its value")
    base = path.parent

    def relative(value: str | None) -> Path | None:
        return (base / value) if value else None

    formats = tuple(table.get("formats", ("rst", "md")))
    config = Config(
        source=relative(table.get("source")),
        package=table.get("package", "torchrl"),
        out=relative(table.get("out")) or base / "generated_docs",
        formats=formats,
        templates=relative(table.get("templates")),
        profile=relative(table.get("profile")),
        repo_url=table.get("repo-url"),
        docs=tuple(base / entry for entry in table.get("docs", [])),
        audit_min_callers=table.get("audit-min-callers", 3),
        audit_min_accesses=table.get("audit-min-accesses", 10),
        origin=path.name,
    )
    validate_formats(config.formats, config.origin)
    return config


def validate_formats(formats: tuple[str, ...], origin: str) -> None:
    unknown = [fmt for fmt in formats if fmt not in FORMATS]
    if unknown or not formats:
        raise ConfigError(
            f"{origin}: unknown format(s) {', '.join(unknown) or '(none given)'}",
            f"use one or more of {', '.join(FORMATS)} (e.g. --format rst,md)",
        )
