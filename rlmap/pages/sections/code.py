"""Sections about functions and classes (the flow section is :mod:`.flow`): callees, calls, quotes, returns, subclasses,
inventory, symbols and caveats.  Each ``build_<kind>`` takes the section's checked parameters
and a :class:`Context`, and returns the frozen body its template renders."""

from __future__ import annotations

import ast
import dataclasses
import re
from dataclasses import dataclass

from rlmap.index.records import FUNCTION, METHOD, PROPERTY
from rlmap.model.target import BY_VALUE
from rlmap.pages.diagrams import call_diagram, diagram_from_edges
from rlmap.pages.refs import Ref
from rlmap.pages.sections import specs
from rlmap.pages.sections.base import Body, Call, Context, Entry, Site, shown_guards

# Lines worth quoting by default: shape changes, stacking and splitting, padding and packing
# sequences, and time/batch indexing.
DEFAULT_MARKERS = (
    *(f".{method}(" for method in ("reshape", "transpose", "permute", "view", "unsqueeze", "squeeze")),
    *(f".{method}(" for method in ("flatten", "unflatten", "movedim", "expand", "flip")),
    *(f".{method}(" for method in ("stack", "cat", "unbind", "split", "chunk")),
    *(f"{function}(" for function in ("pack_padded_sequence", "pad_packed_sequence", "pad_sequence")),
    "[...",
    *(f"[:,{space}{start}" for space in ("", " ") for start in "-:0123456789"),
)


@dataclass(frozen=True, slots=True)
class CalleesBody(Body):
    function: Ref


def build_callees(spec: specs.Callees, ctx: Context) -> CalleesBody:
    cls = ctx.name(spec.class_, "class") if spec.class_ else None
    function = ctx.member(cls, spec.function, "function")
    diagram = call_diagram(ctx.model, spec.diagram, function, tuple(spec.scope), depth=spec.depth)
    return CalleesBody(ctx.ref(function), diagrams=(diagram,))


def _functions(
    ctx: Context, classes: list[str], members: list[str], members_of: dict[str, list[str]], own_only: bool = False
) -> list[tuple[str, list[str]]]:
    """(class, its functions) for each class: ``members``, then ``members_of[<class name>]``."""
    short_names = {name.rsplit(".", 1)[-1] for name in classes}
    for name in members_of:
        if name not in short_names:
            raise ctx.fail(
                f"members_of: '{name}' is not one of classes", f"use one of {', '.join(sorted(short_names))}"
            )
    found = []
    for class_name in classes:
        cls = ctx.name(class_name, "classes")
        functions = []
        for member in [*members, *members_of.get(class_name.rsplit(".", 1)[-1], [])]:
            if own_only:
                qualname = f"{cls}.{member}"
                if ctx.model.node_kind(qualname) in (METHOD, FUNCTION):
                    functions.append(qualname)
            else:
                functions.append(ctx.member(cls, member, "members"))
        found.append((cls, functions))
    return found


@dataclass(frozen=True, slots=True)
class Inherited:
    """A member a class takes from a base (under ``own_only``): the base's method, and the methods
    it calls on ``self`` that the class overrides (what the class changes of it)."""

    name: str  # as the class has it (``MultiAgentGAE.forward``)
    ref: Ref
    overrides: tuple[Ref, ...]
    raises: str = ""  # the exception the base's method raises and does nothing else (an abstract one)


@dataclass(frozen=True, slots=True)
class CallsGroup:
    ref: Ref  # the class
    rows: tuple[Entry, ...]  # its own members -> their calls
    inherited: tuple[Inherited, ...] = ()


@dataclass(frozen=True, slots=True)
class CallsBody(Body):
    groups: tuple[CallsGroup, ...]
    none: str


def _inherited(ctx: Context, cls: str, members: list[str]) -> tuple[Inherited, ...]:
    """The ``members`` ``cls`` does not define but takes from a base (Python's method resolution
    order), each with the methods it calls on ``self`` that ``cls`` defines itself."""
    found = []
    for member in members:
        if "." in member or ctx.model.node_kind(f"{cls}.{member}") in (METHOD, FUNCTION):
            continue
        base = ctx.model.member_of(cls, member)
        if base is None or ctx.model.node_kind(base) not in (METHOD, FUNCTION):
            continue
        overrides: list[str] = []
        for site in ctx.model.call_sites(base):
            receiver, _, called = site.callee_text.partition(".")
            own = f"{cls}.{called}"
            own_method = ctx.model.node_kind(own) in (METHOD, FUNCTION)
            if receiver == "self" and called.isidentifier() and own_method and own not in overrides:
                overrides.append(own)
        short = cls.rsplit(".", 1)[-1]
        refs = tuple(ctx.ref(name) for name in overrides)
        found.append(Inherited(f"{short}.{member}", ctx.ref(base), refs, _only_raises(ctx, base)))
    return tuple(found)


