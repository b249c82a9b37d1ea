"""The points-to graph the value flow solves: variables, copy edges, watchers and the worklist.

:class:`PointsTo` knows nothing of Python: it holds, per variable, the values that reach it (at
most :data:`CAP`), the variables that receive a copy of them (plainly, or with methods bound to a
receiver on the way), and the facts that read them (:meth:`PointsTo.handle`, given by the
subclass, :class:`rlmap.model.valueflow.ValueFlow`).  :meth:`PointsTo.solve` pushes only the
values a variable received since it was last visited (difference propagation).

Each variable is one :class:`Variable` object found once by name: the worklist, the copy edges
and the watchers hold the objects themselves, so propagating a value costs no lookup by name.
The order of the solve is exactly the one :mod:`rlmap.model.valueflow`'s docstring fixes (a
capped variable keeps the first values to arrive, so that order is part of the result): the
worklist takes the most recently queued variable first, a variable's copies are visited in the
sorted order of their names, then its bindings (sorted by (target name, receiver)), then its watchers
in the order they were added; values arriving together are taken in sorted order.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from operator import attrgetter
from typing import Any

CAP = 64  # values kept per variable (the first to arrive; see rlmap.model.valueflow)


class Variable:
    """One variable: what it holds and what reads it (containers made on first use; a solve of
    torch holds millions of variables, so nothing else is stored per variable)."""

    __slots__ = ("binds", "copies", "name", "values", "watchers")
    guarded = False  # only some values may enter (see PointsTo.admit): a GuardedVariable

    def __init__(self, name: str) -> None:
        self.name = name
        # what it holds, in arrival order: a tuple while there are few, then a dict (an ordered set)
        self.values: tuple[str, ...] | dict[str, None] = ()
        self.copies: tuple[Variable, ...] | dict[str, Variable] | None = None  # a few, or by name
        self.binds: dict[tuple[str, str], Variable] | None = None  # (target name, receiver) -> target
        self.watchers: list[Any] | None = None  # the facts that read this variable


class GuardedVariable(Variable):
    """A variable that admits only some values."""

    __slots__ = ()
    guarded = True


_FEW = 8  # values (and copies) held in a tuple: smaller than a dict, and a lookup in 8 is as fast
_name = attrgetter("name")


class PointsTo:
    """Variables, the edges between them, and the worklist; the subclass says what facts do."""

    def __init__(self) -> None:
        self.variables: dict[str, Variable] = {}
        self.delta: dict[Variable, dict[str, None]] = {}  # the worklist: values not yet pushed on

    # -- hooks for the subclass --------------------------------------------------------------
    def guarded(self, name: str) -> bool:
        """Whether variable ``name`` admits only some values (asked once, when it is made)."""
        del name
        return False

    def admit(self, name: str, values: Iterable[str]) -> Iterable[str]:
        """The ``values`` a guarded variable may hold."""
        del name
        return values

    def handle(self, fact: Any, values: Collection[str]) -> None:
        """``values`` reached a variable ``fact`` watches."""
        raise NotImplementedError

    def bound(self, values: Iterable[str], receiver: str) -> list[str]:
        """``values`` read through ``receiver`` (a binding edge)."""
        raise NotImplementedError

    def visited(self, name: str, values: Collection[str]) -> None:
        """``values`` were pushed from variable ``name`` along its edges and to its watchers."""

    # -- the graph -----------------------------------------------------------------------------
    def variable(self, name: str) -> Variable:
        found = self.variables.get(name)
        if found is None:
            found = self.variables[name] = GuardedVariable(name) if self.guarded(name) else Variable(name)
        return found

    def values_of(self, name: str) -> Collection[str]:
        """What variable ``name`` holds (empty if it was never used)."""
        found = self.variables.get(name)
        return found.values if found is not None else ()

    def add(self, name: str, values: Iterable[str]) -> None:
        self.add_to(self.variable(name), values)

    def add_to(self, variable: Variable, values: Iterable[str]) -> None:
        """``values`` reach ``variable``: the new ones, in sorted order, up to the cap."""
        current = variable.values
        room = CAP - len(current)
        if room <= 0:
            return
        if variable.guarded:
            values = self.admit(variable.name, values)
        new = [value for value in values if value not in current]
        if not new:
            return
        if len(new) > 1:  # which values a cap keeps: fixed by sorting
            new = sorted(set(new))
            if len(new) > room:
                del new[room:]
        if isinstance(current, tuple):  # a few values: a tuple (most variables hold one)
            if len(current) + len(new) <= _FEW:
                variable.values = current + tuple(new)
            else:
                variable.values = dict.fromkeys(current + tuple(new))
        else:
            for value in new:
                current[value] = None
        pending = self.delta.get(variable)
        if pending is None:
            pending = self.delta[variable] = {}
        for value in new:
            pending[value] = None

    def copy(self, source: str, target: str) -> None:
        """``target`` holds what ``source`` holds."""
        if not source:
            return
        origin = self.variable(source)
        copies = origin.copies
        if copies is None:
            receiver = self.variable(target)
            origin.copies = (receiver,)
        elif isinstance(copies, tuple):  # a few: a tuple, as for values
            if any(existing.name == target for existing in copies):
                return
            receiver = self.variable(target)
            if len(copies) < _FEW:
                origin.copies = (*copies, receiver)
            else:
                origin.copies = {existing.name: existing for existing in (*copies, receiver)}
        else:
            if target in copies:
                return
            receiver = self.variable(target)
            copies[receiver.name] = receiver  # the name ``variables`` holds: one string, not two
        if origin.values:
            self.add_to(receiver, origin.values)

    def bind_copy(self, source: str, target: str, receiver: str) -> None:
        """``target`` holds what ``source`` holds, methods bound to ``receiver`` on the way."""
        origin = self.variable(source)
        binds = origin.binds
        key = (target, receiver)
        if binds is None:
            binds = origin.binds = {}
        elif key in binds:
            return
        destination = binds[key] = self.variable(target)
        if origin.values:
            self.add_to(destination, self.bound(origin.values, receiver))

    def watch(self, name: str, fact: Any) -> None:
        """``fact`` reads variable ``name``: it sees what the variable holds now and later."""
        if not name:
            return
        variable = self.variable(name)
        if variable.watchers is None:
            variable.watchers = [fact]
        else:
            variable.watchers.append(fact)
        if variable.values:
            self.handle(fact, tuple(variable.values))

    def release(self) -> None:
        """Let the graph go: its variables refer to each other, and resolution runs with the
        cyclic garbage collector paused, so only breaking the references frees them at once."""
        for variable in self.variables.values():
            variable.copies = variable.binds = variable.watchers = None
        self.variables.clear()
        self.delta.clear()

    def solve(self) -> None:
        """Push every variable's new values until nothing changes."""
        delta = self.delta
        add_to = self.add_to
        while delta:
            variable, values = delta.popitem()
            copies = variable.copies
            if copies:
                if isinstance(copies, dict):
                    for name in sorted(copies):
                        add_to(copies[name], values)
                else:
                    for target in sorted(copies, key=_name) if len(copies) > 1 else copies:
                        add_to(target, values)
            if variable.binds:
                binds = variable.binds
                for key in sorted(binds):
                    add_to(binds[key], self.bound(values, key[1]))
            if variable.watchers:
                for fact in tuple(variable.watchers):
                    self.handle(fact, values)
            self.visited(variable.name, values)
