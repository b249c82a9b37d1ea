"""The environment-step page (declared in the TorchRL profile alone): its claims against torchrl.

The static facts are read from the committed page (which another test keeps up to date); the
runtime checks import and run torchrl on CPU, the only place besides test_runtime.py that does.
"""

from __future__ import annotations

import importlib
import re
import warnings
from pathlib import Path

import pytest

REPO = Path(__file__).parent.parent.parent
PAGE = REPO / "generated_docs" / "md" / "env_step_internals.md"

pytestmark = pytest.mark.torchrl


def _section(title: str, until: str = "\n## ") -> str:
    text = PAGE.read_text(encoding="utf-8")
    start = text.index(f"\n## {title}\n")
    end = text.find(until, start + len(title) + 5)
    return text[start : end if end >= 0 else len(text)]


def _listed_overrides(section: str, stop: str | None = None) -> list[tuple[str, str]]:
    """(class name, module) for each ``- `Name` (path:line): overrides it ...`` item."""
    if stop is not None:
        section = section[: section.index(stop)]
    items = re.findall(r"^- `(\w+)` \(\[(torchrl/[\w/]+)\.py:\d+\]", section, flags=re.MULTILINE)
    return [(name, path.replace("/", ".")) for name, path in items]


def _outline(section: str) -> str:
    """A flow section's outline (what comes before its complete list of calls)."""
    return section[: section.index("### Every call, in the order it is made")]


def _steps(outline: str) -> list[tuple[str, str, str]]:
    """(indentation, call as written, the rest of the line) of each numbered step."""
    return re.findall(r"^( *)- \*\*\d+\*\* `([^`]+)`(.*)$", outline, flags=re.MULTILINE)


def test_step_flow_calls_the_subclass_step_only_without_a_preset_result() -> None:
    outline = _outline(_section("EnvBase.step"))
    block = outline[outline.index("- `if next_tensordict is None`:") :]
    steps = _steps(block)
    assert steps[0][:2] == ("  ", "self._step")  # the first step inside the branch
    assert "-> `EnvBase._step`" in steps[0][2]
    assert "(or one of " in steps[0][2]  # any subclass's _step
    # tensordict.set is a method of tensordict's: left to the complete list, with its line
    every = _section("EnvBase.step")[len(outline) :]
    assert re.search(
        r"^\d+\. `tensordict\.set` at \[L\d+\]\(https://github\.com/pytorch/rl/blob/v0\.14\.1/torchrl/envs/common\.py#L\d+\)",
        every,
        re.MULTILINE,
    )


def test_transformed_env_steps_its_base_env_then_its_transform() -> None:
    section = _section("TransformedEnv._step")
    assert "runs its base environment's ``_step``\nand its transform's ``_step``." in section
    calls = [call for _, call, _ in _steps(_outline(section))]
    assert calls.index("self.base_env._step") < calls.index("self.transform._step")


def test_step_and_maybe_reset_hands_over_unless_compiled() -> None:
    section = _section("EnvBase.step_and_maybe_reset")
    outline = _outline(section)
    assert "- `if compiled is not None`:\n  - **" in outline
    assert "  - **exit** `return compiled(tensordict)`" in outline
    steps = {call: rest for _, call, rest in _steps(outline)}
    assert "-> `EnvBase._step_and_maybe_reset`" in steps["self._step_and_maybe_reset"]
    second = section[len(outline) :]  # the private method's flow follows
    assert "-> `EnvBase.step`" in {call: rest for _, call, rest in _steps(second)}["self.step"]


def test_compose_calls_each_transform_through_its_loop() -> None:
    section = _section("TransformedEnv._step")
    compose = section[section.index("What `Compose._step`") :]
    outline = _outline(compose)
    block = outline[outline.index("- `each for t in self.transforms`:") :]
    assert _steps(block)[0][:2] == ("  ", "t._step")  # the loop variable's _step, each transform in turn


