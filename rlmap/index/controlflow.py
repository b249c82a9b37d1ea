"""The control flow of one function, read from its libcst tree: the blocks a reader follows.

:func:`function_flow` parses the source of a single function and returns a tree of
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

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

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
    ``source``, which is line ``def_line`` of its file.  Indentation is kept as in the file."""
    # Any indentation is a valid block under one header, so a method's source parses as is.
    indented = source[:1].isspace()
    text = ("if 1:\n" + source) if indented else source
    try:
        module = cst.parse_module(text)
    except cst.ParserSyntaxError as error:
        raise FlowError(f"cannot parse the function: {error.message}") from None
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    positions = wrapper.resolve(PositionProvider)
    body = module.body[0].body.body if indented else module.body  # type: ignore[attr-defined,union-attr]
    function = next((node for node in body if isinstance(node, cst.FunctionDef)), None)
    if function is None:
        raise FlowError("the source holds no function definition")
    # the ``def`` line (its name's) is line ``def_line`` of the file
    reader = _Reader(module, positions, def_line - positions[function.name].start.line)
    return FunctionFlow(function.name.value, def_line, reader.end(function), reader.block(function.body))


class _Reader:
    def __init__(self, module: cst.Module, positions, offset: int) -> None:  # type: ignore[no-untyped-def]
        self.module = module
        self.positions = positions
        self.offset = offset

    # -- positions and text ----------------------------------------------------------------
    def span(self, node: cst.CSTNode) -> tuple[int, int]:
        position = self.positions[node]
        return position.start.line + self.offset, position.end.line + self.offset

    def start(self, node: cst.CSTNode) -> int:
        return self.span(node)[0]

    def end(self, node: cst.CSTNode) -> int:
        return self.span(node)[1]

    def text(self, node: cst.CSTNode) -> str:
        return one_line(self.module.code_for_node(node))

    def condition(self, node: cst.BaseExpression) -> str:
        """A test as written, without the parentheses that only let it span lines."""
        return self.text(node.with_changes(lpar=[], rpar=[]) if node.lpar else node)

    # -- blocks ------------------------------------------------------------------------------
    def block(self, body: cst.BaseSuite | Sequence[cst.BaseStatement]) -> tuple[Node, ...]:
        statements = body.body if isinstance(body, cst.BaseSuite) else body
        nodes: list[Node] = []
        for statement in statements:
            if isinstance(statement, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
                nodes.extend(self.small(small) for small in statement.body)
            elif isinstance(statement, cst.BaseCompoundStatement):
                nodes.append(self.compound(statement))
        return tuple(nodes)

    def small(self, node: cst.BaseSmallStatement) -> Node:
        start, end = self.span(node)
        kind = STATEMENT
        if isinstance(node, cst.Return):
            kind = RETURN
        elif isinstance(node, cst.Raise):
            kind = RAISE
        elif isinstance(node, cst.Break):
            kind = BREAK
        elif isinstance(node, cst.Continue):
            kind = CONTINUE
        return Node(kind, start, end, end, self.text(node))

    def compound(self, node: cst.BaseCompoundStatement) -> Node:
        start, end = self.span(node)
        if isinstance(node, cst.If):
            return Node(IF, start, end, self.end(node.test), "if " + self.condition(node.test), self.if_arms(node))
        if isinstance(node, cst.For):
            prefix = "async for " if node.asynchronous else "for "
            header = f"{prefix}{self.text(node.target)} in {self.text(node.iter)}"
            return Node(LOOP, start, end, self.end(node.iter), header, self.loop_arms(node))
        if isinstance(node, cst.While):
            return Node(
                LOOP, start, end, self.end(node.test), "while " + self.condition(node.test), self.loop_arms(node)
            )
        if isinstance(node, (cst.Try, cst.TryStar)):
            return Node(TRY, start, end, start, "try", self.try_arms(node))
        if isinstance(node, cst.With):
            items = ", ".join(self.text(item.with_changes(comma=cst.MaybeSentinel.DEFAULT)) for item in node.items)
            prefix = "async with " if node.asynchronous else "with "
            header_end = self.end(node.items[-1]) if node.items else start
            return Node(WITH, start, end, header_end, prefix + items, (self.arm(BODY, "", node.body),))
        if isinstance(node, cst.Match):
            arms = tuple(self.case(case) for case in node.cases)
            return Node(MATCH, start, end, self.end(node.subject), "match " + self.text(node.subject), arms)
        # a nested def or class: one statement, its body runs elsewhere
        header = self.text(node.name) if isinstance(node, (cst.FunctionDef, cst.ClassDef)) else ""
        word = "class" if isinstance(node, cst.ClassDef) else "def"
        return Node(STATEMENT, start, end, end, f"{word} {header}".strip())

    def arm(self, role: str, condition: str, body: cst.BaseSuite, line: int = 0, header_end: int = 0) -> Arm:
        statements = self.block(body)
        first = line or (statements[0].line if statements else 0)
        return Arm(role, condition, first, header_end or first, statements)

    def if_arms(self, node: cst.If) -> tuple[Arm, ...]:
        arms = [Arm(THEN, self.condition(node.test), self.start(node), self.end(node.test), self.block(node.body))]
        orelse = node.orelse
        while orelse is not None:
            if isinstance(orelse, cst.If):
                test = orelse.test
                arms.append(
                    Arm(ELIF, self.condition(test), self.start(orelse), self.end(test), self.block(orelse.body))
                )
                orelse = orelse.orelse
            else:
                line = self.start(orelse)
                arms.append(Arm(ELSE, "", line, line, self.block(orelse.body)))
                orelse = None
        return tuple(arms)

    def loop_arms(self, node: cst.For | cst.While) -> tuple[Arm, ...]:
        arms = [self.arm(BODY, "", node.body)]
        if node.orelse is not None:
            line = self.start(node.orelse)
            arms.append(Arm(ELSE, "", line, line, self.block(node.orelse.body)))
        return tuple(arms)

    def try_arms(self, node: cst.Try | cst.TryStar) -> tuple[Arm, ...]:
        arms = [self.arm(BODY, "", node.body)]
        for handler in node.handlers:
            kind = self.text(handler.type) if handler.type is not None else ""
            line = self.start(handler)
            header_end = self.end(handler.type) if handler.type is not None else line
            arms.append(Arm(EXCEPT, kind, line, header_end, self.block(handler.body)))
        if node.orelse is not None:
            line = self.start(node.orelse)
            arms.append(Arm(ELSE, "", line, line, self.block(node.orelse.body)))
        if node.finalbody is not None:
            line = self.start(node.finalbody)
            arms.append(Arm(FINALLY, "", line, line, self.block(node.finalbody.body)))
        return tuple(arms)

    def case(self, case: cst.MatchCase) -> Arm:
        pattern = self.text(case.pattern) + (f" if {self.text(case.guard)}" if case.guard is not None else "")
        line = self.start(case)
        return Arm(CASE, pattern, line, self.end(case.guard or case.pattern), self.block(case.body))


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
