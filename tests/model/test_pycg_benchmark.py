"""PyCG's micro-benchmark (read from ../shared, never copied): rlmap scored by the benchmark's own scorer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rlmap.pycgbench import BENCHMARK, main


@pytest.mark.skipif(not (BENCHMARK / "score.py").is_file(), reason="the benchmark is not beside the repository")
@pytest.mark.parametrize("category", ["args", "dicts", "lambdas"])
def test_rlmap_scores_on_a_category_of_the_benchmark(tmp_path: Path, category: str) -> None:
    """Functions passed as arguments, held in dicts, lambdas: the value flow's ground, scored as PyCG's."""
    out = tmp_path / "score.json"
    cases = BENCHMARK / "micro-benchmark" / "snippets" / category
    assert main(["--cases", str(cases), "--json", str(out)]) == 0
    totals = json.loads(out.read_text())["views"]["internal"]["totals"]
    assert totals["failed_cases"] == 0
    tp, fp, fn = totals["tp"], totals["fp"], totals["fn"]
    assert tp / (tp + fp) >= 0.85
    assert tp / (tp + fn) >= 0.95
