"""From a source tree to a resolved model, through the cache: the one entry point commands use.

A warm run reads and hashes every file (to notice any change), finds the resolved model
under the hash of all of them (and of the enabled extensions) and loads it; nothing is parsed.
A run after a change re-parses only the changed files.  The model is a function of the files'
records, not of their bytes: when the records of every file are those a cached model was
resolved from (an edit to a comment, to blank lines at the end of a file), that model is the
answer, and the run resolves nothing.  When the changed files' records are the former ones
with their lines moved (a comment or docstring line added), the checkout's last model is moved
the same way (:mod:`rlmap.model.relabel`), and nothing is resolved either.  Any other change
re-resolves the model: the value flow is one whole-program solve, and where a variable drops
values past its cap, which it keeps depends on the order the solve meets them.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import msgspec

from rlmap.index.cache import Cache, Sections, code_version, content_key
from rlmap.index.indexer import (
    FILES,
    Early,
    IndexStats,
    Progress,
    ProjectIndex,
    file_key,
    give_back_memory,
    index_unless,
    paused_gc,
    read_file,
    worker_count,
)
from rlmap.index.records import ModuleIndex
from rlmap.index.source import SourceTree
from rlmap.index.vocabulary import enabled_extensions
from rlmap.model.codemodel import (
    MODEL_MODULES,
    CodeModel,
    Encoded,
    ModelHead,
    SourceInfo,
    build_model,
    model_sections,
)
from rlmap.model.pointsto import CAP
from rlmap.model.relabel import moved_lines, relabelled, told_apart

MODELS = "models"
# A model's key under another key that denotes the same model: a project key whose files differ
# only where their records do not (see load_model), and the key of the records themselves.
LINKS = "model-links"
_KEY = re.compile(r"[0-9a-f]{64}")
# Per checkout and settings, the key of the model last computed or loaded there; per model, the
# files it was computed from (their paths, modules and keys): see _from_latest.
LATEST = "latest"
MODEL_FILES = "model-files"


@dataclass(frozen=True, slots=True)
class LoadedModel:
    model: CodeModel
    stats: IndexStats | None  # ``None`` when the whole model came from the cache
    source: SourceTree
    cache: Cache | None = None  # the cache the model came through (what else a run reads may be kept there)
    moved: tuple[str, ...] = ()  # the files whose lines moved, when the model is the last one, moved (see _moved)


# What the resolved model depends on beyond the files: the resolver and the model's own code.
_MODEL_CODE = code_version(*MODEL_MODULES, "model.session")  # the resolver and the model builder


def project_key(source: SourceTree, extensions: Sequence[str] = (), value_cap: int = CAP) -> str:
    """Hash of every file's path and bytes, every skipped entry, the repository URL, the
    extensions, the value flow's cap."""
    return _project_key(source, enabled_extensions(extensions), value_cap)[0]


# The file stats a project key was computed from (see _known_key), by checkout and settings.
STATS = "stats"
# A file changed this recently may change again within the same tick of its ctime without its
# stat showing it: a key is remembered only when every file is older than this (nanoseconds).
_SETTLED_NS = 2_000_000_000


class _StatsSeen(msgspec.Struct, array_like=True, forbid_unknown_fields=True):
    """The project key of a tree whose files had exactly these stats when they were hashed."""

    key: str
    stats: list[tuple[str, int, int, int, int]]  # (relative path, size, mtime ns, ctime ns, inode)
    skipped: list[tuple[str, str]]


def _project_key(
    source: SourceTree,
    extensions: tuple[str, ...],
    value_cap: int,
    cache: Cache | None = None,
    settings: list[bytes | str] | None = None,
    remember: bool = True,
) -> tuple[str, set[str]]:
    """:func:`project_key` and the repo-relative paths of the files it hashed.

    With a cache, a tree whose every file has the stat (size, mtime, ctime, inode) it had when
    the key was last computed here gets that key without a file being read (what git's index
    does); any difference, and any file changed in the last two seconds, means reading and
    hashing them all.  ``settings``: :func:`_settings`, when the caller has them.  ``remember``:
    the stats are written for the next run (not by a shell's completion, which only reads).
    """
    parts: list[bytes | str] = list(settings) if settings is not None else _settings(source, extensions, value_cap)
    files, skipped = source.scan_files()
    relatives = [source.relpath(path) for path in files]
    stats_key = stats = None
    if cache is not None and cache.directory is not None:
        stats_key = content_key("stats", *parts, str(source.root.resolve()))
        stats = _stats_of(files, relatives)
        seen = cache.get(STATS, stats_key, _StatsSeen)
        if seen is not None and stats is not None and seen.stats == stats and seen.skipped == skipped:
            return seen.key, set(relatives)
    for relative, path in zip(relatives, files, strict=True):
        data, problem = read_file(relative, path)
        parts.append(relative)
        parts.append(data if data is not None else f"<unreadable: {problem}>")
    for relative, why in skipped:  # an entry skipped since the last run changes the diagnostics
        parts.append(f"<skipped {relative}: {why}>")
    key = content_key(*parts)
    if (
        remember
        and cache is not None
        and stats_key is not None
        and stats is not None
        and stats == _stats_of(files, relatives)
    ):
        settled = time.time_ns() - _SETTLED_NS
        if all(stat[3] < settled and stat[2] < settled for stat in stats):
            cache.put(STATS, stats_key, _StatsSeen(key, stats, skipped))
    return key, set(relatives)


