"""The heap rlmap frees goes back to the system (rlmap.index.indexer): ``give_back_memory``
(glibc's ``malloc_trim``) and ``map_large_blocks`` (blocks of 128 KiB and more mapped apart).

Each case runs in a fresh interpreter, since both change how that process's allocator behaves,
and reads the resident set from ``/proc/self/statm`` before and after ~100 MB is freed.
"""

from __future__ import annotations

import ctypes.util
import platform
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.skipif(
    platform.system() != "Linux" or not ctypes.util.find_library("c") or platform.libc_ver()[0] != "glibc",
    reason="glibc's allocator only",
)

_RSS = """
def rss():
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * 4096 // 2**20
"""

# ~100 MB of 4 KB blocks: above pymalloc's size, below glibc's mapping threshold, so they are
# carved from the heap; the block made last keeps the heap's top in use, so free() cannot shrink it
_TRIM = """
from rlmap.index import indexer
blocks = [bytearray(4000) for _ in range(25_000)]
pin = bytearray(4000)
del blocks
before = rss()
if GIVE_BACK:
    indexer.give_back_memory()
print(before, rss())
"""

# glibc raises its mapping threshold to a block's size when a mapped block is freed: after a
# 4 MiB one, 256 KiB blocks come from the heap, where the small block after each pins them
_LARGE = """
from rlmap.index import indexer
if MAP_APART:
    assert indexer.map_large_blocks()
large = bytearray(4 << 20)
del large
blocks, pins = [], []
for _ in range(400):
    blocks.append(bytearray(256 * 1024))
    pins.append(bytearray(4000))
before = rss()
del blocks
print(before, rss())
"""


def _freed_mib(script: str, **flags: bool) -> tuple[int, int]:
    """(resident MiB with the blocks alive, resident MiB once they are freed)."""
    settings = "".join(f"{name} = {value}\n" for name, value in flags.items())
    code = textwrap.dedent(_RSS) + settings + textwrap.dedent(script)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    before, after = map(int, out.split())
    return before, after


def test_give_back_memory_returns_the_freed_heap() -> None:
    kept_before, kept_after = _freed_mib(_TRIM, GIVE_BACK=False)
    before, after = _freed_mib(_TRIM, GIVE_BACK=True)
    assert kept_before - kept_after < 20  # free() alone keeps the pages
    assert before - after > 80  # malloc_trim hands back nearly all of the 100 MB


def test_large_blocks_mapped_apart_go_back_when_freed() -> None:
    kept_before, kept_after = _freed_mib(_LARGE, MAP_APART=False)
    before, after = _freed_mib(_LARGE, MAP_APART=True)
    assert kept_before - kept_after < 20  # in the heap, between blocks still in use: kept
    assert before - after > 80  # each mapped block is unmapped as it is freed
