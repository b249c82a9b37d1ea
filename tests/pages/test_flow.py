"""The flow section on a small synthetic package: phases, alternatives, exits, configurations
(with flags derived in the order ``__init__`` sets them) and the control-flow diagram."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import Run, write_package

MILL = {
    "mill/__init__.py": "",
    "mill/machine.py": '''
class Machine:
    """Moves items, steps them and stores the results."""

    def __init__(self, device=None, buffer=None):
        self._setup(device)
        self.buffer = buffer
        self._late()

    def _setup(self, device):
        self.device = device
        self._cast = self.device is not None

    def _late(self):
        if self.device is None:
            self.device = "cpu"
        self._strip = not self._cast or self.device == "cpu"

    def run(self, items):
        """Every item through the machine."""
        self._prepare()
        for item in items:
            if self._cast:
                item = self.move(item)
            elif self._strip:
                self.strip(item)
            out = self.step(item)
            out.check()
            if self.buffer is not None:
                self.buffer.add(out)
                if self.full():
                    return None
            else:
                self.keep(out)
            if self.stop():
                break
        else:
            self.finish()
        return self.result()

    def _prepare(self):
        """Get ready."""

    def move(self, item):
        """Move one item."""
        return item

    def strip(self, item):
        """Strip one item."""

    def step(self, item):
        """Step one item."""
        return item

    def full(self):
        """Whether the buffer is full."""
        return False

    def keep(self, out):
        """Keep one result."""

    def stop(self):
        """Whether to stop."""
        return False

    def finish(self):
        """After the last item."""

    def result(self):
        """What the run gives back."""
''',
}

PROFILE = """
[profile]
name = "mill"

[pages.machine]
slug = "machine_internals"
title = "Machine internals"
summary = "what a run does"

[[pages.machine.sections]]
kind = "flow"
id = "run"
title = "A run"
class = "mill.machine.Machine"
function = "run"
loop = "for item in items"
diagram = "machine_run_flow"
{phases}
[[pages.machine.sections.configurations]]
id = "plain"
name = "Plain"
summary = "Machine() with nothing given."
facts."device" = "None"
facts."self.buffer" = "None"
facts."self.stop()" = "False"

[[pages.machine.sections.configurations]]
id = "buffered"
name = "Buffered"
inherits = "plain"
summary = "Machine(buffer=b): results go to the buffer."
facts."self.buffer" = "..."
"""

PHASES = """
[[pages.machine.sections.phases]]
name = "Prepare the item"
anchor = "move"

[[pages.machine.sections.phases]]
name = "Step"
anchor = "step"

[[pages.machine.sections.phases]]
name = "Store"
starts_at = "buffer"
anchor = "keep"

