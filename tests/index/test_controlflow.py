"""The control flow of one function, from libcst: blocks, arms, conditions and line placement."""

from __future__ import annotations

import textwrap

import pytest

from rlmap.index import controlflow as cf

SOURCE = textwrap.dedent(
    '''\
    class Runner:
        @staticmethod
        def run(self, items, mode):
            """Doc."""
            total = 0
            for item in items:
                if item is None:
                    continue
                elif (
                    item.skip
                    and mode == "fast"
                ):
                    self.note(item)
                else:
                    total += self.weigh(item)
                if total > 10:
                    break
            else:
                self.finish()
            try:
                self.flush()
            except (OSError, ValueError):
                self.retry()
            else:
                self.ok()
            finally:
                self.close()
            with self.lock() as held, open("x"):
                self.use(held)
            match mode:
                case "a" if total:
                    return 1
                case _:
                    raise ValueError(mode)

            def helper():
                self.never_here()
            return total
    '''
)


def _flow() -> cf.FunctionFlow:
    lines = SOURCE.splitlines(keepends=True)
    def_line = next(n for n, text in enumerate(lines, 1) if "def run" in text)
    return cf.function_flow("".join(lines[def_line - 1 :]), def_line)


def _line(needle: str) -> int:
    return next(n for n, text in enumerate(SOURCE.splitlines(), 1) if needle in text)


def test_blocks_keep_the_statements_and_their_kinds_in_order() -> None:
    flow = _flow()
    assert flow.name == "run"
    assert flow.line == _line("def run")
    kinds = [node.kind for node in flow.body]
    assert kinds == [cf.STATEMENT, cf.STATEMENT, cf.LOOP, cf.TRY, cf.WITH, cf.MATCH, cf.STATEMENT, cf.RETURN]
    loop = flow.body[2]
    assert loop.text == "for item in items"
    assert [arm.role for arm in loop.arms] == [cf.BODY, cf.ELSE]
    branch = loop.arms[0].body[0]
    assert [(arm.role, arm.condition) for arm in branch.arms] == [
        (cf.THEN, "item is None"),
        (cf.ELIF, 'item.skip and mode == "fast"'),  # parentheses that only span lines dropped
        (cf.ELSE, ""),
    ]
    assert branch.arms[0].body[0].kind == cf.CONTINUE
    assert loop.arms[0].body[1].arms[0].body[0].kind == cf.BREAK
    assert [(arm.role, arm.condition) for arm in flow.body[3].arms] == [
        (cf.BODY, ""),
        (cf.EXCEPT, "(OSError, ValueError)"),
        (cf.ELSE, ""),
        (cf.FINALLY, ""),
    ]
    assert flow.body[4].text == 'with self.lock() as held, open("x")'
    match = flow.body[5]
    assert [arm.condition for arm in match.arms] == ['"a" if total', "_"]
    assert [arm.body[0].kind for arm in match.arms] == [cf.RETURN, cf.RAISE]
    assert flow.body[6].text == "def helper"  # a nested def is one statement
    assert flow.body[7].text == "return total"


def test_lines_are_the_files_lines_and_placement_follows_the_arms() -> None:
    flow = _flow()
    note = cf.locate(flow.body, _line("self.note(item)"))
    assert [(step.node.kind, step.arm) for step in note] == [(cf.LOOP, 0), (cf.IF, 1), (cf.STATEMENT, None)]
    assert note[-1].node.line == _line("self.note(item)")
    # a line of the elif's test sits in that arm's header: reached, the arm not entered
    test = cf.locate(flow.body, _line("and mode =="))
    assert test[1].arm == 1
    assert test[-1].node.text == 'item.skip and mode == "fast"'
    finish = cf.locate(flow.body, _line("self.finish()"))
    assert [(step.node.kind, step.arm) for step in finish][:1] == [(cf.LOOP, 1)]
    retry = cf.locate(flow.body, _line("self.retry()"))
    assert retry[0].node.kind == cf.TRY
    assert retry[0].node.arms[retry[0].arm or 0].role == cf.EXCEPT
    header = cf.locate(flow.body, _line("with self.lock()"))
    assert header[-1] == cf.Step(flow.body[4], None)
    inner = cf.locate(flow.body, _line("self.never_here()"))
    assert inner[-1].node.text == "def helper"  # placed on the def, not inside its body
    assert cf.locate(flow.body, 1) == ()


def test_a_method_parses_at_its_own_indentation_and_bad_text_is_an_error() -> None:
    flow = cf.function_flow("        def f(x):\n            if x:\n                return 1\n", 40)
    assert flow.line == 40
    assert flow.body[0].line == 41
    assert flow.body[0].arms[0].body[0].line == 42
    with pytest.raises(cf.FlowError):
        cf.function_flow("def f(:\n", 1)
    with pytest.raises(cf.FlowError):
        cf.function_flow("x = 1\n", 1)


def test_a_branch_on_its_headers_line_holds_its_statements() -> None:
    """``if c: f(); g()`` (a suite on the header's line): its statements were read as none, so
    the branches were empty and what they do was placed outside them."""
    from rlmap.index.controlflow import ELIF, ELSE, IF, STATEMENT, THEN, function_flow, locate

    source = "def f(x):\n    if x: a(); b()\n    elif y: c()\n    else: return d()\n"
    flow = function_flow(source, 10)
    (branch,) = flow.body
    assert branch.kind == IF
    assert [(arm.role, [(node.kind, node.line, node.text) for node in arm.body]) for arm in branch.arms] == [
        (THEN, [(STATEMENT, 11, "a()"), (STATEMENT, 11, "b()")]),
        (ELIF, [(STATEMENT, 12, "c()")]),
        (ELSE, [("return", 13, "return d()")]),
    ]
    assert [(step.node.kind, step.arm) for step in locate(flow.body, 13)] == [(IF, 2), ("return", None)]
