"""Writing a page set: all old or all new, only inside the output directory, only our own files.

The output directory may hold hand-written files, and may come from a hostile branch (links
planted in it).  So a run:

1. cleans what an interrupted earlier run left beside the directory (staging and old copies);
2. builds the complete new directory beside it (``.<out>.rlmap-new-*``): the files rlmap's
   manifest (``.rlmap-manifest.json``) does not list are carried over as they are (hard links,
   links copied as links, never followed), then every generated file and the new manifest are
   written;
3. swaps the new directory in with one atomic ``renameat2(RENAME_EXCHANGE)`` (two renames
   where the system lacks it, recovered on the next run) and removes the old one.

A kill at any moment leaves the previous directory or the new one, never a mix.  An output
directory that is a mount point (a container's volume) cannot be renamed: there, each changed
file is written whole beside itself and renamed over it, the files rlmap no longer writes are
removed, and the manifest is replaced last; a kill leaves every file whole, old or new, under the
previous manifest (so ``--check`` reports the set stale), and the next run completes it.  A generated
path that would pass through a symbolic link is refused, as is an output directory that is one.
Only files that the previous manifest lists are ever dropped.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import glob
import hashlib
import os
import re
import shutil
import stat
import tempfile
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import msgspec

from rlmap.errors import RlmapError, WriteFailed, device_failed
from rlmap.readfile import read_regular

MANIFEST = ".rlmap-manifest.json"
_NEW = ".rlmap-new-"
_OLD = ".rlmap-old-"
_MAX_MANIFEST = 4 << 20


class OutputError(RlmapError):
    """The output directory cannot be written safely."""


class Manifest(msgspec.Struct, forbid_unknown_fields=True):
    """What rlmap wrote into an output directory: path -> SHA-256 of its bytes."""

    generator: str
    files: dict[str, str]
    artefacts: dict[str, str] = {}  # written but not compared by --check (SVG layouts)


def manifest_of(
    files: dict[str, bytes], artefacts: dict[str, bytes] | None = None, previous: Manifest | None = None
) -> Manifest:
    """The manifest after writing ``files``: entries of ``previous`` in folders this run does not
    write (a format not generated this time) are kept, so a partial run forgets nothing."""
    kept_files, kept_artefacts = _retained(previous, {**files, **(artefacts or {})})
    written_files = {path: _digest(data) for path, data in files.items()}
    written_artefacts = {path: _digest(data) for path, data in (artefacts or {}).items()}
    return Manifest(
        generator="rlmap",
        files=dict(sorted({**kept_files, **written_files}.items())),
        artefacts=dict(sorted({**kept_artefacts, **written_artefacts}.items())),
    )


def manifest_bytes(
    files: dict[str, bytes], artefacts: dict[str, bytes] | None = None, previous: Manifest | None = None
) -> bytes:
    return msgspec.json.format(msgspec.json.encode(manifest_of(files, artefacts, previous)), indent=1) + b"\n"


def _retained(previous: Manifest | None, wanted: dict[str, bytes]) -> tuple[dict[str, str], dict[str, str]]:
    if previous is None:
        return {}, {}
    written = {path.split("/", 1)[0] for path in wanted}

    def keep(entries: dict[str, str]) -> dict[str, str]:
        return {path: digest for path, digest in entries.items() if path.split("/", 1)[0] not in written}

    return keep(previous.files), keep(previous.artefacts)


def read_manifest(out: Path) -> Manifest | None:
    """The manifest of ``out``; ``None`` when there is none or it is not one of ours.

    A manifest may come from a hostile branch: one that names anything but a plain relative path
    inside ``out`` (``..``, absolute, backslashes, control characters) is not ours.
    """
    data = read_inside(out, MANIFEST, _MAX_MANIFEST)
    if data is None:
        return None
    try:
        manifest = msgspec.json.decode(data, type=Manifest)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    if manifest.generator != "rlmap" or not all(map(_inside, [*manifest.files, *manifest.artefacts])):
        return None
    return manifest


_PLAIN_PATH = re.compile(r"[A-Za-z0-9_.+-]{1,200}(?:/[A-Za-z0-9_.+-]{1,200}){0,8}")


def _inside(relative: str) -> bool:
    return bool(_PLAIN_PATH.fullmatch(relative)) and all(part not in (".", "..") for part in relative.split("/"))


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True, slots=True)
class Plan:
    """What a write changes: files created or rewritten, and our own files dropped."""

    changed: tuple[str, ...]
    removed: tuple[str, ...]


def _replaced(previous: Manifest | None, wanted: dict[str, bytes]) -> set[str]:
    """The previous manifest's entries this run replaces or drops (those it keeps aside)."""
    if previous is None:
        return set()
    kept_files, kept_artefacts = _retained(previous, wanted)
    return (set(previous.files) | set(previous.artefacts)) - set(kept_files) - set(kept_artefacts)


