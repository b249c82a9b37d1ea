"""From a source tree to a resolved model, through the cache: the one entry point commands use.

A warm run reads and hashes every file (to notice any change), finds the resolved model
under the hash of all of them and loads it; nothing is parsed.  A run after a change
re-parses only the changed files and re-resolves the model.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from rlmap.cache import Cache, content_key
from rlmap.indexer import FILES, IndexStats, Progress, build_index
from rlmap.model import STATE, CodeModel, build_model
from rlmap.records import ModuleIndex
from rlmap.source import SourceTree

MODELS = "models"


@dataclass(frozen=True, slots=True)
class LoadedModel:
    model: CodeModel
    stats: IndexStats | None  # ``None`` when the whole model came from the cache
    source: SourceTree


def project_key(source: SourceTree) -> str:
    """Hash of every file's path and bytes plus what permalinks depend on."""
    parts: list[bytes | str] = [source.package, source.version, source.commit, source.repo_url]
    for path in source.python_files():
        try:
            with open(path, "rb") as handle:
                data = handle.read()
        except OSError:
            data = b"<unreadable>"
        parts.append(source.relpath(path))
        parts.append(data)
    return content_key(*parts)


def load_model(
    source: SourceTree,
    cache: Cache,
    jobs: int | None = None,
    progress: Progress | None = None,
) -> LoadedModel:
    key = project_key(source)
    cached = cache.get(MODELS, key, STATE)
    if cached is not None:
        return LoadedModel(CodeModel(cached), None, source)
    index = build_index(source, cache, jobs=jobs, progress=progress)
    model = build_model(index, source)
    cache.put(MODELS, key, model.state)
    return LoadedModel(model, index.stats, source)


def cached_module(cache: Cache, path: str, data: bytes) -> ModuleIndex | None:
    """The cached index of one file, if any (used by tests and the benchmark)."""
    return cache.get(FILES, content_key(path, data), ModuleIndex)


def default_jobs() -> int:
    return os.cpu_count() or 1
