"""Statements and guards: ``if``/``while``/``for``/``except`` headers as guard texts, exits, assignments.

Every record carries the guards in force where it was written: the text of each enclosing
``if``/``elif``/``else``/``while``/``for``/``except`` header, plus ``not (c)`` for the rest of
a block after an ``if c: return`` (or ``raise``, ``continue``, ``break``).  Assignments hand
their targets to the attribute and key visitors and their names to the binding rules.
"""

from __future__ import annotations

import libcst as cst

from rlmap.index import lines as L
from rlmap.index.accesses import AccessVisitor
from rlmap.index.definitions import DefinitionVisitor
from rlmap.index.records import AUGMENTED, DELETE, READ, WRITE, ReturnSite
from rlmap.index.syntax import ends_in_exit


class StatementVisitor(DefinitionVisitor, AccessVisitor):
    """Handlers for compound statements (guards) and for assignment, ``del`` and ``return``."""

    def visit_if(self, node: cst.If, keyword: str = "if") -> None:
        _, _, (test,) = self.position(node, L.IF)
        self.walk(node.test)
        self.walk_guarded(f"{keyword} {test}", node.body)
        orelse = node.orelse
        if type(orelse) is cst.If:
            self.guards.append(f"not ({test})")
            try:
                self.visit_if(orelse, "elif")
            finally:
                self.guards.pop()
        elif type(orelse) is cst.Else:
            self.walk_guarded(f"else (not ({test}))", orelse.body)
        if keyword == "if" and orelse is None and ends_in_exit(node.body):
            self.exit_guard = f"not ({test})"  # the statements after this ``if`` run only when it failed

    def visit_block(self, node: cst.IndentedBlock) -> None:
        """A block's statements; after ``if c: return`` the rest of the block runs under ``not (c)``."""
        pushed = 0
        try:
            for statement in node.body:
                self.exit_guard = ""
                self.walk(statement)
                if self.exit_guard:
                    self.guards.append(self.exit_guard)
                    pushed += 1
                    self.exit_guard = ""
        finally:
            del self.guards[len(self.guards) - pushed :]

    def visit_simple_statements(self, node: cst.SimpleStatementLine | cst.SimpleStatementSuite) -> None:
        """A line's small statements; inside one written on one line, every expression is on
        that line, and the position source answers without pairing (``take_flat``)."""
        positions = self.positions
        for statement in node.body:
            if positions.statement(statement):
                self.position = positions.take_flat
                self.walk(statement)
                self.position = positions.take
            else:
                self.walk(statement)

    def visit_while(self, node: cst.While) -> None:
        _, _, (test,) = self.position(node, L.WHILE)
        self.walk(node.test)
        self.walk_guarded(f"while {test}", node.body)
        if node.orelse is not None:
            self.walk_guarded(f"else of while {test} (no break)", node.orelse.body)

    def visit_for(self, node: cst.For) -> None:
        _, _, (target, iterable) = self.position(node, L.FOR)
        self.record_loop(node.target, node.iter, f"for {target} in {iterable}")
        self.walk(node.target)
        self.walk(node.iter)
        self.walk_guarded(f"for {target} in {iterable}", node.body)
        if node.orelse is not None:
            self.walk_guarded(f"else of for {target} in {iterable} (no break)", node.orelse.body)

    def visit_comp_for(self, node: cst.CompFor) -> None:
        """``(td.get(k) for k in self.in_keys)``: the loop binds ``k`` like a ``for`` statement."""
        self.record_loop(node.target, node.iter)
        self.walk_children(node)

    def visit_except(self, node: cst.ExceptHandler | cst.ExceptStarHandler) -> None:
        _, _, (kind,) = self.position(node, L.EXCEPT)
        if node.name is not None and type(node.name.name) is cst.Name:
            self.bind_local(node.name.name.value, False)  # type: ignore[attr-defined]
        if node.type is not None:
            self.walk(node.type)
        guard = f"except {kind}" if kind else "except"
        self.walk_guarded(guard, node.body)

    def visit_assign(self, node: cst.Assign) -> None:
        line, _, (value_text,) = self.position(node, L.ASSIGN)
        for target in node.targets:
            self.walk_target(target.target, WRITE, node.value, value_text)
        self.walk(node.value)
        self.let_escape(node.value)  # (``x = d``, ``self.d = d``, ``out[k] = d``: another name for it)
        for target in node.targets:
            self.record_binding(target.target, node.value, line, value_text, "")
            self.record_declared_keys(target.target, node.value, line)

    def visit_ann_assign(self, node: cst.AnnAssign) -> None:
        line, _, (annotation, value_text) = self.position(node, L.ANN_ASSIGN)
        if node.value is not None:
            self.walk_target(node.target, WRITE, node.value, value_text, annotation)
        else:
            self.walk_target(node.target, READ, None, "", annotation)
        self.walk(node.annotation)
        if node.value is not None:
            self.walk(node.value)
            self.let_escape(node.value)
        self.record_binding(node.target, node.value, line, value_text, annotation)
        if node.value is not None:
            self.record_declared_keys(node.target, node.value, line)

    def visit_aug_assign(self, node: cst.AugAssign) -> None:
        _, _, (value_text,) = self.position(node, L.AUG_ASSIGN)
        self.walk_target(node.target, AUGMENTED, node.value, value_text)
        self.walk(node.value)

    def visit_return(self, node: cst.Return) -> None:
        line, _, (value,) = self.position(node, L.RETURN)
        self.returns.append(ReturnSite(self.function_scope(), line, value, tuple(self.guards)))
        if node.value is not None:
            self.walk(node.value)
            if not self.scope.plain_result or type(node.value) is not cst.Name:
                self.let_escape(node.value)  # (``return d`` of a plain mapping: see let_escape)

    def visit_yield(self, node: cst.Yield) -> None:
        """``yield d``: what it yields leaves the function (:meth:`let_escape`)."""
        if type(node.value) is not cst.From:
            self.let_escape(node.value)  # type: ignore[arg-type]
        self.walk_children(node)

    def visit_named_expr(self, node: cst.NamedExpr) -> None:
        """``(d := ...)``: ``d`` rebound to what the model does not follow."""
        if type(node.target) is cst.Name:
            self.bind_local(node.target.value, False)  # type: ignore[attr-defined]
        self.let_escape(node.value)
        self.walk_children(node)

    def visit_with_item(self, node: cst.WithItem) -> None:
        """``with ... as d``: ``d`` rebound to what the model does not follow."""
        if node.asname is not None and type(node.asname.name) is cst.Name:
            self.bind_local(node.asname.name.value, False)  # type: ignore[attr-defined]
        self.walk_children(node)

    def visit_global(self, node: cst.Global | cst.Nonlocal) -> None:
        """``global d``: a name bound outside the function, whatever it is bound to there."""
        for item in node.names:
            self.bind_local(item.name.value, False)

    def visit_del(self, node: cst.Del) -> None:
        self.walk_target(node.target, DELETE, None, "")

    def walk_target(
        self,
        target: cst.BaseExpression,
        kind: str,
        value: cst.BaseExpression | None,
        value_text: str,
        annotation: str = "",
    ) -> None:
        """An assignment or ``del`` target: unpacked, then an attribute, a subscript or a name."""
        shape = type(target)  # libcst's node classes have no subclasses: no ``isinstance`` (ABCMeta)
        if shape is cst.Tuple or shape is cst.List:
            for element in target.elements:  # type: ignore[attr-defined]
                self.walk_target(element.value, kind, None, "", "")
        elif shape is cst.StarredElement:
            self.walk_target(target.value, kind, None, "", "")  # type: ignore[attr-defined]
        elif shape is cst.Name and value is None:  # an element of ``a, b = ...``: rebound to what is unknown
            self.bind_local(target.value, False)  # type: ignore[attr-defined]
            self.walk(target)
        elif shape is cst.Attribute:
            self.visit_attribute(target, kind, value, value_text, annotation)  # type: ignore[arg-type]
        elif shape is cst.Subscript:  # ``self.x[k] = v`` changes self.x
            self.mutated = (target.value, "del []" if kind == DELETE else "[]=")  # type: ignore[attr-defined]
            self.visit_subscript(target, WRITE if kind in (WRITE, AUGMENTED) else kind)  # type: ignore[arg-type]
        else:
            self.walk(target)
