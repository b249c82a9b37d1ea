"""The control flow of one function, read from its libcst tree: the blocks a reader follows.

:func:`function_flow` parses the source of a single function (:mod:`rlmap.index.flowreader`)
and returns a tree of
:class:`Node` s: simple statements, exits (``return``, ``raise``, ``break``, ``continue``) and
compound statements (``if``/``elif``/``else``, ``for``/``while`` with their ``else``,
``try``/``except``/``else``/``finally``, ``with``, ``match``), each compound statement with its
:class:`Arm` s (the branches, handlers or bodies it may run), conditions kept as source text.
Lines are the file's lines, so the call sites and attribute accesses of the index can be placed
in the block that holds them (:func:`locate`).  A nested ``def``/``class``/``lambda`` is one
statement: its body does not run where it is written.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

# Node kinds
STATEMENT = "statement"
IF = "if"
LOOP = "loop"
TRY = "try"
WITH = "with"
MATCH = "match"
RETURN = "return"
RAISE = "raise"
BREAK = "break"
CONTINUE = "continue"
EXITS = (RETURN, RAISE, BREAK, CONTINUE)

# Arm roles
THEN = "if"
ELIF = "elif"
ELSE = "else"  # of an if, a loop (runs when the loop ends without ``break``) or a try (no exception)
BODY = "body"  # of a loop, a try or a with
EXCEPT = "except"
FINALLY = "finally"
CASE = "case"

_MAX_TEXT = 400


@dataclass(frozen=True, slots=True)
class Arm:
    """One way through a compound statement: a branch, the loop body, a handler, a case."""

    role: str
    condition: str  # the test, exception type or pattern as written; "" for else/body/finally
    line: int  # the arm's header line (``elif``, ``else:``, ``except``); the body's for ``body``
    header_end: int  # the last line of the arm's header (a condition may span lines)
    body: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class Node:
    """A statement.  ``text`` is a one-line rendering of the statement (a compound statement's
    header: ``for t in range(n)``, ``while x``, ``with a as b``; an exit with its value)."""

    kind: str
    line: int
    end_line: int
    header_end: int  # the last line of the header; a simple statement's last line
    text: str
    arms: tuple[Arm, ...] = ()


@dataclass(frozen=True, slots=True)
class FunctionFlow:
    name: str
    line: int  # the ``def`` line
    end_line: int
    body: tuple[Node, ...]


class FlowError(ValueError):
    """The text given is not the source of a function."""


def function_flow(source: str, def_line: int) -> FunctionFlow:
    """The flow of the function whose ``def`` (after its decorators) is the first line of
    ``source``, which is line ``def_line`` of its file.  Indentation is kept as in the file.
    Read with libcst (:mod:`rlmap.index.flowreader`), imported here only: a run whose flows
    all come from the cache (:class:`rlmap.pages.flows.Flows`) never imports it."""
    from rlmap.index.flowreader import read_flow

    return read_flow(source, def_line)


def one_line(code: str) -> str:
    """Source text on one line: runs of whitespace (line breaks included) become one space,
    spaces just inside brackets go, and the result is bounded."""
    text = " ".join(code.split())
    for opening in "([{":
        text = text.replace(opening + " ", opening)
    for closing in ")]}":
        text = text.replace(" " + closing, closing)
    return text if len(text) <= _MAX_TEXT else text[: _MAX_TEXT - 1] + "…"


# -- placing a line ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Step:
    """One step of the way from the function's body to a line: a compound statement, and the arm
    taken (``None`` while the line is in the statement's own header)."""

    node: Node
    arm: int | None


def locate(body: Sequence[Node], line: int) -> tuple[Step, ...]:
    """The compound statements and arms enclosing ``line``, outermost first, ending with the
    statement that holds it (``arm`` None); empty if no statement of ``body`` holds it."""
    path: list[Step] = []
    nodes: Sequence[Node] = body
    while True:
        node = next((n for n in nodes if n.line <= line <= n.end_line), None)
        if node is None:
            return tuple(path)
        if not node.arms or line <= node.header_end:
            path.append(Step(node, None))
            return tuple(path)
        index = _arm_at(node, line)
        if index is None:
            path.append(Step(node, None))
            return tuple(path)
        arm = node.arms[index]
        if arm.role in (ELIF, EXCEPT, CASE) and arm.line <= line <= arm.header_end:
            path.append(Step(node, index))  # in the arm's own header: reached, not entered
            path.append(Step(Node(STATEMENT, arm.line, arm.header_end, arm.header_end, arm.condition), None))
            return tuple(path)
        path.append(Step(node, index))
        nodes = arm.body


def _arm_at(node: Node, line: int) -> int | None:
    """The last arm starting at or before ``line`` (arms are in source order)."""
    found = None
    for index, arm in enumerate(node.arms):
        first = min([arm.line, *(n.line for n in arm.body)]) if arm.line else min(n.line for n in arm.body)
        if first <= line:
            found = index
    return found