def _stats_of(files: list[Path], relatives: list[str]) -> list[tuple[str, int, int, int, int]] | None:
    """Each file's (relative path, size, mtime ns, ctime ns, inode); ``None`` if one cannot be read."""
    stats = []
    try:
        for relative, path in zip(relatives, files, strict=True):
            info = os.stat(path)
            stats.append((relative, info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino))
    except OSError:
        return None
    return stats


def load_model(
    source: SourceTree,
    cache: Cache,
    jobs: int | None = None,
    progress: Progress | None = None,
    extensions: Sequence[str] = (),
    value_cap: int = CAP,
) -> LoadedModel:
    """The resolved model of ``source``, with key accesses under the enabled ``extensions``, and
    at most ``value_cap`` values per variable of the value flow."""
    enabled = enabled_extensions(extensions)
    settings = _settings(source, enabled, value_cap)  # (read once: the companions' versions are files)
    key, paths = _project_key(source, enabled, value_cap, cache, settings)
    refused: set[str] = set()
    where = _latest_key(source, settings)
    found_at = _found_at(cache, key, paths, refused)
    if found_at is not None:
        model, at = found_at
        model.source = SourceInfo.of(source)  # this checkout's commit, not the one it was cached at
        _back_to(cache, where, at)
        return LoadedModel(model, None, source, cache)
    latest = _latest(cache, where)
    early: list[tuple[CodeModel, tuple[str, ...]] | None] = []  # what the early look found, once it looked

    def from_latest(changed: dict[str, tuple[ModuleIndex, str]]) -> bool:
        found = _from_latest(cache, source, key, where, latest, changed) if latest is not None else None
        early.append(found)
        return found is not None

    with paused_gc():  # records and the model are millions of objects without a cycle
        index = index_unless(
            source, cache, jobs, progress, enabled, latest.files.early(from_latest) if latest else None
        )
        if index is None:  # the changed files' records told: the last model, as it is or moved
            assert early[0] is not None
            model, moved = early[0]
            model.source = SourceInfo.of(source)
            return LoadedModel(model, None, source, cache, moved)
        give_back_memory()  # the files' bytes and the workers' payloads, freed: not kept through the solve
        records = _records_key(index, source, settings) if cache.directory is not None else ""
        same = _found_at(cache, records, paths, refused) if records else None
        if same is not None:  # the files changed, their records did not: the model is the same
            model, at = same
            model.source = SourceInfo.of(source)
            cache.put(LINKS, key, at)
            _remember(cache, where, at, index)
            return LoadedModel(model, index.stats, source, cache)
        # (when the early look was taken and said no, the same look is not taken again)
        changed = latest.files.changed(index) if latest is not None and records and not early else None
        found = _from_latest(cache, source, key, where, latest, changed) if latest is not None and changed else None
        if found is not None:  # lines moved in the changed files, nothing else: the last model, moved
            model, moved = found
            model.source = SourceInfo.of(source)
            cache.put(LINKS, records, key)
            return LoadedModel(model, index.stats, source, cache, moved)
        if progress:
            progress("resolve", 0, 0)  # not counted as it goes: said when it starts, and its count when done
        encoded: dict[str, Encoded] | None = {} if cache.directory is not None else None
        model = build_model(index, source, value_cap, consume=True, aside=worker_count(jobs) > 1, encoded=encoded)
        if progress:
            progress("resolve", len(index.modules), len(index.modules))
        stats = index.stats
        index_files = _Files.of(index)
        del index  # the records are the model's now: not kept while the model is written
        if cache.directory is not None:  # no cache: the model is not encoded at all
            cache.put_sections(MODELS, key, *model_sections(model.state, encoded))
        if records:
            cache.put(LINKS, records, key)
            _remember(cache, where, key, index_files)
    return LoadedModel(model, stats, source, cache)


