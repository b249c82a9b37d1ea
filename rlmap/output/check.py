"""``rlmap generate --check``: compare the pages in memory with the ones on disk, write nothing."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from pathlib import Path

from rlmap.gitread import find_checkout
from rlmap.output.generate import Output
from rlmap.output.write import (
    MANIFEST,
    is_file_inside,
    manifest_bytes,
    manifest_of,
    read_inside,
    read_manifest,
    refuse_foreign,
)


@dataclass(frozen=True, slots=True)
class CheckResult:
    stale: tuple[str, ...]  # files whose content differs or that are missing (the manifest included)
    obsolete: tuple[str, ...]  # generated files no longer produced
    diff: str  # a unified diff that ``git apply`` takes from the repository root ("" when current)
    links_only: tuple[str, ...] = ()  # current files whose links point at other commits, or have none
    # where ``git apply`` takes the diff from: "the repository root", or a directory (no checkout)
    applies_from: str = "the repository root"


# Where a page links its source: the link target, not what the page says.  Pages committed with
# the code they document cannot link the commit that holds them (its id is not known yet), so
# ``--check`` compares what pages say, and reports moved link targets apart.
_MD_LINK = re.compile(rb"\[([^\]\n]+)\]\(https://[^)\s]+\)")
_RST_LINK = re.compile(rb"`([^`<\n]+?) <https://[^>\s]+>`__")


def _said(page: bytes) -> bytes:
    """A page without its link targets: ``[loc](url)`` and ``\u0060loc <url>\u0060__`` become ``loc``."""
    return _RST_LINK.sub(rb"``\1``", _MD_LINK.sub(rb"`\1`", page))


def check_output(out: Path, output: Output) -> CheckResult:
    """Compare ``output`` with ``out`` on disk; the diff names files from the repository root.
    Raises :class:`~rlmap.errors.OutputError` for a file there that rlmap did not write, as
    writing would.

    A file that says the same thing as the generated one but links other commits (or no commit)
    is current: it is listed in ``links_only`` and kept as it is, manifest included.
    """
    shown, applies_from = _shown(out)
    stale: list[str] = []
    links_only: list[str] = []
    chunks: list[str] = []
    kept: dict[str, bytes] = {}  # what the directory should hold: the files on disk where they are current
    for relative, data in sorted(output.files.items()):
        current = read_inside(out, relative)
        kept[relative] = data
        if current == data:
            continue
        if current is not None and _said(current) == _said(data):
            links_only.append(relative)
            kept[relative] = current
            continue
        stale.append(relative)
        chunks.append(_diff(_named(shown, relative), current, data))
    previous = read_manifest(out)
    # a hand-written file where a page goes: generate refuses to replace it, and so does the check
    # (its diff would tell git apply to overwrite it)
    refuse_foreign(out, [*stale, *links_only], previous)  # (one that differs only in links too)
    written = {relative.split("/", 1)[0] for relative in output.files}
    listed = {relative for relative in previous.files if relative.split("/", 1)[0] in written} if previous else set()
    obsolete = tuple(sorted(relative for relative in listed - set(output.files) if is_file_inside(out, relative)))
    for relative in obsolete:
        chunks.append(_diff(_named(shown, relative), read_inside(out, relative), None))
    if previous is None or previous.files != manifest_of(kept, None, previous).files:
        stale.append(MANIFEST)
        chunks.append(_diff(_named(shown, MANIFEST), read_inside(out, MANIFEST), manifest_bytes(kept, None, previous)))
    return CheckResult(tuple(stale), obsolete, "".join(chunks), tuple(links_only), applies_from)


def _diff(name: str, before: bytes | None, after: bytes | None) -> str:
    """A git-style unified diff of one file (``/dev/null`` for a file created or deleted)."""
    old = before.decode("utf-8", errors="replace").splitlines(keepends=True) if before is not None else []
    new = after.decode("utf-8", errors="replace").splitlines(keepends=True) if after is not None else []
    source = f"a/{name}" if before is not None else "/dev/null"
    target = f"b/{name}" if after is not None else "/dev/null"
    lines = list(difflib.unified_diff(old, new, fromfile=source, tofile=target))
    fixed = [line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines]
    if not fixed:
        return ""
    mode = "new file mode 100644\n" if before is None else "deleted file mode 100644\n" if after is None else ""
    return f"diff --git a/{name} b/{name}\n{mode}" + "".join(fixed)


def _named(shown: str, relative: str) -> str:
    """A file's name in the diff: ``relative`` below ``shown``, with no ``./`` that ``git apply``
    refuses (``--out .``, or the output directory at the repository's root)."""
    return relative if shown in ("", ".") else f"{shown}/{relative}"


def _shown(out: Path) -> tuple[str, str]:
    """``out`` relative to the checkout holding it (:func:`rlmap.gitread.find_checkout`; ``""``
    when it is that checkout's root: a docs repository checked out as the output directory), else
    to the working directory, so that the diff applies with ``git apply`` from there; and where
    that is, said for the message."""
    target = out.resolve()
    base = find_checkout(target)
    where = "the repository root"
    if base is None:
        base = Path.cwd().resolve()
        where = "the working directory (no git checkout holds the output directory)"
    try:
        return target.relative_to(base).as_posix(), where
    except ValueError:
        return out.name, f"the directory holding {out.name}"
