"""Did-you-mean hints: a bounded, exact spelling search over names (used by :mod:`~rlmap.audit.renames`).

The spelling search behind the hints is exact but bounded by :data:`SPELLING_BUDGET` candidate
comparisons per run (past it, findings carry the generic hint).
"""

from __future__ import annotations

import difflib
from collections import defaultdict
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    pass

SPELLING_BUDGET = 250_000  # candidate comparisons for "did you mean", per run (at most a second or two)


class Speller:
    """``difflib.get_close_matches`` over a fixed set of words, indexed by length once.

    Exact: a word whose length alone rules it out (difflib's ``real_quick_ratio``) is never
    compared.  Memoized per query; all queries of one run share ``budget`` comparisons, after
    which a query that would exceed it answers nothing.
    """

    def __init__(self, words: Iterable[str], cutoff: float, budget: list[int]) -> None:
        self.cutoff = cutoff
        self.budget = budget  # one shared, mutable counter
        self.by_length: dict[int, list[str]] = defaultdict(list)
        for word in sorted(set(words)):
            self.by_length[len(word)].append(word)
        self.memo: dict[tuple[str, int], list[str]] = {}

    def close(self, word: str, n: int) -> list[str]:
        key = (word, n)
        if key not in self.memo:
            size = len(word)
            buckets = [
                words
                for length, words in self.by_length.items()
                if length + size and 2.0 * min(length, size) / (length + size) >= self.cutoff
            ]
            cost = sum(map(len, buckets))
            if cost > self.budget[0]:
                self.memo[key] = []
            else:
                self.budget[0] -= cost
                pool = [candidate for words in buckets for candidate in words]
                self.memo[key] = difflib.get_close_matches(word, pool, n=n, cutoff=self.cutoff)
        return self.memo[key]
