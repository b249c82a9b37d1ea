"""Writing a file all-or-nothing, as the audit writes baselines and fixed pages and sources."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def replace_file(path: Path, data: bytes, mode: int) -> None:
    """``path`` holds ``data`` (with permissions ``mode``), or is left as it was: a new file in the same
    directory is renamed over it, so a crash never leaves half a file and a symbolic link is replaced,
    not followed.  An :class:`OSError` is the caller's to report."""
    descriptor, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
