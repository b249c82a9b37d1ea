"""Text bound for a terminal or a CI log: control characters made visible and inert.

C0 controls (tab aside), DEL, C1 controls, bidi overrides and Unicode line separators can move a
terminal's cursor, retitle its window, hide text or reorder it.  Anything rlmap prints that came
from a file (a docs line, a docstring, a file name) goes through :func:`inert` first.
"""

from __future__ import annotations

import re

_CONTROL = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_CONTROL_BUT_NEWLINE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def inert(text: str, keep_newlines: bool = False) -> str:
    """``text`` with every control character shown as ``\\x1b`` / ``\\u202e``; newlines kept on request."""
    return (_CONTROL_BUT_NEWLINE if keep_newlines else _CONTROL).sub(_visible, text)
