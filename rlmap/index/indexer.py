"""Index a whole source tree: read every file once, parse the changed ones in parallel, cache.

``build_index(source, cache, extensions=...)`` returns a :class:`ProjectIndex`; per-file
failures are diagnostics inside it, never exceptions.  The enabled extensions (key
vocabularies, :mod:`rlmap.index.vocabulary`) change what a file's records hold, so they are
part of every file's cache key.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import os
import signal
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from rlmap.index.cache import Cache, content_key
from rlmap.index.records import Diagnostic, ModuleIndex
from rlmap.index.source import SourceTree
from rlmap.index.vocabulary import enabled_extensions
from rlmap.readfile import GREW, IRREGULAR, LARGE, read_regular

if TYPE_CHECKING:  # the process pool is imported by the runs that parse, only
    from concurrent.futures import Future, ProcessPoolExecutor

FILES = "files"
# Below this many files to parse, a process pool costs more than it saves.
_PARALLEL_THRESHOLD = 8
# A source file larger than this is not read (torchrl's largest is ~0.2 MB).
MAX_FILE_BYTES = 16 * 1024 * 1024
# Above this much source, each file's records are compacted as they are decoded (see _compact):
# torch (60 MB) decodes 11 M strings, 1.7 M of them distinct.  Below it (torchrl and tensordict:
# 13 MB), compacting costs more time than the memory it saves is worth.
COMPACT_BYTES = 32 * 1024 * 1024

Progress = Callable[[str, int, int], None]  # (phase, done, total): the indexer reports "index"
# What a worker indexes: a file's bytes, its repo-relative path, the enabled extensions, and
# whether it is a companion package's file (see ``extract_module``'s ``library``).
Job = tuple[bytes, str, tuple[str, ...], bool]
# What a worker is handed: the job, its cache key, and the cache directory it writes the entry to.
Work = tuple[Job, str, Path | None]
# What it hands back: the MessagePack of the file's ModuleIndex (the very payload of its cache
# entry: the records are serialized once, in the worker), its SHA-256, and whether writing the
# entry failed.
Done = tuple[bytes, bytes, bool]


@dataclass(frozen=True, slots=True)
class IndexStats:
    files: int
    parsed: int
    from_cache: int
    position_fallbacks: int


@dataclass(frozen=True, slots=True)
class ProjectIndex:
    """Every module of the tree, sorted by path, plus the key of the whole set."""

    modules: tuple[ModuleIndex, ...]
    key: str  # content key of all files together: the resolved model's cache key
    stats: IndexStats = field(compare=False)
    skipped: tuple[Diagnostic, ...] = ()  # entries of the tree that were not read (see SourceTree.scan_files)
    # the SHA-256 of each module's records (their MessagePack, which the same records always
    # encode to), in the order of ``modules``: what the model's records key is made of
    digests: tuple[bytes, ...] = field(default=(), compare=False)
    # each module's cache key (its file's path and bytes: :func:`file_key`), in the same order
    file_keys: tuple[str, ...] = field(default=(), compare=False)

    @property
    def diagnostics(self) -> tuple[Diagnostic, ...]:
        found = [d for module in self.modules for d in module.diagnostics]
        found.extend(self.skipped)
        return tuple(sorted(found, key=lambda d: (d.path, d.line, d.message)))


def file_key(path: str, data: bytes | str, extensions: tuple[str, ...], library: bool = False) -> str:
    """The cache key of one file's records: its path, its bytes, the enabled extensions, and
    whether it was indexed as a companion package's file."""
    if library:
        return content_key(path, data, "extensions:" + ",".join(extensions), "library")
    return content_key(path, data, "extensions:" + ",".join(extensions))


def _extract(job: Job) -> ModuleIndex:
    """Index one file (in a worker process or not); never raises."""
    from rlmap.index.extract import extract_module, internal_error  # libcst is imported only where it is used

    source, path, extensions, library = job
    try:
        return extract_module(source, path, extensions=extensions, library=library)
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as error:  # extract_module catches everything; this is the last line
        return internal_error(path, error)


