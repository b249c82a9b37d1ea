"""rlmap: internals documentation for TorchRL, generated from its source without importing it."""

from __future__ import annotations

__version__ = "0.1.0"
