"""The flow section's control flow on a small synthetic package: calls numbered in the order
they are made, a call in a test drawn once, ``break``/``continue`` going on inside the function,
and configurations in which every way to a step ends first in a ``return``."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from tests.conftest import Run, write_package

PRESS = {
    "press/__init__.py": "",
    "press/machine.py": '''
class Press:
    """Presses items."""

    def __init__(self, source, sink=None, guard=None):
        self.source = source
        self.sink = sink
        self.guard = guard
        self.state = {}

    def run(self, items):
        """Every item through the press."""
        self.state.update(self.source.reset())
        for item in items:
            if self.skip(item):
                continue
            self.handle(item)
            if self.guard is not None and self.guard.stop():
                break
            if self.count(item):
                return None
        else:
            if self.sink is not None:
                self.sink.flush()
                return None
            self.finish()
        return self.result()

    def skip(self, item):
        """Whether to pass an item by."""
        return False

    def handle(self, item):
        """Press one item."""

    def count(self, item):
        """Whether enough items were pressed."""
        return False

    def finish(self):
        """After the last item."""

    def result(self):
        """What the run gives back."""
''',
}

PROFILE = """
[profile]
name = "press"

[pages.press]
slug = "press_internals"
title = "Press internals"
summary = "what a run does"

[[pages.press.sections]]
kind = "flow"
id = "run"
title = "A run"
class = "press.machine.Press"
function = "run"
loop = "for item in items"
diagram = "press_run_flow"

[[pages.press.sections.configurations]]
id = "plain"
name = "Plain"
summary = "Press(source)."
facts."self.sink" = "None"
facts."self.guard" = "None"

[[pages.press.sections.configurations]]
id = "sink"
name = "Sink"
inherits = "plain"
summary = "Press(source, sink=s)."
facts."self.sink" = "..."

[[pages.press.sections.configurations]]
id = "guarded"
name = "Guarded"
inherits = "plain"
summary = "Press(source, guard=g) with a guard that stops at once."
facts."self.guard" = "..."
facts."self.guard.stop()" = "True"
"""


@pytest.fixture
def press(run: Run, tmp_path: Path) -> Path:
    source = write_package(tmp_path / "src", PRESS)
    profile = tmp_path / "profile"
    profile.mkdir()
    (profile / "profile.toml").write_text(PROFILE)
    out = tmp_path / "out"
    code, _, err = run(
        "generate", "--source", str(source), "--package", "press", "--profile", str(profile), "--out", str(out),
        "--no-cache", "-q",
    )  # fmt: skip
    assert code == 0, err
    return out


def _line(needle: str) -> int:
    text = PRESS["press/machine.py"].lstrip("\n")  # as write_package writes it
    return next(n for n, line in enumerate(text.splitlines(), 1) if needle in line)


def _page(out: Path) -> str:
    return (out / "md" / "press_internals.md").read_text()


def _numbers(page: str) -> dict[str, int]:
    outline = page[: page.index("```mermaid")]
    return {call: int(n) for n, call in re.findall(r"- \*\*(\d+)\*\* `([^`]+)`", outline)}


def _spans(text: str) -> set[int]:
    found: set[int] = set()
    for part in filter(None, text.split(", ")):
        first, _, last = part.partition("-")
        found.update(range(int(first), int(last or first) + 1))
    return found


def _configuration(page: str, name: str) -> tuple[set[int], set[int], str]:
    """(steps that run, steps that depend, the exits) of one configuration's line."""
    line = next(line for line in page.splitlines() if line.startswith(f"- **{name}**: "))
    runs = re.search(r" Runs ([\d, -]+)", line)
    depends = re.search(r"; depends: ([\d, -]+)", line)
    exits = line.partition("; exits: ")[2]
    return _spans(runs.group(1) if runs else ""), _spans(depends.group(1) if depends else ""), exits


def _dot(out: Path) -> tuple[dict[str, str], list[tuple[str, str, str]]]:
    dot = (out / "rst" / "press_run_flow.dot").read_text()
    found = re.findall(r'^\s*(n\d+) \[label=(?:"((?:[^"\\]|\\.)*)"|(\w+))', dot, flags=re.MULTILINE)
    nodes = {node: quoted or bare for node, quoted, bare in found}
    edges = re.findall(r"^\s*(n\d+) -> (n\d+)(?: \[(.*)\])?$", dot, flags=re.MULTILINE)
    return nodes, edges


def test_a_call_in_another_calls_arguments_is_numbered_first(press: Path) -> None:
    """``self.state.update(self.source.reset())``: ``reset`` runs first, so it is step 1."""
    page = _page(press)
    numbers = _numbers(page)
    assert numbers["self.source.reset"] == 1
    assert numbers["self.state.update"] == 2
    calls = page[page.index("### Every call") :]
    assert calls.index("`self.source.reset`") < calls.index("`self.state.update`")
    nodes, _ = _dot(press)
    box = next(label for label in nodes.values() if "self.state.update()" in label)
    assert box.index("1. self.source.reset()") < box.index("2. self.state.update()")


