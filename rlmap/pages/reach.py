"""Which statements of a function a configuration reaches: always, never, or depending.

The function's control flow (:mod:`rlmap.index.controlflow`) is walked once under a
configuration.  Each statement gets a three-valued reach: ``True`` (every call of the function
gets there), ``False`` (none does) or :data:`rlmap.pages.conditions.UNKNOWN`.  A statement is
reached when the one before it is reached *and* falls through: a ``return`` or ``raise`` ends
the function; a ``break`` leaves its loop and goes on after it (skipping the loop's ``else``);
a ``continue`` goes back to the loop's head.  So what follows a branch that always returns is
never reached, and what follows a loop is reached only if a ``break`` is taken or the loop ends
normally and its ``else`` falls through.  Inside the loop the page documents, a step is given
the reach of one iteration: an exit the configuration does not decide (``if full(): return``)
does not make the steps after it "depends" (they run in every iteration it does not end), while
an exit it decides taken makes them "never".

The rules: an ``if`` arm is taken when the earlier tests fail and its own holds (the tests are
evaluated by the caller's ``truth``); the loop the page documents runs its body, any other loop
may not; an exception handler is off the normal path, but a ``raise`` in a ``try`` that has one may be
caught there (so it may go on); a ``finally`` always runs; a ``match`` case may or may not match;
a ``while True`` ends only through a ``break`` or an exit.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rlmap.index import controlflow as cf
from rlmap.pages.conditions import UNKNOWN

Truth = object  # True, False or UNKNOWN


def both(*values: Truth) -> Truth:
    """Three-valued ``and``."""
    if any(value is False for value in values):
        return False
    return UNKNOWN if any(value is UNKNOWN for value in values) else True


def negation(value: Truth) -> Truth:
    return UNKNOWN if value is UNKNOWN else not value


@dataclass
class _Loop:
    breaks: Truth = False  # a ``break`` of this loop is taken (relative to reaching the loop)
    ends: Truth = False  # a ``break``, ``return`` or ``raise`` inside is taken: it does not end normally
    returns: Truth = False  # a ``return`` or ``raise`` inside is taken


@dataclass(frozen=True, slots=True)
class _At:
    """How sure it is that control gets somewhere: from the function's start, and from reaching
    the innermost loop around it (what the loop's exits are measured against); ``shown`` is the
    reach a step is given, which inside the documented loop counts an iteration as going on past
    an exit the configuration does not decide (``lenient``)."""

    function: Truth
    loop: Truth
    shown: Truth
    lenient: bool = False

    def then(self, value: Truth, shown: Truth | None = None) -> _At:
        return _At(
            both(self.function, value),
            both(self.loop, value),
            both(self.shown, value if shown is None else shown),
            self.lenient,
        )


class Reach:
    """The reach of every statement of ``body`` under ``truth`` (a condition's text -> its truth)."""

    def __init__(self, body: Sequence[cf.Node], loop: cf.Node | None, truth: Callable[[str], Truth]) -> None:
        self.truth = truth
        self.documented = loop
        self.statements: dict[int, Truth] = {}  # id(node) -> reach
        self.headers: dict[tuple[int, int], Truth] = {}  # (id(node), arm): its test is evaluated
        self.loops: list[_Loop] = []
        self.catching = 0  # how many ``try`` bodies with handlers hold the statement being walked
        self._block(body, _At(True, True, True))

    def at(self, path: tuple[cf.Step, ...]) -> Truth:
        """The reach of the statement a located line is in (:func:`rlmap.index.controlflow.locate`)."""
        if not path:
            return True
        found = self.statements.get(id(path[-1].node))
        if found is not None:
            return found
        if len(path) > 1 and path[-2].arm is not None:  # an ``elif``/``except``/``case`` header
            return self.headers.get((id(path[-2].node), path[-2].arm), UNKNOWN)
        return UNKNOWN

    # -- the walk ----------------------------------------------------------------------------
    def _block(self, nodes: Sequence[cf.Node], entry: _At) -> Truth:
        """Records each statement's reach; returns whether the block falls through once entered."""
        falls: Truth = True
        shown: Truth = True
        for node in nodes:
            here = entry.then(falls, shown)
            self.statements[id(node)] = here.shown
            goes_on = self._node(node, here)
            falls = both(falls, goes_on)
            shown = both(shown, True if goes_on is UNKNOWN and entry.lenient else goes_on)
        return falls

    def _node(self, node: cf.Node, here: _At) -> Truth:
        """Whether control goes on after ``node``, once it is reached."""
        kind = node.kind
        if kind in (cf.RETURN, cf.RAISE):
            # a ``raise`` inside a ``try`` that has handlers may be caught: it may go on
            leaves: Truth = UNKNOWN if kind == cf.RAISE and self.catching else True
            for loop in self.loops[-1:]:
                loop.ends = _either(loop.ends, both(here.loop, leaves))
                loop.returns = _either(loop.returns, both(here.loop, leaves))
            return negation(leaves)
        if kind == cf.BREAK:
            for loop in self.loops[-1:]:
                loop.breaks = _either(loop.breaks, here.loop)
                loop.ends = _either(loop.ends, here.loop)
            return False
        if kind == cf.CONTINUE:
            return False
        if kind == cf.IF:
            return self._if(node, here)
        if kind == cf.LOOP:
            return self._loop(node, here)
        if kind == cf.TRY:
            return self._try(node, here)
        if kind == cf.MATCH:
            return self._alternatives(node, here, [UNKNOWN] * len(node.arms), exhaustive=False)
        if kind == cf.WITH:
            return self._block(node.arms[0].body, here)
        return True

    def _if(self, node: cf.Node, here: _At) -> Truth:
        taken: list[Truth] = []
        earlier_fail: Truth = True
        for arm in node.arms:
            own = True if arm.role == cf.ELSE else self.truth(arm.condition)
            taken.append(both(earlier_fail, own))
            earlier_fail = both(earlier_fail, negation(own))
        exhaustive = node.arms[-1].role == cf.ELSE
        return self._alternatives(node, here, taken, exhaustive, earlier_fail)

    def _alternatives(
        self, node: cf.Node, here: _At, taken: list[Truth], exhaustive: bool, none_taken: Truth = UNKNOWN
    ) -> Truth:
        """Arms of which at most one runs; ``taken[i]``: arm ``i`` runs (once ``node`` is reached)."""
        falls: list[Truth] = []
        reached: Truth = True  # the test of arm ``i`` is evaluated: no earlier arm was taken
        for index, (arm, runs) in enumerate(zip(node.arms, taken, strict=True)):
            self.headers[(id(node), index)] = here.then(reached).shown
            reached = both(reached, negation(runs))
            arm_falls = self._block(arm.body, here.then(runs))
            if runs is not False:
                falls.append(arm_falls)
        if not exhaustive and none_taken is not False:
            falls.append(True)  # no arm taken: straight on
        return _all(falls)

    def _loop(self, node: cf.Node, here: _At) -> Truth:
        body_runs: Truth = True if node is self.documented else UNKNOWN
        loop = _Loop()
        self.loops.append(loop)
        documented = node is self.documented
        inside = _At(both(here.function, body_runs), body_runs, both(here.shown, body_runs), here.lenient or documented)
        self._block(node.arms[0].body, inside)
        self.loops.pop()
        for outer in self.loops[-1:]:  # a ``return`` in this loop leaves the loop around it too
            outer.ends = _either(outer.ends, both(here.loop, loop.returns))
            outer.returns = _either(outer.returns, both(here.loop, loop.returns))
        normal_end = negation(loop.ends)
        if node.text in ("while True", "while 1"):
            normal_end = False  # only a break (or an exit) leaves it
        else_falls: Truth = True
        if len(node.arms) > 1:
            else_falls = self._block(node.arms[1].body, here.then(normal_end))
        if loop.breaks is True or (loop.returns is False and else_falls is True):
            return True  # every way out of the loop goes on after it
        if loop.breaks is False and (normal_end is False or else_falls is False):
            return False
        return UNKNOWN

    def _try(self, node: cf.Node, here: _At) -> Truth:
        falls: Truth = True
        handled = any(arm.role == cf.EXCEPT for arm in node.arms)
        for index, arm in enumerate(node.arms):
            if arm.role == cf.BODY:
                self.catching += handled
                falls = self._block(arm.body, here)
                self.catching -= handled
            elif arm.role == cf.EXCEPT:
                self.headers[(id(node), index)] = False
                self._block(arm.body, here.then(False))  # off the normal path
            elif arm.role == cf.ELSE:
                falls = both(falls, self._block(arm.body, here.then(falls)))
            else:  # finally: runs however the body ended
                falls = both(falls, self._block(arm.body, here))
        return falls


def _either(a: Truth, b: Truth) -> Truth:
    """Three-valued ``or``."""
    if a is True or b is True:
        return True
    return UNKNOWN if a is UNKNOWN or b is UNKNOWN else False


def _all(values: list[Truth]) -> Truth:
    """Every possible arm falls through (True), none does (False), or it depends."""
    if all(value is True for value in values):
        return True
    if all(value is False for value in values):
        return False
    return UNKNOWN
