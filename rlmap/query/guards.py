"""Guards as a person reads them: ``not (not x)`` is ``x``, ``not (a is None)`` is ``a is not None``,
``not (a is None and not b)`` is ``a is not None or b``.

The index records each guard as written, with ``not (...)`` around the test of the branch not
taken (``else``, the code after an ``if`` that returns).  :func:`readable_guard` undoes the
double negations, folds a negated comparison into its operator, and a negated ``and``/``or`` of
such operands into its dual (De Morgan), for ``rlmap show``'s text
only (JSON keeps the guards as recorded).  Anything it cannot parse is left as it is.
"""

from __future__ import annotations

import ast
import re

from rlmap.literals import unparse

# A comparison operator and its negation (``not (a == b)`` is ``a != b``).
_NEGATED = {"==": "!=", "!=": "==", "is": "is not", "is not": "is", "in": "not in", "not in": "in"}
_OPERATOR = {ast.Eq: "==", ast.NotEq: "!=", ast.Is: "is", ast.IsNot: "is not", ast.In: "in", ast.NotIn: "not in"}
# Expressions that need no parentheses after ``not``.
_ATOMS = (ast.Name, ast.Attribute, ast.Call, ast.Subscript, ast.Constant)


def _parse(text: str) -> ast.expr | None:
    try:
        return ast.parse(text.strip(), mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _segment(text: str, node: ast.AST) -> str:
    return ast.get_source_segment(text, node) or unparse(node)


def simplified(text: str) -> str:
    """An expression's text with its double negations and negated comparisons folded."""
    node = _parse(text)
    if node is None:
        return text
    text = text.strip()
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return negated(_segment(text, node.operand))
    return text


def negated(text: str) -> str:
    """``not text``, simplified: ``not (not x)`` -> ``x``; ``not (a is None)`` -> ``a is not None``."""
    node = _parse(text)
    text = text.strip()
    if node is None:
        return f"not ({text})"
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return simplified(_segment(text, node.operand))
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _OPERATOR:
        left, right = (_operand(text, operand) for operand in (node.left, node.comparators[0]))
        return f"{left} {_NEGATED[_OPERATOR[type(node.ops[0])]]} {right}"
    if isinstance(node, ast.BoolOp) and all(_folds(value) for value in node.values):
        # ``not (a is None and not b)`` -> ``a is not None or b``: each operand negates without a ``not``
        dual = " or " if isinstance(node.op, ast.And) else " and "
        return dual.join(_grouped(negated(_segment(text, value))) for value in node.values)
    if isinstance(node, _ATOMS):
        return f"not {text}"
    return f"not ({text})"


def _operand(text: str, node: ast.expr) -> str:
    """A comparison's operand as written, in the parentheses it needs there (a node's text does
    not hold the parentheses around it: ``(x := f()) is None``, ``(a or b) == c``)."""
    shown = _segment(text, node)
    loose = (ast.NamedExpr, ast.IfExp, ast.Lambda, ast.BoolOp, ast.Compare, ast.Yield, ast.YieldFrom)
    if isinstance(node, loose) or (isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not)):
        return f"({shown})"
    return shown


def _folds(node: ast.expr) -> bool:
    """Whether ``not node`` reads without a ``not``: a comparison :data:`_NEGATED` turns round, or a
    negation (``is``/``in``/``==`` and their inverses are exact opposites; ``<`` is not: a set's)."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return True
    return isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _OPERATOR


def _grouped(text: str) -> str:
    """``text`` as an operand of ``and``/``or``: in parentheses when it is itself one, or looser."""
    node = _parse(text)
    loose = isinstance(node, (ast.BoolOp, ast.IfExp, ast.Lambda, ast.NamedExpr))
    return f"({text})" if loose else text


def readable_guard(guard: str) -> str:
    """One recorded guard (``if x``, ``elif x``, ``not (x)``, ``else (not (x))``, ``for ...``),
    simplified, without the trailing comma of a call's arguments that a formatter leaves in a
    call split over lines (``hasattr(x, "out_keys",)``)."""
    for head in ("if ", "elif ", "while "):
        if guard.startswith(head):
            return head + simplified(_without_trailing_commas(guard[len(head) :]))
    if guard.startswith("else (") and guard.endswith(")"):
        return "else: " + simplified(_without_trailing_commas(guard[len("else (") : -1]))
    if guard.startswith("not (") and guard.endswith(")") and _parse(guard) is not None:
        return simplified(_without_trailing_commas(guard))
    return guard


_TRAILING_COMMA = re.compile(rb",\s*\)$")


def _without_trailing_commas(text: str) -> str:
    """``text`` (one line) without the comma after a call's last argument: a tuple's stays."""
    node = _parse(text)
    if node is None or "\n" in text:
        return text
    written = text.strip().encode("utf-8")  # (the offsets ast gives count UTF-8 bytes)
    cuts = []
    for call in ast.walk(node):
        if isinstance(call, ast.Call) and (call.args or call.keywords) and call.end_col_offset is not None:
            found = _TRAILING_COMMA.search(written[call.col_offset : call.end_col_offset])
            if found is not None:  # (the comma and the spaces after it)
                cuts.append((call.col_offset + found.start(), call.col_offset + found.end() - 1))
    for start, end in sorted(cuts, reverse=True):
        written = written[:start] + written[end:]
    return written.decode("utf-8")


def readable_guards(guards: list[str]) -> list[str]:
    """A site's guards, each simplified (:func:`readable_guard`), without a branch not taken that
    says what the ``elif`` after it says (``if p is not None: ... elif p is None:`` records
    ``not (p is not None)`` then ``elif p is None``: one condition, shown once)."""
    shown = [readable_guard(guard) for guard in guards]
    return [
        text
        for number, text in enumerate(shown)
        if not (
            number + 1 < len(shown)
            and guards[number].startswith("not (")
            and shown[number + 1].startswith("elif ")
            and shown[number + 1][len("elif ") :] == text
        )
    ]
