"""Permalinks that move only when the file they point into moves: each file pinned to its last commit.

In a git checkout, a page's links used to embed HEAD, so any commit anywhere rewrote every page.
Here each file is linked at the last commit that changed it (one ``git log`` over the package),
so a commit elsewhere leaves the pages alone.  A file whose worktree bytes differ from that commit
(an uncommitted edit, an untracked file) gets no link at all: its line numbers come from the
worktree and no commit holds them.  git runs read-only (``log``, ``ls-tree``) through
:mod:`rlmap.gitread`, on the checkout rlmap found itself; without git, or when it fails, there
are no pins and the caller says so.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from rlmap.gitread import GIT_MISSING, find_checkout, run_git

_COMMIT = re.compile(r"[0-9a-f]{40}")
_TIMEOUT = 60  # seconds for one git command; torchrl's whole history takes about one


@dataclass(frozen=True, slots=True)
class Pins:
    """Per-file link refs: ``refs[path]`` is the last commit that changed ``path``."""

    refs: dict[str, str] = field(default_factory=dict)
    unlinked: frozenset[str] = frozenset()  # changed or new in the worktree: no commit holds these lines
    problem: str = ""  # why there are no pins ("" when there are)


def pin_files(root: Path, files: dict[str, bytes]) -> Pins:
    """Pins for ``files`` (repo-relative path -> worktree bytes) of the checkout at ``root``."""
    if not files:
        return Pins()
    checkout = find_checkout(root)
    if checkout is None:
        return Pins(problem="not inside a git checkout")
    asked = run_git(checkout, "rev-parse", "--show-prefix", cwd=root, timeout=_TIMEOUT)
    if not asked.ok:
        if asked.problem == GIT_MISSING:
            return Pins(problem=GIT_MISSING)
        return Pins(problem="git cannot read this checkout (not a git repository, or no commit yet)")
    prefix = asked.stdout.decode("utf-8", "replace").strip()  # where ``root`` is inside the repository
    top = os.path.commonpath([path.split("/", 1)[0] for path in files]) or "."
    listed = _run(checkout, root, "ls-tree", "-r", "-z", "--full-name", "HEAD", "--", top)
    if listed is None:
        return Pins(problem="git ls-tree failed (no commit yet?)")
    blobs: dict[str, str] = {}
    for entry in listed.split(b"\0"):
        meta, _, name = entry.partition(b"\t")
        parts = meta.split()
        if len(parts) == 3 and parts[1] == b"blob":
            blobs[_inside(name, prefix)] = parts[2].decode("ascii", "replace")
    unlinked = {path for path, data in files.items() if blobs.get(path) != _blob_id(data)}
    wanted = set(files) - unlinked
    log = _run(checkout, root, "log", "--format=%x01%H", "--name-only", "--no-renames", "-z", "HEAD", "--", top)
    if log is None:
        return Pins(problem="git log failed")
    refs: dict[str, str] = {}
    for block in log.split(b"\x01")[1:]:  # "<commit>\0\n<path>\0<path>\0..."
        head, _, names = block.partition(b"\0")
        commit = head.decode("ascii", "replace").strip()
        if not _COMMIT.fullmatch(commit):
            continue
        for name in names.split(b"\0"):
            path = _inside(name.strip(b"\n"), prefix)
            if path in wanted and path not in refs:
                refs[path] = commit
        if len(refs) == len(wanted):
            break
    unlinked |= wanted - set(refs)
    return Pins(refs=refs, unlinked=frozenset(unlinked))


def _inside(name: bytes, prefix: str) -> str:
    """A repository path made relative to the checkout root (``""`` when outside it)."""
    path = name.decode("utf-8", "replace")
    return path[len(prefix) :] if path.startswith(prefix) else ""


def _blob_id(data: bytes) -> str:
    """git's object id of a file's bytes (SHA-1 of ``blob <size>\\0<bytes>``)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def _run(checkout: Path, root: Path, *args: str) -> bytes | None:
    """A read-only git command on the checkout at ``checkout``, from ``root``; ``None`` when it
    fails, hangs or says too much."""
    done = run_git(checkout, *args, cwd=root, timeout=_TIMEOUT)
    return done.stdout if done.ok else None