def plan(out: Path, files: dict[str, bytes], artefacts: dict[str, bytes], previous: Manifest | None) -> Plan:
    wanted = {**files, **artefacts}
    changed = [relative for relative, data in sorted(wanted.items()) if read_inside(out, relative) != data]
    dropped = _replaced(previous, wanted) - set(wanted)
    removed = sorted(relative for relative in dropped if is_file_inside(out, relative))
    if read_inside(out, MANIFEST) != manifest_bytes(files, artefacts, previous):
        changed.append(MANIFEST)
    return Plan(tuple(changed), tuple(removed))


_MAX_READ = 64 << 20  # bytes of a file of the output directory rlmap reads back (pages are well under 1 MB)
_DIRECTORY = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


@contextlib.contextmanager
def _folder_of(out: Path, relative: str) -> Iterator[tuple[int, str] | None]:
    """The descriptor of the folder holding ``out/relative`` and the file's name there, reached
    without following a symbolic link (``out`` itself and each folder below it); ``None`` when
    there is no such folder or ``relative`` is not a plain relative path."""
    parts = relative.split("/")
    opened: list[int] = []
    try:
        if any(part in ("", ".", "..") for part in parts):
            yield None
            return
        try:
            opened.append(os.open(out, _DIRECTORY))
            for part in parts[:-1]:
                opened.append(os.open(part, _DIRECTORY, dir_fd=opened[-1]))
        except OSError:
            yield None
            return
        yield opened[-1], parts[-1]
    finally:
        for descriptor in opened:
            os.close(descriptor)


def read_inside(out: Path, relative: str, limit: int = _MAX_READ) -> bytes | None:
    """The bytes of the regular file ``out/relative``, reached without following a symbolic link
    (``out`` itself, each folder below it, the file), at most ``limit`` of them; ``None`` for
    anything else: missing, a link, a device, a FIFO, larger than ``limit``, unreadable.

    A hostile branch may commit ``out/md`` as a link to ``/proc/self`` and list ``md/environ``
    in the manifest: ``generate --check`` would have printed that file in its diff."""
    with _folder_of(out, relative) as found:
        if found is None:
            return None
        folder, name = found
        data = read_regular(name, limit, follow=False, folder=folder)
        return data if isinstance(data, bytes) else None


def is_file_inside(out: Path, relative: str) -> bool:
    """Whether ``out/relative`` is a regular file reached without following a link."""
    with _folder_of(out, relative) as found:
        if found is None:
            return False
        try:
            return stat.S_ISREG(os.stat(found[1], dir_fd=found[0], follow_symlinks=False).st_mode)
        except OSError:
            return False


def write_set(out: Path, files: dict[str, bytes], artefacts: dict[str, bytes] | None = None) -> Plan:
    """Replace the page set in ``out`` by ``files`` (+ ``artefacts``) all at once; see the module doc."""
    artefacts = artefacts or {}
    try:
        return _write_set(out, files, artefacts)
    except OSError as error:
        if device_failed(error):  # the disk, not the directory chosen
            raise WriteFailed(f"to '{out}'", error, "pass --out another directory") from None
        raise OutputError(
            f"cannot write to '{out}': {error.strerror or error}",
            "pass --out a writable directory (it is created if missing); its parent must be writable too",
        ) from None


