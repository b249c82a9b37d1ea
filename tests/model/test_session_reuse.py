"""A changed file whose records did not change (a comment edited in place) reuses the resolved
model; any change to the records resolves again; a link in the cache is a key or nothing."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from rlmap.index.cache import Cache, encode_entry
from rlmap.index.source import locate_source
from rlmap.model.session import LATEST, LINKS, LoadedModel, load_model
from rlmap.query.graphdump import graph_json
from tests.conftest import FIXTURES

PACKAGE = {
    "pkg/__init__.py": "",
    "pkg/core.py": """
        class Engine:
            def run(self):
                # start the engine
                return self.step()

            def step(self):
                return helper()


        def helper():
            return 1
    """,
}


def _load(root: Path, cache: Cache) -> tuple[LoadedModel, list[str]]:
    phases: list[str] = []
    loaded = load_model(
        locate_source(root, package="pkg"), cache, jobs=1, progress=lambda phase, *_: phases.append(phase)
    )
    return loaded, phases


def _graph(loaded: LoadedModel) -> str:
    return json.dumps(graph_json(loaded.model), sort_keys=True)


def test_a_comment_edited_in_place_reuses_the_model(
    make_package: Callable[[dict[str, str | bytes]], Path], tmp_path: Path
) -> None:
    root = make_package(PACKAGE)
    cache = Cache.at(tmp_path / "cache")
    cold, phases = _load(root, cache)
    assert "resolve" in phases
    core = root / "pkg" / "core.py"
    core.write_text(core.read_text().replace("# start the engine", "# start the engine now"))

    edited, phases = _load(root, cache)
    assert edited.stats is not None
    assert edited.stats.parsed == 1  # the file is parsed again: its records are what is compared
    assert "resolve" not in phases  # ... and they are the same: nothing is resolved
    assert _graph(edited) == _graph(cold)

    warm, phases = _load(root, cache)  # the edited tree's key now leads to that model at once
    assert warm.stats is None
    assert phases == []
    assert _graph(warm) == _graph(cold)


def test_a_change_to_the_records_resolves_again(
    make_package: Callable[[dict[str, str | bytes]], Path], tmp_path: Path
) -> None:
    root = make_package(PACKAGE)
    cache = Cache.at(tmp_path / "cache")
    cold, _ = _load(root, cache)
    core = root / "pkg" / "core.py"
    core.write_text(core.read_text() + "\n# a comment on a line of its own moves the module's end\n")
    moved, phases = _load(root, cache)
    assert "resolve" in phases
    before, after = cold.model.symbol("pkg.core"), moved.model.symbol("pkg.core")
    assert before is not None
    assert after is not None
    assert after.end_line == before.end_line + 2
    assert moved.model.callees("pkg.core.Engine.step")[0].callee == "pkg.core.helper"


def test_a_link_that_is_not_a_key_is_ignored(
    make_package: Callable[[dict[str, str | bytes]], Path], tmp_path: Path
) -> None:
    root = make_package(PACKAGE)
    directory = tmp_path / "cache"
    cold, _ = _load(root, Cache.at(directory))
    links = sorted((directory / LINKS).rglob("*.msgpack"))
    assert links  # the records' key links to the model
    for link in links:  # a hostile cache points it out of the cache directory
        link.write_bytes(encode_entry("../" * 8 + "etc/passwd"))
    shutil.rmtree(directory / LATEST)  # (the last model of the checkout would be the answer without the link)
    core = root / "pkg" / "core.py"
    core.write_text(core.read_text().replace("# start the engine", "# start it"))
    cache = Cache.at(directory)
    again, phases = _load(root, cache)
    assert "resolve" in phases  # the link was not followed: the model was resolved again
    assert cache.rejected >= 1
    assert _graph(again) == _graph(cold)


def test_completion_reads_the_cache_and_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A shell's completion asks for a cached model only: nothing cached, it wrote the files'
    stats for the next run (an entry in a cache the user never filled)."""
    from rlmap.model import session

    root = tmp_path / "checkout"
    shutil.copytree(FIXTURES / "pkg", root / "pkg")
    monkeypatch.setattr(session, "_SETTLED_NS", 0)  # (files just copied count as settled)
    cache = Cache.at(tmp_path / "cache")
    assert session.cached_model(locate_source(root, package="pkg"), cache) is None
    assert not (tmp_path / "cache" / session.STATS).exists()
    # a run that computes the model remembers them (what completion must not do)
    load_model(locate_source(root, package="pkg"), cache, jobs=1)
    assert any((tmp_path / "cache" / session.STATS).rglob("*.msgpack"))
