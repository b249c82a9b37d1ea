"""``rlmap generate --check``: compare the pages in memory with the ones on disk, write nothing."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from pathlib import Path

from rlmap.output.generate import Output
from rlmap.output.write import MANIFEST, manifest_bytes, manifest_of, read_manifest


@dataclass(frozen=True, slots=True)
class CheckResult:
    stale: tuple[str, ...]  # files that differ or are missing
    obsolete: tuple[str, ...]  # generated files no longer produced
    diff: str  # a unified diff that ``git apply`` takes from the repository root
    links_only: tuple[str, ...] = ()  # stale files whose only change is the commit their links point at


# A permalink's commit: the part of a page that moves when a linked file is committed again.
_PINNED = re.compile(rb"/blob/[0-9a-f]{40}/")


def check_output(out: Path, output: Output) -> CheckResult:
    """Compare ``output`` with ``out`` on disk; the diff names files from the repository root."""
    shown = _shown(out)
    stale: list[str] = []
    links_only: list[str] = []
    chunks: list[str] = []
    for relative, data in sorted(output.files.items()):
        current = _current(out / relative)
        if current == data:
            continue
        stale.append(relative)
        if current is not None and _PINNED.sub(b"/blob/-/", current) == _PINNED.sub(b"/blob/-/", data):
            links_only.append(relative)
        chunks.append(_diff(f"{shown}/{relative}", current, data))
    previous = read_manifest(out)
    written = {relative.split("/", 1)[0] for relative in output.files}
    listed = {relative for relative in previous.files if relative.split("/", 1)[0] in written} if previous else set()
    obsolete = tuple(sorted(relative for relative in listed - set(output.files) if (out / relative).is_file()))
    for relative in obsolete:
        chunks.append(_diff(f"{shown}/{relative}", _current(out / relative), None))
    expected = manifest_of(output.files, None, previous).files
    if previous is None or previous.files != expected:
        stale.append(MANIFEST)
        chunks.append(
            _diff(f"{shown}/{MANIFEST}", _current(out / MANIFEST), manifest_bytes(output.files, None, previous))
        )
    return CheckResult(tuple(stale), obsolete, "".join(chunks), tuple(links_only))


def _current(path: Path) -> bytes | None:
    return path.read_bytes() if path.is_file() and not path.is_symlink() else None


def _diff(name: str, before: bytes | None, after: bytes | None) -> str:
    """A git-style unified diff of one file (``/dev/null`` for a file created or deleted)."""
    old = before.decode("utf-8", errors="replace").splitlines(keepends=True) if before is not None else []
    new = after.decode("utf-8", errors="replace").splitlines(keepends=True) if after is not None else []
    source = f"a/{name}" if before is not None else "/dev/null"
    target = f"b/{name}" if after is not None else "/dev/null"
    lines = list(difflib.unified_diff(old, new, fromfile=source, tofile=target))
    fixed = [line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines]
    return f"diff --git a/{name} b/{name}\n" + "".join(fixed) if fixed else ""


def _shown(out: Path) -> str:
    """``out`` relative to the repository holding it (the nearest parent with ``.git``), else to the
    working directory, so that the diff applies with ``git apply`` from there."""
    target = out.resolve()
    base = next((folder for folder in (target, *target.parents) if (folder / ".git").exists()), None)
    if base is None or base == target:
        base = Path.cwd().resolve()
    try:
        return target.relative_to(base).as_posix()
    except ValueError:
        return out.name
