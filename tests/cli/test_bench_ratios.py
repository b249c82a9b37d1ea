"""The bench's ratios pair each sample with the floor measured beside it (rlmap.bench): a host
whose speed drifts between rounds moves a case and its floor together."""

from __future__ import annotations

from rlmap.bench import COLD, ONE_CHANGED, RESOLVE, WARM, Figure, Sample, _targets


def _figure(name: str, *samples: Sample) -> Figure:
    return Figure(name, dict(enumerate(samples)))


def test_targets_are_per_round_ratios_against_the_floors_beside_them(capsys) -> None:
    # round 0 on a fast host (ast floor 2 s, libcst floor 20 CPU-s), round 1 half as fast again
    figures = {
        COLD: _figure(COLD, Sample(14.0, 30.0, 0, 2.0, 20.0), Sample(18.0, 41.1, 0, 3.0, 30.0)),
        RESOLVE: _figure(RESOLVE, Sample(7.0, 6.0, 0, 2.0, 20.0), Sample(9.0, 7.5, 0, 3.0, 30.0)),
        WARM: _figure(WARM, Sample(0.4, 0.4, 0, 2.0, 20.0), Sample(0.6, 0.6, 0, 3.0, 30.0)),
        ONE_CHANGED: _figure(ONE_CHANGED, Sample(3.0, 3.0, 0, 2.0, 20.0), Sample(3.3, 3.3, 0, 3.0, 30.0)),
    }
    _targets(figures, 2)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("targets (issue 15), the median of the rounds' ratios")
    rows = {line[:40].strip(): line[40:].split() for line in lines[1:]}
    # indexing: (30 - 6) / 20 = 1.20 and (41.1 - 7.5) / 30 = 1.12
    assert rows["indexing CPU / libcst parse CPU"][:2] == ["1.16", "[1.12-1.20]"]
    assert rows["indexing CPU / libcst parse CPU"][-2:] == ["NOT", "met)"]
    # resolution: (6 - 0.4) / 20 = 0.28 and (7.5 - 0.6) / 30 = 0.23
    assert rows["resolution CPU / libcst parse CPU"][:2] == ["0.26", "[0.23-0.28]"]
    # cold wall: 14 / 2 = 7.0 and 18 / 3 = 6.0; unpaired, the min walls would give 14 / 2 = 7.0
    assert rows["cold wall / ast floor"][:2] == ["6.50", "[6.00-7.00]"]
    assert rows["cold wall / ast floor"][-1] == "met)"
    assert rows["warm show wall / ast floor"][:2] == ["0.20", "[0.20-0.20]"]
    # one file changed: 3.0 / 2 = 1.5 and 3.3 / 3 = 1.1
    assert rows["one file changed wall / ast floor"][:2] == ["1.30", "[1.10-1.50]"]


def test_a_round_without_a_case_gives_no_ratio_for_it(capsys) -> None:
    # the resolve case missing from round 1 (as torch is run in round 0 only): its ratio is round 0's
    figures = {
        COLD: _figure(COLD, Sample(14.0, 30.0, 0, 2.0, 20.0), Sample(18.0, 42.0, 0, 3.0, 30.0)),
        RESOLVE: Figure(RESOLVE, {0: Sample(7.0, 6.0, 0, 2.0, 20.0)}),
    }
    _targets(figures, 2)
    out = capsys.readouterr().out
    assert "indexing CPU / libcst parse CPU          1.20 [1.20-1.20]" in out
    assert "resolution" not in out  # no warm figure: no ratio, no line
    assert "one file changed" not in out


def test_figure_ratios_are_medians_of_paired_samples() -> None:
    figure = _figure("x", Sample(4.0, 8.0, 0, 2.0, 16.0), Sample(9.0, 9.0, 0, 3.0, 10.0), Sample(5.0, 5.0, 0, 1.0, 5.0))
    assert figure.over_ast() == 3.0  # 2.0, 3.0, 5.0
    assert figure.over_libcst() == 0.9  # 0.5, 0.9, 1.0
    assert _figure("floor", Sample(1.0, 1.0)).over_ast() is None
