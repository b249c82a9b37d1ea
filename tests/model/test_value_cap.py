"""The cap on the values a value-flow variable keeps: a profile's ``value_cap``, what a model
says of it, and, on torchrl, that the built-in profile's cap is never reached, so that the value
flow is the same solution whatever the order it meets the modules in."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import pytest

from rlmap.index.cache import Cache
from rlmap.index.indexer import build_index
from rlmap.index.records import ModuleIndex
from rlmap.index.source import SourceTree, companion_path, locate_source
from rlmap.model.pointsto import CAP
from rlmap.model.redefinitions import keep_chosen_definitions
from rlmap.model.resolve import Resolver
from rlmap.model.session import load_model
from rlmap.model.valueflow import ValueFlow
from tests.conftest import TORCHRL_EXTENSIONS, TORCHRL_VALUE_CAP, Run

RUNNERS = 12  # classes whose instances all reach one parameter


def _many_receivers(make_package: Callable[[dict[str, str | bytes]], Path]) -> Path:
    classes = "".join(
        f"class A{number}:\n    def run(self):\n        return {number}\n\n\n" for number in range(RUNNERS)
    )
    calls = "".join(f"    pick(A{number}())\n" for number in range(RUNNERS))
    source = f"{classes}def pick(x):\n    return x.run()\n\n\ndef main():\n{calls}"
    return make_package({"cp/__init__.py": source})


def _runs(root: Path, **options: int) -> tuple[list[str], int, int]:
    model = load_model(locate_source(root, package="cp"), Cache.disabled(), jobs=1, **options).model
    return sorted(edge.callee for edge in model.callees("cp.pick")), model.over_cap, model.value_cap


def test_a_variable_past_the_cap_keeps_the_first_values_and_the_model_says_so(
    make_package: Callable[[dict[str, str | bytes]], Path],
) -> None:
    root = _many_receivers(make_package)
    every = sorted(f"cp.A{number}.run" for number in range(RUNNERS))
    assert _runs(root) == (every, 0, CAP)
    callees, over_cap, cap = _runs(root, value_cap=8)
    # ``x`` keeps the first 8 of the 12 values to arrive (the calls in source order) and drops 4;
    # ``x.run`` holds the 8 methods bound to them, and drops none
    assert (callees, over_cap, cap) == ([f"cp.A{number}.run" for number in range(8)], 1, 8)


def test_a_profile_sets_the_cap_and_a_run_that_reaches_it_says_what_it_may_miss(
    make_package: Callable[[dict[str, str | bytes]], Path], run: Run, tmp_path: Path
) -> None:
    root = _many_receivers(make_package)
    profile = tmp_path / "p.toml"
    source = ["--source", str(root), "--package", "cp", "--no-cache", "-q"]
    profile.write_text("[profile]\nvalue_cap = 8\n", encoding="utf-8")
    code, out, err = run("show", "cp.pick", *source, "--profile", str(profile))
    assert code == 0, err
    assert err == (
        "rlmap: note: the value flow dropped values past its cap of 8 per variable in 1 variable: calls found "
        "through it may be incomplete (set a higher value_cap in the profile's [profile] table)\n"
    )
    assert "A7.run" in out
    assert "A8.run" not in out
    profile.write_text("[profile]\nvalue_cap = 12\n", encoding="utf-8")  # full, and nothing dropped
    code, out, err = run("show", "cp.pick", *source, "--profile", str(profile))
    assert (code, err) == (0, "")
    assert "A8.run" in out


def _solve(resolver: Resolver, modules: list[ModuleIndex], companions: tuple[str, ...], cap: int) -> Solution:
    flow = ValueFlow(resolver, modules, companions, cap)
    targets = {site: frozenset(target.qualname for target in found) for site, found in flow.targets().items()}
    values = {name: frozenset(held) for name, held in flow.all_values().items() if held}
    solution = Solution(targets, values, flow.over_cap(), max(len(held) for held in values.values()))
    flow.release()
    return solution


class Solution(NamedTuple):
    targets: dict[tuple[str, int, str], frozenset[str]]
    values: dict[str, frozenset[str]]
    over_cap: int  # variables that dropped a value
    largest: int  # values in the largest set


def _pairs(targets: dict[tuple[str, int, str], frozenset[str]]) -> set[tuple[tuple[str, int, str], str]]:
    return {(site, callee) for site, found in targets.items() for callee in found}


@pytest.mark.torchrl
def test_on_torchrl_no_variable_reaches_the_profiles_cap_and_the_solve_order_changes_nothing(
    torchrl_source: SourceTree, torchrl_cache: Path
) -> None:
    """The figures of the built-in profile's comment and of rlmap.model.valueflow's docstring:
    the largest set on torchrl 0.14.1; below the profile's cap, the modules solved in reverse path
    order give every variable the same values and every call site the same targets; under the
    default cap, values are dropped, and the order changes some targets."""
    index = keep_chosen_definitions(build_index(torchrl_source, Cache.at(torchrl_cache), extensions=TORCHRL_EXTENSIONS))
    resolver = Resolver(index.modules)
    companions = torchrl_source.companion_names
    documented = [module for module in index.modules if not companion_path(companions, module.path)]
    forward = _solve(resolver, documented, companions, TORCHRL_VALUE_CAP)
    reverse = _solve(resolver, documented[::-1], companions, TORCHRL_VALUE_CAP)
    assert (forward.over_cap, forward.largest, reverse.over_cap) == (0, 320, 0)
    assert len(forward.targets) > 20_000  # the comparisons are over every resolved site
    assert forward.targets == reverse.targets
    assert forward.values == reverse.values
    forward, reverse = (_solve(resolver, modules, companions, CAP) for modules in (documented, documented[::-1]))
    assert (forward.over_cap, len(forward.values), len(_pairs(forward.targets))) == (168, 102_888, 26_525)
    assert len(_pairs(forward.targets) ^ _pairs(reverse.targets)) == 22
