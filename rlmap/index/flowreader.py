"""The libcst reading of :func:`rlmap.index.controlflow.function_flow`: one function's source
to its :class:`~rlmap.index.controlflow.FunctionFlow` (the only module of the pages that imports
libcst)."""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from rlmap.index.controlflow import (
    BODY,
    BREAK,
    CASE,
    CONTINUE,
    ELIF,
    ELSE,
    EXCEPT,
    FINALLY,
    IF,
    LOOP,
    MATCH,
    RAISE,
    RETURN,
    STATEMENT,
    THEN,
    TRY,
    WITH,
    Arm,
    FlowError,
    FunctionFlow,
    Node,
    one_line,
)


def read_flow(source: str, def_line: int) -> FunctionFlow:
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
        if isinstance(body, cst.SimpleStatementSuite):  # ``if c: f(); g()``: the statements on its line
            return tuple(self.small(small) for small in body.body)
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
        # (``a(); b()``: the separator is the statement's in libcst, not part of what it does)
        return Node(kind, start, end, end, self.text(node.with_changes(semicolon=cst.MaybeSentinel.DEFAULT)))

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
