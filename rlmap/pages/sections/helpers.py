"""Helpers explained: an inventory of private helpers, each with a line saying what it does.

The line is the docstring's first line when there is one; otherwise it is read off the code:
the attributes the helper assigns, the calls it makes (with the condition of a guarded one),
what it returns, as written, and the exception its body raises whatever happens.  Facts only:
nothing here guesses an intent.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from rlmap.index.records import AUGMENTED, CLASS, MUTATE, WRITE
from rlmap.literals import unparse
from rlmap.model.codemodel import CodeModel
from rlmap.model.mro import mro
from rlmap.pages.sections import specs
from rlmap.pages.sections.base import Body, Context
from rlmap.pages.sections.code import Helper, build_inventory
from rlmap.query.coverage import Tally, docstring_coverage

# calls that say nothing about what a helper does
_PLAIN_CALLS = frozenset(
    {
        "len",
        "isinstance",
        "getattr",
        "hasattr",
        "setattr",
        "super",
        "range",
        "list",
        "tuple",
        "dict",
        "set",
        "int",
        "float",
        "str",
        "bool",
        "type",
        "enumerate",
        "zip",
        "sorted",
        "any",
        "all",
        "min",
        "max",
        "print",
    }
)
_LIMIT = 3


@dataclass(frozen=True, slots=True)
class ExplainedHelper:
    helper: Helper
    summary: str  # the docstring's first line, or what the code does
    from_docstring: bool


@dataclass(frozen=True, slots=True)
class HelpersBody(Body):
    owner: object
    scope: tuple[str, ...]
    helpers: tuple[ExplainedHelper, ...]
    total: int
    coverage: Tally | None  # docstring coverage of ``scope``, as ``rlmap audit --coverage`` counts it


def build_helpers(spec: specs.Helpers, ctx: Context) -> HelpersBody:
    inventory = build_inventory(spec, ctx)
    helpers = {helper.ref.qualname for helper in inventory.helpers}
    writes: dict[str, list[str]] = {}  # function -> attributes it assigns, read in one pass
    items: dict[str, list[str]] = {}  # function -> attributes whose items it sets or deletes
    for name in ctx.model.attribute_names():
        for access in ctx.model.attribute_accesses(name):
            if access.function not in helpers:
                continue
            if access.kind in (WRITE, AUGMENTED):
                table = writes
            elif access.kind == MUTATE and access.operation in ("[]=", "del []"):
                table = items  # ``self.counts[k] += 1``: a change no call shows
            else:
                continue
            found = table.setdefault(access.function, [])
            if access.attribute not in found:
                found.append(access.attribute)
    rows = tuple(
        _explain(ctx, helper, writes.get(helper.ref.qualname, []), items.get(helper.ref.qualname, []))
        for helper in inventory.helpers
    )
    coverage = docstring_coverage(ctx.model, inventory.scope).total if inventory.scope else None
    return HelpersBody(inventory.owner, inventory.scope, rows, inventory.total, coverage)


def _explain(ctx: Context, helper: Helper, written: list[str], items: list[str]) -> ExplainedHelper:
    if helper.ref.summary:
        return ExplainedHelper(helper, helper.ref.summary, True)
    return ExplainedHelper(helper, summarize(ctx, helper.ref.qualname, written, items), False)


def summarize(ctx: Context, function: str, written: list[str], items: list[str]) -> str:
    """``assigns self._carrier; calls self.env.close() (if ...); returns True``, from the code."""
    model = ctx.model
    calls: list[str] = []
    for site in model.call_sites(function):
        text = site.callee_text
        if not text or text in _PLAIN_CALLS or text in calls:  # ``set(x)`` is plain, ``td.set(k, v)`` is not
            continue
        guard = f" (under {site.guards[-1]})" if site.guards else ""
        calls.append(f"{text}(){guard}")
    own = _own_classes(model, function)
    for edge in model.callees(function):
        # ``for _ in self`` runs ``__iter__``: a call no site writes.  Only a dunder of the
        # function's own class or its bases is named; one the value flow guesses on another
        # object (a loop over a list it thinks may be a tensordict) is not
        owner = edge.callee.rpartition(".")[0]
        if "implicit" in edge.how and owner in own and edge.callee.rsplit(".", 1)[-1].startswith("__"):
            text = edge.callee.rsplit(".", 2)[-2] + "." + edge.callee.rsplit(".", 1)[-1]
            if f"{text}() (implicit)" not in calls:
                calls.append(f"{text}() (implicit)")
    all_returns = model.returns(function)
    returns = [r.value for r in all_returns if r.value]
    if all_returns and not returns:
        returns = ["None"]  # only bare ``return`` statements
    parts = []
    if written:
        parts.append("assigns " + ", ".join(f"self.{name}" for name in sorted(written)[:_LIMIT]) + _more(written))
    if items:
        changed = sorted(items)
        parts.append("sets items of " + ", ".join(f"self.{name}" for name in changed[:_LIMIT]) + _more(changed))
    if calls:
        parts.append("calls " + ", ".join(calls[:_LIMIT]) + _more(calls))
    if returns:
        shown = list(dict.fromkeys(returns))
        parts.append("returns " + " or ".join(_clip(value) for value in shown[:2]) + _more(shown, 2))
    raised = _raises(ctx, function)
    if raised:
        parts.append(raised)
    return "; ".join(parts) or "no assignment, call or return rlmap sees"


def _raises(ctx: Context, function: str) -> str:
    """``always raises X`` when the body's first statement is ``raise X``; ``ends raising X`` when
    its last one is (it raises whenever no earlier statement returned)."""
    symbol = ctx.model.symbol(function)
    definition = ctx.refs.definition(symbol) if symbol is not None else None
    if not isinstance(definition, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return ""
    body = definition.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the docstring
    for statement, wording in ((body[:1], "always raises "), (body[-1:], "ends raising ")):
        if statement and isinstance(statement[0], ast.Raise) and statement[0].exc is not None:
            exc = statement[0].exc
            return wording + unparse(exc.func if isinstance(exc, ast.Call) else exc)
    return ""


def _own_classes(model: CodeModel, function: str) -> set[str]:
    """The class a method belongs to and every class it derives from."""
    cls = function.rpartition(".")[0]
    return set(mro(model.bases, cls)) if model.node_kind(cls) == CLASS else set()


def _more(items: list[str], limit: int = _LIMIT) -> str:
    return f" and {len(items) - limit} more" if len(items) > limit else ""


def _clip(text: str, limit: int = 60) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"
