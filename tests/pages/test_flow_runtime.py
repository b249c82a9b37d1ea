"""The collectors page says which steps of ``Collector.rollout`` run in each configuration; this
runs them.

Each configuration the built-in profile declares for the rollout's flow section, and that runs on
CPU, is built as a real ``Collector`` over a small CPU environment; its rollout runs under
``sys.settrace`` (lines of ``Collector.rollout`` only).  Every step (call or exit) the page marks
as running must have run, every step it marks as skipped must not have; steps marked "depends"
are left out, and counted.  Configurations the tests cannot run (CUDA, compilation) must say so
in their summary.
"""

from __future__ import annotations

import inspect
import sys
import threading
import warnings
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

from rlmap.index.source import SourceTree
from rlmap.model.codemodel import CodeModel
from rlmap.pages.compose import build_pages
from rlmap.pages.profile import builtin_profile_path, load_profile
from rlmap.pages.refs import Refs
from rlmap.pages.sections.flow import DEPENDS, RUNS, SKIPPED, FlowBody

NOT_RUN = "not run by the tests"


def _rollout_flow(model: CodeModel, source: SourceTree) -> FlowBody:
    profile = load_profile(builtin_profile_path("torchrl"), "profile.toml")  # type: ignore[arg-type]
    pages = build_pages(model, Refs(model, source.root), profile)
    page = next(p for p in pages if p.page.slug == "collectors_internals")
    return next(s.body for s in page.sections if s.kind == "flow" and s.body.loop)


def _builders() -> dict[str, Callable[[], Any]]:
    """How to build each CPU configuration, by its id in the profile."""
    import torch
    from tensordict import TensorDict, TensorDictBase
    from tensordict.nn import TensorDictModule
    from torch import nn
    from torchrl.collectors import Collector
    from torchrl.data import Bounded, Composite, LazyTensorStorage, ReplayBuffer, Unbounded
    from torchrl.envs import EnvBase

    class Env(EnvBase):
        """Three float observations, one bounded action; an episode ends with probability 0.3."""

        def __init__(self, device: str | None = None) -> None:
            super().__init__(batch_size=torch.Size([]), device=device)
            self.observation_spec = Composite(observation=Unbounded(shape=(3,)))
            self.action_spec = Bounded(low=-1.0, high=1.0, shape=(1,))
            self.reward_spec = Unbounded(shape=(1,))
            self.rng = torch.Generator().manual_seed(0)

        def _set_seed(self, seed: int | None) -> None:
            if seed is not None:
                self.rng.manual_seed(seed)

        def _reset(self, tensordict: TensorDictBase | None = None, **kwargs: Any) -> TensorDictBase:  # noqa: ARG002
            done = torch.zeros(1, dtype=torch.bool)
            return TensorDict({"observation": torch.randn(3, generator=self.rng), "done": done, "terminated": done})

        def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
            done = torch.rand(1, generator=self.rng) < 0.3
            observation = torch.randn(3, generator=self.rng)
            reward = -tensordict["action"].pow(2)
            return TensorDict({"observation": observation, "reward": reward, "done": done, "terminated": done.clone()})

    def policy() -> TensorDictModule:
        return TensorDictModule(nn.Linear(3, 1), in_keys=["observation"], out_keys=["action"])

    common = {"frames_per_batch": 8, "total_frames": 16}
    return {
        "default": lambda: Collector(Env(), policy(), **common),
        "env_on_cpu": lambda: Collector(Env(device="cpu"), policy(), **common),
        "all_cpu": lambda: Collector(Env(), policy(), device="cpu", **common),
        "replay_buffer": lambda: Collector(
            Env(), policy(), replay_buffer=ReplayBuffer(storage=LazyTensorStorage(64)), extend_buffer=False, **common
        ),
    }


def _traced_lines(collector: Any) -> set[int]:
    """The lines of ``Collector.rollout`` that ran while the collector gave its batches."""
    from torchrl.collectors import Collector

    code = inspect.unwrap(Collector.rollout).__code__  # under its decorators
    lines: set[int] = set()

    def local(frame: FrameType, event: str, arg: object) -> Any:
        del arg
        if event == "line":
            lines.add(frame.f_lineno)
        return local

    def tracer(frame: FrameType, event: str, arg: object) -> Any:
        del arg
        return local if event == "call" and frame.f_code is code else None

    sys.settrace(tracer)
    threading.settrace(tracer)
    try:
        for _ in collector:
            pass
    finally:
        sys.settrace(None)
        threading.settrace(None)  # type: ignore[arg-type]
        collector.shutdown()
    return lines


@pytest.fixture(scope="module")
def rollout_flow(torchrl_model: CodeModel, torchrl_source: SourceTree) -> FlowBody:
    return _rollout_flow(torchrl_model, torchrl_source)


def test_every_configuration_is_run_here_or_says_it_is_not(rollout_flow: FlowBody) -> None:
    pytest.importorskip("torchrl")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        builders = _builders()
    declared = {c.id: c for c in rollout_flow.configurations}
    assert set(builders) <= set(declared)
    for config_id, config in declared.items():
        assert (config_id in builders) != (NOT_RUN in config.summary), config_id


@pytest.mark.parametrize("config_id", ["default", "env_on_cpu", "all_cpu", "replay_buffer"])
def test_the_steps_a_configuration_runs_are_the_steps_that_run(rollout_flow: FlowBody, config_id: str) -> None:
    pytest.importorskip("torchrl")
    index = [c.id for c in rollout_flow.configurations].index(config_id)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        collector = _builders()[config_id]()
        ran = _traced_lines(collector)
    assert ran, "the rollout did not run"
    predicted: dict[str, set[int]] = {RUNS: set(), SKIPPED: set(), DEPENDS: set()}
    for step in rollout_flow.steps:
        assert step.anchor is not None
        predicted[step.status[index]].add(step.anchor.line)
    wrong_runs = sorted(predicted[RUNS] - ran)
    wrong_skips = sorted(predicted[SKIPPED] & ran)
    assert not wrong_runs, f"{config_id}: predicted to run, did not: lines {wrong_runs}"
    assert not wrong_skips, f"{config_id}: predicted to be skipped, ran: lines {wrong_skips}"
    assert len(predicted[RUNS]) >= 8  # the loop's steps are known, not left to "depends"
    assert len(predicted[DEPENDS]) <= 6, f"{config_id}: {len(predicted[DEPENDS])} steps left undecided"


def test_the_page_lists_each_configuration_with_the_steps_it_runs(rollout_flow: FlowBody) -> None:
    """The committed page says what the model says: each configuration's line and the derived flags."""
    page = (Path(__file__).parent.parent.parent / "generated_docs" / "md" / "collectors_internals.md").read_text()
    assert "### Which steps run, by configuration" in page
    for config in rollout_flow.configurations:
        assert f"- **{config.name}**: " in page
        assert f" Runs {config.runs_text}" in page
    table = page[
        page.index("|   | Default | Env on CPU | device='cpu' | Replay buffer | Policy on CUDA | Compiled policy |") :
    ]
    # derived from _apply_env_device's assignment: True only where the env has a device
    flag = next(line for line in table.splitlines() if line.startswith("| `self._cast_to_env_device`"))
    assert flag.endswith("| `False` | `True` | `False` | `False` | `True` | `False` |")
