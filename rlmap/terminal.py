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


def clipped(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, ``...`` marking the cut (a name or a reason quoted from
    a file may be 100,000 characters long)."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def has_control(text: str) -> bool:
    """Whether ``text`` holds a character :func:`inert` would escape (a file name that does is
    skipped where it is met: it would reach reports, pages and CI logs as a name)."""
    return _CONTROL.search(text) is not None


def inert(text: str, keep_newlines: bool = False) -> str:
    """``text`` with every control character shown as ``\\x1b`` / ``\\u202e``; newlines kept on request."""
    return (_CONTROL_BUT_NEWLINE if keep_newlines else _CONTROL).sub(_visible, text)


# Terminals known to show OSC 8 hyperlinks (``TERM_PROGRAM`` values, and variables only they set).
_HYPERLINK_PROGRAMS = frozenset({"iTerm.app", "WezTerm", "vscode", "ghostty", "Hyper"})
_HYPERLINK_VARIABLES = ("KITTY_WINDOW_ID", "WT_SESSION", "DOMTERM")
_URL = re.compile(r"https?://[\x21-\x7e]+")  # printable ASCII only: nothing that could end the sequence


def supports_hyperlinks(is_terminal: bool, environ: dict[str, str]) -> bool:
    """Whether to print OSC 8 hyperlinks: on a terminal known to show them (``FORCE_HYPERLINK=1``
    or ``0`` decides).  Inside tmux or screen, not: they pass the sequence on only when told to."""
    forced = environ.get("FORCE_HYPERLINK")
    if forced is not None:
        return forced not in ("", "0")
    if not is_terminal or environ.get("TMUX") or environ.get("TERM", "").startswith("screen"):
        return False
    if environ.get("TERM_PROGRAM") in _HYPERLINK_PROGRAMS or any(name in environ for name in _HYPERLINK_VARIABLES):
        return True
    vte = environ.get("VTE_VERSION", "")
    return vte.isdigit() and int(vte) >= 5000


def hyperlink(text: str, url: str) -> str:
    """``text`` (made inert) as an OSC 8 hyperlink to ``url``; just the text when the URL is not a plain http(s) one."""
    shown = inert(text)
    if not _URL.fullmatch(url):
        return shown
    return f"\x1b]8;;{url}\x1b\\{shown}\x1b]8;;\x1b\\"
