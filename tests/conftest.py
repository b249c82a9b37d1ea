"""Shared fixtures: synthetic packages built from ``{path: source}`` and the installed torchrl."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from rlmap.index.cache import Cache
from rlmap.index.source import SourceTree, locate_source
from rlmap.model.codemodel import CodeModel
from rlmap.model.session import load_model
from rlmap.pages.header import builtin_profile_path, load_profile_basics

FIXTURES = Path(__file__).parent / "fixtures"
# what the built-in TorchRL profile turns on, and its cap on a value-flow variable's values
_TORCHRL_PROFILE_PATH = builtin_profile_path("torchrl")
assert _TORCHRL_PROFILE_PATH is not None
_TORCHRL_PROFILE = load_profile_basics(_TORCHRL_PROFILE_PATH)
TORCHRL_EXTENSIONS = _TORCHRL_PROFILE.extensions
TORCHRL_VALUE_CAP = _TORCHRL_PROFILE.value_cap


def write_package(root: Path, files: dict[str, str | bytes]) -> Path:
    """Write ``{relative path: source}`` under ``root``; returns ``root``."""
    for relative, content in files.items():
        target = root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(textwrap.dedent(content).lstrip("\n"), encoding="utf-8")
    return root


@pytest.fixture
def make_package(tmp_path: Path) -> Callable[[dict[str, str | bytes]], Path]:
    """Build a synthetic package in a temporary checkout; returns the checkout root."""

    def make(files: dict[str, str | bytes]) -> Path:
        return write_package(tmp_path / "checkout", files)

    return make


Run = Callable[..., tuple[int, str, str]]


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str]) -> Run:
    """Run the CLI in-process: (exit code, stdout, stderr)."""
    from rlmap.cli import main

    def invoke(*args: str) -> tuple[int, str, str]:
        code = main(list(args))
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    return invoke


def model_of(root: Path, package: str, extensions: tuple[str, ...] = ("tensordict",)) -> CodeModel:
    """The model of a synthetic package; tensordict keys on, as the fixture profile has them."""
    tree = locate_source(root, package=package)
    return load_model(tree, Cache.disabled(), jobs=1, extensions=extensions).model


@pytest.fixture(scope="session")
def torchrl_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cache for the whole session: torchrl is parsed once."""
    return tmp_path_factory.mktemp("rlmap-cache")


@pytest.fixture(scope="session")
def torchrl_source() -> SourceTree:
    source = locate_source(None)
    if source.version != "0.14.1":
        pytest.fail(f"the tests are pinned to torchrl 0.14.1, found {source.version!r}: run them through nox -s tests")
    return source


@pytest.fixture(scope="session")
def torchrl_model(torchrl_source: SourceTree, torchrl_cache: Path) -> CodeModel:
    cache = Cache.at(torchrl_cache)
    return load_model(torchrl_source, cache, extensions=TORCHRL_EXTENSIONS, value_cap=TORCHRL_VALUE_CAP).model
