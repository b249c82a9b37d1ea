"""Index a whole source tree: read every file once, parse the changed ones in parallel, cache.

``build_index(source, cache)`` returns a :class:`ProjectIndex`; per-file failures are
diagnostics inside it, never exceptions.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field

from rlmap.cache import Cache, content_key
from rlmap.records import Diagnostic, ModuleIndex
from rlmap.source import SourceTree

FILES = "files"
# Below this many files to parse, a process pool costs more than it saves.
_PARALLEL_THRESHOLD = 8

Progress = Callable[[int, int], None]


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

    @property
    def diagnostics(self) -> tuple[Diagnostic, ...]:
        found = [d for module in self.modules for d in module.diagnostics]
        return tuple(sorted(found, key=lambda d: (d.path, d.line, d.message)))


def _extract(job: tuple[bytes, str]) -> ModuleIndex:
    from rlmap.extract import extract_module  # libcst is imported only where it is used

    source, path = job
    return extract_module(source, path)


def _read(path: str, absolute: os.PathLike[str]) -> tuple[bytes | None, Diagnostic | None]:
    try:
        with open(absolute, "rb") as handle:
            return handle.read(), None
    except OSError as error:
        return None, Diagnostic(path, 1, f"cannot read file: {error.strerror}; file skipped")


def build_index(
    source: SourceTree,
    cache: Cache,
    jobs: int | None = None,
    progress: Progress | None = None,
) -> ProjectIndex:
    """Index every ``.py`` file of ``source``; only files not in ``cache`` are parsed."""
    files = source.python_files()
    results: dict[str, ModuleIndex] = {}
    pending: list[tuple[bytes, str, str]] = []  # (bytes, path, key)
    keys: list[str] = []
    for absolute in files:
        path = source.relpath(absolute)
        data, problem = _read(path, absolute)
        if data is None:
            from rlmap.extract import module_name_for

            name, is_package = module_name_for(path)
            results[path] = ModuleIndex(name, path, is_package, diagnostics=(problem,) if problem else ())
            keys.append(content_key(path, "<unreadable>"))
            continue
        key = content_key(path, data)
        keys.append(key)
        cached = cache.get(FILES, key, ModuleIndex)
        if isinstance(cached, ModuleIndex):
            results[path] = cached
        else:
            pending.append((data, path, key))

    done = len(results)
    if progress:
        progress(done, len(files))
    for parsed, key in _parse_all(pending, jobs):
        results[parsed.path] = parsed
        cache.put(FILES, key, parsed)
        done += 1
        if progress:
            progress(done, len(files))

    modules = tuple(results[path] for path in sorted(results))
    stats = IndexStats(
        files=len(files),
        parsed=len(pending),
        from_cache=len(files) - len(pending),
        position_fallbacks=sum(module.position_fallback for module in modules),
    )
    project_key = content_key(source.package, *keys)
    return ProjectIndex(modules=modules, key=project_key, stats=stats)


def _parse_all(pending: list[tuple[bytes, str, str]], jobs: int | None) -> Iterator[tuple[ModuleIndex, str]]:
    workers = jobs if jobs is not None else (os.cpu_count() or 1)
    # Largest first, so that the last chunk handed out is small and cores finish together.
    ordered = sorted(pending, key=lambda item: -len(item[0]))
    if workers <= 1 or len(ordered) < _PARALLEL_THRESHOLD:
        for data, path, key in ordered:
            yield _extract((data, path)), key
        return
    with ProcessPoolExecutor(max_workers=workers) as pool:
        modules = pool.map(_extract, [(data, path) for data, path, _ in ordered], chunksize=2)
        for module, (_, _, key) in zip(modules, ordered, strict=False):
            yield module, key
