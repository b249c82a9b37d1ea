"""Reading one file rlmap was pointed at, bounded: the one reader of sources, docs pages, cache
entries and the pages it wrote.

The file is opened non-blocking (a FIFO never holds the run up) and must be a regular file once
open (never a device, a folder or a FIFO); at most one byte past its limit is read, which tells a
file that grew past the limit while it was read.  ``follow=False`` refuses a symbolic link (the
cache's entries, the output directory); ``folder`` opens the name in an open folder (the output
directory, walked without following links).  What is not read comes back as an :class:`Unread`,
for the caller to put in its own words.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

MISSING = "missing"
UNREADABLE = "unreadable"  # the system refused (``detail``: its words)
IRREGULAR = "irregular"  # a folder, a FIFO, a device, a socket
LARGE = "large"  # over the limit (``size``: how large)
GREW = "grew"  # within the limit when opened, over it by the time it was read

_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


@dataclass(frozen=True, slots=True)
class Unread:
    """Why a file was not read: one of the reasons above, the system's words, its size."""

    reason: str
    detail: str = ""
    size: int = 0


def read_regular(
    path: str | os.PathLike[str], limit: int, *, follow: bool = True, folder: int | None = None
) -> bytes | Unread:
    """The bytes of the regular file ``path`` (in the open folder ``folder``, when given), at most
    ``limit`` of them; else why not."""
    try:
        descriptor = os.open(path, _FLAGS if follow else _FLAGS | _NOFOLLOW, dir_fd=folder)
    except FileNotFoundError as error:
        return Unread(MISSING, error.strerror or "")
    except OSError as error:  # a link where none is followed (ELOOP), no permission, ...
        return Unread(UNREADABLE, error.strerror or type(error).__name__)
    try:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode):
            return Unread(IRREGULAR)
        if info.st_size > limit:
            return Unread(LARGE, size=info.st_size)
        with os.fdopen(descriptor, "rb", closefd=False) as handle:
            data = handle.read(limit + 1)
    except OSError as error:
        return Unread(UNREADABLE, error.strerror or type(error).__name__)
    finally:
        os.close(descriptor)
    if len(data) > limit:
        return Unread(GREW, size=len(data))
    return data


def walk_files(root: Path, keep: Callable[[str], bool]) -> tuple[list[Path], list[tuple[Path, str]]]:
    """The paths of the files under the folder ``root`` whose name ``keep`` accepts, sorted, and
    ``(folder, why)`` for each folder left out: one that could not be listed (no permission, a
    path too long for the system), and a link to a folder, which is not walked into (no loop, no
    tree outside): skipped and said, not an error.  A link to a file is listed like a file, for
    its reader to check."""
    found: list[Path] = []
    unlisted: list[tuple[Path, str]] = []
    pending = [root]
    while pending:
        folder = pending.pop()
        try:
            with os.scandir(folder) as listing:
                entries = list(listing)
        except OSError as error:
            unlisted.append((folder, f"cannot list folder: {error.strerror or error}"))
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    pending.append(Path(entry.path))
                    continue
                if entry.is_symlink() and entry.is_dir():
                    unlisted.append((Path(entry.path), "a link to a folder, not followed"))
                    continue
            except OSError:
                continue
            if keep(entry.name):
                found.append(Path(entry.path))
    found.sort()
    unlisted.sort()
    return found, unlisted
