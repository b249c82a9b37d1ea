"""The cyclic collector paused while records and the model are built, and what it finds after."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from rlmap.index.indexer import paused_gc


@pytest.fixture
def collector_on() -> Iterator[None]:
    enabled = gc.isenabled()
    gc.enable()
    try:
        yield
    finally:
        if not enabled:
            gc.disable()


@pytest.mark.usefixtures("collector_on")
def test_the_block_objects_are_not_left_for_the_next_young_collection() -> None:
    scanned: list[int] = []  # the size of the youngest generation at each of its collections

    def record(phase: str, info: dict[str, int]) -> None:
        if phase == "start" and info["generation"] == 0:
            scanned.append(len(gc.get_objects(generation=0)))

    gc.unfreeze()  # a freeze before (the CLI's, run in this process by other tests) is kept as is
    gc.collect()
    gc.callbacks.append(record)
    try:
        with paused_gc():
            assert not gc.isenabled()
            made = [[index] for index in range(20_000)]  # lists: tracked by the collector
        assert gc.isenabled()
        for _ in range(5):  # enough allocations for a young collection or two
            [[index] for index in range(1_000)]
    finally:
        gc.callbacks.remove(record)
    # none of them scanned by a young collection: they went to the oldest generation unscanned
    assert scanned
    assert max(scanned) < len(made)
    assert gc.get_freeze_count() == 0  # not frozen: a later full collection sees them


@pytest.mark.usefixtures("collector_on")
def test_a_freeze_of_the_caller_is_kept() -> None:
    frozen = [[index] for index in range(100)]
    gc.freeze()
    try:
        before = gc.get_freeze_count()
        with paused_gc():
            [[index] for index in range(1_000)]
        assert gc.get_freeze_count() == before
        assert frozen
    finally:
        gc.unfreeze()


def test_a_paused_collector_stays_paused() -> None:
    enabled = gc.isenabled()
    gc.disable()
    try:
        with paused_gc():
            pass
        assert not gc.isenabled()
    finally:
        if enabled:
            gc.enable()