def refuse_unmakeable(out: Path, probe: bool = False) -> None:
    """Refuse an output directory that cannot be one: a file, or a path below a file (said
    before anything is computed, rather than as the system's "File exists" once it is).
    ``probe``: also one in a directory where nothing can be made (``/proc``, a read-only file
    system), found by making and removing a directory where the page set will be built."""
    out = Path(os.path.abspath(out))
    for place in (out, *out.parents):
        if not os.path.lexists(place):
            continue
        if place.is_dir():
            if probe:  # (the page set is built beside the directory; a mount point, in it: _write_in_place)
                built_in = place if place != out else out if os.path.ismount(out) else out.parent
                _probe(built_in, out)
            return
        if place == out:
            raise OutputError(f"'{out}' exists and is not a directory", "pass --out a directory")
        raise OutputError(
            f"cannot make the output directory '{out}': '{place}' is a file, not a directory",
            "pass --out a path whose existing parents are directories",
        )


def _probe(folder: Path, out: Path) -> None:
    """Make and remove a directory in ``folder``, where the page set is built and swapped in."""
    import tempfile

    try:
        os.rmdir(tempfile.mkdtemp(prefix=".rlmap-probe-", dir=folder))
    except OSError as error:
        raise OutputError(
            f"cannot write to '{out}': {error.strerror or error} (in '{folder}')",
            "pass --out a writable directory (it is created if missing); its parent must be writable too",
        ) from None


def _write_set(out: Path, files: dict[str, bytes], artefacts: dict[str, bytes]) -> Plan:
    out = Path(os.path.abspath(out))
    refuse_unmakeable(out)
    _refuse_linked_parents(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with _locked(out):
        return _write_locked(out, files, artefacts)


def _write_locked(out: Path, files: dict[str, bytes], artefacts: dict[str, bytes]) -> Plan:
    recover(out, set(files) | set(artefacts) | {MANIFEST})
    if out.is_symlink():
        raise OutputError(
            f"the output directory '{out}' is a symbolic link",
            "pass --out the directory it points to; rlmap writes nothing through a link",
        )
    if out.exists() and not out.is_dir():
        raise OutputError(f"'{out}' exists and is not a directory", "pass --out a directory")
    if Path.cwd().resolve().is_relative_to(out.resolve()):
        raise OutputError(
            f"the output directory '{out}' holds the current directory, and rlmap replaces it as a whole",
            "pass --out a directory of its own, e.g. docs/generated",
        )
    wanted = {**files, **artefacts}
    for relative in wanted:
        _refuse_links(out, relative)
    previous = read_manifest(out)
    changes = plan(out, files, artefacts, previous)
    if not changes.changed and not changes.removed:
        return changes
    refuse_foreign(out, changes.changed, previous)
    if out.is_dir() and os.path.ismount(out):
        _write_in_place(out, files, artefacts, previous, changes)
        return changes
    ours = _replaced(previous, wanted) | {MANIFEST}
    staging = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}{_NEW}"))
    try:
        modes: list[tuple[Path, int]] = []
        if out.is_dir():
            modes = [(staging, stat.S_IMODE(os.stat(out).st_mode)), *_carry_over(out, staging, skip=ours | set(wanted))]
        else:
            os.chmod(staging, 0o777 & ~_umask())
        delay = float(os.environ.get("RLMAP_TEST_WRITE_DELAY", "0") or 0)  # fault injection for the kill tests
        for relative, data in sorted(wanted.items()):
            target = staging / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            if delay:
                time.sleep(delay)
        (staging / MANIFEST).write_bytes(manifest_bytes(files, artefacts, previous))
        for folder, mode in reversed(modes):  # (the deepest first: a read-only folder was filled)
            os.chmod(folder, mode)
        _swap_in(staging, out)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return changes