class _Files(msgspec.Struct, array_like=True, forbid_unknown_fields=True):
    """The files a model was computed from: each one's path, module and cache key (:func:`file_key`),
    in path order, and the entries of the tree that were skipped."""

    paths: list[str]
    modules: list[str]
    keys: list[str]
    skipped: list[str]

    @classmethod
    def of(cls, index: ProjectIndex | _Files) -> _Files:
        if isinstance(index, _Files):
            return index
        modules = index.modules
        skipped = [str(diagnostic) for diagnostic in index.skipped]
        return cls(
            [module.path for module in modules], [module.module for module in modules], list(index.file_keys), skipped
        )

    def early(self, decide: Callable[[dict[str, tuple[ModuleIndex, str]]], bool]) -> Early:
        """An early look for :func:`rlmap.index.indexer.index_unless`: these files' keys, and ``decide``."""
        return dict(zip(self.paths, self.keys, strict=True)), self.skipped, decide

    def changed(self, index: ProjectIndex) -> dict[str, tuple[ModuleIndex, str]] | None:
        """The records and key of each file of ``index`` whose key is not the one it had here; ``None``
        unless ``index`` has the same files (and skipped the same entries)."""
        now = _Files.of(index)
        if now.paths != self.paths or now.skipped != self.skipped:
            return None
        return {
            module.path: (module, new)
            for module, old, new in zip(index.modules, self.keys, now.keys, strict=True)
            if old != new
        }


@dataclass(frozen=True, slots=True)
class _Latest:
    """The model last computed or loaded for a checkout under some settings, and the files it was
    computed from (see :func:`_from_latest`): kept as the model's key (:data:`LATEST`, per
    checkout) and its files (:data:`MODEL_FILES`, per model)."""

    model: str
    files: _Files


def _latest_key(source: SourceTree, settings: list[bytes | str]) -> str:
    """Where a checkout's last model is noted: its :func:`_settings` and its folder."""
    return content_key("latest", *settings, str(source.root.resolve()))


def _latest(cache: Cache, where: str) -> _Latest | None:
    """The checkout's last model and its files; ``None`` when there is none, or when the entry
    does not hold what rlmap writes there (one module and one key per file, each file once)."""
    if cache.directory is None:
        return None
    model = cache.get(LATEST, where, str)
    files = cache.get(MODEL_FILES, model, _Files) if model is not None and _KEY.fullmatch(model) else None
    if model is None or files is None:
        return None
    count = len(files.paths)
    if (
        len(files.modules) != count
        or len(files.keys) != count
        or len(set(files.paths)) != count
        or not all(_KEY.fullmatch(key) for key in files.keys)
    ):
        cache.rejected += 1
        return None
    return _Latest(model, files)


def _remember(cache: Cache, where: str, model: str, index: ProjectIndex | _Files) -> None:
    """Note ``model`` as the last one computed for the checkout whose :func:`_latest_key` is
    ``where``, with the files it was computed from."""
    if cache.directory is not None and _KEY.fullmatch(model):
        cache.put(MODEL_FILES, model, _Files.of(index))
        cache.put(LATEST, where, model)


def _back_to(cache: Cache, where: str, model: str) -> None:
    """Note ``model``, found whole in the cache, as the checkout's last one (a branch checked out
    again: its next edit is compared with it), when the files it was computed from are known."""
    if cache.directory is None:
        return
    counted = cache.rejected
    current = cache.get(LATEST, where, str)
    cache.rejected = counted  # (an unusable entry here is replaced, not reported: the warm path stays quiet)
    if current != model and cache.has(MODEL_FILES, model):
        cache.put(LATEST, where, model)


def _from_latest(
    cache: Cache,
    source: SourceTree,
    key: str,
    where: str,
    latest: _Latest,
    changed: dict[str, tuple[ModuleIndex, str]],
) -> tuple[CodeModel, tuple[str, ...]] | None:
    """The model under ``key``, made from the last model of this checkout (:data:`LATEST`), when
    every file of ``changed`` (path -> its records and key now) has the records it had then
    (a comment edited within its lines) or those records with their lines moved
    (:mod:`rlmap.model.relabel`), and the files whose lines moved; ``None`` otherwise, and when
    that model or a changed file's former records are no longer in the cache.  The model and the
    checkout's files are noted as the latest (:func:`_remember`, under ``where``)."""
    before = dict(zip(latest.files.paths, latest.files.keys, strict=True))
    moved: dict[str, dict[int, int]] = {}
    for path, (module, _) in changed.items():
        old = cache.get(FILES, before[path], ModuleIndex)
        if not isinstance(old, ModuleIndex):
            return None
        if old == module:  # the same records: nothing of the model changes there
            continue
        lines = moved_lines(old, module)
        if lines is None:
            return None
        moved[path] = lines
    entry: Sections[ModelHead] | None = cache.get_sections(MODELS, latest.model, ModelHead)
    if entry is None or not set(entry.head.files) <= set(latest.files.paths):
        return None
    keys = [changed[path][1] if path in changed else known for path, known in before.items()]
    now = msgspec.structs.replace(latest.files, keys=keys)
    if not moved:  # every changed file has the records it had: the last model is the answer
        cache.put(LINKS, key, latest.model)
        _remember(cache, where, latest.model, now)
        return CodeModel.from_cache(entry), ()
    modules = latest.files.modules
    if len(set(modules)) != len(modules):  # two files of one module (``a.py`` beside ``a/``): names tell no file
        return None
    owners = dict(zip(modules, latest.files.paths, strict=True))

    def records_of(path: str) -> ModuleIndex | None:
        if path in changed:
            return changed[path][0]
        found = cache.get(FILES, before[path], ModuleIndex)
        return found if isinstance(found, ModuleIndex) else None

    if not told_apart(moved, records_of, owners):
        return None
    made = relabelled(entry, moved, owners)
    if made is None:
        return None
    head, sections = made
    info = SourceInfo.of(source)
    source_row = (info.package, info.version, info.commit, info.repo_url, info.companions, info.companion_links)
    cache.put_sections(MODELS, key, msgspec.structs.replace(head, source=source_row), sections)
    stored: Sections[ModelHead] | None = cache.get_sections(MODELS, key, ModelHead)
    if stored is None:
        return None
    _remember(cache, where, key, now)
    return CodeModel.from_cache(stored), tuple(moved)


