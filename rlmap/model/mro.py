"""Walks over a class hierarchy given as a ``bases`` mapping: MRO order, first and last match, levels.

Pure functions of ``bases`` (class -> its resolved bases, in order), shared by the resolver and
the model.  Every walk is iterative (a 3,000-level chain must not hit the recursion limit) and
memoized per question by the caller's ``memo``, so that asking every class of a deep chain costs
the chain once, not once per class: no MRO tuple is materialized per class (that alone is
quadratic in the depth).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, MutableMapping
from typing import Any, TypeVar

Bases = Mapping[str, tuple[str, ...]]
T = TypeVar("T")


def mro(bases: Bases, cls: str) -> tuple[str, ...]:
    """Python's C3 linearization of ``cls``; depth-first, first occurrence, where C3 has none.

    A chain of single bases is walked without recursion (C3 of ``C(B)`` is ``C`` then the
    linearization of ``B``); only classes with several bases merge their bases' orders.
    """
    return tuple(_linearize(bases, cls, {}, set()))


def _depth_first(bases: Bases, cls: str) -> list[str]:
    order: list[str] = []
    seen: set[str] = set()
    stack = [cls]
    while stack:
        current = stack.pop()
        if current in seen:
            continue
        seen.add(current)
        order.append(current)
        stack.extend(reversed(bases.get(current, ())))
    return order


def _linearize(bases: Bases, cls: str, memo: dict[str, list[str]], active: set[str]) -> list[str]:
    """C3 order of ``cls`` (memoized in ``memo``); a cycle or an inconsistent order falls back to depth-first."""
    if cls in memo:
        return memo[cls]
    chain: list[str] = []
    in_chain: set[str] = set()
    node: str | None = cls
    tail: list[str] = []
    while node is not None:
        if node in memo:
            tail = memo[node]
            break
        if node in active or node in in_chain:
            return _depth_first(bases, cls)  # a cycle: no C3 order exists
        parents = bases.get(node, ())
        if len(parents) > 1:
            active.add(node)
            try:
                merged = _merge([_linearize(bases, base, memo, active) for base in parents] + [list(parents)])
            finally:
                active.discard(node)
            tail = [node, *merged] if merged is not None else _depth_first(bases, node)
            memo[node] = tail
            break
        chain.append(node)
        in_chain.add(node)
        node = parents[0] if parents else None
    order = chain + tail
    if len(set(order)) != len(order):
        order = _depth_first(bases, cls)
    memo[cls] = order
    return order


def _merge(sequences: list[list[str]]) -> list[str] | None:
    """The C3 merge of base linearizations; ``None`` when they admit no consistent order."""
    pending = [list(sequence) for sequence in sequences if sequence]
    result: list[str] = []
    while pending:
        tails = {name for sequence in pending for name in sequence[1:]}
        head = next((sequence[0] for sequence in pending if sequence[0] not in tails), None)
        if head is None:
            return None
        result.append(head)
        pending = [rest for rest in (sequence[1:] if sequence[0] == head else sequence for sequence in pending) if rest]
    return result


def first_in_mro(bases: Bases, cls: str, memo: MutableMapping[str, Any], own: Callable[[str], T | None]) -> T | None:
    """The first non-``None`` ``own(c)`` for ``c`` in :func:`mro` (C3) order of ``cls``.

    ``memo`` (one per question, e.g. per member name) maps a class to the answer for its own
    hierarchy, so each class of a single-base chain is asked at most once per question, however
    many subclasses ask; a class with several bases scans its C3 order once.
    """
    path: list[str] = []
    on_path: set[str] = set()
    node: str | None = cls
    result: T | None = None
    while node is not None:
        if node in memo:
            result = memo[node]
            break
        found = own(node)
        if found is not None:
            memo[node] = result = found
            break
        parents = bases.get(node, ())
        if len(parents) > 1:
            for ancestor in mro(bases, node)[1:]:
                result = own(ancestor)
                if result is not None:
                    break
            memo[node] = result
            break
        path.append(node)
        on_path.add(node)
        node = parents[0] if parents and parents[0] not in on_path else None
    for visited in path:
        memo[visited] = result
    return result


def last_in_mro(bases: Bases, cls: str, memo: MutableMapping[str, str], test: Callable[[str], bool]) -> str:
    """The last class ``c`` in :func:`mro` order of ``cls`` with ``test(c)``, or ``""``."""
    path: list[str] = []
    on_path: set[str] = set()
    node: str | None = cls
    value = ""
    while node is not None:
        if node in memo:
            value = memo[node]
            break
        parents = bases.get(node, ())
        if len(parents) > 1:  # multiple inheritance: walk this class's whole MRO once
            value = next((c for c in reversed(mro(bases, node)) if test(c)), "")
            memo[node] = value
            break
        on_path.add(node)
        path.append(node)
        node = parents[0] if parents and parents[0] not in on_path else None
    for node in reversed(path):
        if not value and test(node):
            value = node
        memo[node] = value
    return value


def nearest_in_bases(
    bases: Bases, cls: str, memo: MutableMapping[str, tuple[int, str] | None], own: Callable[[str], str | None]
) -> str | None:
    """``own(c)`` of the nearest class ``c`` (fewest steps up from ``cls``) where it is not ``None``.

    The nearest answer of a class is the nearest of its bases' (the first base on a tie), which
    is what a breadth-first walk finds.  Unlike :func:`first_in_mro` this prefers a near base to
    a far one that comes first depth-first: for ``C(A, B)``, ``A(Base)``, ``B(Base)`` with ``m``
    defined in ``Base`` and ``B`` it finds ``B.m``, as Python's C3 order does, where
    :func:`first_in_mro` finds ``Base.m``.  ``memo`` maps a class to (distance, answer).
    """
    stack = [(cls, False)]
    active: set[str] = set()  # on the current path: a base that is one closes a cycle
    while stack:
        node, ready = stack.pop()
        if node in memo:
            continue
        found = own(node)
        if found is not None:
            memo[node] = (0, found)
            continue
        parents = bases.get(node, ())
        if ready:
            active.discard(node)
            best: tuple[int, str] | None = None
            for base in parents:
                answer = memo.get(base)
                if answer is not None and (best is None or answer[0] + 1 < best[0]):
                    best = (answer[0] + 1, answer[1])
            memo[node] = best
            continue
        if node in active:
            continue
        active.add(node)
        stack.append((node, True))
        stack.extend((base, False) for base in reversed(parents) if base not in memo and base not in active)
    nearest = memo.get(cls)
    return nearest[1] if nearest is not None else None


def hierarchy_levels(bases: Bases) -> dict[str, int] | None:
    """Each class's longest distance to a root of the hierarchy; ``None`` when bases form a cycle."""
    levels: dict[str, int] = {}
    active: set[str] = set()
    for start in bases:
        stack = [(start, False)]
        while stack:
            node, ready = stack.pop()
            if node in levels:
                continue
            parents = bases.get(node, ())
            if ready:
                active.discard(node)
                levels[node] = 1 + max((levels[base] for base in parents), default=-1)
                continue
            if node in active:
                return None  # a cycle: no levels, every question walks the hierarchy
            active.add(node)
            stack.append((node, True))
            for base in parents:
                if base in active:
                    return None
                if base not in levels:
                    stack.append((base, False))
    return levels


def derives_from(bases: Bases, cls: str, classes: frozenset[str] | set[str]) -> bool:
    """Whether ``cls`` is one of ``classes`` or derives from one (a class outside the source by
    its name, as the bases write it)."""
    seen = {cls}
    stack = [cls]
    while stack:
        current = stack.pop()
        if current in classes:
            return True
        for base in bases.get(current, ()):
            if base not in seen:
                seen.add(base)
                stack.append(base)
    return False


def descendants(subclasses: Mapping[str, Any], cls: str) -> list[str]:
    """Every direct and indirect subclass of ``cls``, sorted."""
    found: set[str] = set()
    stack = list(subclasses.get(cls, ()))
    while stack:
        current = stack.pop()
        if current not in found:
            found.add(current)
            stack.extend(subclasses.get(current, ()))
    return sorted(found)
