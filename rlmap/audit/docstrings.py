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
from rlmap.audit.pagecache import parse_page
from rlmap.index.cache import code_version, content_key
from rlmap.index.records import CLASS, FUNCTION, METHOD, MODULE

if TYPE_CHECKING:
    from rlmap.audit.context import AuditContext

_KINDS = (MODULE, CLASS, FUNCTION, METHOD)
_DEFINITIONS = (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
_NAMESPACE = "docstrings"
_READER = code_version("audit.docstrings")  # what the cached docstrings depend on


def docstring_refs(ctx: AuditContext) -> list[DocRef]:
    """The references written in the docstrings of the focus subsystems.

    The docstrings of one file are parsed together, as one page in which each sits on its own
    source lines (the rest blank): one docutils run per file, and lines that need no mapping.
    """
    by_file: dict[str, list[tuple[int, str]]] = {}
    found: dict[str, dict[int, tuple[int, str]]] = {}
    for symbol in ctx.model.symbols():
        if symbol.kind not in _KINDS or not symbol.has_docstring or not symbol.qualname.startswith(ctx.focus):
            continue
        if symbol.path not in found:
            found[symbol.path] = file_docstrings(ctx, symbol.path)
        docstring = found[symbol.path].get(0 if symbol.kind == MODULE else symbol.line)
        if docstring is None:
            continue
        start, value = docstring
        if "`" in value or ">>>" in value:  # else no role, literal or doctest to find
            by_file.setdefault(symbol.path, []).append((start, _dedented(value)))
    refs: list[DocRef] = []
    for path, docstrings in sorted(by_file.items()):
        refs.extend(_file_refs(ctx, path, sorted(set(docstrings))))
    return refs


def file_docstrings(ctx: AuditContext, path: str) -> dict[int, tuple[int, str]]:
    """The docstrings of one source file: ``def`` line (0 for the module's) -> (the line its string
    literal starts on, its value); read with ``ast``, or from ``ctx.cache`` when the file is unchanged."""
    data = ctx.source(path)
    cache = ctx.cache if ctx.cache is not None and ctx.cache.directory is not None else None
    if data is None:
        return {}
    key = content_key(_READER, path, data)
    cached = cache.get(_NAMESPACE, key, list[tuple[int, int, str]]) if cache is not None else None
    if cached is None:
        cached = []
        tree = ctx.tree(path)
        for node in ast.walk(tree) if tree is not None else ():
            line = 0 if node is tree else node.lineno if isinstance(node, _DEFINITIONS) else -1
            constant = _docstring_of(node) if line >= 0 else None
            if constant is not None:
                cached.append((line, constant.lineno, str(constant.value)))
        if cache is not None:
            cache.put(_NAMESPACE, key, cached)
    docstrings: dict[int, tuple[int, str]] = {}
    for line, start, value in cached:
        docstrings.setdefault(line, (start, value))  # the first definition on a line, as ast.walk meets it
    return docstrings


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
    parts = parse_page(page, False, ctx.cache, 1, module)
    shown = ctx.code_path(path)

    def opening(line: int) -> int:
        return starts[bisect.bisect_right(starts, line) - 1] if starts and line >= starts[0] else 0

    refs = [
        DocRef(shown, ref.place.line, ref.kind, ref.target, ref.module, docstring_line=opening(ref.place.line))
        for ref in parts.refs
    ]
    for example in example_refs(shown, lines, parts.code):
        # (no column: the docstring's lines are read as a page, their indentation not the file's)
        refs.append(replace(example, column=0, span=None, clause_span=None, docstring_line=opening(example.line)))
    return refs


def _docstring_of(node: ast.AST) -> ast.Constant | None:
    body = getattr(node, "body", None)
    first = body[0] if isinstance(body, list) and body else None
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        return first.value
    return None


def _dedented(text: str) -> str:
    """The docstring with the common indentation of its lines after the first removed (lines kept)."""
    lines = text.expandtabs().split("\n")
    indents = [len(line) - len(line.lstrip()) for line in lines[1:] if line.strip()]
    cut = min(indents) if indents else 0
    return "\n".join([lines[0].strip(), *(line[cut:] for line in lines[1:])])
