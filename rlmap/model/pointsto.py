"""The points-to graph the value flow solves: variables, copy edges, watchers and the worklist.

:class:`PointsTo` knows nothing of Python: it holds, per variable, the values that reach it (at
most ``cap``: :data:`CAP` unless a profile sets another), the variables that receive a copy of
them (plainly, or with methods bound to a receiver on the way), and the facts that read them
(:meth:`PointsTo.handle`, given by the subclass, :class:`rlmap.model.valueflow.ValueFlow`).
:meth:`PointsTo.solve` pushes only the values a variable received since it was last visited
(difference propagation).

A variable is a number, given the first time its name is seen: what it holds, its copies, its
bindings and its watchers are entries of lists indexed by that number (a solve of torch holds
over a million variables: no object per variable, and a variable that nothing reads or fills
costs a few list slots).  A copy into a name not yet seen, from a variable that holds nothing
yet, waits under that variable's number, and the target is numbered when the source first
receives a value: torch's 120,000 targets whose sources never do are never numbered.  Values
are interned (:attr:`PointsTo.texts`): a value held by a thousand variables is one string, and,
for those holding it alone, one tuple.

The order of the solve is exactly the one :mod:`rlmap.model.valueflow`'s docstring fixes (a
variable at the cap keeps the first values to arrive, so that order is part of the result
wherever a variable drops one): the worklist takes the most recently queued variable first, a
variable's copies are visited in the sorted order of their names, then its bindings (sorted by
(target name, receiver)), then its watchers in the order they were added; values arriving
together are taken in sorted order.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Collection, Iterable
from sys import intern
from typing import Any

CAP = 64  # values kept per variable by default (the first to arrive; see rlmap.model.valueflow)
CAP_RANGE = (8, 4096)  # the caps a profile may set (rlmap.pages.header)

_FEW = 8  # copies held in a tuple while there are few: the smallest container
_UNASKED = 2  # a variable's guard not yet asked for (see PointsTo.guards)
_NOTHING: tuple[str, ...] = ()


class _Watchers(list):  # type: ignore[type-arg]
    """The facts that read one variable, when there are two or more (one is held as itself:
    torch's solve has 350,000 variables with a single watcher)."""

    __slots__ = ()


class PointsTo:
    """Variables, the edges between them, and the worklist; the subclass says what facts do."""

    def __init__(self, cap: int = CAP) -> None:
        self.cap = cap
        self.ids: dict[str, int] = {}  # name -> variable number
        self.names: list[str] = []  # variable number -> name
        # per variable: what it holds, in arrival order (a tuple: at most ``cap`` values, a dict of
        # them would be four times the size)
        self.held: list[tuple[str, ...]] = []
        # per variable: the variables receiving a copy, sorted by name (None, one number, a few in
        # a tuple, more in a list)
        self.copies: list[int | tuple[int, ...] | list[int] | None] = []
        # a copy into a variable not yet made, from one that holds nothing yet: the target's
        # name, waiting under the source (one name, a few in a tuple, more in a dict, in the
        # order they came), made a variable when the source first receives a value (torch:
        # 120,000 targets never receive one)
        self.waiting: dict[int, str | tuple[str, ...] | dict[str, None]] = {}
        # per variable: the facts that read it (None, the one fact itself, or a _Watchers list)
        self.watchers: list[Any] = []
        # per variable: 1 if it admits only some values (see admit), 0 if not, _UNASKED until
        # it first receives a value (most variables never do: they are not asked)
        self.guards = bytearray()
        self.dropped = bytearray()  # per variable: 1 once the cap made it drop a value
        # the variables whose visits :meth:`visited` is told of (by name)
        self.hooked: Collection[str] = ()
        # variable -> the variables receiving its values bound -> the receiver(s) they are bound to;
        # a variable bound into one other holds the pair (that variable, its receivers) instead
        # of a dict of one (torch: 40,000 of 84,000)
        self.binds: dict[int, dict[int, str | tuple[str, ...]] | tuple[int, str | tuple[str, ...]]] = {}
        # the worklist: variable -> where its values not yet pushed on start in what it holds
        # (a variable only ever gains values, at the end: the new ones are a suffix)
        self.delta: dict[int, int] = {}
        # a watcher (by id) or copy (by receiver) made while its variable waited on the worklist
        # saw then what the variable held: variable -> watcher or receiver -> how many values
        # (see :meth:`solve`)
        self.seen_by_watcher: dict[int, dict[int, int]] = {}
        self.seen_by_copy: dict[int, dict[int, int]] = {}
        # every value (and receiver) once, as the tuple of it alone: the text and the tuple of one
        # value are shared by every variable holding them
        self.texts: dict[str, tuple[str]] = {}

    # -- hooks for the subclass --------------------------------------------------------------
    def guarded(self, name: str) -> bool:
        """Whether variable ``name`` admits only some values (asked once, when it is made)."""
        del name
        return False

    def admit(self, name: str, values: Collection[str]) -> Collection[str]:
        """The ``values`` a guarded variable may hold."""
        del name
        return values

    def handle(self, fact: Any, values: list[str]) -> None:
        """``values`` reached a variable ``fact`` watches (sorted: the order to take them in)."""
        raise NotImplementedError

    def again(self, fact: Any, values: tuple[str, ...]) -> list[str]:
        """Of ``values``, which ``fact`` already saw, those it must be handed again when its
        variable is visited (see :meth:`solve`): those whose handling is not done once for all."""
        del fact, values
        return []

    def bound(self, values: Iterable[str], receiver: str) -> list[str]:
        """``values`` read through ``receiver`` (a binding edge; in any order: what arrives
        together is sorted by :meth:`add_to`)."""
        raise NotImplementedError

    def visited(self, name: str, values: Collection[str]) -> None:
        """``values`` were pushed from variable ``name`` (one of :attr:`hooked`) along its edges
        and to its watchers."""

    # -- the graph -----------------------------------------------------------------------------
    def variable(self, name: str) -> int:
        """The number of variable ``name`` (made on first use)."""
        found = self.ids.get(name)
        if found is None:
            found = self.ids[name] = len(self.names)
            self.names.append(name)
            self.held.append(_NOTHING)
            self.copies.append(None)
            self.watchers.append(None)
            self.guards.append(_UNASKED)
            self.dropped.append(0)
        return found

    def values_of(self, name: str) -> Collection[str]:
        """What variable ``name`` holds (empty if it was never used)."""
        found = self.ids.get(name)
        return self.held[found] if found is not None else _NOTHING

    def over_cap(self) -> int:
        """How many variables dropped a value: one arrived when they held ``cap`` already."""
        return self.dropped.count(1)

    def _full(self, variable: int, values: Collection[str]) -> None:
        """``values`` reached ``variable``, which holds ``cap`` values: note whether one it would
        have admitted is dropped."""
        if self.dropped[variable]:
            return
        current = self.held[variable]
        if self.guards[variable] == 1:  # asked already: the variable holds values
            values = self.admit(self.names[variable], values)
        if any(value not in current for value in values):
            self.dropped[variable] = 1

    def all_values(self) -> dict[str, tuple[str, ...]]:
        """Every variable's values, by name (for tests and comparisons), those that hold one."""
        return {name: self.held[number] for name, number in self.ids.items() if self.held[number]}

    def add(self, name: str, values: Collection[str]) -> None:
        variable = self.ids.get(name)
        self.add_to(self.variable(name) if variable is None else variable, values)

    def add_to(self, variable: int, values: Collection[str]) -> None:
        """``values`` reach ``variable``: the new ones, in sorted order, up to the cap (what
        arrives is the same in any order: the new ones are sorted)."""
        current = self.held[variable]
        cap = self.cap
        if type(values) is tuple and len(values) == 1:  # most often: one value, no list made
            value = values[0]
            if current and (len(current) >= cap or value in current):
                if len(current) >= cap:
                    self._full(variable, values)
                return
            guard = self.guards[variable]
            if guard:
                if guard == _UNASKED:
                    guard = self.guards[variable] = self.guarded(self.names[variable])
                if guard and not self.admit(self.names[variable], (value,)):
                    return
            one = self.texts.get(value)
            if one is None:
                one = self.texts[value] = (value,)
            # the tuple every variable holding this value alone shares
            self.held[variable] = current + one if current else one
            self.delta.setdefault(variable, len(current))
            if not current and self.waiting:
                self._arrived(variable)
            return
        if not current:
            new = list(values)
        elif len(current) >= cap:
            self._full(variable, values)
            return
        elif len(current) > _FEW and len(values) > 1:  # a set: no scan of the held tuple per value
            held = set(current)
            new = [value for value in values if value not in held]
        else:
            new = [value for value in values if value not in current]
        if not new:
            return
        guard = self.guards[variable]
        if guard:
            if guard == _UNASKED:
                guard = self.guards[variable] = self.guarded(self.names[variable])
            if guard:  # a filter value by value: the same before or after the one above
                new = list(self.admit(self.names[variable], new))
                if not new:
                    return
        texts = self.texts
        if len(new) == 1:
            value = new[0]
            one = texts.get(value)
            if one is None:
                one = texts[value] = (value,)
            value = one[0]
            # one value (most variables hold one): the tuple every variable holding it alone shares
            self.held[variable] = current + one if current else one
            self.delta.setdefault(variable, len(current))
            if not current and self.waiting:
                self._arrived(variable)
            return
        new = sorted(set(new))  # which values a cap keeps: fixed by sorting
        room = cap - len(current)
        if len(new) > room:
            del new[room:]
            self.dropped[variable] = 1
        for position, value in enumerate(new):
            one = texts.get(value)
            if one is None:
                one = texts[value] = (value,)
            new[position] = one[0]
        if len(new) == 1:  # duplicates of one value
            self.held[variable] = current + texts[new[0]] if current else texts[new[0]]
        else:
            self.held[variable] = current + tuple(new)
        self.delta.setdefault(variable, len(current))
        if not current and self.waiting:
            self._arrived(variable)

    def copy(self, source: str, target: str) -> None:
        """``target`` holds what ``source`` holds."""
        if not source:
            return
        ids = self.ids
        origin = ids.get(source)
        if origin is None:
            origin = self.variable(source)
        receiver = ids.get(target)
        held = self.held[origin]
        if receiver is None:
            if not held:  # nothing to copy yet: the target waits, unmade (see _arrived)
                self._wait(origin, target)
                return
            receiver = self.variable(target)
        if not self._attach(origin, receiver):
            return
        if held:
            self._given_early(self.seen_by_copy, origin, receiver)
            self.add_to(receiver, held)

    def _attach(self, origin: int, receiver: int) -> bool:
        """Add ``receiver`` to the copies of ``origin`` (in name order); ``False`` if there already."""
        copies = self.copies[origin]
        if copies is None:
            self.copies[origin] = receiver
        elif type(copies) is int:
            if copies == receiver:
                return False
            pair = (copies, receiver)
            self.copies[origin] = pair if self.names[copies] < self.names[receiver] else pair[::-1]
        elif type(copies) is tuple:
            if receiver in copies:
                return False
            placed = sorted((*copies, receiver), key=self.names.__getitem__)
            self.copies[origin] = tuple(placed) if len(placed) <= _FEW else placed
        else:  # many: a list kept sorted by name (a set of them would be four times the size)
            name = self.names[receiver]
            place = bisect_left(copies, name, key=self.names.__getitem__)  # type: ignore[arg-type]
            if place < len(copies) and copies[place] == receiver:  # type: ignore[index, arg-type]
                return False
            copies.insert(place, receiver)  # type: ignore[union-attr]
        return True

    def _wait(self, origin: int, target: str) -> None:
        """Note a copy from ``origin``, which holds nothing, into ``target``, not yet a variable."""
        waiting = self.waiting.get(origin)
        if waiting is None:
            # the name is often made anew for each copy into it: the waiting ones share one
            self.waiting[origin] = intern(target)
        elif type(waiting) is str:
            if waiting != target:
                self.waiting[origin] = (waiting, intern(target))
        elif type(waiting) is tuple:
            if target not in waiting:
                more = (*waiting, intern(target))
                self.waiting[origin] = more if len(more) <= _FEW else dict.fromkeys(more)
        elif target not in waiting:
            waiting[intern(target)] = None  # type: ignore[index]

    def _arrived(self, variable: int) -> None:
        """``variable`` receives its first value: the targets waiting on it become variables and
        its copies (its visit pushes them everything it holds, as it would have had they been
        made with the copy: the solve is the same, only numbered in another order)."""
        waiting = self.waiting.pop(variable, None)
        if waiting is None:
            return
        ids = self.ids
        for target in (waiting,) if isinstance(waiting, str) else waiting:
            receiver = ids.get(target)
            self._attach(variable, self.variable(target) if receiver is None else receiver)

    def bind_copy(self, source: str, target: str, receiver: str) -> None:
        """``target`` holds what ``source`` holds, methods bound to ``receiver`` on the way."""
        ids = self.ids
        origin = ids.get(source)
        if origin is None:
            origin = self.variable(source)
        destination = ids.get(target)
        if destination is None:
            destination = self.variable(target)
        one = self.texts.get(receiver)
        if one is None:
            one = self.texts[receiver] = (receiver,)
        self.bind_to(origin, destination, one[0])

    def bind_to(self, origin: int, destination: int, receiver: str) -> None:
        """:meth:`bind_copy` between variable numbers, ``receiver`` interned (in :attr:`texts`)."""
        binds = self.binds.get(origin)
        alone = binds is None or (isinstance(binds, tuple) and binds[0] == destination)
        if binds is None or isinstance(binds, tuple):
            receivers = binds[1] if alone and binds is not None else None
        else:
            receivers = binds.get(destination)
        merged: str | tuple[str, ...] = receiver
        if receivers is not None:
            if receivers == receiver or (isinstance(receivers, tuple) and receiver in receivers):
                return
            merged = tuple(sorted(((receivers,) if isinstance(receivers, str) else receivers) + (receiver,)))
        if alone:
            self.binds[origin] = (destination, merged)
        elif isinstance(binds, tuple):
            self.binds[origin] = {binds[0]: binds[1], destination: merged}
        else:
            binds[destination] = merged  # type: ignore[index]
        held = self.held[origin]
        if held:
            self.add_to(destination, self.bound(held, receiver))

    def watch(self, name: str, fact: Any) -> None:
        """``fact`` reads variable ``name``: it sees what the variable holds now and later."""
        if not name:
            return
        variable = self.ids.get(name)
        if variable is None:
            variable = self.variable(name)
        watchers = self.watchers[variable]
        if watchers is None:
            self.watchers[variable] = fact
        elif type(watchers) is _Watchers:
            watchers.append(fact)
        else:
            self.watchers[variable] = _Watchers((watchers, fact))
        held = self.held[variable]
        if held:
            self._given_early(self.seen_by_watcher, variable, id(fact))
            self.handle(fact, sorted(held))

    def _given_early(self, seen: dict[int, dict[int, int]], variable: int, key: int) -> None:
        """Note in ``seen`` that ``key`` (a copy's receiver, a watcher's id) is given what
        ``variable`` holds while it waits on the worklist: its visit hands ``key`` only what
        arrives after this (see :meth:`solve`)."""
        if variable in self.delta:
            found = seen.get(variable)
            if found is None:
                found = seen[variable] = {}
            found[key] = len(self.held[variable])

    def release(self) -> None:
        """Let the graph go (resolution runs with the cyclic garbage collector paused: nothing
        here holds a cycle, but the tables are dropped at once rather than with the object)."""
        self.ids.clear()
        self.names.clear()
        self.held.clear()
        self.copies.clear()
        self.watchers.clear()
        self.binds.clear()
        self.waiting.clear()
        self.guards.clear()
        self.dropped.clear()
        self.delta.clear()
        self.seen_by_watcher.clear()
        self.seen_by_copy.clear()
        self.texts.clear()

    def solve(self) -> None:
        """Push every variable's new values until nothing changes.

        An edge or watcher added while its variable waited on the worklist was given everything
        the variable held then: of the values the variable's visit pushes, it is given only
        those that arrived after (handing it the others again would do nothing: what a value
        does, once done, is done; the order of everything else is unchanged)."""
        delta = self.delta
        seen_by_watcher = self.seen_by_watcher
        seen_by_copy = self.seen_by_copy
        add_to = self.add_to
        all_copies = self.copies
        all_binds = self.binds
        all_watchers = self.watchers
        names = self.names
        held = self.held
        hooked = self.hooked
        while delta:
            variable, start = delta.popitem()
            values = held[variable][start:]
            copies = all_copies[variable]
            if copies is not None:
                early = seen_by_copy.pop(variable, None) if seen_by_copy else None
                if early is None:
                    if type(copies) is int:
                        add_to(copies, values)
                    else:
                        for target in copies:  # type: ignore[union-attr]
                            add_to(target, values)
                else:
                    for target in (copies,) if type(copies) is int else copies:  # type: ignore[union-attr]
                        seen = early.get(target, start)
                        if seen <= start:
                            add_to(target, values)
                        elif seen - start < len(values):
                            add_to(target, values[seen - start :])
            binds = all_binds.get(variable)
            if binds:
                # (what is bound is not changed while the bindings are followed: a snapshot)
                pairs: Iterable[tuple[int, str | tuple[str, ...]]]
                if isinstance(binds, tuple):
                    pairs = (binds,)
                else:
                    pairs = [(each, binds[each]) for each in sorted(binds, key=names.__getitem__)]
                for destination, receivers in pairs:
                    for receiver in (receivers,) if isinstance(receivers, str) else receivers:
                        add_to(destination, self.bound(values, receiver))
            watchers = all_watchers[variable]
            if watchers is not None:
                ordered = sorted(values)  # once for every watcher
                early = seen_by_watcher.pop(variable, None) if seen_by_watcher else None
                # (a fact handled may add a watcher to this variable: it saw what it holds)
                for fact in tuple(watchers) if type(watchers) is _Watchers else (watchers,):
                    if early is not None:
                        seen = early.get(id(fact), start)
                        if seen > start:
                            fresh = values[seen - start :]
                            again = self.again(fact, values[: seen - start])
                            if again:
                                fresh = (*fresh, *again)
                            if fresh:
                                self.handle(fact, sorted(fresh))
                            continue
                    self.handle(fact, ordered)
            if hooked and names[variable] in hooked:
                self.visited(names[variable], values)
        # emptied, the worklist and the early-seen tables keep the size they grew to: let them go
        # (torch: 15 MB held through the later solves)
        self.delta = {}
        if not self.seen_by_watcher:
            self.seen_by_watcher = {}
        if not self.seen_by_copy:
            self.seen_by_copy = {}