[[pages.machine.sections.phases]]
name = "Stop or go on"
anchor = "stop"
"""


def _generate(
    run: Run, tmp_path: Path, phases: str = PHASES, files: dict[str, str | bytes] | None = None
) -> tuple[int, str, Path]:
    source = write_package(tmp_path / "src", files or MILL)
    profile = tmp_path / "profile"
    profile.mkdir()
    (profile / "profile.toml").write_text(PROFILE.format(phases=phases))
    out = tmp_path / "out"
    code, _, err = run(
        "generate", "--source", str(source), "--package", "mill", "--profile", str(profile), "--out", str(out),
        "--no-cache", "-q",
    )  # fmt: skip
    return code, err, out


@pytest.fixture
def mill(run: Run, tmp_path: Path) -> Path:
    code, err, out = _generate(run, tmp_path)
    assert code == 0, err
    return out


def _line(needle: str) -> int:
    text = MILL["mill/machine.py"].lstrip("\n")  # as write_package writes it
    return next(n for n, line in enumerate(text.splitlines(), 1) if needle in line)


def test_the_loop_is_cut_into_the_profiles_phases_with_branches_and_exits(mill: Path) -> None:
    page = (mill / "md" / "machine_internals.md").read_text()
    outline = page[page.index("Before the loop:") : page.index("```mermaid")]
    glance = page[page.index("At a glance") : page.index("Before the loop:")]
    assert "1. **Prepare the item** (2-3): either (`move`) or (`strip`)" in glance
    assert "3. **Store** (5-7): either (`buffer.add`, `full`, **exit** `return`?) or (`keep`)" in glance
    assert "4. **Stop or go on** (8): `stop`, `break`?" in glance  # a break is not an exit
    assert re.findall(r"^\d+\. \*\*(.+)\*\*$", outline, flags=re.MULTILINE) == [
        "Prepare the item", "Step", "Store", "Stop or go on",
    ]  # fmt: skip
    prepare = outline[outline.index("Prepare the item") : outline.index("**Step**")]
    assert "one of these branches:" in prepare  # if / elif exclude each other
    assert "- `if self._cast`" in prepare
    assert "- `elif self._strip`" in prepare
    assert "`out.check`" not in outline  # a method of a local value: in the complete list only
    store = outline[outline.index("**Store**") : outline.index("Stop or go on")]
    assert f"**exit** `return None` at `L{_line('return None')}` - if `self.full()`" in store
    stop = outline[outline.index("Stop or go on") :]
    assert f"`break` at `L{_line('break')}` - if `self.stop()`: leaves the loop" in stop
    assert "When the loop ends without ``break``" in outline or "When the loop ends without `break`" in outline
    assert f"5. `out.check` at `L{_line('out.check()')}`" in page  # the complete list keeps every call


def test_the_list_of_every_call_gives_each_call_all_the_conditions_it_runs_under(mill: Path) -> None:
    """An inner block's condition alone read as the only one: the collectors page listed
    ``self._sync_policy`` "in ``if not self.no_cuda_sync``", inside three more conditions."""
    page = (mill / "md" / "machine_internals.md").read_text()
    every = page[page.index("### Every call, in the order it is made") :]
    assert "each with the conditions it runs under (those of the blocks that hold it, and those an" in every
    assert f"`self.strip` at `L{_line('self.strip(item)')}` - in `not self._cast / elif self._strip`\n" in every
    assert f"`self.full` at `L{_line('if self.full()')}` - in `if self.buffer is not None`\n" in every


def _numbers(page: str) -> dict[str, int]:
    """The outline's step numbers by call (each call is made once in this function)."""
    outline = page[: page.index("### Which steps run")]
    return {call: int(n) for n, call in re.findall(r"- \*\*(\d+)\*\* `([^`]+)`", outline)}


def _runs(line: str) -> set[int]:
    found: set[int] = set()
    for part in line.split(", "):
        first, _, last = part.partition("-")
        found.update(range(int(first), int(last or first) + 1))
    return found


def test_configurations_follow_the_order_init_sets_the_flags(mill: Path) -> None:
    page = (mill / "md" / "machine_internals.md").read_text()
    facts = page[page.index("|   | Plain | Buffered |") : page.index("### Every call")]
    assert "| `self.buffer` | `None` | an object |" in facts
    # _cast is set while device is still None; _late then sets device: a flow-insensitive
    # reading would say _cast is True
    assert re.search(r"^\| `self\._cast` \(from `L\d+`\) \| `False` \| `False` \|$", facts, flags=re.MULTILINE)
    assert re.search(r"^\| `self\._strip` \(from `L\d+`\) \| `True` \| `True` \|$", facts, flags=re.MULTILINE)
    assert "All of them give `device = None`, `self.stop() = False`." in page
    numbers = _numbers(page)
    plain = re.search(r"^- \*\*Plain\*\*: .* Runs ([\d, -]+); exits: (.*)\.$", page, flags=re.MULTILINE)
    buffered = re.search(r"^- \*\*Buffered\*\*: .* Runs ([\d, -]+); depends: ([\d, -]+); exits: (.*)\.$", page, re.M)
    assert plain is not None
    assert buffered is not None
    runs = {call for call, n in numbers.items() if n in _runs(plain.group(1))}
    assert runs == {"self._prepare", "self.strip", "self.step", "self.keep", "self.stop", "self.finish", "self.result"}
    assert plain.group(2) == f"`return self.result()` at `L{_line('return self.result()')}`"  # break never taken
    runs = {call for call, n in numbers.items() if n in _runs(buffered.group(1))}
    assert runs == {"self._prepare", "self.strip", "self.step", "self.buffer.add", "self.full", "self.stop"}
    # self.full() is not a fact: the return may be taken, so what follows the loop depends
    assert {call for call, n in numbers.items() if n in _runs(buffered.group(2))} == {"self.finish", "self.result"}
    assert buffered.group(3).startswith(f"`return None` at `L{_line('return None')}` (depends)")


