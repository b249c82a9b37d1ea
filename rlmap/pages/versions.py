"""Version conditions for profile entries: ``versions = ">=0.14, <0.16"`` on a section.

A profile written for several releases of a package marks what only some of them have; the
section is built when the documented version matches, skipped otherwise, and always built when
the version is unknown (a checkout without a version file).  Versions compare by their release
numbers (``0.14.1``); a pre-release or local suffix (``0.15.0a0``, ``0.14.1+cpu``) counts as that
release, so ``<0.15`` excludes ``0.15.0a0``.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable

_CLAUSE = re.compile(r"\s*(>=|<=|==|!=|>|<)\s*(\d+(?:\.\d+){0,3})\s*")
_RELEASE = re.compile(r"\d+(?:\.\d+)*")
_OPERATORS: dict[str, Callable[[tuple[int, ...], tuple[int, ...]], bool]] = {
    ">=": operator.ge,
    "<=": operator.le,
    "==": operator.eq,
    "!=": operator.ne,
    ">": operator.gt,
    "<": operator.lt,
}
PATTERN = r"^\s*(>=|<=|==|!=|>|<)\s*\d+(\.\d+){0,3}\s*(,\s*(>=|<=|==|!=|>|<)\s*\d+(\.\d+){0,3}\s*){0,5}$"


def _release(text: str, length: int = 4) -> tuple[int, ...]:
    numbers = [int(part) for part in text.split(".")]
    return tuple(numbers + [0] * (length - len(numbers)))


def matches(version: str, condition: str) -> bool:
    """Whether ``version`` satisfies every clause of ``condition`` (an unknown version always does)."""
    found = _RELEASE.match(version or "")
    if found is None:
        return True
    release = _release(found.group())
    for clause in condition.split(","):
        parsed = _CLAUSE.fullmatch(clause)
        if parsed is None:  # the schema's pattern has already refused it
            return True
        if not _OPERATORS[parsed.group(1)](release, _release(parsed.group(2))):
            return False
    return True
