"""``a and f()`` calls ``f`` only when ``a`` holds: the call rows say so."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from rlmap.pages.refs import Refs
from rlmap.pages.sections.base import Context
from rlmap.pages.shortcircuit import operand_conditions
from tests.conftest import model_of


def test_operands_before_the_call_are_its_conditions() -> None:
    header = "if native and key in td.keys(True, True):"
    assert operand_conditions(header, "td.keys") == ["native"]
    assert operand_conditions("x = ready or self.load()", "self.load") == ["not (ready)"]
    assert operand_conditions("if f() and g():", "f") == []  # the first operand always runs
    assert operand_conditions("y = f() and f()", "f") == []  # which of the two a site is: unknown
    assert operand_conditions("return (", "f") == []  # a line that does not parse alone


def test_a_call_row_carries_the_operands_before_it(make_package: Callable[[dict[str, str | bytes]], Path]) -> None:
    root = make_package(
        {
            "sc/__init__.py": "",
            "sc/m.py": """
                def check():
                    return True


                def work(native):
                    if native and check():
                        return 1
                    return check()
            """,
        }
    )
    model = model_of(root, "sc")
    rows = Context(model, Refs(model, root), "test").calls_of("sc.m.work")
    guards = sorted(row.guard for row in rows)
    # the test's call runs only when ``native`` holds; the last one only when the ``if`` failed
    assert guards == ["native", "not (native and check())"]
