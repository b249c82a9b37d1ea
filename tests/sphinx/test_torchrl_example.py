"""TorchRL's hand-written collectors page, its facts replaced by directives, built with ``-W``
against the installed torchrl 0.14.1."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from rlmap.model.codemodel import CodeModel
from tests.conftest import FIXTURES

EXAMPLE = FIXTURES / "sphinx" / "torchrl"
ORIGINAL = Path("/work/shared/torchrl-docs/docs/source/reference/collectors_internals.rst")


@pytest.mark.torchrl
def test_collectors_internals_example_builds_with_live_facts(
    torchrl_model: CodeModel, torchrl_cache: Path, tmp_path: Path
) -> None:
    from sphinx.cmd.build import build_main

    source = tmp_path / "docs"
    shutil.copytree(EXAMPLE, source)
    out = tmp_path / "out"
    code = build_main(
        ["-W", "--keep-going", "-q", "-b", "text", "-D", f"rlmap_cache_dir={torchrl_cache}", str(source), str(out)]
    )
    assert code == 0, "sphinx-build -W failed on the example; see the warnings above"
    text = re.sub(r"\s+", " ", (out / "collectors_internals.txt").read_text(encoding="utf-8"))

    rollout = torchrl_model.symbol("torchrl.collectors._single.Collector.rollout")
    assert rollout is not None
    assert f'What "Collector.rollout" (torchrl/collectors/_single.py:{rollout.line}) does, from its code' in text
    step = next(
        site.line
        for site in torchrl_model.call_sites(rollout.qualname)
        if site.callee_text == "self.env.step_and_maybe_reset"
    )
    assert '"self.env.step_and_maybe_reset" -> "EnvBase.step_and_maybe_reset"' in text
    assert f"at L{step}" in text
    writes = [
        a
        for a in torchrl_model.attribute_accesses("torchrl.collectors._single.Collector._carrier")
        if a.kind == "write"
    ]
    assert writes
    for write in writes:  # every write of the carrier, by method, with its line
        assert f'"_carrier" (torchrl/collectors/_single.py:{write.line})' in text
    assert "[graph]" in text  # sphinx.ext.graphviz is loaded: the loop is drawn
    assert "Why it exists" in text  # the narrative stays


def test_the_example_keeps_no_hand_typed_line_numbers() -> None:
    page = (EXAMPLE / "collectors_internals.rst").read_text(encoding="utf-8")
    assert not re.search(r"\.py:\d+|#L\d+|\bL\d{2,}\b", page)
    for directive in ("rlmap-flow", "rlmap-accesses", "rlmap-keys", "rlmap-callers", "rlmap-section"):
        assert f".. {directive}::" in page
    if ORIGINAL.is_file():  # the narrative of TorchRL's page is kept word for word
        assert "State persistence across batches." in ORIGINAL.read_text(encoding="utf-8")
        assert "**State persistence across batches.**  Collection may stop at a batch" in page