@pytest.mark.runtime
def test_every_listed_step_override_defines_step_and_none_is_missing() -> None:
    """The subclasses section against the classes themselves (imported, not run)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        transforms = importlib.import_module("torchrl.envs.transforms")
        base = transforms.Transform
        listed = _listed_overrides(_section("Transforms that override _step or _call"), stop="Overrides of")
        assert len(listed) >= 5
        checked = 0
        for name, module_name in listed:
            try:
                module = importlib.import_module(module_name)
            except ImportError:  # an optional dependency (the LLM transforms) is not installed here
                continue
            cls = getattr(module, name)
            assert issubclass(cls, base), name
            assert "_step" in vars(cls), name
            checked += 1
        assert checked >= 5
        names = {name for name, _ in listed}
        for name in dir(transforms):
            cls = getattr(transforms, name)
            if isinstance(cls, type) and issubclass(cls, base) and cls is not base and "_step" in vars(cls):
                assert cls.__name__ in names, f"{cls.__name__} overrides _step but is not listed"


@pytest.mark.runtime
def test_init_tracker_marks_the_first_step_of_every_trajectory() -> None:
    """The page says InitTracker writes is_init true on a reset's output and false after a step: run it."""
    assert "builds the input of the next step from the output of\nthis one." in _section("step_mdp")
    init = _section("InitTracker and is_init")
    assert (
        "true in the output\nof a reset (only where the reset flag is set, when one is given), false after an ordinary step"
        in init
    )
    assert re.search(r"in `InitTracker\._reset` \(`set via init_key`\)", init)
    assert re.search(r"in `InitTracker\._call` \(`set via init_key`\)", init)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from torchrl.envs import InitTracker, TransformedEnv
        from torchrl.envs.utils import step_mdp
        from torchrl.testing.mocking_classes import CountingEnv

        env = TransformedEnv(CountingEnv(max_steps=3), InitTracker())
        data = env.reset()
        starts = [bool(data["is_init"].item())]
        later = []
        resets = 0
        while resets < 2:
            data = env.rand_step(data)
            later.append(bool(data["next", "is_init"].item()))
            done = bool(data["next", "done"].item())
            observation = data["next", "observation"].clone()
            data = step_mdp(data)
            assert (data["observation"] == observation).all()  # the next step starts from this one's output
            if done:
                data = env.reset()
                starts.append(bool(data["is_init"].item()))
                resets += 1
    assert starts == [True, True, True]
    assert later
    assert not any(later)


def test_the_complete_call_lists_say_they_leave_out_the_builtins_they_leave_out() -> None:
    """step_mdp calls isinstance, len and zip: its complete list holds none of them, and says so."""
    import ast

    from torchrl.envs import utils

    source = Path(utils.__file__).read_text(encoding="utf-8")
    function = next(
        node for node in ast.walk(ast.parse(source)) if isinstance(node, ast.FunctionDef) and node.name == "step_mdp"
    )
    called = {
        node.func.id for node in ast.walk(function) if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    }
    assert {"isinstance", "len", "zip"} <= called
    listed = _section("step_mdp").split("### Every call, in the order it is made", 1)[1]
    assert "builtins, such as ``isinstance``\nor ``len``, left out" in listed
    assert not re.search(r"^\d+\. `(isinstance|len|zip)`", listed, flags=re.MULTILINE)


def test_the_is_init_lists_name_the_package_they_cover() -> None:
    """The section lists is_init's accesses in torchrl.envs only (the value code's and the
    recurrent modules' are on other pages): its lists say so."""
    section = _section("InitTracker and is_init")
    assert "The key `is_init` is written in `torchrl.envs` at:" in section
    assert "and read in `torchrl.envs` at:" in section
    listed = re.findall(r"\]\(https://github\.com/pytorch/rl/blob/[^/]+/(torchrl/[\w/]+)\.py#L\d+\)\) in `", section)
    assert listed
    assert all(path.startswith("torchrl/envs/") for path in listed)
