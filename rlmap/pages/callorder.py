"""The calls of one function in the order Python makes them, not the order they are written.

``self._carrier.update(self.env.reset())`` is written ``update`` first, but ``reset`` runs first:
a call's receiver and arguments are evaluated before the call itself.  The index lists a
function's call sites in source order (outer call first); :func:`evaluation_order` re-reads the
function with :mod:`ast` (the text is only parsed, never run) and sorts the sites by when each
call happens: post-order over each expression, the value of an assignment before its targets,
a comprehension's iterable before its element, a ``for`` loop's iterable before its target.
The calls in a ``lambda``'s body run only when it is called: like any site the parse does not
find, each keeps its place after the site before it (the call the ``lambda`` is passed to).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence
from typing import TypeVar

from rlmap.index.summaries import callee_text
from rlmap.model.codemodel import ResolvedCall

Site = TypeVar("Site", bound=ResolvedCall)


def evaluation_order(sites: Sequence[Site], source: str, def_line: int) -> list[Site]:
    """``sites`` (of the function whose ``def`` is the first line of ``source``, line
    ``def_line`` of its file) sorted by when each call is made; stable where the order is the same."""
    calls = _calls_in_order(source, def_line)
    if not calls:
        return list(sites)
    used = [False] * len(calls)
    ranks: list[tuple[int, int]] = []
    previous = -1
    for position, site in enumerate(sites):
        found = _match(calls, used, site.line, site.callee_text)
        if found is not None:
            used[found] = True
            previous = found
        ranks.append((previous, position))
    order = sorted(range(len(sites)), key=lambda i: ranks[i])
    return [sites[i] for i in order]


def _match(calls: Sequence[tuple[int, str]], used: list[bool], line: int, text: str) -> int | None:
    fallback = None
    for index, (call_line, call_text) in enumerate(calls):
        if used[index] or call_line != line:
            continue
        if call_text == text:
            return index
        if fallback is None and not _dotted(call_text):
            fallback = index  # a computed callee, spelled differently by the two parsers
    return fallback


def _dotted(text: str) -> bool:
    return all(part.isidentifier() or part == "super()" for part in text.split("."))


def _calls_in_order(source: str, def_line: int) -> list[tuple[int, str]]:
    """(the line of the callee's name, the callee as the index writes it) of each call in the
    function's body, in evaluation order; empty if the text does not parse."""
    indented = source[:1].isspace()
    try:
        module = ast.parse(("if 1:\n" + source) if indented else source)
    except (SyntaxError, ValueError):
        return []
    body = module.body[0].body if indented and isinstance(module.body[0], ast.If) else module.body
    function = next((node for node in body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
    if function is None:
        return []
    offset = def_line - function.lineno
    return [
        (_name_line(call) + offset, callee_text(call.func))
        for statement in function.body
        for call in _post_order(statement)
    ]


def _post_order(node: ast.AST) -> Iterator[ast.Call]:
    """The calls under ``node``, each after the calls its receiver and arguments make."""
    for child in _children(node):
        yield from _post_order(child)
    if isinstance(node, ast.Call):
        yield node


def _children(node: ast.AST) -> list[ast.AST]:
    """``node``'s sub-expressions and statements in the order Python evaluates them."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return [*node.decorator_list, *node.args.defaults, *(d for d in node.args.kw_defaults if d is not None)]
    if isinstance(node, ast.Lambda):
        return [*node.args.defaults, *(d for d in node.args.kw_defaults if d is not None)]
    if isinstance(node, ast.ClassDef):
        return [*node.decorator_list, *node.bases, *node.keywords]  # its body is another scope
    if isinstance(node, ast.Assign):
        return [node.value, *node.targets]
    if isinstance(node, ast.AnnAssign):
        return [node.value, node.target] if node.value is not None else [node.target]
    if isinstance(node, (ast.For, ast.AsyncFor)):
        return [node.iter, node.target, *node.body, *node.orelse]
    if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp)):
        return [*node.generators, node.elt]
    if isinstance(node, ast.DictComp):
        return [*node.generators, node.key, node.value]
    if isinstance(node, ast.comprehension):
        return [node.iter, node.target, *node.ifs]
    if isinstance(node, ast.Dict):
        pairs: list[ast.AST] = []
        for key, value in zip(node.keys, node.values, strict=True):
            pairs.extend([key, value] if key is not None else [value])
        return pairs
    return list(ast.iter_child_nodes(node))


def _name_line(call: ast.Call) -> int:
    """Where the index anchors a call: the line its callee's name is written on."""
    func = call.func
    if isinstance(func, ast.Attribute):
        return func.end_lineno or func.lineno
    return func.lineno