def _write_in_place(
    out: Path, files: dict[str, bytes], artefacts: dict[str, bytes], previous: Manifest | None, changes: Plan
) -> None:
    """The page set written into ``out`` file by file (a mount point, which no rename replaces):
    each changed file written whole beside itself and renamed over it, then the files the
    previous manifest lists and this set does not removed, then the manifest replaced.  The
    paths were checked for links (:func:`_refuse_links`) and for files rlmap did not write
    (:func:`refuse_foreign`)."""
    wanted = {**files, **artefacts}
    for relative in sorted(changes.changed):
        if relative != MANIFEST:
            _replace_file(out / relative, wanted[relative])
    for relative in sorted(changes.removed):
        _refuse_links(out, relative)  # (removed through no link either)
        (out / relative).unlink(missing_ok=True)
    _replace_file(out / MANIFEST, manifest_bytes(files, artefacts, previous))


def _replace_file(target: Path, data: bytes) -> None:
    """``target`` holds ``data``, all or nothing (:func:`rlmap.audit.replace.replace_file`: a
    temporary file beside it, the name :func:`recover` removes, renamed over it)."""
    from rlmap.audit.replace import replace_file

    target.parent.mkdir(parents=True, exist_ok=True)
    replace_file(target, data, 0o666 & ~_umask())


def recover(out: Path, wanted: set[str] | None = None) -> None:
    """Undo what an interrupted run left: restore a moved-away directory, drop staging copies,
    and the temporary files older rlmap versions left beside the files they were writing."""
    out = Path(os.path.abspath(out))
    parent = out.parent
    if not parent.is_dir():
        return
    name = glob.escape(out.name)
    leftovers = sorted(parent.glob(f".{name}{_OLD}*")) + sorted(parent.glob(f".{name}{_NEW}*"))
    for leftover in leftovers:
        if leftover.name.startswith(f".{out.name}{_OLD}") and not os.path.lexists(out):
            if leftover.is_dir() and not leftover.is_symlink():  # (a link planted there is not taken)
                os.rename(leftover, out)  # killed between the two renames of the fallback swap
            continue
        if leftover.is_dir() and not leftover.is_symlink():
            shutil.rmtree(leftover, ignore_errors=True)
    if out.is_dir() and not out.is_symlink():
        for relative in sorted(wanted or ()):
            target = out / relative
            if not target.parent.is_dir() or target.parent.is_symlink():
                continue
            pattern = f".{glob.escape(target.name)}.*.tmp"  # tempfile.mkstemp(prefix=".name.", suffix=".tmp")
            for stale in target.parent.glob(pattern):
                middle = stale.name[len(target.name) + 2 : -len(".tmp")]
                if _MKSTEMP.fullmatch(middle) and stale.is_file() and not stale.is_symlink():
                    stale.unlink(missing_ok=True)


_MKSTEMP = re.compile(r"[a-z0-9_]{8}")


@contextlib.contextmanager
def _locked(out: Path) -> Iterator[None]:
    """One writer per output directory at a time: a second run waits instead of taking the first
    run's staging directory for a leftover."""
    # held on the parent directory itself: no lock file is left in anyone's repository
    descriptor = os.open(out.parent, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)


def refuse_foreign(out: Path, changed: Iterable[str], previous: Manifest | None) -> None:
    """A file rlmap would replace must be one its manifest lists: a hand-written page at a
    generated page's path (``out/rst/index.rst`` before the first run, or a page a new profile
    adds) is an error, not silently overwritten.  A manifest that is there but unreadable still
    says the directory is rlmap's: its files are replaced, and the manifest written again."""
    if previous is None and os.path.lexists(out / MANIFEST):
        return
    listed = set(previous.files) | set(previous.artefacts) if previous is not None else set()
    for relative in changed:
        if relative != MANIFEST and relative not in listed and is_file_inside(out, relative):
            raise OutputError(
                f"'{out / relative}' exists and rlmap's manifest does not list it: rlmap did not write it",
                "move it away (rlmap writes its pages there), or choose another --out",
            )


