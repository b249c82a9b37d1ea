"""From a source tree to a resolved model, through the cache: the one entry point commands use.

A warm run reads and hashes every file (to notice any change), finds the resolved model
under the hash of all of them and loads it; nothing is parsed.  A run after a change
re-parses only the changed files and re-resolves the model.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from rlmap.index.cache import Cache, code_version, content_key
from rlmap.index.indexer import FILES, IndexStats, Progress, build_index, read_file
from rlmap.index.records import ModuleIndex
from rlmap.index.source import SourceTree
from rlmap.model.codemodel import STATE, CodeModel, build_model

MODELS = "models"


@dataclass(frozen=True, slots=True)
class LoadedModel:
    model: CodeModel
    stats: IndexStats | None  # ``None`` when the whole model came from the cache
    source: SourceTree


# What the resolved model depends on beyond the files: the resolver and the model's own code.
_MODEL_CODE = code_version("model.resolve", "model.codemodel", "model.session")


def project_key(source: SourceTree) -> str:
    """Hash of every file's path and bytes, every skipped entry, and what permalinks depend on."""
    return _project_key(source)[0]


def _project_key(source: SourceTree) -> tuple[str, set[str]]:
    """:func:`project_key` and the repo-relative paths of the files it hashed."""
    parts: list[bytes | str] = [_MODEL_CODE, source.package, source.version, source.commit, source.repo_url]
    files, skipped = source.scan_files()
    for path in files:
        relative = source.relpath(path)
        data, problem = read_file(relative, path)
        parts.append(relative)
        parts.append(data if data is not None else f"<unreadable: {problem}>")
    for relative, why in skipped:  # an entry skipped since the last run changes the diagnostics
        parts.append(f"<skipped {relative}: {why}>")
    return content_key(*parts), {source.relpath(path) for path in files}


def load_model(
    source: SourceTree,
    cache: Cache,
    jobs: int | None = None,
    progress: Progress | None = None,
) -> LoadedModel:
    key, paths = _project_key(source)
    cached = cache.get(MODELS, key, STATE)
    if cached is not None:
        # Later stages read the files a model names: an entry (valid checksum or not) that names
        # anything but the files just hashed is not ours.
        if {row[2] for row in cached["symbols"].values()} <= paths:
            return LoadedModel(CodeModel(cached), None, source)
        cache.rejected += 1
    index = build_index(source, cache, jobs=jobs, progress=progress)
    model = build_model(index, source)
    cache.put(MODELS, key, model.state)
    return LoadedModel(model, index.stats, source)


def cached_module(cache: Cache, path: str, data: bytes) -> ModuleIndex | None:
    """The cached index of one file, if any (used by tests and the benchmark)."""
    return cache.get(FILES, content_key(path, data), ModuleIndex)


def default_jobs() -> int:
    return os.cpu_count() or 1
