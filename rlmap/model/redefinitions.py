"""One definition per function: the records of a function's other ``def``s, dropped before resolution.

A function defined twice in one file (``@implement_for`` version stubs and their implementation,
``@overload`` signatures, a ``def`` under each branch of an ``if``) is indexed under one qualname:
every call site, return, attribute and key access, import and value-flow fact of each ``def``.
The model anchors the name on one of them, the one :func:`rlmap.model.symbols.replaces` picks
(the later ``def``, the one a plain redefinition binds); :func:`keep_chosen_definitions` drops
the records of the others, so that the call graph, the flows and the pages describe that one
definition, not a mixture of it and a stub that raises.

``@implement_for(module, from_version, to_version)`` variants are not chosen by their order:
``implement_for`` binds the name to the variant whose range holds the installed version of
``module``, which the source alone does not say.  The pages describe the variant that runs on the
newest versions, the one with no ``to_version`` (of several, the highest ``from_version``); the
others run only under older versions of their dependency, and their calls are left out with them.
The versions are read from the decorator call's string arguments in the value-flow facts.

Only modules that define a function more than once are rebuilt.  A record belongs to another
``def`` when it is written in the function (or a scope nested in it) at a line outside the chosen
definition's lines.  The value-flow facts without a line (copies, parameters) are told apart by
the ``params`` fact each ``def`` starts with (:mod:`rlmap.index.summaries` walks bodies in order).
Local bindings carry no line: a parameter's annotation is kept only as the chosen ``def``
annotates it; other local bindings of the dropped ``def``s stay (see :func:`_locals`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from rlmap.index.records import FUNCTION, METHOD, FlowRow, LocalBinding, ModuleIndex, Symbol
from rlmap.model.symbols import replaces

if TYPE_CHECKING:
    from rlmap.index.indexer import ProjectIndex

_DEFS = (FUNCTION, METHOD)


@dataclasses.dataclass(frozen=True, slots=True)
class Redefined:
    """A function defined more than once in a module: the ``def`` Python binds, and every ``def``."""

    qualname: str
    chosen: Symbol
    definitions: tuple[Symbol, ...]  # in line order, the chosen one among them

    def outside(self, line: int) -> bool:
        """Whether a record of this function (or of a scope inside it) at ``line`` is another ``def``'s."""
        return not self.chosen.line <= line <= self.chosen.end_line


def keep_chosen_definitions(index: ProjectIndex) -> ProjectIndex:
    """``index`` with the records of every function's unchosen ``def``s dropped (the same object
    when no module defines a function twice)."""
    modules = tuple(chosen_module(module) for module in index.modules)
    if all(new is old for new, old in zip(modules, index.modules, strict=True)):
        return index
    return dataclasses.replace(index, modules=modules)


def redefinitions(symbols: Iterable[Symbol], flow: tuple[FlowRow, ...] = ()) -> list[Redefined]:
    """The functions of one module defined more than once, where the one bound is a function
    (``flow``: the module's value-flow facts, where ``@implement_for`` variants' versions are read)."""
    seen: dict[str, list[Symbol]] = {}
    repeated: list[str] = []
    for symbol in symbols:
        found = seen.setdefault(symbol.qualname, [])
        found.append(symbol)
        if len(found) == 2:
            repeated.append(symbol.qualname)
    result = []
    decorations: list[tuple[int, tuple[str, ...]]] | None = None  # implement_for calls: read once, if needed
    for qualname in repeated:
        chosen: Symbol | None = None
        for symbol in seen[qualname]:
            if chosen is None or replaces(chosen, symbol):
                chosen = symbol
        definitions = tuple(sorted((s for s in seen[qualname] if s.kind in _DEFS), key=lambda s: s.line))
        if chosen is not None and chosen.kind in _DEFS and len(definitions) > 1:
            if all(_IMPLEMENT_FOR in definition.decorators for definition in definitions):
                if decorations is None:
                    decorations = sorted((r[5], r[4]) for r in flow if r[0] == "call" and r[3] == _IMPLEMENT_FOR)
                chosen = _newest_variant(definitions, decorations) or chosen
            result.append(Redefined(qualname, chosen, definitions))
    return result


def chosen_module(module: ModuleIndex) -> ModuleIndex:
    """``module`` without the records of the ``def``s Python does not bind (itself if none)."""
    found = {redefined.qualname: redefined for redefined in redefinitions(module.symbols, module.flow)}
    if not found:
        return module

    memo: dict[str, list[Redefined]] = {}

    def around(scope: str) -> list[Redefined]:
        if scope not in memo:
            memo[scope] = _around(scope, found)
        return memo[scope]

    def elsewhere(scope: str, line: int) -> bool:
        enclosing = around(scope)
        return bool(enclosing) and any(redefined.outside(line) for redefined in enclosing)

    return dataclasses.replace(
        module,
        symbols=tuple(s for s in module.symbols if not _unchosen_symbol(s, found)),
        calls=tuple(site for site in module.calls if not elsewhere(site.caller, site.line)),
        attributes=tuple(a for a in module.attributes if not elsewhere(a.function, a.line)),
        keys=tuple(k for k in module.keys if not elsewhere(k.function, k.line)),
        imports=tuple(i for i in module.imports if not elsewhere(i.scope, i.line)),
        returns=tuple(r for r in module.returns if not elsewhere(r.function, r.line)),
        locals=_locals(module.locals, found),
        flow=_flow(module.flow, found, around),
    )


_IMPLEMENT_FOR = "implement_for"
_VERSION_PARAMETERS = ("module_name", "from_version", "to_version")


