"""A model built from an index its caller lets go (``build_model(..., consume=True)``, what the
session does) is the model built from one it keeps: the solve takes the value-flow rows over and
keeps only those it watches, its targets are read once its graph is freed, and the index is left
without its rows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rlmap.index.cache import Cache
from rlmap.index.indexer import ProjectIndex, build_index
from rlmap.index.source import locate_source
from rlmap.model import assemble
from rlmap.model.codemodel import build_model
from rlmap.model.redefinitions import keep_chosen_definitions
from rlmap.model.resolve import Resolver
from rlmap.model.target import Target
from rlmap.model.valueflow import ValueFlow
from tests.conftest import write_package
from tests.model.test_valueflow import SOURCE

# A function defined twice: the module is rebuilt without the first ``def``'s records, so that
# both the index's module and the rebuilt one hold rows.
TWICE = """
    def pick(x):
        return x


    def pick(x, y=None):
        return helper(x)


    def helper(x):
        return x


    def run():
        return pick(run)
"""


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_package(tmp_path_factory.mktemp("consume"), {**SOURCE, "vf/twice.py": TWICE})


def _index(root: Path) -> ProjectIndex:
    return build_index(locate_source(root, package="vf"), Cache.disabled(), jobs=1, extensions=("tensordict",))


def test_a_consumed_index_gives_the_same_model_and_loses_its_rows(root: Path) -> None:
    source = locate_source(root, package="vf")
    kept, given = _index(root), _index(root)
    assert any(new is not old for new, old in zip(keep_chosen_definitions(kept).modules, kept.modules, strict=True))
    expected = build_model(kept, source).state
    assert build_model(given, source, consume=True).state == expected
    assert sum(len(module.flow) for module in kept.modules) > 100  # a kept index keeps its rows
    assert all(module.flow == () for module in given.modules)
    assert all(module.locals == () for module in given.modules)
    assert sum(len(module.locals) for module in kept.modules) > 0


def test_rows_handed_over_are_emptied_and_solve_alike(root: Path) -> None:
    index = _index(root)
    resolver = Resolver(index.modules)
    plain = ValueFlow(resolver, index.modules)
    rows = [row for module in index.modules for row in module.flow]
    handed = ValueFlow(resolver, (), rows=rows)
    assert rows == []
    assert handed.all_values() == plain.all_values()
    assert handed.targets() == plain.targets()


def test_targets_are_the_same_read_after_release(root: Path) -> None:
    index = _index(root)
    solved = ValueFlow(Resolver(index.modules), index.modules)
    expected = solved.targets()
    assert len(expected) > 10
    solved.release()
    for table in (solved.ids, solved.names, solved.held, solved._bound_calls, solved._paths, solved.params):
        assert not table
    assert solved.targets() == expected


def test_sites_packed_during_the_solve_come_back_the_same(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = locate_source(root, package="vf")
    kept, given = _index(root), _index(root)
    assert assemble.PackedCalls.of(given.modules) is None  # a small index: nothing packed, nothing taken
    assert [module.calls for module in given.modules] == [module.calls for module in kept.modules]
    monkeypatch.setattr(assemble, "PACKED_SITES", 0)
    packed = assemble.PackedCalls.of(given.modules)
    assert packed is not None
    assert all(module.calls == () for module in given.modules)
    assert [tuple(packed.take(number)) for number in range(len(given.modules))] == [m.calls for m in kept.modules]
    assert set(packed.packed) == {b""}  # each module's bytes let go once taken
    assert sum(len(module.calls) for module in kept.modules) > 50
    assert build_model(_index(root), source, consume=True).state == build_model(kept, source).state


def test_attributes_and_returns_wait_packed_while_the_flow_is_solved(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = locate_source(root, package="vf")
    kept = _index(root)
    held_during_solve: list[int] = []

    class Watching(ValueFlow):
        def solve(self) -> None:  # what the modules the resolver reads hold while the flow is solved
            modules = self.resolver.modules.values()
            held_during_solve.append(sum(len(module.attributes) + len(module.returns) for module in modules))
            super().solve()

    expected = build_model(kept, source).state
    monkeypatch.setattr(assemble, "ValueFlow", Watching)
    assert build_model(_index(root), source, consume=True).state == expected
    assert held_during_solve
    assert held_during_solve[0] > 10  # a small index: nothing packed
    held_during_solve.clear()
    monkeypatch.setattr(assemble, "PACKED_SITES", 0)  # as large as torch: packed for the solve
    assert build_model(_index(root), source, consume=True).state == expected
    assert held_during_solve
    assert set(held_during_solve) == {0}
    # taken out, then put back: the records they were
    fresh = _index(root)
    assert sum(len(module.attributes) for module in fresh.modules) > 5
    assert sum(len(module.returns) for module in fresh.modules) > 5
    records = assemble.PackedRecords.of(fresh.modules)
    assert all(module.attributes == () == module.returns for module in fresh.modules)
    records.restore(fresh.modules)
    assert [(m.attributes, m.returns) for m in fresh.modules] == [(m.attributes, m.returns) for m in kept.modules]
    assert records.packed == {"attributes": [], "returns": []}  # the bytes let go once read


def test_plans_forgotten_between_solves_are_made_again_the_same(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    index = _index(root)
    resolver = Resolver(index.modules)
    forget = ValueFlow.forget_plans
    forgotten: list[list[dict[Any, Any]]] = []

    def forget_and_note(flow: ValueFlow) -> None:
        forgotten.append([dict(memo) for memo in flow._memos()])
        forget(flow)
        assert not any(flow._memos())

    monkeypatch.setattr(ValueFlow, "forget_plans", forget_and_note)
    solved = ValueFlow(resolver, index.modules)
    monkeypatch.undo()
    assert len(forgotten) >= 1  # the solve after the first (methods no call reaches)
    # the plans are kept by name (or key), then value: as (value, name) -> plan
    loads, stores, elements, element_stores = (_by_value_and_name(memo) for memo in forgotten[0][:4])
    paths, shapes = forgotten[0][4:6]
    assert all(map(len, (loads, stores, elements, element_stores, paths, shapes)))
    solved.forget_plans()
    variables = len(solved.ids)
    # each is a function of tables no solve changes: made again once the solve is over, the same
    # (and no variable is made)
    assert {key: solved._load_plan(*key) for key in loads} == loads
    assert {key: solved._store_plan(*key) for key in stores} == stores
    assert {key: solved._element_plan(*key) for key in elements} == elements
    assert {key: solved._element_store_plan(*key) for key in element_stores} == element_stores
    assert {key: solved.member_path(*key) for key in paths} == paths
    assert {name: type(shape).of(name, solved.params.get(name)) for name, shape in shapes.items()} == shapes
    assert len(solved.ids) == variables
    # and a solve that keeps every memo through all its rounds finds the same
    monkeypatch.setattr(ValueFlow, "forget_plans", ValueFlow._memos)  # asks for the memos, clears none
    kept = ValueFlow(resolver, index.modules)
    assert sum(map(len, kept._memos())) > sum(map(len, forgotten[-1]))  # every round's, never forgotten
    assert kept.all_values() == solved.all_values()
    assert kept.targets() == solved.targets()


def _by_value_and_name(memo: dict[str, dict[str, Any]]) -> dict[tuple[str, str], Any]:
    return {(value, name): plan for name, plans in memo.items() for value, plan in plans.items()}


def test_call_edges_hold_one_line_and_one_how_as_themselves_and_give_the_same_rows() -> None:
    edges = assemble.CallEdges()
    added = [
        ("m.f", Target("m.g", "flow"), 3),
        ("m.f", Target("m.g", "flow"), 3),  # the same edge again: nothing new
        ("m.f", Target("m.h", "name"), 9),
        ("m.f", Target("m.h", "name"), 4),  # a second line
        ("m.f", Target("m.h", "flow"), 9),  # a second how
        ("m.a", Target("os.path.join", "import", external=True), 7),
        ("m.a", Target("?:x.y", "unresolved", external=True), 2),
        ("m.a", Target("m.g", "unique-name"), 12),
        ("m.a", Target("m.g", "flow"), 1),
    ]
    for caller, target, line in added:
        edges.add(caller, target, line)
    assert edges._found[("m.f", "m.g")] == (3, "flow")  # one line, one how: no set of one
    assert edges._found[("m.f", "m.h")] == ({4, 9}, {"name", "flow"})
    # what sets of every line and how would give: sorted, each once
    expected: dict[tuple[str, str], tuple[set[int], set[str]]] = {}
    for caller, target, line in added:
        lines, hows = expected.setdefault((caller, target.qualname), (set(), set()))
        lines.add(line)
        hows.add(target.how)
    assert edges.rows() == [
        (*pair, tuple(sorted(lines)), tuple(sorted(hows))) for pair, (lines, hows) in sorted(expected.items())
    ]
    assert edges.rows()[0] == ("m.a", "?:x.y", (2,), ("unresolved",))
    assert edges.nodes == {"os.path.join": assemble.EXTERNAL, "?:x.y": assemble.UNRESOLVED}


# Edges known when the flow is sent aside, then what a flow adds: a line and a how to a pair known,
# a new callee of a caller known (before and after its others), a caller with no edge before, a
# callee called by no one before, a new caller of a callee known, an external and an unknown end,
# and an edge again as it was (nothing new).
_BEFORE = [
    ("m.b", Target("m.g", "direct"), 2),
    ("m.b", Target("m.k", "direct"), 3),
    ("m.d", Target("m.g", "self"), 5),
    ("m.d", Target("os.sep", "import", external=True), 6),
]
_AFTER = [
    ("m.b", Target("m.g", "flow"), 8),
    ("m.b", Target("m.a", "flow"), 9),
    ("m.b", Target("m.z", "flow"), 9),
    ("m.c", Target("m.g", "flow"), 1),
    ("m.a", Target("m.y.<lambda1>", "flow"), 4),
    ("m.d", Target("json.dumps", "flow", external=True), 7),
    ("m.d", Target("m.gone", "flow"), 7),
    ("m.d", Target("m.g", "self"), 5),
]
_SYMBOLS: dict[str, Any] = dict.fromkeys(["m.a", "m.b", "m.c", "m.d", "m.g", "m.k", "m.z"])


def _site(line: int, callee: str) -> assemble.SiteRow:
    return (line, callee, (), (callee,), ("flow",))


def test_call_tables_made_before_the_flow_and_patched_are_the_tables_made_after_it() -> None:
    edges, sites = assemble.CallEdges(), {"m.b": [_site(3, "k"), _site(2, "g")], "m.d": [_site(5, "g")]}
    for caller, target, line in _BEFORE:
        edges.add(caller, target, line)
    edges.mark_unknown(_SYMBOLS)
    early = assemble.CallTables(edges, sites)
    for caller, target, line in _AFTER:
        edges.add(caller, target, line)
    sites["m.b"][0] = _site(3, "flowed")  # a row the flow replaced
    patched = early.state(_SYMBOLS, replaced={"m.b"})

    edges.mark_unknown(_SYMBOLS)
    late = assemble.CallTables(edges, sites).state(_SYMBOLS)
    assert patched == late
    for table in ("calls", "called_by", "nodes", "sites"):  # the same order: the cache stores it
        assert list(patched[table]) == list(late[table]) == sorted(late[table])
    assert patched["calls"]["m.b"] == (
        ("m.a", (9,), ("flow",)),
        ("m.g", (2, 8), ("direct", "flow")),
        ("m.k", (3,), ("direct",)),
        ("m.z", (9,), ("flow",)),
    )
    assert patched["called_by"]["m.g"] == ("m.b", "m.c", "m.d")
    assert patched["nodes"] == {
        "json.dumps": assemble.EXTERNAL,
        "m.gone": assemble.UNRESOLVED,
        "m.y.<lambda1>": assemble.LAMBDA,
        "os.sep": assemble.EXTERNAL,
    }
    assert patched["sites"]["m.b"] == (_site(2, "g"), _site(3, "flowed"))


def test_call_edges_note_only_the_pairs_that_gain_something_once_tracked() -> None:
    edges = assemble.CallEdges()
    for caller, target, line in _BEFORE:
        edges.add(caller, target, line)
    assert edges.tracked() == set()  # not tracking: nothing noted
    edges.track()
    for caller, target, line in _BEFORE:  # every edge again, as it was
        edges.add(caller, target, line)
    edges.add("m.b", Target("m.k", "direct"), 4)  # a line
    edges.add("m.d", Target("m.g", "flow"), 5)  # a how
    edges.add("m.e", Target("m.g", "direct"), 1)  # a pair
    assert edges.tracked() == {("m.b", "m.k"), ("m.d", "m.g"), ("m.e", "m.g")}
    edges.add("m.f", Target("m.g", "direct"), 1)
    assert edges.tracked() == set()  # tracked() stopped the noting


def test_calls_bound_and_metaclasses_watched_are_keyed_by_one_number(root: Path) -> None:
    index = _index(root)
    solved = ValueFlow(Resolver(index.modules), index.modules)
    assert solved._bound_calls
    assert all(type(key) is int for key in solved._bound_calls)
    assert all(type(key) is int for key in solved._metaclass_watched)
    # a fact and a qualname: one number each pair, the same whenever asked, the fact's id in it
    fact = ("call", "t", "s", "n", (), 1, "m")
    other = (*fact[:-1], "".join(["m"]))  # equal, another object: another fact
    assert other is not fact
    pairs = {solved._pair(each, qualname) for each in (fact, other) for qualname in ("m.f", "m.g", "m.f")}
    assert len(pairs) == 4
    assert solved._pair(fact, "m.g") == solved._pair(fact, "m.g")
    assert solved._pair(fact, "m.g") >> 32 == id(fact)
    assert len(solved._numbers) == len(set(solved._numbers.values()))


def test_a_site_with_one_callee_holds_it_as_a_pair(root: Path) -> None:
    index = _index(root)
    solved = ValueFlow(Resolver(index.modules), index.modules)
    forms = [type(callees) for callees in solved.edges.values()]
    assert forms.count(tuple) > 10  # one callee (and how): no dict of one
    assert dict in forms  # a site reached by more than one callee
    found = solved.targets()
    for key, callees in solved.edges.items():
        pairs = [callees] if type(callees) is tuple else sorted(callees.items())
        kept = [pair for pair in pairs if (key, pair[0]) not in solved.by_getattr]
        assert [(target.qualname, target.how) for target in found.get(key, ())] in (pairs, kept)
    # an edge found again keeps one entry and the smaller how; a second callee makes the dict
    fact = ("call", "vf.t", "vf.s", "f", (), 7, "vf.run")
    solved.edge(fact, "vf.a", "flow")
    solved.edge(fact, "vf.a", "callback")
    assert solved.edges[("vf.run", 7, "f")] == ("vf.a", "callback")
    solved.edge(fact, "vf.b", "flow")
    solved.edge(fact, "vf.a", "implicit")
    assert solved.edges[("vf.run", 7, "f")] == {"vf.a": "callback", "vf.b": "flow"}
    found = solved.targets()[("vf.run", 7, "f")]
    assert [(target.qualname, target.how) for target in found] == [("vf.a", "callback"), ("vf.b", "flow")]
    assert all(target.external for target in found)  # (no symbol of the package: names outside it)
