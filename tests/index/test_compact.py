"""Large trees: records are compacted (their strings interned) as they are decoded, same model."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from rlmap.index import indexer
from rlmap.index.cache import Cache
from rlmap.index.records import CallSite
from rlmap.index.source import locate_source
from rlmap.model.session import load_model
from rlmap.query.graphdump import graph_json
from tests.conftest import FIXTURES


def test_compacted_records_share_their_strings_and_resolve_alike(tmp_path: Path, monkeypatch: Any) -> None:
    root = tmp_path / "checkout"
    shutil.copytree(FIXTURES / "pkg", root / "pkg")
    source = locate_source(root, package="pkg")
    plain = indexer.build_index(source, Cache.disabled(), jobs=1)
    expected = json.dumps(graph_json(load_model(source, Cache.disabled(), jobs=1).model), sort_keys=True)
    monkeypatch.setattr(indexer, "COMPACT_BYTES", 0)  # the fixture is tiny: compact it as if it were torch
    cache = Cache.at(tmp_path / "cache")
    for _ in range(2):  # parsed, then decoded from the cache
        compacted = indexer.build_index(source, cache, jobs=1)
        assert compacted.modules == plain.modules
        callers = [site.caller for module in compacted.modules for site in module.calls]
        flows = [row[6] for module in compacted.modules for row in module.flow]
        same = {id(text) for text in callers + flows if text == "pkg.collector.Collector.rollout"}
        assert len(same) == 1  # one string object however many records name it
    model = load_model(source, Cache.disabled(), jobs=1).model
    assert json.dumps(graph_json(model), sort_keys=True) == expected


def test_compacted_line_numbers_are_one_object_per_number() -> None:
    first, second = int("1000"), int("1000")  # two objects (Python shares only -5..256)
    assert first is not second
    rows = [indexer.interned(("call", "m.$1", "m.f", "f", (), number, "m")) for number in (first, second)]
    assert rows[0] == ("call", "m.$1", "m.f", "f", (), 1000, "m")
    assert rows[0][5] is rows[1][5]
    sites = [CallSite("m.g", "f", ("f",), number) for number in (int("2000"), int("2000"))]
    for site in sites:
        indexer._intern_fields(site)
    assert sites[0] == CallSite("m.g", "f", ("f",), 2000)
    assert sites[0].line is sites[1].line


def test_large_blocks_are_mapped_apart_where_glibc_allows() -> None:
    import ctypes.util
    import platform

    mapped = indexer.map_large_blocks()
    if platform.system() == "Linux" and ctypes.util.find_library("c") and platform.libc_ver()[0] == "glibc":
        assert mapped  # mallopt accepted the threshold