def _only_raises(ctx: Context, function: str) -> str:
    """The exception ``function``'s body raises when raising is all it does (past its docstring):
    ``NotImplementedError`` of an abstract method; ``""`` otherwise."""
    symbol = ctx.model.symbol(function)
    node = ctx.refs.definition(symbol) if symbol is not None else None
    if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        return ""
    body = node.body[1:] if ctx.refs.docstring_lines(symbol) else node.body  # type: ignore[arg-type]
    if len(body) != 1 or not isinstance(body[0], ast.Raise) or body[0].exc is None:
        return ""
    raised = body[0].exc.func if isinstance(body[0].exc, ast.Call) else body[0].exc
    return ast.unparse(raised) if isinstance(raised, ast.Name | ast.Attribute) else ""


def build_calls(spec: specs.Calls, ctx: Context) -> CallsBody:
    into = tuple(spec.into)
    groups = []
    diagrams = []
    edges: list[tuple[str, str]] = []
    for cls, functions in _functions(ctx, spec.classes, spec.members, spec.members_of, spec.own_only):
        members = []
        for function in functions:
            calls = _calls_into(ctx, function, into)
            edges.extend((function, t.qualname) for call in calls for t in call.targets if isinstance(t, Ref))
            members.append(Entry(ctx.ref(function), tuple(calls)))
        inherited = _inherited(ctx, cls, [*spec.members, *spec.members_of.get(cls.rsplit(".", 1)[-1], [])])
        groups.append(CallsGroup(ctx.ref(cls), tuple(members), inherited if spec.own_only else ()))
        if spec.diagram and spec.diagram_style == "calls" and functions:
            name = spec.diagram.replace("{class}", cls.rsplit(".", 1)[-1].lower())
            diagrams.append(call_diagram(ctx.model, name, functions[0], into, depth=spec.depth))
    if spec.diagram and spec.diagram_style == "edges":
        diagrams.append(diagram_from_edges(ctx.model, spec.diagram.replace("{class}", ""), edges))
    return CallsBody(tuple(groups), spec.none or "", diagrams=tuple(diagrams))


@dataclass(frozen=True, slots=True)
class DispatchBody(Body):
    functions: tuple[Entry, ...]  # function -> its calls into the scope, each with its condition


def build_dispatch(spec: specs.Dispatch, ctx: Context) -> DispatchBody:
    cls = ctx.name(spec.class_, "class") if spec.class_ else None
    into = tuple(spec.into)
    rows = []
    for name in spec.functions:
        function = ctx.member(cls, name, "functions")
        rows.append(Entry(ctx.ref(function), tuple(_calls_into(ctx, function, into))))
    return DispatchBody(tuple(rows))


def _calls_into(ctx: Context, function: str, into: tuple[str, ...]) -> list[Call]:
    """The calls of ``function`` with at least one target in the package and inside ``into``."""
    return [
        call
        for call in ctx.calls_of(function)
        if any(isinstance(t, Ref) and (not into or t.qualname.startswith(into)) for t in call.targets)
    ]


@dataclass(frozen=True, slots=True)
class TextBody(Body):
    """A text section's body: nothing but its prose, which the page shows under the heading."""


def build_text(spec: specs.ProseOnly, ctx: Context) -> TextBody:
    del spec, ctx
    return TextBody()


@dataclass(frozen=True, slots=True)
class QuotesBody(Body):
    functions: tuple[Entry, ...]  # function -> quoted lines


