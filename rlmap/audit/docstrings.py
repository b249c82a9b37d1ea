"""References in the code's own docstrings: each docstring of the focus subsystems parsed as rst.

A docstring is read from the source with ``ast`` (never imported), its indentation removed
line by line so that its lines stay the source's lines, and parsed like a docs page; its roles,
literals and doctest examples become :class:`~rlmap.audit.docscan.DocRef` records at their source
line, resolved against the module that defines the docstring (as autodoc sets it).  Only stale
references are reported from docstrings (whether Sphinx links a docstring's role depends on the
page that includes it).
"""

from __future__ import annotations

import ast
import bisect
from dataclasses import replace
from typing import TYPE_CHECKING

from rlmap.audit.docscan import DocRef, example_refs
from rlmap.audit.rstscan import parse_rst
from rlmap.index.records import CLASS, FUNCTION, METHOD, MODULE

if TYPE_CHECKING:
    from rlmap.audit.context import AuditContext

_KINDS = (MODULE, CLASS, FUNCTION, METHOD)


def docstring_refs(ctx: AuditContext) -> list[DocRef]:
    """The references written in the docstrings of the focus subsystems.

    The docstrings of one file are parsed together, as one page in which each sits on its own
    source lines (the rest blank): one docutils run per file, and lines that need no mapping.
    """
    by_file: dict[str, list[tuple[int, str]]] = {}
    for symbol in ctx.model.symbols():
        if symbol.kind not in _KINDS or not symbol.has_docstring or not symbol.qualname.startswith(ctx.focus):
            continue
        constant = _docstring(ctx, symbol.path, symbol.line, symbol.kind)
        if constant is None:
            continue
        value = str(constant.value)
        if "`" in value or ">>>" in value:  # else no role, literal or doctest to find
            by_file.setdefault(symbol.path, []).append((constant.lineno, _dedented(value)))
    refs: list[DocRef] = []
    for path, docstrings in sorted(by_file.items()):
        refs.extend(_file_refs(ctx, path, sorted(set(docstrings))))
    return refs


def _file_refs(ctx: AuditContext, path: str, docstrings: list[tuple[int, str]]) -> list[DocRef]:
    lines: list[str] = []
    starts: list[int] = []
    for start, text in docstrings:
        if start <= len(lines):
            continue  # overlaps the one before (cannot happen in valid source)
        lines.extend([""] * (start - 1 - len(lines)))
        lines.extend(text.split("\n"))
        lines.append("")
        starts.append(start)
    module = ctx.module_of_path(path)
    page = "\n".join(lines)
    parts = parse_rst(page, 1, module)
    shown = ctx.code_path(path)

    def opening(line: int) -> int:
        return starts[bisect.bisect_right(starts, line) - 1] if starts and line >= starts[0] else 0

    refs = [
        DocRef(shown, ref.place.line, ref.kind, ref.target, ref.module, docstring_line=opening(ref.place.line))
        for ref in parts.refs
    ]
    for example in example_refs(shown, lines, parts.code):
        refs.append(replace(example, span=None, clause_span=None, docstring_line=opening(example.line)))
    return refs


def _docstring(ctx: AuditContext, path: str, line: int, kind: str) -> ast.Constant | None:
    nodes: list[ast.AST]
    if kind == MODULE:
        tree = ctx.tree(path)
        nodes = [tree] if tree is not None else []
    else:
        nodes = ctx.definitions(path, line)
    for node in nodes:
        body = getattr(node, "body", [])
        first = body[0] if body else None
        if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
            return first.value
    return None


def _dedented(text: str) -> str:
    """The docstring with the common indentation of its lines after the first removed (lines kept)."""
    lines = text.expandtabs().split("\n")
    indents = [len(line) - len(line.lstrip()) for line in lines[1:] if line.strip()]
    cut = min(indents) if indents else 0
    return "\n".join([lines[0].strip(), *(line[cut:] for line in lines[1:])])
