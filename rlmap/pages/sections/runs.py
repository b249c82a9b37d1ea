"""Which steps of a flow run under each configuration the profile declares.

A step runs when the statement holding it is reached (:class:`rlmap.pages.reach.Reach`: every
way there is decided open, decided closed, or not decided) and, inside an expression, the
operands of ``and``/``or`` before it and the test of a conditional expression around it let it
run.  Each test is evaluated by :class:`rlmap.pages.conditions.Evaluator` under the
configuration's facts.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rlmap.index import controlflow as cf
from rlmap.literals import safe_repr, unparse
from rlmap.model.codemodel import ResolvedCall
from rlmap.pages.conditions import AN_OBJECT, UNKNOWN, Evaluator, normalize, parse_fact
from rlmap.pages.reach import Reach
from rlmap.pages.refs import Anchor
from rlmap.pages.sections import specs
from rlmap.pages.sections.base import Context
from rlmap.pages.shortcircuit import calls, parse_line

RUNS, SKIPPED, DEPENDS = "runs", "skipped", "depends"


@dataclass(frozen=True, slots=True)
class Derived:
    expression: str
    value: str
    anchors: tuple[Anchor | None, ...]
    assigned: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ConfigurationBody:
    id: str
    name: str
    summary: str
    facts: tuple[tuple[str, str], ...]  # its own and those it inherits
    derived: tuple[Derived, ...]
    runs: tuple[int, ...]  # the numbers of the steps that run
    depends: tuple[int, ...]
    exits: tuple[tuple[str, Anchor | None, str], ...]  # the exits that are or may be taken: (text, where, status)

    @property
    def runs_text(self) -> str:
        return spans(self.runs)

    @property
    def depends_text(self) -> str:
        return spans(self.depends)


def spans(numbers: Sequence[int]) -> str:
    """``1, 2, 3, 5, 7, 8`` -> ``1-3, 5, 7-8``."""
    parts: list[str] = []
    start = previous = None
    for number in sorted(numbers):
        if previous is not None and number == previous + 1:
            previous = number
            continue
        if start is not None:
            parts.append(str(start) if start == previous else f"{start}-{previous}")
        start = previous = number
    if start is not None:
        parts.append(str(start) if start == previous else f"{start}-{previous}")
    return ", ".join(parts)


@dataclass(frozen=True, slots=True)
class FactRow:
    """One expression across the configurations: given (a fact) or derived from the code."""

    expression: str
    anchors: tuple[Anchor | None, ...]  # derived: where the code assigns it
    values: tuple[str, ...]  # per configuration ("" where neither given nor derived)


def common_facts(configurations: Sequence[ConfigurationBody]) -> tuple[tuple[str, str], ...]:
    """The facts every configuration gives, with the same value."""
    if not configurations:
        return ()
    first = dict(configurations[0].facts)
    return tuple(
        (expression, value)
        for expression, value in first.items()
        if all(dict(c.facts).get(expression) == value for c in configurations[1:])
    )


def fact_rows(configurations: Sequence[ConfigurationBody]) -> tuple[FactRow, ...]:
    """The facts that differ between configurations (in the order written), then the derived
    attributes, sorted."""
    given: dict[str, None] = {}
    derived: dict[str, dict[Anchor | None, None]] = {}
    for config in configurations:
        given.update((expression, None) for expression, _ in config.facts)
        for row in config.derived:
            derived.setdefault(row.expression, {}).update((anchor, None) for anchor in row.anchors)
    common = dict(common_facts(configurations))
    rows = [
        FactRow(expression, (), tuple(dict(c.facts).get(expression, "") for c in configurations))
        for expression in given
        if expression not in common
    ]
    for expression in sorted(derived):
        values = tuple(
            next((row.value for row in c.derived if row.expression == expression), "") for c in configurations
        )
        anchors = tuple(sorted(derived[expression], key=lambda a: a.line if a else 0))
        rows.append(FactRow(expression, anchors, values))
    return tuple(rows)


class Runs:
    """The configurations of one flow section, and the status of each step under each."""

    def __init__(
        self, configurations: Sequence[specs.Configuration], ctx: Context, owner: str, flow: cf.FunctionFlow
    ) -> None:
        self.spec_configurations = configurations
        self.ctx = ctx
        self.flow = flow
        self.loop: cf.Node | None = None  # the loop the page documents, once found
        self._reaches: dict[int, Reach] = {}
        self.facts = self._configuration_facts()
        self.evaluators = [
            Evaluator(ctx.model, owner, {normalize(k): self._fact(c.id, k, v) for k, v in self.facts[c.id].items()})
            for c in configurations
        ]

    def _configuration_facts(self) -> dict[str, dict[str, str]]:
        """Each configuration's facts, after those of the configuration it inherits from."""
        facts: dict[str, dict[str, str]] = {}
        for number, config in enumerate(self.spec_configurations, 1):
            if config.id in facts:
                raise self.ctx.fail(f"configurations[{number}]: the id '{config.id}' is used twice")
            base: dict[str, str] = {}
            if config.inherits is not None:
                if config.inherits not in facts:
                    raise self.ctx.fail(
                        f"configurations[{number}] ({config.id}): inherits '{config.inherits}', "
                        "which is not an earlier configuration",
                        f"use one of: {', '.join(facts) or '(none: this is the first)'}",
                    )
                base = facts[config.inherits]
            facts[config.id] = {**base, **config.facts}
        return facts

    def _fact(self, config: str, expression: str, value: str) -> object:
        try:
            return parse_fact(value)
        except (ValueError, SyntaxError):
            raise self.ctx.fail(
                f"configuration '{config}': fact {expression} = {value!r} is not a Python literal",
                "write None, True, False, a number, a quoted string, () or ... (an object), or ? (not decided)",
            ) from None

    def status(self, path: tuple[cf.Step, ...], site: ResolvedCall | None) -> tuple[str, ...]:
        return tuple(self._status(evaluator, path, site) for evaluator in self.evaluators)

    def _status(self, evaluator: Evaluator, path: tuple[cf.Step, ...], site: ResolvedCall | None) -> str:
        values = [self._reach(evaluator).at(path)]
        if site is not None:
            values.extend(truth_of(evaluator, text) for text in preceding_operands(header_test(path), site.callee_text))
            if path:
                values.extend(
                    truth_of(evaluator, text) for text in ternary_conditions(path[-1].node.text, site.callee_text)
                )
        if any(value is False for value in values):
            return SKIPPED
        if any(value is UNKNOWN for value in values):
            return DEPENDS
        return RUNS

    def _reach(self, evaluator: Evaluator) -> Reach:
        """Where the function gets under the configuration (walked once, after the loop is known)."""
        found = self._reaches.get(id(evaluator))
        if found is None:
            found = self._reaches[id(evaluator)] = Reach(
                self.flow.body, self.loop, lambda text: truth_of(evaluator, text)
            )
        return found

    def configurations(self, steps: Sequence[Any]) -> tuple[ConfigurationBody, ...]:
        """Each configuration with its facts, the flags derived from the code, the numbers of the
        ``steps`` (calls and exits, in code order) that run or depend, and the exits it may take."""
        return tuple(self._configuration(index, steps) for index in range(len(self.spec_configurations)))

    def _configuration(self, index: int, steps: Sequence[Any]) -> ConfigurationBody:
        config = self.spec_configurations[index]
        derived = []
        for expression, row in sorted(self.evaluators[index].derived.items()):
            name = expression.rsplit(".", 1)[-1]
            anchors = tuple(self.ctx.anchor(function, name, line) for function, line, _ in row.writes)
            assigned = tuple(value for *_, value in row.writes)
            derived.append(Derived(expression, show_value(row.value), anchors, assigned))
        return ConfigurationBody(
            config.id,
            config.name,
            config.summary,
            tuple(self.facts[config.id].items()),
            tuple(derived),
            tuple(step.number for step in steps if step.kind == "call" and step.status[index] == RUNS),
            tuple(step.number for step in steps if step.kind == "call" and step.status[index] == DEPENDS),
            tuple(
                (step.text, step.anchor, step.status[index])
                for step in steps
                if step.kind == "exit" and step.status[index] != SKIPPED
            ),
        )