def build_quotes(spec: specs.Quotes, ctx: Context) -> QuotesBody:
    markers = tuple(spec.markers) or DEFAULT_MARKERS
    quoted = []
    for _, functions in _functions(ctx, spec.classes, spec.members, spec.members_of):
        for function in functions:
            symbol = ctx.model.symbol(function)
            if symbol is None:
                continue
            docstring = ctx.refs.docstring_lines(symbol)
            lines = []
            for line in range(symbol.line + 1, symbol.end_line + 1):
                text = ctx.refs.line_text(symbol.path, line)
                stripped = text.strip()
                if line in docstring or stripped.startswith("#") or not any(marker in text for marker in markers):
                    continue
                lines.append(Site(anchor=ctx.refs.anchor(stripped, symbol.path, line), text=stripped))
            if lines:
                quoted.append(Entry(ctx.ref(function), tuple(lines)))
    return QuotesBody(tuple(quoted))


@dataclass(frozen=True, slots=True)
class ReturnsBody(Body):
    function: Ref
    returns: tuple[Site, ...]


def build_returns(spec: specs.Returns, ctx: Context) -> ReturnsBody:
    cls = ctx.name(spec.class_, "class") if spec.class_ else None
    function = ctx.member(cls, spec.function, "function")
    rows = tuple(
        Site(
            anchor=ctx.anchor(function, "return", site.line),
            value=site.value or "None",
            guard=shown_guards(site.guards) or "(no enclosing condition)",
        )
        for site in ctx.model.returns(function)
    )
    return ReturnsBody(ctx.ref(function), rows)


@dataclass(frozen=True, slots=True)
class Subclass:
    ref: Ref
    override: Ref | None
    former: tuple[Site, ...]


@dataclass(frozen=True, slots=True)
class SubclassesBody(Body):
    subclasses: tuple[Subclass, ...]


def build_subclasses(spec: specs.Subclasses, ctx: Context) -> SubclassesBody:
    cls = ctx.name(spec.class_, "class")
    method = ctx.member(cls, spec.method, "method").rsplit(".", 1)[-1]
    rows = []
    for sub in ctx.model.subclasses_of(cls):
        override = f"{sub}.{method}"
        former: list[Site] = []
        for old in spec.former_names:
            for qualname in ctx.model.attribute_names():
                if qualname.endswith(f".{old}") and qualname.startswith(sub + "."):
                    former.extend(ctx.accesses(qualname, ("write", "read")))
        has_override = ctx.model.node_kind(override) in (METHOD, FUNCTION, PROPERTY)
        if has_override or former:
            rows.append(Subclass(ctx.ref(sub), ctx.ref(override) if has_override else None, tuple(former)))
    return SubclassesBody(tuple(rows))


@dataclass(frozen=True, slots=True)
class Helper:
    ref: Ref
    callers: tuple[Ref, ...]  # the callers rlmap knows as symbols
    count: int  # distinct callers (a package's ranking: those that call it by name)


@dataclass(frozen=True, slots=True)
class InventoryBody(Body):
    owner: Ref | None
    scope: tuple[str, ...]
    helpers: tuple[Helper, ...]
    total: int


def build_inventory(spec: specs.Inventory, ctx: Context) -> InventoryBody:
    if (spec.class_ is None) == (not spec.scope):
        raise ctx.fail("give either 'class' or 'scope'", "class lists a class's helpers, scope ranks a package's")
    if spec.class_ is not None:
        cls = ctx.name(spec.class_, "class")
        prefix = cls + "."
        rows = []
        for name in ctx.model.qualnames():
            member = name[len(prefix) :] if name.startswith(prefix) else ""
            if not _private(member) or "." in member or ctx.model.node_kind(name) not in (METHOD, PROPERTY, FUNCTION):
                continue
            hows: dict[str, set[str]] = {}
            for edge in ctx.model.callers(name):
                hows.setdefault(edge.caller, set()).update(edge.how)
            callers = sorted(hows)
            known = tuple(_caller_ref(ctx, c, hows[c]) for c in callers if ctx.model.has_symbol(c))
            rows.append(Helper(ctx.ref(name), known, len(callers)))
        rows.sort(key=lambda row: row.ref.anchor.line if row.ref.anchor else 0)
        return InventoryBody(ctx.ref(cls), (), tuple(rows), len(rows))
    scope = tuple(spec.scope)
    rows = []
    for symbol in ctx.model.symbols():
        if symbol.kind not in _HELPER_KINDS or symbol.has_docstring or not symbol.qualname.startswith(scope):
            continue
        if not _private(symbol.qualname.rsplit(".", 1)[-1]):
            continue
        if ctx.refs.fallback_of(symbol):  # a stand-in defined only when an import fails: not what runs
            continue
        # callers that name it: one only a value reaches it from (a ``partial``, a function
        # handed around) is not counted (a flow-insensitive merge may invent it); a decorator
        # counts each definition it decorates (``@_helper`` names it there)
        edges = ctx.model.callers(symbol.qualname)
        named = {edge.caller for edge in edges if set(edge.how) - BY_VALUE}
        decorated = {(edge.caller, line) for edge in edges if "decorator" in edge.how for line in edge.lines}
        count = len(named) + len(decorated)
        rows.append(Helper(ctx.ref(symbol.qualname), (), count))
    rows.sort(key=lambda row: (-row.count, row.ref.qualname))
    return InventoryBody(None, scope, tuple(rows[: spec.limit]), len(rows))