def _index_file(work: Work) -> Done:
    """Index one file, write its cache entry, hand back its records as MessagePack; never raises.

    The collector is off while the file is parsed and walked: libcst's tree is millions of
    objects and no cycle, so every collection on the way only costs time (a quarter of it).
    """
    with paused_gc():
        module = _extract(work[0])
        payload = msgspec.msgpack.encode(module)
    if len(work[0][0]) >= _LARGE_FILE:
        give_back_memory()
    return _stored(work, payload)


# libcst's tree of a file this large takes hundreds of MB (torch's largest, 1.3 MB: 800 MB).
_LARGE_FILE = 256 * 1024


def give_back_memory() -> None:
    """Return the freed heap to the system: glibc keeps it otherwise (a worker that parsed a large
    file first would hold its tree's for the rest of the run; the main process, the files' bytes
    and the workers' payloads of a whole parse).  A few milliseconds."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: nothing to do
        pass


# Blocks at least this large are mapped apart (see map_large_blocks): glibc's own default before
# it raises the threshold as such blocks are freed.
_MAPPED_BLOCK = 128 * 1024


def map_large_blocks() -> bool:
    """Have glibc map every block of 128 KiB or more apart, and unmap it when freed, for the rest
    of the process (and the workers it forks): by default it raises that threshold each time such
    a block is freed, so that a large tree's dict and list tables, files' bytes and payloads end
    up in its heap, whose freed pages it keeps (torch: 65 MB more at the resolution's peak).  Set
    for large trees only (a mapped block costs a system call).  ``False`` where it cannot be set
    (not glibc)."""
    try:
        import ctypes

        return bool(ctypes.CDLL("libc.so.6").mallopt(_M_MMAP_THRESHOLD, _MAPPED_BLOCK))
    except (OSError, AttributeError):  # not glibc: nothing to do
        return False


_M_MMAP_THRESHOLD = -3  # glibc's malloc.h


def read_file(path: str, absolute: os.PathLike[str]) -> tuple[bytes | None, Diagnostic | None]:
    """The bytes of a regular file; never blocks on a FIFO, never reads a device or a huge file."""
    found = read_regular(absolute, MAX_FILE_BYTES)
    if isinstance(found, bytes):
        return found, None
    if found.reason == IRREGULAR:  # (it changed since the tree was listed)
        why = "not a regular file"
    elif found.reason == LARGE:
        why = f"file too large ({found.size / (1024 * 1024):.0f} MB, limit {MAX_FILE_BYTES // (1024 * 1024)} MB)"
    elif found.reason == GREW:
        why = "file grew while read"
    else:
        why = f"cannot read file: {found.detail}"
    return None, Diagnostic(path, 1, f"{why}; file skipped")


# An early look (see index_unless): the files the caller knows a result for (path -> file key),
# the entries skipped then (as their diagnostics read), and what decides, given the records and
# key of each file whose key is not that one, whether that result will do (True: the index is
# not wanted).
Early = tuple[Mapping[str, str], Sequence[str], Callable[[dict[str, tuple[ModuleIndex, str]]], bool]]
# An early look is taken at up to this many changed files (more: a new branch, not an edit).
EARLY_FILES = 32


def build_index(
    source: SourceTree,
    cache: Cache,
    jobs: int | None = None,
    progress: Progress | None = None,
    extensions: Sequence[str] = (),
) -> ProjectIndex:
    """Index every ``.py`` file of ``source``; only files not in ``cache`` are parsed.

    ``extensions`` names the key vocabularies to record (``("tensordict",)``); an unknown name
    raises :class:`~rlmap.errors.ConfigError` before any file is read.
    """
    index = index_unless(source, cache, jobs, progress, extensions)
    assert index is not None  # (no early look: always an index)
    return index


def index_unless(
    source: SourceTree,
    cache: Cache,
    jobs: int | None = None,
    progress: Progress | None = None,
    extensions: Sequence[str] = (),
    early: Early | None = None,
) -> ProjectIndex | None:
    """:func:`build_index`, unless ``early`` says a result known for other files will do: when
    at most :data:`EARLY_FILES` files' keys differ from the ones it names (the same files), their
    records are read first (their cache entries decoded first, their parses awaited while the
    other entries are decoded), and given to its decision as soon as they are all known; if it
    says True, ``None`` is returned and the other files' records are not decoded.  Only while
    files are parsed in workers and entries decoded meanwhile (a second core, a cache, a tree
    under the compacting size); otherwise nothing is looked at early.
    """
    enabled = enabled_extensions(extensions)
    files, skipped_entries = source.scan_files()
    skipped = tuple(Diagnostic(path, 1, why) for path, why in skipped_entries)
    results: dict[str, ModuleIndex] = {}
    digests: dict[str, bytes] = {}
    pending: list[tuple[Job, str]] = []  # (job, key)
    keys: list[str] = []
    key_of: dict[str, str] = {}  # path -> its file's key
    large = _source_bytes(files) > COMPACT_BYTES
    compact = _compact if large else _as_is
    if large:
        map_large_blocks()
    # A file whose entry is there is decoded after the files to parse are handed to the workers
    # (below): they parse while this process decodes (one file edited: its parse and libcst's
    # import in a worker, the others' records here).  A large tree's entries are decoded as
    # they are found, with no file's bytes held meanwhile.
    overlap = not large and worker_count(jobs) > 1 and cache.directory is not None
    entries: list[tuple[str, Job, str]] | None = [] if overlap else None  # (path, job, key)
    for absolute in files:
        path = source.relpath(absolute)
        library = source.is_companion_path(path)
        key, found = _cached_or_job(cache, (path, library), absolute, enabled, pending, entries)
        keys.append(key)
        key_of[path] = key
        if found is not None:
            results[path] = compact(found[0])
            digests[path] = found[1]

    decoder = msgspec.msgpack.Decoder(ModuleIndex)
    batches: list[_Parsing] = []
    unusable: list[tuple[Job, str]] = []  # an entry that proves corrupt or foreign: parsed after
    watched = _watched(early, key_of, skipped) if entries is not None else None
    first = 0  # how many entries are the changed files' (decoded first)
    if watched is not None and entries is not None:
        changed = watched
        entries.sort(key=lambda entry: entry[0] not in changed)
        first = sum(1 for entry in entries if entry[0] in changed)

    def parsed_in(done: Done) -> None:
        payload, digest, write_failed = done
        parsed = compact(decoder.decode(payload))
        results[parsed.path] = parsed
        digests[parsed.path] = digest
        cache.write_failed |= write_failed

    def enough() -> bool:
        """The early look, once every watched file's records are known (then never again)."""
        nonlocal watched
        assert watched is not None
        assert early is not None
        for done in batches[0].take_all():
            parsed_in(done)
        changed, watched = watched, None
        if not changed <= results.keys():  # an unusable entry among them: parsed after, with the rest
            return False
        return early[2]({path: (results[path], key_of[path]) for path in sorted(changed)})

    try:
        batches.append(_Parsing(pending, jobs, cache.directory, eager=bool(entries)))
        for number, (path, job, key) in enumerate(entries or ()):
            cached: tuple[ModuleIndex, bytes] | None = cache.get_digested(FILES, key, ModuleIndex)
            if cached is not None and records_of(cached[0], path, cache):
                results[path] = compact(cached[0])
                digests[path] = cached[1]
            else:
                unusable.append((job, key))
            if watched is not None and number + 1 >= first and batches[0].ready() and enough():
                return None
        if watched is not None and enough():
            return None
        entries = None  # the files' bytes: only those of the unusable entries are kept
        done = len(results)
        if progress:
            progress("index", done, len(files))
        with paused_gc():  # the records pile up and hold no cycle: collections would only rescan them
            for parsed in _parsed_in_turn(batches, unusable, jobs, cache.directory):
                parsed_in(parsed)
                done += 1
                if progress:
                    progress("index", done, len(files))
    except BaseException:  # an interrupt (or a failure here): the workers are stopped, not waited for
        for batch in batches:
            batch.stop()
        raise
    finally:
        for batch in batches:
            batch.close()

    paths = sorted(results)
    modules = tuple(results[path] for path in paths)
    stats = IndexStats(
        files=len(files),
        parsed=len(pending) + len(unusable),
        from_cache=len(files) - len(pending) - len(unusable),
        position_fallbacks=sum(module.position_fallback for module in modules),
    )
    project_key = content_key(source.package, *enabled, *keys, *(str(diagnostic) for diagnostic in skipped))
    return ProjectIndex(
        modules,
        project_key,
        stats,
        skipped,
        tuple(digests[path] for path in paths),
        tuple(key_of[path] for path in paths),
    )


def _watched(early: Early | None, key_of: dict[str, str], skipped: tuple[Diagnostic, ...]) -> set[str] | None:
    """The files an early look waits for: those whose key is not the one ``early`` knows, when
    it knows the same files (and skipped entries) and at most :data:`EARLY_FILES` of them changed."""
    if early is None or early[0].keys() != key_of.keys() or list(early[1]) != [str(d) for d in skipped]:
        return None
    known = early[0]
    changed = {path for path, key in key_of.items() if known[path] != key}
    return changed if 0 < len(changed) <= EARLY_FILES else None


def _source_bytes(files: list[Path]) -> int:
    total = 0
    for path in files:
        try:
            total += os.stat(path).st_size
        except OSError:
            continue  # reported when it is read
    return total


def _as_is(module: ModuleIndex) -> ModuleIndex:
    return module


def _compact(module: ModuleIndex) -> ModuleIndex:
    """``module`` with every string of its records interned, and every line number one object per
    number (:data:`_NUMBERS`): one object per distinct text or number in the whole run (a
    qualname is written in every flow row, call and access of its body; torch's records hold a
    million line numbers above the 256 Python shares).  The records are changed in place, before
    anything else holds them."""
    tables: tuple[tuple[object, ...], ...] = (
        module.symbols,
        module.calls,
        module.attributes,
        module.keys,
        module.imports,
        module.locals,
        module.returns,
    )
    for records in tables:
        for record in records:
            _intern_fields(record)
    object.__setattr__(module, "flow", tuple([interned(row) for row in module.flow]))
    return module


# Every line number compacted records hold, as one object each (``int`` is immutable: sharing it
# changes nothing but the memory; the table holds at most the longest file's line count).
_NUMBERS: dict[int, int] = {}


def _intern_fields(record: object) -> None:
    for name in record.__slots__:  # type: ignore[attr-defined]
        value = getattr(record, name)
        kind = type(value)
        if kind is str or kind is tuple:
            object.__setattr__(record, name, interned(value))
        elif kind is int:
            object.__setattr__(record, name, _NUMBERS.setdefault(value, value))


def interned(value: Any) -> Any:
    """``value`` with its strings interned and its ints shared (:data:`_NUMBERS`), through tuples."""
    kind = type(value)
    if kind is str:
        return sys.intern(value)
    if kind is tuple:
        return tuple([interned(item) for item in value])
    if kind is int:
        return _NUMBERS.setdefault(value, value)
    return value


def _cached_or_job(
    cache: Cache,
    file: tuple[str, bool],
    absolute: os.PathLike[str],
    extensions: tuple[str, ...],
    pending: list[tuple[Job, str]],
    entries: list[tuple[str, Job, str]] | None = None,
) -> tuple[str, tuple[ModuleIndex, bytes] | None]:
    """A file's key and, when it is known without parsing (cached, or unreadable), its index
    and the SHA-256 of the index's MessagePack.

    ``file`` is its repo-relative path, and whether it is a companion package's.  Otherwise the
    file becomes a job appended to ``pending``, and the index is ``None``.  With ``entries``, a
    file whose cache entry is there is appended to it (path, job, key) rather than decoded now.
    """
    path, library = file
    data, problem = read_file(path, absolute)
    if data is None:
        from rlmap.index.extract import module_name_for

        name, is_package = module_name_for(path)
        unreadable = ModuleIndex(name, path, is_package, diagnostics=(problem,) if problem else ())
        digest = hashlib.sha256(msgspec.msgpack.encode(unreadable)).digest()
        return file_key(path, "<unreadable>", extensions, library), (unreadable, digest)
    key = file_key(path, data, extensions, library)
    job = (data, path, extensions, library)
    if entries is not None:
        if cache.has(FILES, key):
            entries.append((path, job, key))
        else:
            pending.append((job, key))
        return key, None
    cached: tuple[ModuleIndex, bytes] | None = cache.get_digested(FILES, key, ModuleIndex)
    if cached is not None and records_of(cached[0], path, cache):
        return key, cached
    pending.append((job, key))
    return key, None


def records_of(index: object, path: str, cache: Cache) -> bool:
    """Whether a cache entry read for the file ``path`` holds that file's records: every path in
    it is ``path``.  An entry's checksum anyone can recompute, so a forged one could name another
    file (``../../etc/passwd``) for the pages to quote; it is counted as rejected, and the file
    parsed again."""
    if (
        isinstance(index, ModuleIndex)
        and index.path == path
        and all(symbol.path == path for symbol in index.symbols)
        and all(diagnostic.path == path for diagnostic in index.diagnostics)
    ):
        return True
    cache.rejected += 1
    return False


def worker_count(jobs: int | None) -> int:
    """The processes a run may keep busy: ``--jobs``, or one per core."""
    return jobs if jobs is not None else (os.cpu_count() or 1)


def _parsed_in_turn(
    batches: list[_Parsing], unusable: list[tuple[Job, str]], jobs: int | None, directory: Path | None
) -> Iterator[Done]:
    """The first batch's records, then those of the ``unusable`` entries' files, a batch made
    (and added to ``batches``, for its caller to close) once the first batch's workers are done."""
    yield from batches[0]
    batches.append(_Parsing(unusable, jobs, directory))
    yield from batches[1]


_IGNORE_INTERRUPT = (signal.SIGINT, signal.SIG_IGN)


class _Parsing:
    """The files to parse, and their records as each is done (iterate once).

    With a second core they are parsed in worker processes (largest first, so that the last
    handed out is small and the cores finish together): when there are enough of them to pay for
    the workers, or ``eager`` (this process has other work to do meanwhile), in which case they
    are handed out at once, so that the workers parse while this process goes on.  Otherwise
    each is parsed here, as it is read.  :meth:`close` stops the workers (after the last record,
    or when the caller gives up).
    """

    def __init__(self, pending: list[tuple[Job, str]], jobs: int | None, directory: Path | None, eager: bool = False):
        self.ordered: list[Work] = [
            (job, key, directory) for job, key in sorted(pending, key=lambda item: -len(item[0][0]))
        ]
        self.pool: Any = None
        self.futures: list[Future[Done] | None] = []
        self.taken = False  # every record was read already (take_all): iterating gives none
        workers = worker_count(jobs)
        if workers > 1 and self.ordered and (eager or len(self.ordered) >= _PARALLEL_THRESHOLD):
            self._hand_out(min(workers, len(self.ordered)), prepare=not eager)

    def _hand_out(self, workers: int, prepare: bool) -> None:
        from concurrent.futures import ProcessPoolExecutor

        if prepare:  # many files: what every parse uses, built once here and inherited by the workers
            from rlmap.index.extract import prepare_parser

            prepare_parser()
        # the workers leave an interrupt to this process, which stops them (see close)
        self.pool = ProcessPoolExecutor(max_workers=workers, initializer=signal.signal, initargs=_IGNORE_INTERRUPT)
        try:
            self.futures = [_submit(self.pool, work) for work in self.ordered]
        except BaseException:  # interrupted while handing out: no worker is left behind
            self.stop()
            raise

    def ready(self) -> bool:
        """Whether every file is parsed (by the workers): reading the records will not wait."""
        if self.pool is None:
            return not self.ordered or self.taken
        return all(future is None or future.done() for future in self.futures)

    def take_all(self) -> list[Done]:
        """Every file's records now (waiting for them); iterating afterwards gives none."""
        found = [] if self.taken else list(self)
        self.taken = True
        return found

    def __iter__(self) -> Iterator[Done]:
        if self.taken:
            return
        if self.pool is None:
            for work in self.ordered:
                yield _index_file(work)
            return
        # A worker that dies (a crash in libcst's native parser, the OOM killer) breaks the whole
        # pool: every file it had not finished is parsed again alone, one process per crash, so
        # that the file that kills it is known and becomes a diagnostic.
        unfinished: list[Work] = []
        for number, work in enumerate(self.ordered):
            # let go of each future once read: it holds its file's records (torch's: 400 MB in all)
            future, self.futures[number] = self.futures[number], None
            done = _result(future, work)
            if done is None:
                unfinished.append(work)
            else:
                yield done
        self.close()
        yield from _parse_alone(unfinished)

    def close(self) -> None:
        """Let the workers finish what they hold and leave (after the last record)."""
        if self.pool is not None:
            pool, self.pool = self.pool, None
            try:
                pool.shutdown(wait=True, cancel_futures=True)
            except BaseException:  # interrupted while waiting for them: they are stopped instead
                _stop_pool(pool)
                raise

    def stop(self) -> None:
        """Stop the workers now, whatever they hold (an interrupt: nothing they parse is wanted)."""
        if self.pool is not None:
            pool, self.pool = self.pool, None
            _stop_pool(pool)


def _stop_pool(pool: ProcessPoolExecutor) -> None:
    """Kill a pool's workers and reap them, without waiting for what they hold.  Waiting (a
    shutdown) can be interrupted in turn, a second Ctrl-C, and would leave the workers, which
    ignore the interrupt, blocked for good on a result nobody reads; a killed worker leaves at
    once (a cache entry it was writing is never half there: entries are renamed into place)."""
    processes = list((getattr(pool, "_processes", None) or {}).values())  # (a private table: no public one before 3.14)
    for process in processes:
        with contextlib.suppress(Exception):
            process.kill()
    with contextlib.suppress(Exception):
        pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        with contextlib.suppress(Exception):
            process.join(5)


def _submit(pool: ProcessPoolExecutor, work: Work) -> Future[Done] | None:
    from concurrent.futures.process import BrokenProcessPool

    try:
        return pool.submit(_index_file, work)
    except BrokenProcessPool:  # a worker died while the files were handed out
        return None


def _result(future: Future[Done] | None, work: Work) -> Done | None:
    """The future's records; ``None`` when its process pool broke before it was done."""
    from concurrent.futures.process import BrokenProcessPool

    if future is None:
        return None
    try:
        return future.result()
    except BrokenProcessPool:
        return None
    except Exception as error:  # the result could not travel back, or the like
        from rlmap.index.extract import internal_error

        return _failed(work, internal_error(work[0][1], error))


def _failed(work: Work, module: ModuleIndex) -> Done:
    """The records of a file a worker could not index, cached like any other (the diagnostic stays)."""
    return _stored(work, msgspec.msgpack.encode(module))


def _stored(work: Work, payload: bytes) -> Done:
    """Write the cache entry of a file's records (when there is a cache); the payload travels on."""
    _, key, directory = work
    digest = hashlib.sha256(payload).digest()
    write_failed = False
    if directory is not None:
        cache = Cache(directory)
        cache.put_payload(FILES, key, payload, digest)
        write_failed = cache.write_failed
    return payload, digest, write_failed


def _parse_alone(items: list[Work]) -> Iterator[Done]:
    """Parse each file in a one-worker process pool; a file that kills it is a diagnostic."""
    from concurrent.futures import ProcessPoolExecutor

    pool: ProcessPoolExecutor | None = None
    try:
        for work in items:
            if pool is None:
                pool = ProcessPoolExecutor(max_workers=1)
            done = _result(_submit(pool, work), work)
            if done is None:
                pool.shutdown(wait=True)
                pool = None
                done = _failed(work, _crashed(work[0][1]))
            yield done
    except BaseException:
        if pool is not None:
            _stop_pool(pool)
            pool = None
        raise
    finally:
        if pool is not None:
            pool.shutdown(wait=True)


def _crashed(path: str) -> ModuleIndex:
    from rlmap.index.extract import module_name_for

    name, is_package = module_name_for(path)
    message = "the indexing process died on this file (a crash in the parser); file skipped — please report"
    return ModuleIndex(name, path, is_package, diagnostics=(Diagnostic(path, 1, message),))


@contextmanager
def paused_gc() -> Iterator[None]:
    """The cyclic garbage collector off for the block (and back on after, if it was on).

    Indexing and resolving build millions of small objects that hold no reference cycle; the
    collector would rescan all of them every few thousand allocations, for nothing.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            if not gc.get_freeze_count():
                # Every object the block made counts towards the youngest generation's next
                # collection, which would scan them all at the first allocation after (a third of
                # a second on torchrl's model): they go to the oldest generation unscanned, as if
                # they had survived it (a freeze of the caller's own is left as it is).
                gc.freeze()
                gc.unfreeze()
            gc.enable()