def test_the_diagram_draws_decisions_exits_and_the_loop(mill: Path) -> None:
    dot = (mill / "rst" / "machine_run_flow.dot").read_text()
    found = re.findall(r'^\s*(n\d+) \[label=(?:"((?:[^"\\]|\\.)*)"|(\w+))', dot, flags=re.MULTILINE)
    nodes = {node: quoted or bare for node, quoted, bare in found}
    by_label = {label: node for node, label in nodes.items()}
    edges = re.findall(r"^\s*(n\d+) -> (n\d+)(?: \[(.*)\])?$", dot, flags=re.MULTILINE)
    loop = by_label["for item in items"]
    brk = by_label["break"]
    result = next(node for node, label in nodes.items() if label.endswith("self.result()"))
    assert [e[1] for e in edges if e[0] == brk] == [result]  # on after the loop, past its else
    back = [e for e in edges if e[1] == loop and "dashed" in e[2]]
    assert len(back) == 1
    assert nodes[back[0][0]] == "next iteration"
    assert any(label.endswith("self._cast ?") for label in nodes.values())
    assert "subgraph cluster_" in dot
    assert 'label="Prepare the item"' in dot
    mermaid = (mill / "md" / "machine_internals.md").read_text()
    assert "flowchart TB" in mermaid
    assert '{"self.buffer is not None ?"}' in mermaid


def test_a_vanished_phase_anchor_or_loop_fails_generation(run: Run, tmp_path: Path) -> None:
    code, err, _ = _generate(
        run, tmp_path / "a", PHASES.replace('anchor = "stop"', 'starts_at = "stop"\nanchor = "finish"')
    )
    assert code == 2
    assert "phases[4] (Stop or go on): mill.machine.Machine.finish is neither called" in err
    code, err, _ = _generate(run, tmp_path / "b", PHASES.replace('anchor = "move"', 'anchor = "nothing_here"'))
    assert code == 2
    assert "phases[1] (Prepare the item)" in err
    code, err, _ = _generate(run, tmp_path / "c", PHASES + "\n[pages.x]\n")
    assert code == 2


def test_a_call_in_a_conditional_expression_runs_only_under_its_test() -> None:
    from rlmap.pages.sections.runs import ternary_conditions

    header = "with hold_out_net(self.value_network) if (params is None and target_params is None) else nullcontext():"
    assert ternary_conditions(header, "hold_out_net") == ["params is None and target_params is None"]
    assert ternary_conditions(header, "nullcontext") == ["not (params is None and target_params is None)"]
    assert ternary_conditions("x = f(y) + g(y)", "f") == []


def test_a_withdrawn_fact_is_not_decided() -> None:
    """``?`` in a configuration withdraws an inherited fact: what depends on it "depends"."""
    from rlmap.pages.conditions import UNKNOWN, parse_fact

    assert parse_fact("?") is UNKNOWN
    assert parse_fact(" True ") is True


ASSIGNING = {
    "belt/__init__.py": "",
    "belt/belt.py": """
class Belt:
    def __init__(self):
        self.carried = None
        self.spare = None
        self.count = 0
        self.unused = None

    def run(self, items):
        for item in items:
            out = self.step(item)
            if out is not None:
                self.carried = out
            self.flush()
            self.spare, rest = out, 0
            self.count += 1
        self.carried = None

    def step(self, item):
        return item

    def flush(self):
        pass
""",
}

ASSIGNING_PROFILE = """
[pages.belt]
slug = "belt_internals"
title = "Belt internals"
summary = "what a run does"

[[pages.belt.sections]]
kind = "flow"
id = "run"
title = "A run"
class = "belt.belt.Belt"
function = "run"
loop = "for item in items"
diagram = "belt_run_flow"
assignments = [{attributes}]

[[pages.belt.sections.phases]]
name = "Step and carry"
anchor = "step"

[[pages.belt.sections.phases]]
name = "Flush"
anchor = "flush"
"""


