"""The rules over the code: stale docstring entries, names the glossary retired, undocumented helpers.

Each rule is a function ``(context) -> findings``; :data:`REPORTS` says which rules each one
reports (``rlmap audit --rule X`` runs only the functions that report X).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Iterator

from rlmap.audit.catalog import Finding
from rlmap.audit.context import AuditContext
from rlmap.index.records import ATTRIBUTE, CLASS, FUNCTION, METHOD, Symbol


def _docstring_node(ctx: AuditContext, symbol: Symbol) -> tuple[ast.AST, ast.Constant] | None:
    for node in ctx.definitions(symbol.path, symbol.line):
        body = getattr(node, "body", [])
        first = body[0] if body else None
        if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
            return node, first.value
    return None


_REMOVAL = ("removed", "deprecated", "no longer", "has been replaced")


def _only_raises_removal(node: ast.AST) -> bool:
    """A function whose whole body raises an error saying it was removed (not NotImplementedError)."""
    body = [
        s
        for s in getattr(node, "body", [])
        if not (isinstance(s, ast.Expr) and isinstance(getattr(s, "value", None), ast.Constant))
    ]
    if len(body) != 1 or not isinstance(body[0], ast.Raise) or body[0].exc is None:
        return False
    texts = [n.value for n in ast.walk(body[0].exc) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    return any(word in text.lower() for text in texts for word in _REMOVAL)


def _section_entries(docstring: str, title: str) -> list[tuple[int, str]]:
    """(line offset, name) of the entries of a Google-style section (``Methods:``, ``Args:``)."""
    lines = docstring.split("\n")
    entries: list[tuple[int, str]] = []
    for index, line in enumerate(lines):
        if line.strip() != f"{title}:":
            continue
        header_indent = len(line) - len(line.lstrip())
        entry_indent = None
        for offset in range(index + 1, len(lines)):
            text = lines[offset]
            if not text.strip():
                continue
            indent = len(text) - len(text.lstrip())
            if indent <= header_indent:
                break
            if entry_indent is None:
                entry_indent = indent
            if indent == entry_indent:
                name = text.strip().split(":", 1)[0].split("(", 1)[0].strip().lstrip("*")
                if name.isidentifier():
                    entries.append((offset, name))
    return entries


def rule_docstrings(ctx: AuditContext) -> Iterable[Finding]:
    for symbol in ctx.model.symbols():
        if symbol.kind not in (CLASS, FUNCTION, METHOD) or not symbol.has_docstring:
            continue
        if not symbol.qualname.startswith(ctx.focus):
            continue
        found = _docstring_node(ctx, symbol)
        if found is None:
            continue
        definition, constant = found
        if symbol.kind == CLASS:
            yield from _stale_methods(ctx, symbol, constant)
        yield from _stale_params(ctx, symbol, definition, constant)


def _stale_methods(ctx: AuditContext, symbol: Symbol, constant: ast.Constant) -> Iterable[Finding]:
    """The entries of a class docstring's ``Methods:`` section that name nothing, or a method that only raises."""
    short = symbol.qualname.rsplit(".", 1)[-1]
    for offset, name in _section_entries(str(constant.value), "Methods"):
        member = ctx.member(symbol.qualname, name)
        where = (ctx.code_path(symbol.path), constant.lineno + offset, f"{symbol.qualname}.{name}")
        if member is None:
            message = f"the {short} docstring lists a method {name}() that no longer exists"
            yield Finding.of("stale-docstring-ref", *where, message, "remove it from the Methods section")
            continue
        removed = _removed_method(ctx, member)
        if removed is not None:
            yield Finding.of(
                "stale-docstring-ref",
                *where,
                f"the {short} docstring lists {name}(), which now only raises (see {removed.path}:{removed.line})",
                "remove it from the Methods section and document what replaced it",
            )


def _removed_method(ctx: AuditContext, qualname: str) -> Symbol | None:
    """The method ``qualname`` when its whole body raises an error saying it was removed."""
    symbol = ctx.model.symbol(qualname)
    if symbol is None:
        return None
    functions = (
        n for n in ctx.definitions(symbol.path, symbol.line) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
    )
    node = next(functions, None)
    return symbol if node is not None and _only_raises_removal(node) else None


def _stale_params(ctx: AuditContext, symbol: Symbol, definition: ast.AST, constant: ast.Constant) -> Iterable[Finding]:
    """The ``Args:`` entries naming a parameter the function (or the class's ``__init__``) does not take."""
    owner = ctx.model.symbol(f"{symbol.qualname}.__init__") if symbol.kind == CLASS else symbol
    if owner is None or "*" in owner.signature:
        return  # **kwargs / *args accept names we cannot check
    if any(keyword.arg == "metaclass" for keyword in getattr(definition, "keywords", ())):
        return  # a metaclass may take arguments __init__ never sees
    params = {name for name, _ in owner.params}
    owner_name = owner.qualname.rsplit(".", 1)[-1]
    text = str(constant.value)
    for offset, name in _section_entries(text, "Args") + _section_entries(text, "Arguments"):
        if name not in params:
            yield Finding.of(
                "stale-docstring-ref",
                ctx.code_path(symbol.path),
                constant.lineno + offset,
                f"{symbol.qualname}({name})",
                f"the docstring documents a parameter {name} that {owner_name} does not take",
                "remove or rename the entry",
            )


