"""Virtual dispatch over the class hierarchy: overrides in subclasses, and who introduces an attribute.

:class:`ClassHierarchy` is the second layer of :class:`rlmap.model.resolve.Resolver`.  Only the part
of the hierarchy that leads to a definer is walked, and answers are memoized per name, so that a
3,000-level chain is not walked once per class.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from rlmap.index.records import METHOD, PROPERTY, ModuleIndex
from rlmap.model.mro import hierarchy_levels, last_in_mro
from rlmap.model.symbols import SymbolTable


class ClassHierarchy(SymbolTable):
    """Overrides of a method below a class, and the most basic class that assigns an attribute."""

    def __init__(self, modules: Iterable[ModuleIndex]) -> None:
        super().__init__(modules)
        self._overrides: dict[tuple[str, str], tuple[str, ...]] = {}
        self._definer_memo: dict[str, frozenset[str]] = {}
        self._above_memo: dict[str, frozenset[str]] = {}
        self._level_memo: dict[str, int] | None = None
        self._levels_known = False
        self._owner_memo: dict[str, dict[str, str]] = defaultdict(dict)

    def overrides(self, cls: str, name: str) -> list[str]:
        """``sub.name`` for every (indirect) subclass ``sub`` of ``cls`` that defines method ``name``.

        Only the part of the hierarchy that leads to a definer is walked: a class with no
        definer below it answers at once, so a deep chain is not walked once per class.
        """
        key = (cls, name)
        cached = self._overrides.get(key)
        if cached is None:
            cached = self._overrides_uncached(cls, name)
            self._overrides[key] = cached
        return list(cached)

    def _overrides_uncached(self, cls: str, name: str) -> tuple[str, ...]:
        definers = self._definers(name)
        if not definers or self._none_below(cls, definers):
            return ()
        above = self._above(name)
        if cls not in above:
            return ()
        found: list[str] = []
        seen: set[str] = set()
        stack = list(self.subclasses.get(cls, ()))
        while stack:
            current = stack.pop()
            if current in seen:
                continue
            seen.add(current)
            if current in definers:
                found.append(current)
            if current in above:
                stack.extend(self.subclasses.get(current, ()))
        return tuple(f"{sub}.{name}" for sub in sorted(found))

    def _none_below(self, cls: str, definers: frozenset[str]) -> bool:
        """Whether no definer is deep enough in the hierarchy to be below ``cls`` (when levels are known)."""
        levels = self._levels()
        return levels is not None and cls in levels and not any(levels.get(d, -1) > levels[cls] for d in definers)

    def _definers(self, name: str) -> frozenset[str]:
        """The classes that define ``name`` as a method or property."""
        found = self._definer_memo.get(name)
        if found is None:
            found = frozenset(
                owner
                for owner in (qualname.rpartition(".")[0] for qualname in self.methods_by_name.get(name, ()))
                if name in self.members.get(owner, {}) and self.members[owner][name].kind in (METHOD, PROPERTY)
            )
            self._definer_memo[name] = found
        return found

    def _above(self, name: str) -> frozenset[str]:
        """Every class with a definer of ``name`` among its (indirect) subclasses."""
        found = self._above_memo.get(name)
        if found is None:
            reached: set[str] = set()
            stack = [base for definer in self._definers(name) for base in self.bases.get(definer, ())]
            while stack:
                current = stack.pop()
                if current not in reached:
                    reached.add(current)
                    stack.extend(self.bases.get(current, ()))
            found = frozenset(reached)
            self._above_memo[name] = found
        return found

    def _levels(self) -> dict[str, int] | None:
        """Each class's longest distance to a root of the hierarchy; ``None`` when bases form a cycle.

        A subclass is always deeper than its bases, which rules most classes out of
        :meth:`overrides` at once.
        """
        if not self._levels_known:
            self._levels_known = True
            self._level_memo = hierarchy_levels(self.bases)
        return self._level_memo

    def attribute_owner(self, cls: str, attribute: str) -> str:
        """The most basic class in ``cls``'s hierarchy that assigns ``self.<attribute>``."""
        if attribute not in self._written_names:
            return ""
        written = self.written
        return last_in_mro(self.bases, cls, self._owner_memo[attribute], lambda owner: (owner, attribute) in written)