def _generate_belt(run: Run, tmp_path: Path, files: dict[str, str], attributes: str) -> tuple[int, str, Path]:
    """``generate`` of ``files`` (package ``belt``) under :data:`ASSIGNING_PROFILE` with these
    ``assignments``: the exit code, stderr, and the output directory."""
    source = write_package(tmp_path / "src", files)
    profile = tmp_path / "profile.toml"
    profile.write_text(ASSIGNING_PROFILE.format(attributes=attributes))
    out = tmp_path / "out"
    args = ["generate", "--source", str(source), "--package", "belt", "--profile", str(profile), "--out", str(out)]
    code, _, err = run(*args, "--no-cache", "-q")
    return code, err, out


def test_assignments_of_an_attribute_are_steps_of_the_outline(run: Run, tmp_path: Path) -> None:
    """Where a loop advances its state by an assignment (the rollout's ``self._carrier =
    env_next_output``), the outline, the phase's line and the diagram say so, under its condition."""
    code, err, out = _generate_belt(run, tmp_path, ASSIGNING, '"carried", "spare", "count"')
    assert code == 0, err
    page = (out / "md" / "belt_internals.md").read_text()
    text = ASSIGNING["belt/belt.py"].lstrip("\n")
    line = next(n for n, written in enumerate(text.splitlines(), 1) if "self.carried = out" in written)
    after = next(n for n, written in enumerate(text.splitlines(), 1) if "self.carried = None" in written and n > line)
    assert "1. **Step and carry** (1): `step`, `carried = out`?" in page  # (not numbered: 1 is step)
    assert f"- `self.carried = out` at `L{line}` - only if `out is not None`" in page
    assert f"- `self.carried = None` at `L{after}`" in page  # after the loop
    assert "the assignments of `Belt.carried`" in page
    assert "self.carried = out [if out is not None]" in (out / "md" / "belt_run_flow.dot").read_text()
    # a target of an unpacking has no one value; an augmented assignment is one too
    assert "- `self.spare assigned` at" in page
    assert "- `self.count augmented by 1` at" in page
    assert "the assignments, not numbered, are not counted here" not in page  # (no configurations here)
    # an attribute the function no longer assigns fails generation, naming it
    code, err, _ = _generate_belt(run, tmp_path / "again", ASSIGNING, '"unused"')
    assert code == 2
    assert "assignments: belt.belt.Belt.unused is assigned nowhere in belt.belt.Belt.run" in err


def test_an_assignment_on_the_line_of_its_if_is_in_its_branch(run: Run, tmp_path: Path) -> None:
    """``if c: self.x = v`` on one line: the assignment is in the branch, under its condition (it
    was placed at the ``if``'s header, before the branches, with no condition)."""
    files = {
        "belt/__init__.py": "",
        "belt/belt.py": """
class Belt:
    def __init__(self):
        self.state = 0

    def run(self, items):
        for item in items:
            self.step(item)
            if item == 1: self.state = 1
            elif item == 2: self.state = 2
            else: self.state = 3
            if self.ready(item): self.mark(item)
            self.flush()

    def ready(self, item):
        return item

    def mark(self, item):
        pass

    def step(self, item):
        return item

    def flush(self):
        pass
""",
    }
    code, err, out = _generate_belt(run, tmp_path, files, '"state"')
    assert code == 0, err
    page = (out / "md" / "belt_internals.md").read_text()
    outline = page[page.index("1. **Step and carry**\n") :]
    branches = outline[outline.index("one of these branches:") :]
    for condition, value in (("if item == 1", 1), ("elif item == 2", 2), ("else", 3)):
        arm = branches[branches.index(f"- `{condition}`") :]
        assert arm.split("\n", 2)[1].strip().startswith(f"- `self.state = {value}` at"), (condition, arm[:200])
    # a call on the line too: the test's call is the test's, the branch's runs only if it holds
    assert "`self.mark` -> `Belt.mark`" in outline
    assert re.search(r"`self\.mark` -> `Belt\.mark` \(`L\d+`\) at `L\d+` - only if `self\.ready\(item\)`", outline)


