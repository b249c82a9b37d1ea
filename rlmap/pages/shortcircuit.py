"""The conditions ``and``/``or`` put on a call: ``a and f()`` calls ``f`` only when ``a`` holds,
``a or f()`` only when it fails (Python stops at the first operand that decides).

Read from one source line (a simple statement or a block header that fits on it), parsed with
:mod:`ast` and never run; a line that does not parse on its own gives no condition.
"""

from __future__ import annotations

import ast

from rlmap.literals import unparse


def operand_conditions(line: str, callee: str) -> list[str]:
    """The operands written before the one that calls ``callee`` on ``line``, as conditions (none
    when no single operand of an ``and``/``or`` calls it)."""
    tree = parse_line(line)
    if tree is None:
        return []
    found: list[str] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.BoolOp):
            continue
        holding = [index for index, operand in enumerate(node.values) if calls(operand, callee)]
        if len(holding) != 1 or holding[0] == 0:
            continue
        before = node.values[: holding[0]]
        if isinstance(node.op, ast.And):
            found.extend(unparse(operand) for operand in before)
        else:
            found.extend(f"not ({unparse(operand)})" for operand in before)
    return found


def parse_line(line: str) -> ast.Module | None:
    """A simple statement, or a block header (``if c:``, ``with m:``) given an empty body;
    ``None`` when it does not parse on its own."""
    text = line.strip()
    for candidate in (text, text.rstrip(":") + ":\n    pass"):
        try:
            return ast.parse(candidate)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
    return None


def calls(node: ast.AST, callee: str) -> bool:
    """Whether ``node`` holds a call of ``callee`` (as :func:`ast.unparse` writes the callee)."""
    return any(isinstance(n, ast.Call) and unparse(n.func) == callee for n in ast.walk(node))
