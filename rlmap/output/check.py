"""``rlmap generate --check``: compare the pages in memory with the ones on disk, write nothing."""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path

from rlmap.output.generate import Output
from rlmap.output.write import MANIFEST, manifest_of, read_manifest


@dataclass(frozen=True, slots=True)
class CheckResult:
    stale: tuple[str, ...]  # files that differ or are missing
    obsolete: tuple[str, ...]  # generated files no longer produced
    diff: str


def check_output(out: Path, output: Output) -> CheckResult:
    stale = []
    chunks: list[str] = []
    for relative, data in sorted(output.files.items()):
        target = out / relative
        current = target.read_bytes() if target.is_file() and not target.is_symlink() else None
        if current == data:
            continue
        stale.append(relative)
        before = current.decode("utf-8", errors="replace").splitlines(keepends=True) if current is not None else []
        after = data.decode("utf-8").splitlines(keepends=True)
        chunks.extend(
            difflib.unified_diff(before, after, fromfile=f"a/{out.name}/{relative}", tofile=f"b/{out.name}/{relative}")
        )
    previous = read_manifest(out)
    written = {relative.split("/", 1)[0] for relative in output.files}
    listed = {relative for relative in previous.files if relative.split("/", 1)[0] in written} if previous else set()
    obsolete = tuple(sorted(relative for relative in listed - set(output.files) if (out / relative).is_file()))
    for relative in obsolete:
        chunks.append(f"obsolete generated file: {out.name}/{relative}\n")
    expected = manifest_of(output.files, None, previous).files
    if previous is None or previous.files != expected:
        stale.append(MANIFEST)
        chunks.append(f"{'missing' if previous is None else 'outdated'} manifest: {out.name}/{MANIFEST}\n")
    return CheckResult(tuple(stale), obsolete, "".join(chunks))