def test_a_flow_names_the_subclasses_that_define_the_method_again(run: Run, tmp_path: Path) -> None:
    """``EnvBase.step_and_maybe_reset``'s outline did not say that ``ParallelEnv`` defines its own
    (which calls this one only without buffers): a reader of it debugged code that does not run."""
    files = {
        **MILL,
        "mill/kinds.py": """
            from mill.machine import Machine


            class Fast(Machine):
                def run(self, items):
                    return super().run(items[:1])


            class Slow(Machine):
                def run(self, items):
                    return None


            class Same(Machine):
                def step(self, item):
                    return item


            class Pooled(Machine):
                def run(self, items):
                    if not self.pooled:
                        return super().run(items)
                    return None
        """,
    }
    code, err, out = _generate(run, tmp_path, files=files)
    assert code == 0, err
    page = " ".join((out / "md" / "machine_internals.md").read_text().split())
    # a definition that calls it only under a condition says which (every call of it guarded alike)
    assert (
        "3 subclasses define `run` again, and an instance of one runs that definition in this one's place "
        "(a definition marked *calls it* calls this one too): `Fast.run` (`mill/kinds.py:5`) (*calls it*), "
        "`Pooled.run` (`mill/kinds.py:20`) (*calls it*, under `if not self.pooled`), "
        "`Slow.run` (`mill/kinds.py:10`)."
    ) in page
    assert "Same.run" not in page  # inherits the method: runs this one


def test_a_branch_that_calls_only_what_the_outline_leaves_out_stays_an_alternative(run: Run, tmp_path: Path) -> None:
    """``EnvBase.step``'s ``if not self.batch_locked:`` branch calls only ``partial_steps.all``
    and ``.view``, which the outline leaves to the complete list: it was folded away (the
    ``else`` shown as ``if partial_steps is not None and self.batch_locked``), and with it what an
    env that is not batch-locked does.  It is an alternative now, naming the calls it makes."""
    text = MILL["mill/machine.py"].replace(
        '        """Every item through the machine."""\n        self._prepare()\n',
        '        """Every item through the machine."""\n'
        "        if self.device is not None:\n"
        '            if self.device == "raw":\n'
        "                items = items.view(3)\n"
        "            else:\n"
        "                self._prepare()\n"
        "        for extra in (1, 2):\n"
        "            if self.buffer is not None:\n"
        "                self.keep(extra)\n"
        "            else:\n"
        "                items = items.view(extra)\n",
    )
    assert text != MILL["mill/machine.py"]
    code, err, out = _generate(run, tmp_path, files={**MILL, "mill/machine.py": text})
    assert code == 0, err
    page = (out / "md" / "machine_internals.md").read_text()
    outline = page[page.index("- `if self.device is not None`:") :]
    assert outline.splitlines()[1:5] == [
        "  - one of these branches:",
        '    - `if self.device == "raw"`: no call the outline shows; the complete list below has its calls (`items.view`)',
        "    - `else`",
        outline.splitlines()[4],
    ]
    assert outline.splitlines()[4].startswith("      - **1** `self._prepare` -> `Machine._prepare`")
    assert "self.device is not None and not" not in page  # (no folded condition)
    # a section without the complete list does not point to it
    files = {**MILL, "mill/machine.py": text}
    code, err, bare = _generate(run, tmp_path / "bare", "every_call = false\n" + PHASES, files)
    assert code == 0, err
    page = (bare / "md" / "machine_internals.md").read_text()
    assert "complete list" not in page
    assert (
        '    - `if self.device == "raw"`: no call the outline shows; it makes only calls the outline does not list '
        "(`items.view`)\n"
    ) in page
    # a loop drawn as one box says, on a call's line, the branch it is in
    diagram = (out / "md" / "machine_run_flow.dot").read_text()
    assert re.search(
        r"each for extra in \(1, 2\):\\l   2\. self\.keep\(\) \[if self\.buffer is not None\]\\l", diagram
    ), diagram


