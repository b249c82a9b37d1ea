"""A content-addressed on-disk cache for per-file index records and resolved models.

Entries are pickles named by a SHA-256 of what they were computed from (rlmap's version, the
record schema, the file's path and bytes), so a stale entry is never looked up, only left
behind.  Writes are atomic; an unreadable or corrupt entry is a miss, never an error.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
from pathlib import Path
from typing import Any

from rlmap import __version__
from rlmap.errors import CacheError

# Bump when the records or the extraction rules change in a way the version does not show.
SCHEMA = "16"


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "rlmap"


def content_key(*parts: bytes | str) -> str:
    digest = hashlib.sha256(f"rlmap {__version__} schema {SCHEMA}".encode())
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        digest.update(len(data).to_bytes(8, "little"))
        digest.update(data)
    return digest.hexdigest()


class Cache:
    """``get``/``put`` of picklable values under a namespace and a content key."""

    def __init__(self, directory: Path | None) -> None:
        self.directory = directory
        self.write_failed = False

    @classmethod
    def disabled(cls) -> Cache:
        return cls(None)

    @classmethod
    def at(cls, directory: Path) -> Cache:
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise CacheError(
                f"cannot create the cache directory '{directory}': {error.strerror}",
                "pass --cache-dir to a writable directory, or --no-cache",
            ) from None
        if not directory.is_dir() or not os.access(directory, os.W_OK):
            raise CacheError(
                f"the cache directory '{directory}' is not a writable directory",
                "pass --cache-dir to a writable directory, or --no-cache",
            )
        return cls(directory)

    def _path(self, namespace: str, key: str) -> Path:
        assert self.directory is not None
        return self.directory / namespace / key[:2] / f"{key}.pickle"

    def get(self, namespace: str, key: str) -> Any | None:
        if self.directory is None:
            return None
        try:
            with open(self._path(namespace, key), "rb") as handle:
                return pickle.load(handle)
        except FileNotFoundError:
            return None
        except Exception:  # a corrupt or foreign entry is a miss
            return None

    def put(self, namespace: str, key: str, value: Any) -> None:
        if self.directory is None:
            return
        target = self._path(namespace, key)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(dir=target.parent, suffix=".tmp")
            try:
                with os.fdopen(handle, "wb") as stream:
                    pickle.dump(value, stream, protocol=pickle.HIGHEST_PROTOCOL)
                os.replace(temporary, target)
            except BaseException:
                Path(temporary).unlink(missing_ok=True)
                raise
        except OSError:
            self.write_failed = True
