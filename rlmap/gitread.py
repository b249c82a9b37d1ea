"""Reading a checkout's git history when the checkout's files may be hostile.

rlmap reads history (``audit --since``, ``diff REV``, permalink pins) in CI, on pull requests.
git finds its repository by looking at the directory it runs in and at each parent: a pull
request that adds ``HEAD``, ``objects/``, ``refs/`` and a ``config`` to a package folder makes
that folder a repository git would use, config included (a promisor remote whose fetch runs
``core.sshCommand``: a command of the pull request's choosing).  So rlmap never lets git look:
it finds the checkout itself, the nearest directory at or above the start that holds a ``.git``
entry (no commit can add one: git refuses any path named ``.git``), and names it to git with
``--git-dir`` and ``--work-tree``.  git then runs read-only commands with no system or global
configuration, no pager, hooks, fsmonitor, prompt or network transport (a blob a partial clone
lacks is an error, not a fetch), and a time limit.

A ``.git`` is used only when it belongs to the user running rlmap or to the owner of the folder
holding it: one planted by another user in a shared parent (``/tmp/.git``) is not.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

GIT_MISSING = "git is not installed"
_MAX_OUTPUT = 256 << 20  # bytes of one command's output: torchrl's whole package at a revision is ~20 MB


@dataclass(frozen=True, slots=True)
class GitResult:
    ok: bool
    stdout: bytes
    problem: str  # why it failed: git's last line of error, or why git could not run ("" when ok)


def find_checkout(start: Path) -> Path | None:
    """The top of the git checkout holding ``start``: the nearest folder at or above it with a
    ``.git`` entry that its owner (or the user running rlmap) owns; ``None`` when there is none."""
    try:
        folder = start.resolve()
    except (OSError, RuntimeError):
        return None
    me = os.geteuid() if hasattr(os, "geteuid") else None
    for candidate in (folder, *folder.parents):
        entry = candidate / ".git"
        try:
            found = entry.lstat()
            holder = candidate.stat()
        except OSError:
            continue
        if me is None or found.st_uid in (me, holder.st_uid):
            return candidate
        return None  # another user's repository around ours: not read (git's safe.directory rule)
    return None


def run_git(
    top: Path, *args: str, cwd: Path | None = None, stdin: bytes | None = None, timeout: float = 120
) -> GitResult:
    """``git args`` on the checkout at ``top`` (see :func:`find_checkout`), from ``cwd`` (default
    ``top``), hardened as the module says."""
    git = shutil.which("git")
    if git is None:
        return GitResult(False, b"", GIT_MISSING)
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": os.devnull,
        "LC_ALL": "C",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_OPTIONAL_LOCKS": "0",
        "GIT_NO_LAZY_FETCH": "1",  # git 2.45 and later (and its security backports)
        "GIT_ALLOW_PROTOCOL": "",  # no transport at all, whatever the repository's protocol.*.allow says
        "GIT_PROTOCOL_FROM_USER": "0",
        "GIT_NO_REPLACE_OBJECTS": "1",
    }
    command = [
        git,
        "--no-pager",
        "-c", "core.fsmonitor=false",
        "-c", "core.hooksPath=" + os.devnull,
        "-c", "protocol.allow=never",
        "-c", "safe.directory=*",  # the owner was checked by find_checkout
        "-c", "log.showSignature=false",
        "-C", str(cwd or top),
        "--git-dir=" + str(top / ".git"),
        "--work-tree=" + str(top),
        *args,
    ]  # fmt: skip
    try:
        done = subprocess.run(
            command,
            input=stdin,
            env=env,
            capture_output=True,
            timeout=timeout,
            check=False,
            stdin=None if stdin is not None else subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        return GitResult(False, b"", f"git {args[0]} took more than {timeout:g} s")
    except OSError as error:
        return GitResult(False, b"", f"cannot run git ({error.strerror or error})")
    if done.returncode != 0:
        lines = done.stderr.decode("utf-8", errors="replace").strip().splitlines()
        return GitResult(False, b"", lines[-1] if lines else f"exit status {done.returncode}")
    if len(done.stdout) > _MAX_OUTPUT:
        return GitResult(False, b"", f"git {args[0]} said more than {_MAX_OUTPUT >> 20} MB")
    return GitResult(True, done.stdout, "")
