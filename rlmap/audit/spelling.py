"""Did-you-mean hints: a bounded, exact spelling search over names, and the replacement to suggest.

The spelling search behind the hints is exact but bounded by :data:`SPELLING_BUDGET` candidate
comparisons per run (past it, findings carry the generic hint).
"""

from __future__ import annotations

import difflib
from collections import defaultdict
from collections.abc import Iterable
from typing import TYPE_CHECKING

from rlmap.index.records import CLASS, FUNCTION, METHOD, PROPERTY

if TYPE_CHECKING:
    from rlmap.audit.context import AuditContext

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


def suggest(ctx: AuditContext, dotted: str) -> str:
    """A likely replacement for a stale reference: the same name elsewhere, else the closest names."""
    last = dotted.rsplit(".", 1)[-1]
    same = [q for q in ctx.named(last) if ctx.model.node_kind(q) in (CLASS, FUNCTION, METHOD, PROPERTY)]
    if len(same) > 1:
        same.sort(
            key=lambda q: (
                -_shared_prefix(ctx.public_or_qualname(q), dotted),
                -len(ctx.model.subclasses_of(q.rpartition(".")[0])),  # the defining base first
                len(ctx.public_or_qualname(q)),
                q,
            )
        )
    if same:
        return "the name exists as " + ", ".join(ctx.public_or_qualname(q) for q in same[:3])
    close = ctx.close_matches("names", last, 3, 0.75)
    candidates = [q for name in close for q in ctx.named(name)][:3]
    if candidates:
        return "did you mean " + " or ".join(ctx.public_or_qualname(q) for q in candidates) + "?"
    return "remove the reference or point it at the code that replaced it"


def _shared_prefix(left: str, right: str) -> int:
    count = 0
    for a, b in zip(left.split("."), right.split("."), strict=False):
        if a != b:
            break
        count += 1
    return count