def _newest_variant(definitions: tuple[Symbol, ...], calls: list[tuple[int, tuple[str, ...]]]) -> Symbol | None:
    """Of ``@implement_for`` variants, the one with no upper bound (the highest lower bound among
    several), from the module's ``implement_for(...)`` calls (line, arguments); ``None`` when no
    single one is open."""
    ranges: list[tuple[tuple[int, ...], Symbol]] = []
    previous_end = 0
    for definition in definitions:  # in line order: a def's decorators lie after the previous def
        # its ``implement_for(...)``: the nearest such call above the ``def`` (others in the file
        # decorate other functions)
        above = [arguments for line, arguments in calls if previous_end < line < definition.line]
        previous_end = definition.end_line
        if not above:
            return None
        versions = _versions(above[-1])
        if versions is None:
            return None
        if versions.get("to_version") is None:
            ranges.append((_version_key(versions.get("from_version") or "0"), definition))
    if not ranges:
        return None
    ranges.sort(key=lambda pair: pair[0])
    if len(ranges) > 1 and ranges[-1][0] == ranges[-2][0]:
        return None  # two variants open above from the same version: for different modules
    return ranges[-1][1]


def _versions(arguments: tuple[str, ...]) -> dict[str, str | None] | None:
    """``implement_for``'s arguments as the summary wrote them (``=s:2.7`` a string, ``""`` another
    constant, ``k=...`` a keyword); ``None`` when a version is not a literal."""
    found: dict[str, str | None] = {}
    for position, argument in enumerate(arguments):
        name, equals, value = argument.partition("=") if not argument.startswith("=") else ("", "", argument)
        if equals and not value:
            return None  # a keyword's constant: the summary keeps no text for it
        if not equals:
            if position >= len(_VERSION_PARAMETERS):
                continue
            name, value = _VERSION_PARAMETERS[position], argument
        if name not in _VERSION_PARAMETERS[1:]:
            continue
        if value.startswith("=s:"):
            found[name] = value[3:]
        elif value == "":
            found[name] = None
        else:
            return None  # a version held in a variable
    return found


def _version_key(version: str) -> tuple[int, ...]:
    """``"2.7.1"`` as ``(2, 7, 1)`` (a part's leading digits; ``0`` where there are none)."""
    key = []
    for part in version.split("."):
        digits = ""
        for character in part:
            if not character.isdigit():
                break
            digits += character
        key.append(int(digits or 0))
    return tuple(key)


def _around(scope: str, found: dict[str, Redefined]) -> list[Redefined]:
    """The redefined functions ``scope`` is (or is nested in), innermost first."""
    around = []
    while scope:
        redefined = found.get(scope)
        if redefined is not None:
            around.append(redefined)
        scope = scope.rpartition(".")[0]
    return around


def _unchosen_symbol(symbol: Symbol, found: dict[str, Redefined]) -> bool:
    """An unchosen ``def`` itself, or a definition nested in one."""
    redefined = found.get(symbol.qualname)
    if redefined is not None and symbol is not redefined.chosen and symbol.kind in _DEFS:
        return True
    return any(outer.outside(symbol.line) for outer in _around(symbol.qualname.rpartition(".")[0], found))


def _locals(bindings: tuple[LocalBinding, ...], found: dict[str, Redefined]) -> tuple[LocalBinding, ...]:
    """A parameter's annotation as the chosen ``def`` writes it (an ``@overload``'s narrower
    annotation would otherwise type the parameter, the first binding of a name being the one
    read).  The index records no line for a local binding, so the bindings the other ``def``s'
    bodies make cannot be told from the chosen one's and are kept."""
    dropped: set[tuple[str, str, str]] = set()
    for redefined in found.values():
        chosen = set(redefined.chosen.params)
        for definition in redefined.definitions:
            for name, annotation in definition.params:
                if annotation and (name, annotation) not in chosen:
                    dropped.add((redefined.qualname, name, annotation))
    if not dropped:
        return bindings
    return tuple(
        binding
        for binding in bindings
        if not (binding.how == "annotation" and (binding.function, binding.name, binding.parts[0]) in dropped)
    )


def _flow(
    rows: tuple[FlowRow, ...], found: dict[str, Redefined], around: Callable[[str], list[Redefined]]
) -> tuple[FlowRow, ...]:
    """The value-flow facts of the chosen ``def``s.

    Each ``def`` of a function starts with its ``params`` fact, then binds its defaults (in the
    enclosing scope: a ``copy`` into ``<function>.<parameter>``) and walks its body; the facts
    from one ``params`` fact to the next belong to that ``def``.  A function whose ``params``
    facts do not pair with its definitions one to one has only its facts with a line filtered.
    """
    starts = dict.fromkeys(found, 0)
    for row in rows:
        if row[0] == "params" and row[1] in starts:
            starts[row[1]] += 1
    # the position of the ``def`` being walked, for each function walked in order; -1 before the first
    walking = {name: -1 for name, count in starts.items() if count == len(found[name].definitions)}
    chosen = {name: found[name].definitions.index(found[name].chosen) for name in walking}
    kept = []
    for row in rows:
        op, target, _, _, _, line, scope = row
        if op == "params" and target in walking:
            walking[target] += 1
            if walking[target] != chosen[target]:
                continue
        enclosing = around(scope)
        bound = around(target.rpartition(".")[0]) if op == "copy" else []  # a default bound to a parameter
        if not enclosing and not bound:
            kept.append(row)  # most facts: outside every function defined twice
            continue
        if any(walking.get(r.qualname, -1) not in (-1, chosen.get(r.qualname)) for r in (*enclosing, *bound)):
            continue  # the body of an unchosen ``def``, or a default it binds
        if line and any(r.outside(line) for r in enclosing):
            continue
        kept.append(row)
    return tuple(kept)