def _refuse_linked_parents(out: Path) -> None:
    """No symbolic link between the working directory (the repository) and ``out``: a branch
    that turns ``docs/source/reference`` into a link must not send the pages elsewhere.
    Links above the working directory are the machine's (``/tmp`` -> ``/private/tmp``)."""
    base = Path.cwd()
    try:
        relative = out.relative_to(base)
    except ValueError:
        return
    _refuse_links_below(base, relative.parts[:-1], "replace the link with a directory, or pass --out the real path")


def _refuse_links(out: Path, relative: str) -> None:
    hint = "remove the link (rlmap recreates the directory) or choose another --out"
    _refuse_links_below(out, Path(relative).parts, hint)


def _refuse_links_below(base: Path, parts: tuple[str, ...], hint: str) -> None:
    """Walk ``base/parts[0]/parts[1]/...`` as far as it exists; a symbolic link on the way is an error."""
    current = base
    for part in parts:
        current = current / part
        if current.is_symlink():
            raise OutputError(f"'{current}' is a symbolic link; rlmap writes nothing through a link", hint)
        if not current.exists():
            return


def _carry_over(old: Path, new: Path, skip: set[str]) -> list[tuple[Path, int]]:
    """Everything of ``old`` but the paths in ``skip`` into ``new``: files as hard links (copies
    across file systems), links as links, directories recreated; returns each directory made
    and the mode to give it once everything is in it (a read-only folder is filled first).  A
    folder that cannot be listed stops the write: the swap would leave its files behind."""

    def unlisted(error: OSError) -> None:
        raise OutputError(
            f"cannot list '{error.filename}' in the output directory: {error.strerror}",
            "give it read and search permission, or move it out: rlmap replaces the directory as a whole",
        )

    modes: list[tuple[Path, int]] = []
    for directory, subdirectories, names in os.walk(old, onerror=unlisted, followlinks=False):
        base = Path(directory)
        relative_dir = base.relative_to(old)
        target_dir = new / relative_dir
        for name in sorted(subdirectories):
            source = base / name
            if source.is_symlink():
                os.symlink(os.readlink(source), target_dir / name)
            else:
                (target_dir / name).mkdir()
                modes.append((target_dir / name, stat.S_IMODE(os.stat(source).st_mode)))
        subdirectories[:] = [name for name in subdirectories if not (base / name).is_symlink()]
        for name in sorted(names):
            source = base / name
            relative = (relative_dir / name).as_posix()
            if relative in skip:
                continue
            mode = os.lstat(source).st_mode
            if stat.S_ISLNK(mode):
                os.symlink(os.readlink(source), target_dir / name)
            elif stat.S_ISREG(mode):
                try:
                    os.link(source, target_dir / name, follow_symlinks=False)
                except OSError:
                    shutil.copy2(source, target_dir / name, follow_symlinks=False)
            else:
                raise OutputError(
                    f"'{source}' is not a file, directory or link",
                    "move it out of the output directory; rlmap replaces the directory as a whole",
                )
    return modes


def _swap_in(staging: Path, out: Path) -> None:
    if not os.path.lexists(out):
        os.rename(staging, out)
        return
    if _exchange(staging, out):
        shutil.rmtree(staging, ignore_errors=True)  # now holds the previous set
        return
    old = out.parent / f".{out.name}{_OLD}{staging.name.rsplit('-', 1)[-1]}"
    os.rename(out, old)
    os.rename(staging, out)  # a kill between these two is undone by recover() on the next run
    shutil.rmtree(old, ignore_errors=True)


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _exchange(first: Path, second: Path) -> bool:
    """Atomically swap two paths (Linux ``renameat2``); ``False`` where that is not available."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    result = renameat2(_AT_FDCWD, os.fsencode(first), _AT_FDCWD, os.fsencode(second), _RENAME_EXCHANGE)
    if result == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.EXDEV):
        return False
    raise OSError(code, os.strerror(code))


def _umask() -> int:
    with contextlib.suppress(Exception):
        current = os.umask(0)
        os.umask(current)
        return current
    return 0o022
