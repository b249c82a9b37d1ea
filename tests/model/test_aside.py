"""The value flow solved aside, in a forked child, while the parent resolves the sites: the same
model as one process builds, the child's failures fall back to solving in the parent, and no
child outlives its parent's error."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from rlmap.index.cache import Cache
from rlmap.index.indexer import build_index
from rlmap.index.source import locate_source
from rlmap.model import aside, assemble
from rlmap.model.aside import run_aside
from rlmap.model.codemodel import build_model, model_sections
from rlmap.model.session import load_model
from tests.conftest import write_package
from tests.model.test_valueflow import SOURCE

pytestmark = pytest.mark.skipif(not aside.can_fork(), reason="no fork on this platform")


def test_the_child_computes_while_the_parent_goes_on() -> None:
    ran: list[int] = []
    data = run_aside(lambda: str(os.getpid()).encode(), lambda: ran.append(os.getpid()))
    assert ran == [os.getpid()]  # once, in this process
    assert data is not None
    assert int(data) != os.getpid()


def test_what_the_child_sends_arrives_whole() -> None:
    payload = bytes(range(256)) * 40_000  # 10 MB: far more than a pipe holds, so the child waits on it
    assert run_aside(lambda: payload, lambda: time.sleep(0.05)) == payload


def _raise() -> bytes:
    raise RuntimeError("the solve failed")


def _killed() -> bytes:
    os.kill(os.getpid(), signal.SIGKILL)
    return b"never"


@pytest.mark.parametrize("compute", [_raise, _killed], ids=["raises", "killed"])
def test_a_failed_child_gives_nothing_and_meanwhile_still_runs_once(compute: Any) -> None:
    ran: list[str] = []
    assert run_aside(compute, lambda: ran.append("meanwhile")) is None
    assert ran == ["meanwhile"]


def test_an_error_of_the_parent_stops_and_reaps_the_child(tmp_path: Path) -> None:
    mark = tmp_path / "child"

    def slow() -> bytes:
        mark.write_text(str(os.getpid()))
        time.sleep(60)
        return b""

    def fail() -> None:
        deadline = time.monotonic() + 20
        while (not mark.exists() or not mark.read_text()) and time.monotonic() < deadline:
            time.sleep(0.01)
        raise KeyError("meanwhile failed")

    started = time.monotonic()
    with pytest.raises(KeyError):
        run_aside(slow, fail)
    assert time.monotonic() - started < 30  # not waited for
    with pytest.raises(ProcessLookupError):  # gone, not even a zombie: it was waited for
        os.kill(int(mark.read_text()), 0)


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_package(tmp_path_factory.mktemp("aside"), SOURCE)


def _model_state(root: Path, aside_: bool) -> dict[str, Any]:
    source = locate_source(root, package="vf")
    index = build_index(source, Cache.disabled(), jobs=1, extensions=("tensordict",))
    return build_model(index, source, consume=True, aside=aside_).state


def _solves_in(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A file each solve writes its process's id to."""
    record = tmp_path / "solves"

    class Recorded(assemble.ValueFlow):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            with open(record, "a", encoding="utf-8") as handle:
                handle.write(f"{os.getpid()}\n")
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(assemble, "ValueFlow", Recorded)
    return record


def test_a_model_solved_aside_is_the_model_solved_here(
    root: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    record = _solves_in(monkeypatch, tmp_path)
    alone = _model_state(root, False)
    assert record.read_text().split() == [str(os.getpid())]
    record.unlink()
    together = _model_state(root, True)
    solvers = record.read_text().split()
    assert len(solvers) == 1
    assert solvers[0] != str(os.getpid())
    assert together == alone
    assert model_sections(together) == model_sections(alone)  # every table in the same order too
    assert alone["value_flow"] == (assemble.CAP, 0)
    assert any(alone["calls"].values())


def test_without_fork_or_with_a_packed_index_the_parent_solves(
    root: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    alone = _model_state(root, False)
    record = _solves_in(monkeypatch, tmp_path)
    monkeypatch.setattr(aside, "can_fork", lambda: False)
    assert _model_state(root, True) == alone
    assert record.read_text().split() == [str(os.getpid())]
    monkeypatch.setattr(aside, "can_fork", lambda: True)
    record.unlink()
    monkeypatch.setattr(assemble, "PACKED_SITES", 1)  # every index packed, as torch's is
    assert _model_state(root, True) == alone
    assert record.read_text().split() == [str(os.getpid())]


def test_a_child_that_fails_leaves_the_solve_to_the_parent(
    root: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    alone = _model_state(root, False)
    monkeypatch.setattr(assemble, "_encode_solved", lambda *_: _raise())
    record = _solves_in(monkeypatch, tmp_path)
    assert _model_state(root, True) == alone
    solvers = record.read_text().split()
    assert len(solvers) == 2
    assert solvers[0] != solvers[1] == str(os.getpid())  # the child's, then the parent's


@pytest.mark.parametrize(("jobs", "aside_"), [(1, False), (2, True)])
def test_the_session_solves_aside_with_a_second_job_only(
    root: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, jobs: int, aside_: bool
) -> None:
    record = _solves_in(monkeypatch, tmp_path)
    tree = locate_source(root, package="vf")
    load_model(tree, Cache.disabled(), jobs=jobs, extensions=("tensordict",))
    solvers = record.read_text().split()
    assert len(solvers) == 1
    assert (solvers[0] != str(os.getpid())) is aside_


def test_what_the_flow_does_not_change_is_encoded_while_it_is_solved_aside(root: Path) -> None:
    source = locate_source(root, package="vf")
    encoded: dict[str, Any] = {}
    index = build_index(source, Cache.disabled(), jobs=1, extensions=("tensordict",))
    state = build_model(index, source, consume=True, aside=True, encoded=encoded).state
    assert set(encoded) == {
        "symbols",
        "attributes",
        "keys",
        "returns",
        "exports",
        "external_exports",
        "lazy_exports",
        "bases",
        "subclasses",
    }
    assert model_sections(state, encoded) == model_sections(state)
    here: dict[str, Any] = {}  # solved here, there is no time to fill: nothing is encoded early
    index = build_index(source, Cache.disabled(), jobs=1, extensions=("tensordict",))
    assert build_model(index, source, consume=True, aside=False, encoded=here).state == state
    assert here == {}
