"""Printing a constant of the analysed code, whatever its size; finding a word in its text."""

from __future__ import annotations

import ast
import copy


def safe_repr(value: object) -> str:
    """``repr(value)``; an integer too long for Python to print in decimal (over 4,300 digits:
    ``0xfff...`` is valid source) in hexadecimal, exact, where ``repr`` raises."""
    try:
        return repr(value)
    except ValueError:
        if isinstance(value, int):
            return hex(value)
        raise


def unparse(node: ast.AST) -> str:
    """``ast.unparse(node)``, an integer too long to print in decimal written in hexadecimal
    (``ast.unparse`` raises on it, as ``repr`` does)."""
    try:
        return ast.unparse(node)
    except ValueError:
        return ast.unparse(_HexIntegers().visit(copy.deepcopy(node)))


class _HexIntegers(ast.NodeTransformer):
    """Each integer constant too long for decimal, as a name spelling it in hexadecimal (which
    ``ast.unparse`` writes as it is)."""

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        if isinstance(node.value, int) and not isinstance(node.value, bool):
            spelled = safe_repr(node.value)
            if spelled.startswith(("0x", "-0x")):
                return ast.copy_location(ast.Name(id=spelled, ctx=ast.Load()), node)
        return node


def holds_word(line: str, word: str) -> bool:
    """Whether ``line`` holds ``word`` with no letter, digit or ``_`` right before or after it
    (a search, not a regular expression: one per key would be compiled anew)."""
    at = line.find(word)
    while at != -1:
        end = at + len(word)
        before = line[at - 1] if at else " "
        after = line[end] if end < len(line) else " "
        if not (before.isalnum() or before == "_") and not (after.isalnum() or after == "_"):
            return True
        at = line.find(word, at + 1)
    return False
