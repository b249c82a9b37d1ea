"""One computation done aside, in a forked child, while the process goes on with another.

Resolution has two large parts that do not read each other: the value flow's solve, and
resolving every call site by name and type (with the attribute and key tables).  On a machine
with a second core, :func:`run_aside` solves in a child forked from the process (which holds the
resolver and the flow facts already: nothing is sent to it) while the parent resolves the sites;
the child sends back only what the solve found, as MessagePack bytes.

Nothing here is needed for a right answer: where ``fork`` is missing, the child fails or dies,
or what it sent is cut short, the caller solves in its own process, as with one core.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Callable

# What the child may send at most: a bound on what the parent reads (torchrl's solve: ~2 MB).
_LIMIT = 1 << 30


def can_fork() -> bool:
    """Whether this platform forks (POSIX does; Windows does not)."""
    return hasattr(os, "fork")


def run_aside(compute: Callable[[], bytes], meanwhile: Callable[[], None]) -> bytes | None:
    """``compute()``'s bytes, computed in a forked child while this process runs ``meanwhile()``;
    ``None`` when the child could not give them (no ``fork``, it raised, it died): the caller
    then computes them itself.  An exception of ``meanwhile`` stops the child and propagates."""
    if not can_fork():
        meanwhile()
        return None
    read_end, write_end = os.pipe()
    try:
        child = os.fork()
    except OSError:  # no memory or process left for a child: the caller solves alone
        os.close(read_end)
        os.close(write_end)
        meanwhile()
        return None
    if child == 0:  # pragma: no cover - the child's side: coverage does not follow a fork
        _child(compute, read_end, write_end)
    os.close(write_end)
    try:
        meanwhile()
        data = _read_all(read_end)
    except BaseException:  # the parent failed or was interrupted: the child's work is not wanted
        os.close(read_end)
        _stop(child)
        os.waitpid(child, 0)
        raise
    os.close(read_end)  # first: a child still writing (more than the limit) gets an error, not a wait
    _, status = os.waitpid(child, 0)
    if not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0:
        return None
    return data


def _child(compute: Callable[[], bytes], read_end: int, write_end: int) -> None:  # pragma: no cover
    """Compute, write the bytes, leave at once (no ``atexit``, no buffered output of the parent
    flushed twice, no objects freed one by one); exit status 1 on any error."""
    status = 1
    try:
        os.close(read_end)
        data = compute()
        view = memoryview(len(data).to_bytes(8, "little") + data)
        while view:
            view = view[os.write(write_end, view) :]
        status = 0
    except BaseException:  # the parent computes it again and reports what fails
        status = 1
    finally:
        os._exit(status)


def _read_all(read_end: int) -> bytes | None:
    """The child's length-prefixed bytes; ``None`` if they end short (the child died)."""
    head = _read_exactly(read_end, 8)
    if head is None:
        return None
    size = int.from_bytes(head, "little")
    if size > _LIMIT:
        return None
    return _read_exactly(read_end, size)


def _read_exactly(read_end: int, size: int) -> bytes | None:
    parts: list[bytes] = []
    left = size
    while left:
        part = os.read(read_end, min(left, 1 << 20))
        if not part:
            return None
        parts.append(part)
        left -= len(part)
    return b"".join(parts)


def _stop(child: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(child, signal.SIGKILL)
