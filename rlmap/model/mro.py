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
    """Depth-first, left-to-right, first occurrence: close to C3 for real hierarchies."""
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
    return tuple(order)


def first_in_mro(bases: Bases, cls: str, memo: MutableMapping[str, Any], own: Callable[[str], T | None]) -> T | None:
    """The first non-``None`` ``own(c)`` for ``c`` in :func:`mro` order of ``cls``.

    ``memo`` (one per question, e.g. per member name) maps a class to the answer for its own
    hierarchy, so each class is asked at most once per question, however many subclasses ask.
    """
    if cls in memo:
        return memo[cls]  # type: ignore[no-any-return]
    found = own(cls)
    if found is not None:
        memo[cls] = found
        return found
    visited = {cls}
    stack = [(cls, iter(bases.get(cls, ())))]
    while stack:
        node, pending = stack[-1]
        base = next(pending, None)
        if base is None:
            stack.pop()
            memo[node] = None
            continue
        if base in visited:
            continue
        visited.add(base)
        if base in memo:
            found = memo[base]
        else:
            found = own(base)
            if found is None:
                stack.append((base, iter(bases.get(base, ()))))
                continue
            memo[base] = found
        if found is not None:
            for frame, _ in stack:
                memo[frame] = found
            return found
    return None


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