def test_a_call_made_by_a_test_is_drawn_once_in_its_decision(press: Path) -> None:
    """``if self.count(item): return None`` is one decision numbered as the call, not a box too."""
    numbers = _numbers(_page(press))
    nodes, _ = _dot(press)
    labels = list(nodes.values())
    assert f"{numbers['self.count']}. self.count(item) ?" in labels
    assert f"{numbers['self.skip']}. self.skip(item) ?" in labels
    assert sum("self.count(" in label for label in labels) == 1
    assert sum("self.skip(" in label for label in labels) == 1
    mermaid = _page(press)
    assert f'{{"{numbers["self.count"]}. self.count(item) ?"}}' in mermaid


def test_break_goes_on_after_the_loop_and_continue_at_its_head(press: Path) -> None:
    page = _page(press)
    numbers = _numbers(page)
    outline = page[: page.index("```mermaid")]
    assert "**exit** `break`" not in outline
    assert (
        f"`break` at `L{_line('break')}` - if `self.guard is not None and self.guard.stop()`: leaves the loop "
        f"(skipping its `else`) and goes on at **{numbers['self.result']}** (`L{_line('return self.result()')}`)"
    ) in outline
    assert f"`continue` at `L{_line('continue')}` - if `self.skip(item)`: back to the loop's next iteration" in outline
    nodes, edges = _dot(press)
    by_label = {label: node for node, label in nodes.items()}
    brk, cont = by_label["break"], by_label["continue"]
    after = next(node for node, label in nodes.items() if f"{numbers['self.result']}. self.result()" in label)
    assert [target for source, target, _ in edges if source == brk] == [after]  # past the loop's else
    again = by_label["next iteration"]
    assert [target for source, target, _ in edges if source == cont] == [again]
    mermaid = page[page.index("```mermaid") :]
    ids = dict(re.findall(r'^\s*(n\d+)\W+"([^"]*)"', mermaid, flags=re.MULTILINE))
    mermaid_break = next(node for node, label in ids.items() if label == "break")
    mermaid_after = next(node for node, label in ids.items() if label.startswith(f"{numbers['self.result']}. "))
    assert re.findall(rf"^\s*{mermaid_break} --> (n\d+)$", mermaid, flags=re.MULTILINE) == [mermaid_after]
    assert 'shape=octagon' not in next(line for line in (press / "rst" / "press_run_flow.dot").read_text().splitlines()
                                       if line.strip().startswith(f"{brk} "))  # fmt: skip


def test_steps_that_every_way_reaches_only_after_a_return_never_run(press: Path) -> None:
    page = _page(press)
    n = _numbers(page)
    result, finish, flush, count = n["self.result"], n["self.finish"], n["self.sink.flush"], n["self.count"]
    # with a sink, the loop's else always returns: what follows the loop never runs
    runs, depends, exits = _configuration(page, "Sink")
    assert flush in depends  # count() may end the run first
    assert result not in runs | depends
    assert finish not in runs | depends
    assert "`return self.result()`" not in exits
    # the guard stops at once: the break is taken, the rest of the iteration and the else never run,
    # and the function goes on after the loop
    runs, depends, exits = _configuration(page, "Guarded")
    assert {n["self.guard.stop"], result} <= runs
    assert count not in runs | depends
    assert flush not in runs | depends
    assert finish in depends  # every item may be skipped: then the loop ends normally
    assert exits == f"`return self.result()` at `L{_line('return self.result()')}`."  # a break is not an exit
    # nothing decided: count() may end the run, so what follows the loop depends
    runs, depends, exits = _configuration(page, "Plain")
    assert {n["self.handle"], count} <= runs
    assert {finish, result} <= depends
    assert "(depends)" in exits


def _reach_of(source: str, needle: str, facts: dict[str, object] | None = None) -> object:
    """The reach of the statement holding ``needle`` in ``source`` (a function), tests decided by ``facts``."""
    from rlmap.index import controlflow as cf
    from rlmap.pages.conditions import UNKNOWN
    from rlmap.pages.reach import Reach

    text = textwrap.dedent(source).lstrip("\n")
    flow = cf.function_flow(text, 1)
    reach = Reach(flow.body, None, lambda condition: (facts or {}).get(condition, UNKNOWN))
    line = next(n for n, row in enumerate(text.splitlines(), 1) if needle in row)
    return reach.at(cf.locate(flow.body, line))


def test_reach_follows_returns_breaks_and_handlers() -> None:
    from rlmap.pages.conditions import UNKNOWN

    always_returns = """
    def f(self):
        if self.a:
            return 1
        else:
            raise ValueError
        self.never()
    """
    assert _reach_of(always_returns, "self.never()") is False
    decided = """
    def f(self):
        if self.a:
            return 1
        self.after()
    """
    assert _reach_of(decided, "self.after()", {"self.a": True}) is False
    assert _reach_of(decided, "self.after()", {"self.a": False}) is True
    assert _reach_of(decided, "self.after()") is UNKNOWN
    caught = """
    def f(self):
        try:
            raise ValueError
        except ValueError:
            pass
        self.after()
    """
    assert _reach_of(caught, "self.after()") is UNKNOWN  # the handler may catch it and go on
    only_break = """
    def f(self):
        while True:
            if self.ready():
                break
        self.after()
    """
    assert _reach_of(only_break, "self.after()") is True  # the only way out is the break
    only_return = """
    def f(self):
        while True:
            if self.ready():
                return
        self.after()
    """
    assert _reach_of(only_return, "self.after()") is False