def truth_of(evaluator: Evaluator, text: str) -> object:
    return evaluator.condition(text) if text else True


def header_test(path: tuple[cf.Step, ...]) -> str:
    if not path:
        return ""
    node = path[-1].node
    if node.kind == cf.IF:
        return node.arms[0].condition
    if node.kind == cf.LOOP and node.text.startswith("while "):
        return node.text[len("while ") :]
    if len(path) > 1 and path[-2].arm is not None:
        parent = path[-2].node.arms[path[-2].arm]
        if parent.role == cf.ELIF and node.text == parent.condition:
            return parent.condition
    return ""


def preceding_operands(test: str, callee: str) -> list[str]:
    """The operands of a top-level ``and`` (or, negated, ``or``) written before the call."""
    try:
        node = ast.parse(test, mode="eval").body
    except SyntaxError:
        return []
    if not isinstance(node, ast.BoolOp):
        return []
    before: list[str] = []
    for operand in node.values:
        text = unparse(operand)
        if callee in text:
            return before
        before.append(text if isinstance(node.op, ast.And) else f"not ({text})")
    return []


def ternary_conditions(statement: str, callee: str) -> list[str]:
    """``f() if c else g()`` in ``statement`` (a simple statement, or a ``with``/``if`` header):
    the call ``callee`` runs only when ``c`` holds (in the ``else`` part, when it fails)."""
    tree = parse_line(statement)
    if tree is None:
        return []
    found: list[str] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.IfExp):
            continue
        test = unparse(node.test)
        if calls(node.body, callee):
            found.append(test)
        elif calls(node.orelse, callee):
            found.append(f"not ({test})")
    return found


def show_value(value: object) -> str:
    if value is AN_OBJECT:
        return "an object"
    return safe_repr(value)