def _caller_ref(ctx: Context, caller: str, hows: set[str]) -> Ref:
    """A caller as a helper table shows it: said so when it only hands the helper on (a thread's
    ``target``, a callback) or reaches it through a value, not by calling it by name."""
    ref = ctx.ref(caller)
    if hows - BY_VALUE or "decorator" in hows:
        return ref
    said = [_HOW_SAID[how] for how in sorted(hows) if how in _HOW_SAID]
    return dataclasses.replace(ref, display=f"{ref.display} ({', '.join(said) or 'through a value'})")


_HOW_SAID = {
    "callback": "hands it on to be called",
    "setter": "assigns it, which runs its setter",
    "implicit": "Python calls it",
    "flow": "through a value",
}


_HELPER_KINDS = (FUNCTION, METHOD, PROPERTY)  # a private property is a helper read by name


def _private(name: str) -> bool:
    """A private helper's name: one leading underscore (dunders are protocol, not helpers)."""
    return name.startswith("_") and not name.startswith("__")


@dataclass(frozen=True, slots=True)
class Described:
    ref: Ref
    callers: tuple[Site, ...]
    calls: tuple[Call, ...]


@dataclass(frozen=True, slots=True)
class SymbolsBody(Body):
    symbols: tuple[Described, ...]
    detail: bool


def build_symbols(spec: specs.Symbols, ctx: Context) -> SymbolsBody:
    detail = spec.layout == "detail"
    rows = []
    for name in spec.symbols:
        qualname = ctx.name(name, "symbols")
        callers = tuple(ctx.readers(qualname)) if detail else ()
        calls = tuple(c for c in ctx.calls_of(qualname) if any(isinstance(t, Ref) for t in c.targets)) if detail else ()
        rows.append(Described(ctx.ref(qualname), callers, calls))
    return SymbolsBody(tuple(rows), detail)


@dataclass(frozen=True, slots=True)
class CaveatsBody(Body):
    caveats: tuple[Entry, ...]  # symbol -> notes


def build_caveats(spec: specs.Caveats, ctx: Context) -> CaveatsBody:
    rows = []
    for name in spec.symbols:
        qualname = ctx.name(name, "symbols")
        symbol = ctx.model.symbol(qualname)
        notes = _caveats(ctx.refs.docstring(symbol)) if symbol is not None else []
        if notes:
            rows.append(Entry(ctx.ref(qualname), tuple(notes)))
    return CaveatsBody(tuple(rows))


_NOTE = re.compile(r"(\s*)\.\. (note|warning|caution|important)::\s*(.*)")
_ROLE = re.compile(r":[a-z]+:`~?([^`<]*?)(?: <[^>]*>)?`")


def _caveats(docstring: str) -> list[str]:
    """``.. note::`` / ``.. warning::`` blocks of a docstring, as plain text.

    A block ends at the first non-blank line indented no deeper than its directive.
    """
    notes = []
    lines = docstring.splitlines()
    index = 0
    while index < len(lines):
        match = _NOTE.match(lines[index])
        if not match:
            index += 1
            continue
        indent = len(match.group(1))
        body = [match.group(3)] if match.group(3) else []
        index += 1
        while index < len(lines):
            line = lines[index]
            if line.strip() and len(line) - len(line.lstrip()) <= indent:
                break
            body.append(line.strip())
            index += 1
        text = _ROLE.sub(r"\1", " ".join(part for part in body if part))
        notes.append(f"{match.group(2).capitalize()}: {text.replace('``', '')}")
    return notes
