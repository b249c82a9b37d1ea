"""``rlmap graph --format json`` is written as it is made: the same text as one ``json.dumps``."""

from __future__ import annotations

import json
from typing import Any

import pytest

from rlmap.cli.query import _echo_chunks
from rlmap.index.cache import Cache
from rlmap.index.source import locate_source
from rlmap.model.codemodel import CodeModel
from rlmap.model.session import load_model
from rlmap.query.graphdump import graph_json, graph_json_chunks
from tests.conftest import FIXTURES


@pytest.fixture(scope="module")
def model() -> CodeModel:
    return load_model(locate_source(FIXTURES, package="pkg"), Cache.disabled(), jobs=1).model


@pytest.mark.parametrize("scopes", [(), ("pkg.collector",), ("pkg.envs", "pkg.collector.Collector"), ("nowhere",)])
def test_chunks_are_the_text_of_one_dump(model: CodeModel, scopes: tuple[str, ...]) -> None:
    whole = json.dumps(graph_json(model, scopes), indent=1, sort_keys=True)
    chunks = list(graph_json_chunks(model, scopes))
    assert "".join(chunks) == whole
    if scopes != ("nowhere",):
        assert len(chunks) > 3  # the encoder's pieces, not the document at once
    else:
        assert '"edges": []' in whole
        assert '"nodes": []' in whole


@pytest.mark.parametrize("size", [1, 50, 1 << 20])
def test_echoed_in_batches_as_one_echo(model: CodeModel, size: int, capsys: Any) -> None:
    whole = json.dumps(graph_json(model), indent=1, sort_keys=True)
    _echo_chunks(graph_json_chunks(model), size=size)
    assert capsys.readouterr().out == whole + "\n"