def rule_aliases(ctx: AuditContext) -> Iterable[Finding]:
    for term in ctx.terms:
        for old in term.former_attributes:
            yield from _still_used(
                ctx,
                old,
                f"the glossary says the {', '.join(term.former)} is now the {term.term}",
                f"rename self.{old} to the name the rest of the code uses for the {term.term}",
            )


def rule_renamed_attributes(ctx: AuditContext) -> Iterable[Finding]:
    """stale-alias from git history (``--since REV``): an attribute renamed since REV in one class
    (``Collector._shuttle`` -> ``Collector._carrier``) that code elsewhere still uses (a subclass's
    ``self._shuttle``).  Names the glossary already lists as former are reported by :func:`rule_aliases`."""
    former = {old for term in ctx.terms for old in term.former_attributes}
    for old, new in sorted(ctx.history.items()):
        name = old.rpartition(".")[2]
        if ctx.model.node_kind(new) != ATTRIBUTE or name in former:
            continue  # a class, function or module (stale-ref reports references to it), or a glossary name
        yield from _still_used(
            ctx,
            name,
            f"git history since {ctx.history_rev} renamed {old} to {new}",
            f"rename self.{name} to self.{new.rpartition('.')[2]}, as {new.rsplit('.', 2)[-2]} does",
        )


def _still_used(ctx: AuditContext, name: str, why: str, hint: str) -> Iterator[Finding]:
    """stale-alias for each class whose code reads or writes ``self.<name>``, at its first access."""
    for qualname in sorted(q for q in ctx.model.attribute_names() if q.endswith("." + name)):
        accesses = ctx.model.attribute_accesses(qualname)
        if not accesses:
            continue
        first = min(accesses, key=lambda a: a.line)
        yield Finding.of(
            "stale-alias",
            ctx.code_path(ctx.model.path_of(first.function)),
            first.line,
            qualname,
            f"{qualname.rsplit('.', 2)[-2]} still uses self.{name} ({len(accesses)} accesses); {why}",
            hint,
        )


def rule_orphans(ctx: AuditContext) -> Iterable[Finding]:
    """orphaned-symbol (central, undocumented, unmentioned) and undocumented-helper."""
    mentioned = ctx.docs.text_names
    former = {old for term in ctx.terms for old in term.former_attributes}  # reported as stale-alias
    for symbol in ctx.model.symbols():
        name = symbol.qualname.rsplit(".", 1)[-1]
        if not symbol.qualname.startswith(ctx.focus) or not name.startswith("_") or name.startswith("__"):
            continue
        if symbol.kind in (FUNCTION, METHOD) and not symbol.has_docstring:
            finding = _undocumented_function(ctx, symbol, name, mentioned)
        elif symbol.kind == ATTRIBUTE and name not in former:
            finding = _unmentioned_attribute(ctx, symbol, name, mentioned)
        else:
            continue
        if finding is not None:
            yield finding


def _undocumented_function(ctx: AuditContext, symbol: Symbol, name: str, mentioned: frozenset[str]) -> Finding | None:
    """orphaned-symbol when enough functions call it and no doc names it; else undocumented-helper if
    called (also what an orphan is when orphaned-symbol was not asked for: it is a helper too)."""
    callers = {edge.caller for edge in ctx.model.callers(symbol.qualname)}
    orphans = not ctx.rules or "orphaned-symbol" in ctx.rules
    if orphans and len(callers) >= ctx.min_callers and name not in mentioned:
        return _about(
            ctx,
            "orphaned-symbol",
            symbol,
            f"{name} has {len(callers)} callers, no docstring, and no doc page mentions it",
            "add a docstring (what it does, when it runs) or document it on an internals page",
        )
    if not callers:
        return None
    return _about(
        ctx,
        "undocumented-helper",
        symbol,
        f"{name} has no docstring ({len(callers)} caller{'s' if len(callers) != 1 else ''})",
        "add a one-line docstring",
    )


def _unmentioned_attribute(ctx: AuditContext, symbol: Symbol, name: str, mentioned: frozenset[str]) -> Finding | None:
    """orphaned-symbol for an attribute used often that no doc page names."""
    accesses = ctx.model.attribute_accesses(symbol.qualname)
    if len(accesses) < ctx.min_accesses or name in mentioned:
        return None
    writers = len({a.function for a in accesses if a.kind == "write"})
    return _about(
        ctx,
        "orphaned-symbol",
        symbol,
        f"self.{name} is read or written {len(accesses)} times ({writers} writing method{'' if writers == 1 else 's'}) "
        "and no doc page mentions it",
        "document what it holds and who sets it (a glossary entry or an internals page)",
    )


def _about(ctx: AuditContext, rule: str, symbol: Symbol, message: str, suggestion: str) -> Finding:
    """A finding of ``rule`` at a symbol's definition."""
    return Finding.of(rule, ctx.code_path(symbol.path), symbol.line, symbol.qualname, message, suggestion)


REPORTS: dict[Callable[[AuditContext], Iterable[Finding]], frozenset[str]] = {
    rule_docstrings: frozenset({"stale-docstring-ref"}),
    rule_aliases: frozenset({"stale-alias"}),
    rule_renamed_attributes: frozenset({"stale-alias"}),
    rule_orphans: frozenset({"orphaned-symbol", "undocumented-helper"}),
}
