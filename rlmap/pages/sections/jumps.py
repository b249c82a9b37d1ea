"""Where a ``break`` or ``continue`` goes: not out of the function, but on inside it.

A ``break`` leaves the innermost loop whose body holds it and goes on at the first statement
after that loop (skipping the loop's ``else``); if nothing follows, at the first statement after
the block around it, and so on outwards; when nothing follows anywhere, the function ends
(returning ``None``).  A ``continue`` goes back to the head of that loop.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from rlmap.index import controlflow as cf
from rlmap.pages.refs import Anchor


@dataclass(frozen=True, slots=True)
class Continuation:
    """What runs after a jump: a ``statement``, or the ``head`` of a loop (its next iteration),
    or neither (the function ends); ``loop`` is the loop the jump belongs to (None outside any)."""

    loop: cf.Node | None
    statement: cf.Node | None = None
    head: cf.Node | None = None


def continuation(body: Sequence[cf.Node], jump: cf.Node) -> Continuation:
    path = cf.locate(body, jump.line)
    depth = next((i for i in range(len(path) - 1, -1, -1) if path[i].node.kind == cf.LOOP and path[i].arm == 0), None)
    if depth is None:
        return Continuation(None)
    loop = path[depth].node
    if jump.kind == cf.CONTINUE:
        return Continuation(loop, head=loop)
    return _after(loop, body, path[: depth + 1])


def _after(loop: cf.Node, body: Sequence[cf.Node], path: Sequence[cf.Step]) -> Continuation:
    """What runs once the last statement of ``path`` completes, looking outwards."""
    for depth in range(len(path) - 1, -1, -1):
        node = path[depth].node
        if depth == 0:
            block: Sequence[cf.Node] = body
        else:
            parent = path[depth - 1]
            if parent.node.kind == cf.LOOP and parent.arm == 0:
                return Continuation(loop, head=parent.node)  # the end of an enclosing loop's body
            block = parent.node.arms[parent.arm or 0].body
        position = next(i for i, sibling in enumerate(block) if sibling is node)
        if position + 1 < len(block):
            return Continuation(loop, statement=block[position + 1])
    return Continuation(loop)


@dataclass(frozen=True, slots=True)
class Destination:
    """Where a ``break`` goes on: the step numbered there, or the statement (its text), or the
    end of the function (neither); ``skips_else`` when the loop it leaves has an ``else``."""

    number: int = 0
    text: str = ""
    anchor: Anchor | None = None
    skips_else: bool = False


def destination(
    jump: str, where: Continuation, rows: Sequence[Any], anchor: Callable[[str, int], Anchor | None]
) -> Destination:
    """The destination of the jump ``jump`` (its text) among the outline's ``rows`` (numbered
    calls and exits, with ``kind``, ``number``, ``text`` and ``anchor``): the first of them in the
    statement it goes on at, else that statement itself."""
    skips_else = where.loop is not None and len(where.loop.arms) > 1
    target = where.statement or where.head
    if jump.startswith("continue") or target is None:
        return Destination(skips_else=skips_else)  # the loop's head; the function's end
    if where.statement is not None:
        header = range(target.line, target.header_end + 1)
        first = next((row for row in rows if row.anchor is not None and row.anchor.line in header), None)
        if first is not None:
            number = first.number if first.kind == "call" else 0
            return Destination(number, "" if number else first.text, first.anchor, skips_else)
    word = target.text.split(" ", 1)[0] if target.arms else target.kind
    return Destination(0, target.text, anchor(word, target.line), skips_else)
