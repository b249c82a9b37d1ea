"""A content-addressed on-disk cache for per-file index records and resolved models.

The cache directory may come from anywhere (a CI cache restored from another branch), so an
entry is plain data only: MessagePack decoded by msgspec into the exact record types it must
hold (never pickle, never marshal), behind a magic line and a SHA-256 of the payload.  An entry
that is truncated, corrupt, foreign, oversized, a link or not a regular file is a miss: it is
counted in :attr:`Cache.rejected` (the CLI prints one note) and rebuilt.  Entries are named by a
SHA-256 of what they were computed from (the code of rlmap that computed them, the Python and
libcst that parsed the file, the file's path and bytes), so a stale entry is never looked up,
only left behind.  Writes go to a temporary file that is renamed into place, so two processes
racing on one directory each read either nothing or a whole entry.

A large entry (a resolved model) is *sectioned*: a head (plain data and a table of its
sections, behind its own SHA-256) and sections that are read, checked against their own SHA-256
and decoded only when a query needs them (:meth:`Cache.get_sections`), so that a warm ``show``
reads a few hundred kilobytes of a 30 MB model.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import os
import re
import stat
import sys
import tempfile
import weakref
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, Generic, TypeVar

import msgspec

from rlmap import __version__
from rlmap.errors import CacheError
from rlmap.readfile import MISSING, read_regular

T = TypeVar("T")

_MAGIC = b"rlmap-cache 1\n"
_DIGEST = 32  # SHA-256 of the payload, stored right after the magic line
# A sectioned entry: magic, SHA-256 of the head, the head's length (8 bytes), the head (MessagePack
# of ``(value, {section: (offset, length, SHA-256)})``), then the sections, offsets counted from
# the end of the head.
_SECTIONED = b"rlmap-sections 1\n"
_ENTRY_KEY = re.compile(r"[0-9a-f]{64}")  # what content_key gives: every entry's name
_HEAD_LIMIT = 16 << 20
# A file's records are a fraction of its source (sources over 16 MB are not indexed); a resolved
# torchrl model is ~25 MB, torch's a few hundred.  A larger entry is rejected unread.
MAX_ENTRY_BYTES = {"files": 32 << 20, "models": 768 << 20}


def code_version(*modules: str) -> str:
    """A digest of rlmap's own modules that compute what is cached (``"extract"``, ``"resolve"``...).

    Cached records are a function of the input bytes and of the code that extracted them: keying
    entries on that code means no change to an extraction or resolution rule can ever be served
    stale records, and nobody has to remember to bump a schema number.
    """
    package = Path(__file__).resolve().parent.parent  # rlmap/
    digest = hashlib.sha256()
    for module in modules:
        data = (package / f"{module.replace('.', '/')}.py").read_bytes()
        digest.update(module.encode() + len(data).to_bytes(8, "little") + data)
    return digest.hexdigest()[:16]


# What per-file index records depend on: every module of the extraction (a test checks that each
# ``rlmap.index`` module they import is listed); the resolved model adds the resolver (session.py).
EXTRACTION_MODULES = (
    "index.records",
    "index.extract",
    "index.decode",
    "index.syntax",
    "index.walker",
    "index.definitions",
    "index.statements",
    "index.accesses",
    "index.keys",
    "index.summaries",
    "index.vocabulary",
    "index.lines",
    "index.indexer",
)
SCHEMA = code_version(*EXTRACTION_MODULES)


def package_identity(directory: Path) -> str:
    """What tells one release of an installed package from another, read from its directory
    without importing it: its ``__init__.py`` and ``_version.py`` (where docutils, markdown-it
    and libcst name their release), and the names and sizes of its native modules (libcst's
    parser; a module installed as a link counts by the file it links to)."""
    digest = hashlib.sha256()
    for name in ("__init__.py", "_version.py"):
        with contextlib.suppress(OSError):
            digest.update(name.encode() + (directory / name).read_bytes())
    with contextlib.suppress(OSError):
        for entry in sorted(os.scandir(directory), key=lambda entry: entry.name):
            if entry.name.endswith((".so", ".pyd")) and entry.is_file():
                digest.update(f"{entry.name} {entry.stat().st_size}\n".encode())
    return digest.hexdigest()[:16]


def installed_identity(package: str) -> str:
    """:func:`package_identity` of the top-level ``package`` an import would load (the finders of
    ``sys.meta_path`` asked in turn: an editable install's too), or a digest of its file when it
    is a single module; found without importing it and whether it is imported yet or not;
    ``"missing"`` when none has it (or it is a namespace package: nothing of its own to read)."""
    spec = None
    for finder in sys.meta_path:
        find_spec = getattr(finder, "find_spec", None)
        if find_spec is None:
            continue
        try:
            spec = find_spec(package, None)
        except (ImportError, ValueError, AttributeError, TypeError):
            spec = None
        if spec is not None:
            break
    if spec is None or not spec.origin or not os.path.isabs(spec.origin):
        return "missing"
    origin = Path(spec.origin)
    if origin.name != "__init__.py":  # a single module: the file itself (its size, if native)
        with contextlib.suppress(OSError):
            if origin.suffix in (".so", ".pyd"):
                return f"{origin.name} {origin.stat().st_size}"
            return hashlib.sha256(origin.read_bytes()).hexdigest()[:16]
        return "missing"
    return package_identity(origin.parent)


def parser_identity() -> str:
    """The parsers the records also depend on: the interpreter, whose ``ast`` gives their lines
    and value flow (a file Python 3.11 rejects, 3.12 may parse; its release as ``sys.version``
    names it, pre-releases told apart), and libcst (never imported here: a warm run does not)."""
    return f"{sys.implementation.name} {sys.version.split()[0]}, libcst {installed_identity('libcst')}"


# The parsers every entry's key names (see _key_start), computed once per process.
PARSERS = parser_identity()


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "rlmap"


def _key_start() -> str:
    """What every key starts from: rlmap's release, the code that computes records, the parsers."""
    return f"rlmap {__version__} schema {SCHEMA} parsers {PARSERS}"


# The libraries that parse docs pages: their releases key each page's parse (rlmap.audit.pagecache).
DOCS_PARSERS = ("docutils", "markdown_it", "mdit_py_plugins")


def docs_parsers_identity() -> str:
    """The releases of the libraries that parse docs pages, each named (found without importing them)."""
    return " ".join(f"{name} {installed_identity(name)}" for name in DOCS_PARSERS)


def cache_identity() -> str:
    """A digest of what every key starts from and of the docs pages' parsers: two runs whose
    identities differ use none of each other's records, or none of their pages' parses
    (``rlmap --version`` prints it, for a CI cache's key)."""
    return hashlib.sha256(f"{_key_start()} docs {docs_parsers_identity()}".encode()).hexdigest()[:16]


def content_key(*parts: bytes | str) -> str:
    digest = hashlib.sha256(_key_start().encode())
    for part in parts:
        data = part.encode("utf-8", "surrogateescape") if isinstance(part, str) else part
        digest.update(len(data).to_bytes(8, "little"))
        digest.update(data)
    return digest.hexdigest()


def encode_entry(value: Any) -> bytes:
    return _framed(msgspec.msgpack.encode(value))


def _framed(payload: bytes, digest: bytes | None = None) -> bytes:
    return _MAGIC + (digest or hashlib.sha256(payload).digest()) + payload


def encode_sections(head: Any, sections: Mapping[str, bytes]) -> bytes:
    """A sectioned entry: ``head`` (plain data) and each named section (MessagePack bytes)."""
    return b"".join(_section_parts(head, sections))


def _section_parts(head: Any, sections: Mapping[str, bytes]) -> Iterator[bytes]:
    """The bytes of a sectioned entry, in order (written one after the other: a torch model's
    sections are hundreds of MB, not worth a second copy joined in memory)."""
    toc: dict[str, tuple[int, int, bytes]] = {}
    offset = 0
    for name, payload in sections.items():
        toc[name] = (offset, len(payload), hashlib.sha256(payload).digest())
        offset += len(payload)
    index = msgspec.msgpack.encode((head, toc))
    yield from (_SECTIONED, hashlib.sha256(index).digest(), len(index).to_bytes(8, "little"), index)
    yield from sections.values()


def decode_sections(data: bytes) -> tuple[Any, dict[str, bytes]] | None:
    """The head (plain data) and sections of a whole sectioned entry, every checksum checked;
    ``None`` for anything else."""
    start = len(_SECTIONED) + _DIGEST + 8
    if len(data) < start or not data.startswith(_SECTIONED):
        return None
    length = int.from_bytes(data[start - 8 : start], "little")
    index = data[start : start + length]
    if hashlib.sha256(index).digest() != data[len(_SECTIONED) : len(_SECTIONED) + _DIGEST]:
        return None
    head, toc = msgspec.msgpack.decode(index)
    sections = {name: data[start + length + offset :][:size] for name, (offset, size, _) in toc.items()}
    if any(hashlib.sha256(sections[name]).digest() != digest for name, (_, _, digest) in toc.items()):
        return None
    return head, sections


class DamagedEntry(CacheError):
    """A section of a sectioned entry failed its checksum when it was read: the entry has been
    removed, and the command can run again, which rebuilds it."""

    def __init__(self, path: Path, section: str) -> None:
        super().__init__(
            f"the cache entry {path.name} is damaged (its section {section} fails its checksum)",
            "run the command again: the damaged entry has been removed and will be rebuilt",
        )
        self.path = path
        self.section = section


class Sections(Generic[T]):
    """An intact sectioned entry: its head, and its sections read one at a time (each checked
    against its own SHA-256 when read).  The entry's file stays open, so that a later writer
    (who replaces it, never rewrites it) cannot change what is read."""

    def __init__(self, path: Path, handle: int, base: int, head: T, toc: dict[str, tuple[int, int, bytes]]) -> None:
        self.path = path
        self.head = head
        self._handle = handle
        self._base = base
        self._toc = toc
        weakref.finalize(self, os.close, handle)

    def names(self) -> list[str]:
        return list(self._toc)

    def read(self, name: str) -> bytes | None:
        """The bytes of section ``name``; ``None`` when the entry has none.  A section that
        fails its checksum raises :class:`DamagedEntry`."""
        place = self._toc.get(name)
        if place is None:
            return None
        offset, length, digest = place
        try:
            data = os.pread(self._handle, length, self._base + offset)
        except OSError:
            data = b""
        if len(data) != length or hashlib.sha256(data).digest() != digest:
            with contextlib.suppress(OSError):
                self.path.unlink()  # found wherever it is read (a render child too): never read again
            raise DamagedEntry(self.path, name)
        return data


def decode_entry(data: bytes, decoder: msgspec.msgpack.Decoder[T]) -> T | None:
    """The value of a whole, intact entry of the expected type; ``None`` for anything else."""
    found = _decode_checked(data, decoder)
    return found[0] if found is not None else None


def _decode_checked(data: bytes, decoder: msgspec.msgpack.Decoder[T]) -> tuple[T, bytes] | None:
    """:func:`decode_entry`'s value and the SHA-256 of its payload (checked against the bytes)."""
    head = len(_MAGIC) + _DIGEST
    if len(data) < head or not data.startswith(_MAGIC):
        return None
    payload = memoryview(data)[head:]
    digest = hashlib.sha256(payload).digest()
    if digest != data[len(_MAGIC) : head]:
        return None
    try:
        return decoder.decode(payload), digest
    except (msgspec.DecodeError, msgspec.ValidationError, ValueError, TypeError, RecursionError):
        return None


class Cache:
    """``get``/``put`` of typed plain data under a namespace and a content key."""

    def __init__(self, directory: Path | None) -> None:
        self.directory = directory
        self.write_failed = False
        self.rejected = 0  # entries found but unusable (corrupt, foreign, not a file): rebuilt
        self._decoders: dict[Any, msgspec.msgpack.Decoder[Any]] = {}

    @classmethod
    def disabled(cls) -> Cache:
        return cls(None)

    @classmethod
    def at(cls, directory: Path) -> Cache:
        hint = "pass --cache-dir a writable directory (it is created if missing), or --no-cache"
        blocker = next((place for place in (directory, *directory.parents) if os.path.lexists(place)), None)
        if blocker is not None and not blocker.is_dir():  # (said before the system's "File exists")
            where = "" if blocker == directory else f" (in '{directory}')"
            raise CacheError(f"the cache directory '{blocker}'{where} is a file, not a directory", hint)
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise CacheError(f"cannot create the cache directory '{directory}': {error.strerror}", hint) from None
        if not directory.is_dir() or not os.access(directory, os.W_OK):
            raise CacheError(f"the cache directory '{directory}' is not a writable directory", hint)
        return cls(directory)

    def _path(self, namespace: str, key: str) -> Path | None:
        """Where the entry under ``key`` is; ``None`` for a key that is not a content key (64 hex
        digits: :func:`content_key`), such as one read from a cached entry naming another that
        is not one (``../../x``): no entry is looked for outside the cache directory."""
        assert self.directory is not None
        if not _ENTRY_KEY.fullmatch(key):
            return None
        return self.directory / namespace / key[:2] / f"{key}.msgpack"

    def get(self, namespace: str, key: str, kind: type[T] | Any) -> T | None:
        """The entry of ``kind`` stored under ``key``, or ``None`` (missing or unusable)."""
        found = self.get_digested(namespace, key, kind)
        return found[0] if found is not None else None

    def get_digested(self, namespace: str, key: str, kind: type[T] | Any) -> tuple[T, bytes] | None:
        """:meth:`get`'s value and the SHA-256 of its MessagePack payload, or ``None``."""
        if self.directory is None:
            return None
        path = self._path(namespace, key)
        if path is None:
            self.rejected += 1
            return None
        data = _read_regular_file(path, MAX_ENTRY_BYTES.get(namespace, 32 << 20))
        if data is None:
            return None
        decoder = self._decoders.get(kind)
        if decoder is None:
            decoder = self._decoders[kind] = msgspec.msgpack.Decoder(kind)
        enabled = gc.isenabled()
        gc.disable()  # decoding builds millions of tuples and no cycle: the collector only costs time
        try:
            found = _decode_checked(data, decoder)
        finally:
            if enabled:
                gc.enable()
        if found is None:
            self.rejected += 1
        return found

    def has(self, namespace: str, key: str) -> bool:
        """Whether an entry is under ``key``: a regular file, not read (it may still prove
        unusable when it is: see :meth:`get_digested`).  Anything else there (a link, a
        directory, a FIFO, a path that cannot be looked at) is counted as rejected, as reading
        it would be."""
        if self.directory is None:
            return False
        path = self._path(namespace, key)
        try:
            regular = path is not None and stat.S_ISREG(os.lstat(path).st_mode)
        except FileNotFoundError:
            return False
        except OSError:
            regular = False
        if not regular:
            self.rejected += 1
        return regular

    def get_sections(self, namespace: str, key: str, head: type[T] | Any) -> Sections[T] | None:
        """The sectioned entry under ``key`` with its head decoded as ``head``, or ``None``
        (missing or unusable); its sections are read when asked for (:meth:`Sections.read`)."""
        if self.directory is None:
            return None
        path = self._path(namespace, key)
        if path is None:
            self.rejected += 1
            return None
        handle = _open_regular_file(path, MAX_ENTRY_BYTES.get(namespace, 32 << 20))
        if handle is None:
            return None
        found = _read_head(path, handle[0], handle[1], head) if handle[0] >= 0 else None
        if found is None:
            if handle[0] >= 0:
                os.close(handle[0])
            self.rejected += 1
            return None
        return found

    def put(self, namespace: str, key: str, value: Any) -> None:
        if self.directory is not None:
            self.put_payload(namespace, key, msgspec.msgpack.encode(value))

    def put_payload(self, namespace: str, key: str, payload: bytes, digest: bytes | None = None) -> None:
        """:meth:`put` of a value already encoded (``msgspec.msgpack.encode(value)``), whose
        SHA-256 is ``digest`` when the caller has it."""
        if self.directory is not None:
            self._write(namespace, key, (_framed(payload, digest),))

    def put_sections(self, namespace: str, key: str, head: Any, sections: Mapping[str, bytes]) -> None:
        """Store a sectioned entry (see :func:`encode_sections`)."""
        if self.directory is not None:
            self._write(namespace, key, _section_parts(head, sections))

    def _write(self, namespace: str, key: str, parts: Iterable[bytes]) -> None:
        assert self.directory is not None
        target = self._path(namespace, key)
        if target is None:  # (every key rlmap writes under is a content key)
            self.write_failed = True
            return
        try:
            _make_real_directories(self.directory, target.parent)
            handle, temporary = tempfile.mkstemp(dir=target.parent, suffix=".tmp")
            try:
                with os.fdopen(handle, "wb") as stream:
                    for part in parts:
                        stream.write(part)
                os.replace(temporary, target)
            except BaseException:
                Path(temporary).unlink(missing_ok=True)
                raise
        except OSError:
            self.write_failed = True


def _open_regular_file(path: Path, limit: int) -> tuple[int, int] | None:
    """``(descriptor, size)`` of ``path`` opened for reading if it is a regular file (not a link,
    FIFO or device) of sane size; ``None`` when it does not exist; ``(-1, 0)`` for anything else."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        handle = os.open(path, flags)
    except FileNotFoundError:
        return None
    except OSError:  # a symlink (ELOOP), no permission, ...
        return -1, 0
    try:
        info = os.fstat(handle)
    except OSError:
        os.close(handle)
        return -1, 0
    if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
        os.close(handle)
        return -1, 0
    return handle, info.st_size


def _read_head(path: Path, handle: int, size: int, kind: Any) -> Sections[Any] | None:
    """The :class:`Sections` of an open sectioned entry whose head is intact and of type ``kind``,
    and whose sections fill the rest of the file exactly (a truncated entry is refused here)."""
    start = len(_SECTIONED) + _DIGEST + 8
    try:
        prefix = os.pread(handle, start, 0)
        if len(prefix) < start or not prefix.startswith(_SECTIONED):
            return None
        length = int.from_bytes(prefix[-8:], "little")
        if length > min(_HEAD_LIMIT, size - start):
            return None
        index = os.pread(handle, length, start)
    except OSError:
        return None
    if len(index) != length or hashlib.sha256(index).digest() != prefix[len(_SECTIONED) : len(_SECTIONED) + _DIGEST]:
        return None
    decoder = msgspec.msgpack.Decoder(tuple[kind, dict[str, tuple[int, int, bytes]]])
    try:
        head, toc = decoder.decode(index)
    except (msgspec.DecodeError, msgspec.ValidationError, ValueError, TypeError, RecursionError):
        return None
    end = 0
    for offset, extent, _ in toc.values():  # laid end to end, from 0, in order
        if offset != end or extent < 0:
            return None
        end += extent
    if start + length + end != size:
        return None
    return Sections(path, handle, start + length, head, toc)


def _read_regular_file(path: Path, limit: int) -> bytes | None:
    """The bytes of ``path`` if it is a regular file (not a link, FIFO or device) of sane size.

    ``None`` when it does not exist; ``b""`` (an unusable entry) when it is anything else.
    """
    found = read_regular(path, limit, follow=False)
    if isinstance(found, bytes):
        return found
    return None if found.reason == MISSING else b""


def _make_real_directories(base: Path, directory: Path) -> None:
    """Create ``directory`` below ``base``; refuse to write through a symlinked part of it."""
    current = base
    for part in directory.relative_to(base).parts:
        current = current / part
        try:
            info = os.lstat(current)
        except FileNotFoundError:
            current.mkdir(exist_ok=True)
            continue
        if not stat.S_ISDIR(info.st_mode):
            raise OSError(f"{current} is not a directory")