def _cached_at(cache: Cache, key: str, paths: set[str], refused: set[str] | None = None) -> CodeModel | None:
    """The cached model under ``key``, itself or linked (see :data:`LINKS`), if it names only
    files of ``paths``; a model refused is added to ``refused`` (and not looked at again)."""
    found = _found_at(cache, key, paths, refused)
    return found[0] if found is not None else None


def _found_at(cache: Cache, key: str, paths: set[str], refused: set[str] | None = None) -> tuple[CodeModel, str] | None:
    """:func:`_cached_at`'s model, and the key of the entry it is (``key``, or the one it links to)."""
    refused = set() if refused is None else refused
    for candidate in (key, _linked(cache, key)):
        if not candidate or candidate in refused:
            continue
        cached: Sections[ModelHead] | None = cache.get_sections(MODELS, candidate, ModelHead)
        if cached is None:
            continue
        # Later stages read the files a model names: an entry (valid checksum or not) that names
        # anything but the files just hashed is not ours.
        if set(cached.head.files) <= paths:
            return CodeModel.from_cache(cached), candidate
        cache.rejected += 1
        refused.add(candidate)
    return None


def _linked(cache: Cache, key: str) -> str | None:
    """The model key ``key`` links to; ``None`` without a link or with one that is not a key (a
    link names a file of the cache: nothing but 64 hex digits)."""
    if cache.directory is None:
        return None
    link = cache.get(LINKS, key, str)
    if link is None:
        return None
    if not _KEY.fullmatch(link):
        cache.rejected += 1
        return None
    return link


def _settings(source: SourceTree, extensions: tuple[str, ...], value_cap: int) -> list[bytes | str]:
    """What a model key holds besides the files: the resolver's code, what the model says of the
    source, the enabled extensions, the value flow's cap.  The commit is not part of it: the model is the same at any
    commit with the same files, and what the commit changes (links) is attached fresh on every load."""
    return [
        _MODEL_CODE,
        source.package,
        source.version,
        source.repo_url,
        "extensions:" + ",".join(extensions),
        f"value-cap:{value_cap}",
        "companions:" + ",".join("|".join(link) for link in source.companion_links()),
    ]


def _records_key(index: ProjectIndex, source: SourceTree, settings: list[bytes | str]) -> str:
    """A hash of everything the resolved model is computed from: every file's records (the
    SHA-256 of their MessagePack, which the indexer has from the cache entry or the worker), the
    entries that were skipped, and ``settings`` (:func:`_settings`)."""
    parts = ["records", *settings, "names:" + ",".join(source.companion_names)]
    parts.extend(index.digests)
    parts.extend(str(diagnostic) for diagnostic in index.skipped)
    return content_key(*parts)


def cached_model(
    source: SourceTree, cache: Cache, extensions: Sequence[str] = (), value_cap: int = CAP
) -> CodeModel | None:
    """The resolved model of ``source`` if the cache holds it, else ``None``: nothing is parsed
    (for shell completion, which must answer at once or not at all)."""
    key, paths = _project_key(source, enabled_extensions(extensions), value_cap, cache, remember=False)
    return _cached_at(cache, key, paths)


def cached_module(cache: Cache, path: str, data: bytes, extensions: Sequence[str]) -> ModuleIndex | None:
    """The cached index of one file under the given extensions, if any (used by tests)."""
    return cache.get(FILES, file_key(path, data, enabled_extensions(extensions)), ModuleIndex)