def test_a_call_the_flow_resolves_to_a_family_names_the_base_method_first(run: Run, tmp_path: Path) -> None:
    """``Compose._step``'s ``t._step`` read ``-> MessageToHistory._step, ReadState._step, ...``:
    three of the transforms the value flow saw, none of them the default most transforms run
    (``Transform._step``).  The method the family shares comes first, then what the flow saw."""
    parts = """
class Part:
    def go(self):
        return 0


class Left(Part):
    def go(self):
        return 1


class Right(Part):
    def go(self):
        return 2


class Unused(Part):
    def go(self):
        return 3
"""
    text = (
        MILL["mill/machine.py"]
        .replace("class Machine:", "from mill.parts import Left, Right\n\n\nclass Machine:")
        .replace(
            "        self.buffer = buffer\n", "        self.buffer = buffer\n        self.parts = [Left(), Right()]\n"
        )
        .replace(
            '        """Every item through the machine."""\n',
            '        """Every item through the machine."""\n        for part in self.parts:\n            part.go()\n',
        )
    )
    code, err, out = _generate(run, tmp_path, files={**MILL, "mill/machine.py": text, "mill/parts.py": parts})
    assert code == 0, err
    page = " ".join((out / "md" / "machine_internals.md").read_text().split())
    assert re.search(
        r"\*\*1\*\* `part\.go` -> `Part\.go` \(`mill/parts\.py:2`\) or one of its overrides \(4 classes define it, and "
        r"any of them may run; the value flow sees 2 reach it: `Left\.go` \(`mill/parts\.py:7`\), `Right\.go` "
        r"\(`mill/parts\.py:12`\)\)",
        page,
    ), page[page.index("part.go") - 50 : page.index("part.go") + 400]


def test_a_decorators_wrapper_names_the_methods_it_is_put_around(run: Run, tmp_path: Path) -> None:
    """``EnvBase.step``'s ``self._step`` read ``-> EnvBase._step, _check_start.decorated_fun`` and
    never named ``SerialEnv._step``, which the wrapper runs: a target that is a decorator's wrapper
    now names the call's overriding methods it is put around (by one of their decorators, another
    may be outside it), each with its line."""
    wrapped = """

def _started(fun):
    def started(self, *args):
        self.start()
        return fun(self, *args)

    return started


class Eager(Machine):
    @_started
    def step(self, item):
        return item

    def start(self):
        pass


class Careful(Machine):
    @staticmethod
    def check(item):
        return item

    @_started
    def step(self, item):
        return item

    def start(self):
        pass


class Plain(Machine):
    def step(self, item):
        return item

    def finish(self):
        pass


def main(items):
    Eager().run(items)
    Careful().run(items)
"""
    text = MILL["mill/machine.py"] + wrapped
    code, err, out = _generate(run, tmp_path, files={**MILL, "mill/machine.py": text})
    assert code == 0, err
    page = " ".join((out / "md" / "machine_internals.md").read_text().split())
    lines = (tmp_path / "src" / "mill" / "machine.py").read_text().splitlines()
    started = next(n for n, written in enumerate(lines, 1) if "def started" in written)
    machine, eager, careful = [n for n, written in enumerate(lines, 1) if "def step" in written][:3]
    expected = (
        f"`self.step` -> `Machine.step` (`L{machine}`), `_started.started` (`L{started}`) [the wrapper `@_started` puts "
        f"around `Careful.step` (`L{careful}`) and `Eager.step` (`L{eager}`)] (or one of 3 overrides)"
    )
    assert expected in page, page[page.index("`self.step` ->") : page.index("`self.step` ->") + 400]
    # one override is "its override", not "one of 1 overrides"
    assert re.search(r"`self\.finish` -> `Machine\.finish` \(`L\d+`\) \(or its override\) at", page), page


def test_an_outline_step_with_up_to_five_targets_names_them_all() -> None:
    """The collectors page cut ``self._sync_policy``'s five targets to three "and 2 more": the two
    left out were the ones the value flow had just found (``torch.mps.synchronize``,
    ``torch.npu.synchronize``).  Up to five are named; past five, three and a count."""
    page = (Path(__file__).parent.parent.parent / "generated_docs" / "md" / "collectors_internals.md").read_text()
    line = next(text for text in page.splitlines() if "`self._sync_policy` ->" in text)
    for name in ("_cuda_sync_if_initialized", "_do_nothing", "torch.mps.synchronize", "torch.npu.synchronize"):
        assert f"`{name}`" in line, line
    assert " more at " not in line
