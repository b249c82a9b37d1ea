"""Exact positions in a docs page: where each parsed reference was written, as line, column and offsets.

Parsers give a block's first line, not where inside the block a role or literal starts (docutils
passes a paragraph's line to its roles; markdown-it maps blocks, not inline tokens).  The
:class:`Locator` finds each one in the page's text: the first occurrence at or after the block's
start that no earlier reference with the same text claimed.  Every search for one text resumes
where the last one ended, so the work over a page stays linear in the page for references found in
source order (the order both parsers walk a page in).
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field

_SPACE = re.compile(r"\s+")


@dataclass(frozen=True, slots=True)
class Place:
    """Where a text was found: 1-based line and column, and its offsets in the page's text."""

    line: int
    column: int
    start: int
    end: int


@dataclass(slots=True)
class Locator:
    """Finds texts in one page, each occurrence claimed once."""

    text: str
    _starts: list[int] = field(default_factory=list)  # offset of each line's start
    _cursor: dict[str, int] = field(default_factory=dict)  # text -> where its next search starts
    _patterns: dict[str, re.Pattern[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._starts = [0] + [match.end() for match in re.finditer("\n", self.text)]

    def offset_of_line(self, line: int) -> int:
        """The offset where 1-based ``line`` starts (clamped to the page)."""
        return self._starts[max(0, min(line, len(self._starts)) - 1)]

    def place(self, start: int, end: int) -> Place:
        index = bisect.bisect_right(self._starts, start) - 1
        return Place(index + 1, start - self._starts[index] + 1, start, end)

    def find(self, needle: str, line: int) -> Place | None:
        """The first unclaimed occurrence of ``needle`` at or after ``line`` (then: anywhere after the
        last one claimed); whitespace in ``needle`` matches any run of whitespace (and the ``|`` of
        grid-table borders), since parsers drop indentation when they join lines."""
        if not needle:
            return None
        cursor = self._cursor.get(needle, 0)
        for origin in (max(cursor, self.offset_of_line(line)), cursor):
            found = self._search(needle, origin)
            if found is not None:
                self._cursor[needle] = found[1]
                return self.place(*found)
        return None

    def _search(self, needle: str, origin: int) -> tuple[int, int] | None:
        if not _SPACE.search(needle):
            start = self.text.find(needle, origin)
            return (start, start + len(needle)) if start >= 0 else None
        pattern = self._patterns.get(needle)
        if pattern is None:
            words = [re.escape(word) for word in _SPACE.split(needle.strip())]
            pattern = re.compile(r"[\s|]+".join(words))
            self._patterns[needle] = pattern
        match = pattern.search(self.text, origin)
        return (match.start(), match.end()) if match else None
