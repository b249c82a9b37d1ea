"""The resolved model of a package: symbols, call graph, attribute and tensordict-key flows.

``build_model(index, source)`` resolves every call site with :class:`rlmap.model.resolve.Resolver`
and groups attribute and key accesses.  The model keeps its records as plain tuples so that it
loads from the cache in milliseconds (``state``/``STATE``, plain typed data); the accessors turn them
back into the frozen records of :mod:`rlmap.index.records` one query at a time, and the networkx
graph is built only when a caller asks for it.
"""

from __future__ import annotations

import dataclasses
import typing
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from rlmap.index.indexer import ProjectIndex
from rlmap.index.records import (
    ATTRIBUTE,
    METHOD,
    PROPERTY,
    READ,
    AttributeAccess,
    Diagnostic,
    KeyAccess,
    ReturnSite,
    Symbol,
)
from rlmap.index.source import SourceTree
from rlmap.model.resolve import Resolver, Target

EXTERNAL = "external"
UNRESOLVED = "unresolved"


@dataclass(frozen=True, slots=True)
class SourceInfo:
    """What generated output may say about the source: never an absolute path."""

    package: str
    version: str
    commit: str
    repo_url: str

    @classmethod
    def of(cls, source: SourceTree) -> SourceInfo:
        return cls(source.package, source.version, source.commit, source.repo_url)

    @property
    def ref(self) -> str:
        if self.commit:
            return self.commit
        return f"v{self.version}" if self.version else "main"

    def permalink(self, path: str, line: int | None = None) -> str:
        if not self.repo_url or not path:
            return ""
        anchor = f"#L{line}" if line else ""
        return f"{self.repo_url}/blob/{self.ref}/{path}{anchor}"

    def stamp(self) -> str:
        text = f"{self.package} {self.version or '(unknown version)'}"
        return f"{text} @ {self.commit[:12]}" if self.commit else text


@dataclass(frozen=True, slots=True)
class Edge:
    """A resolved call edge with every call-site line and every way it was resolved."""

    caller: str
    callee: str
    lines: tuple[int, ...]
    how: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ResolvedCall:
    """One call site of a function with what it resolved to, in code order."""

    line: int
    callee_text: str
    guards: tuple[str, ...]
    targets: tuple[str, ...]
    how: tuple[str, ...]


def _row(record: type) -> Any:
    """The tuple type of a record's fields in declaration order: ``tuple[str, str, int, ...]``."""
    hints = typing.get_type_hints(record)
    return tuple.__class_getitem__(tuple(hints[name] for name in record.__slots__))  # type: ignore[attr-defined]


# The model's state, typed to the last field, so that the cache decodes (and validates) it into
# exactly what ``CodeModel`` expects: a cache entry cannot smuggle in anything else.
STATE = typing.TypedDict(  # type: ignore[operator]  # noqa: UP013 (computed field types)
    "STATE",
    {
        "source": tuple[str, str, str, str],
        "symbols": dict[str, _row(Symbol)],  # type: ignore[misc]
        "edges": list[tuple[str, str, tuple[int, ...], tuple[str, ...]]],
        "nodes": dict[str, str],
        "attributes": dict[str, tuple[_row(AttributeAccess), ...]],  # type: ignore[misc]
        "keys": dict[tuple[str, ...], tuple[_row(KeyAccess), ...]],  # type: ignore[misc]
        "sites": dict[str, tuple[_row(ResolvedCall), ...]],  # type: ignore[misc]
        "returns": dict[str, tuple[_row(ReturnSite), ...]],  # type: ignore[misc]
        "exports": tuple[tuple[str, str, str], ...],
        "external_exports": tuple[tuple[str, str, str], ...],
        "bases": dict[str, tuple[str, ...]],
        "subclasses": dict[str, tuple[str, ...]],
        "diagnostics": tuple[tuple[str, int, str], ...],
    },
)


def _as_tuple(record: Any) -> tuple[Any, ...]:
    """A slotted dataclass as the tuple of its fields, in declaration order (``__slots__``)."""
    return tuple(map(record.__getattribute__, record.__slots__))


class CodeModel:
    """Queries over one resolved package."""

    def __init__(self, state: dict[str, Any]) -> None:
        self._state = state
        self.source = SourceInfo(*state["source"])
        self._symbols: dict[str, tuple[Any, ...]] = state["symbols"]
        self._edges: list[tuple[str, str, tuple[int, ...], tuple[str, ...]]] = state["edges"]
        self._nodes: dict[str, str] = state["nodes"]  # external / unresolved node kinds
        self._attributes: dict[str, tuple[tuple[Any, ...], ...]] = state["attributes"]
        self._keys: dict[tuple[str, ...], tuple[tuple[Any, ...], ...]] = state["keys"]
        self._sites: dict[str, tuple[tuple[Any, ...], ...]] = state["sites"]
        self._returns: dict[str, tuple[tuple[Any, ...], ...]] = state["returns"]
        self._exports: tuple[tuple[str, str, str], ...] = state["exports"]
        self._external_exports: tuple[tuple[str, str, str], ...] = state["external_exports"]
        self.bases: dict[str, tuple[str, ...]] = state["bases"]
        self.subclasses: dict[str, tuple[str, ...]] = state["subclasses"]
        self.diagnostics = tuple(Diagnostic(*item) for item in state["diagnostics"])
        self._out: dict[str, list[int]] | None = None
        self._in: dict[str, list[int]] | None = None
        self._graph: Any = None  # networkx.DiGraph, imported only when a caller asks for it
        self._nearest: dict[str, dict[str, tuple[int, str] | None]] = defaultdict(dict)
        self._descendants: dict[str, list[str]] = {}

    # -- persistence -----------------------------------------------------------------------
    @property
    def state(self) -> dict[str, Any]:
        """Everything the model holds, as plain data of type :data:`STATE` (what the cache stores)."""
        return self._state

    # -- symbols ---------------------------------------------------------------------------
    def symbol(self, qualname: str) -> Symbol | None:
        raw = self._symbols.get(qualname)
        return Symbol(*raw) if raw is not None else None

    def path_of(self, qualname: str) -> str:
        """The file of ``qualname``, or of its nearest enclosing symbol (a nested function, a class)."""
        candidate = qualname
        while candidate:
            raw = self._symbols.get(candidate)
            if raw is not None:
                return str(raw[2])
            candidate = candidate.rpartition(".")[0]
        return ""

    def has_symbol(self, qualname: str) -> bool:
        return qualname in self._symbols

    def qualnames(self) -> Iterator[str]:
        return iter(self._symbols)

    def symbols(self) -> Iterator[Symbol]:
        for raw in self._symbols.values():
            yield Symbol(*raw)

    def node_kind(self, qualname: str) -> str:
        raw = self._symbols.get(qualname)
        if raw is not None:
            return str(raw[1])
        return self._nodes.get(qualname, "")

    # -- calls -----------------------------------------------------------------------------
    def _adjacency(self) -> tuple[dict[str, list[int]], dict[str, list[int]]]:
        if self._out is None or self._in is None:
            out: dict[str, list[int]] = defaultdict(list)
            into: dict[str, list[int]] = defaultdict(list)
            for position, (caller, callee, _, _) in enumerate(self._edges):
                out[caller].append(position)
                into[callee].append(position)
            self._out, self._in = dict(out), dict(into)
        return self._out, self._in

    def _edge(self, position: int) -> Edge:
        return Edge(*self._edges[position])

    def callees(self, qualname: str) -> list[Edge]:
        """Outgoing edges in order of their first call-site line."""
        out, _ = self._adjacency()
        edges = [self._edge(position) for position in out.get(qualname, ())]
        return sorted(edges, key=lambda edge: (edge.lines[0], edge.callee))

    def callers(self, qualname: str) -> list[Edge]:
        _, into = self._adjacency()
        edges = [self._edge(position) for position in into.get(qualname, ())]
        return sorted(edges, key=lambda edge: (edge.caller, edge.lines[0]))

    def edge(self, caller: str, callee: str) -> Edge | None:
        out, _ = self._adjacency()
        for position in out.get(caller, ()):
            if self._edges[position][1] == callee:
                return self._edge(position)
        return None

    def edges(self) -> list[Edge]:
        return [Edge(*raw) for raw in self._edges]  # stored sorted by (caller, callee)

    def graph(self) -> Any:
        """The call graph as a networkx DiGraph (built on first use; networkx is imported here only,
        so that a warm ``show`` never pays for it)."""
        import networkx as nx

        if self._graph is None:
            graph: nx.DiGraph = nx.DiGraph()
            for qualname, raw in self._symbols.items():
                graph.add_node(qualname, kind=raw[1])
            for name, kind in self._nodes.items():
                graph.add_node(name, kind=kind)
            for caller, callee, lines, how in self._edges:
                graph.add_edge(caller, callee, lines=lines, how=how)
            self._graph = graph
        return self._graph

    def call_sites(self, function: str) -> list[ResolvedCall]:
        """Every call written in ``function`` (not its nested functions), in code order."""
        return [ResolvedCall(*raw) for raw in self._sites.get(function, ())]

    def exports(self) -> tuple[tuple[str, str, str], ...]:
        """(module, name, qualname): names modules bind by import to the package's symbols."""
        return self._exports

    def external_exports(self) -> tuple[tuple[str, str, str], ...]:
        """(module, name, dotted): names modules bind by import to other packages' objects."""
        return self._external_exports

    def returns(self, function: str) -> tuple[ReturnSite, ...]:
        return tuple(ReturnSite(*raw) for raw in self._returns.get(function, ()))

    def find_member(self, cls: str, name: str) -> str | None:
        """``cls.name`` as defined in ``cls`` or the nearest base (breadth first) that defines it.

        The nearest definition of a class is the nearest of its bases' (the first base on a tie),
        which is what a breadth-first walk finds; it is memoized per name and computed without
        recursion, so a deep hierarchy costs its depth once, not once per question.
        """
        memo = self._nearest[name]
        stack = [(cls, False)]
        active: set[str] = set()  # on the current path: a base that is one closes a cycle
        while stack:
            node, ready = stack.pop()
            if node in memo:
                continue
            if f"{node}.{name}" in self._symbols:
                memo[node] = (0, f"{node}.{name}")
                continue
            bases = self.bases.get(node, ())
            if ready:
                active.discard(node)
                best: tuple[int, str] | None = None
                for base in bases:
                    found = memo.get(base)
                    if found is not None and (best is None or found[0] + 1 < best[0]):
                        best = (found[0] + 1, found[1])
                memo[node] = best
                continue
            if node in active:
                continue
            active.add(node)
            stack.append((node, True))
            stack.extend((base, False) for base in reversed(bases) if base not in memo and base not in active)
        nearest = memo.get(cls)
        return nearest[1] if nearest is not None else None

    def subclasses_of(self, cls: str) -> list[str]:
        """Every direct and indirect subclass, sorted."""
        if cls not in self._descendants:
            found: set[str] = set()
            stack = list(self.subclasses.get(cls, ()))
            while stack:
                current = stack.pop()
                if current not in found:
                    found.add(current)
                    stack.extend(self.subclasses.get(current, ()))
            self._descendants[cls] = sorted(found)
        return list(self._descendants[cls])

    # -- attributes and keys ---------------------------------------------------------------
    def attribute_names(self) -> Iterator[str]:
        return iter(self._attributes)

    def attribute_accesses(self, qualname: str) -> tuple[AttributeAccess, ...]:
        return tuple(AttributeAccess(*raw) for raw in self._attributes.get(qualname, ()))

    def key_names(self) -> Iterator[tuple[str, ...]]:
        return iter(self._keys)

    def key_accesses(self, key: tuple[str, ...]) -> tuple[KeyAccess, ...]:
        return tuple(KeyAccess(*raw) for raw in self._keys.get(key, ()))


def build_model(index: ProjectIndex, source: SourceTree | SourceInfo) -> CodeModel:
    """Resolve every call, property read and attribute of ``index`` into a :class:`CodeModel`."""
    info = source if isinstance(source, SourceInfo) else SourceInfo.of(source)
    resolver = Resolver(index.modules)
    symbols = dict(resolver.symbols)
    edge_lines: dict[tuple[str, str], set[int]] = defaultdict(set)
    edge_how: dict[tuple[str, str], set[str]] = defaultdict(set)
    nodes: dict[str, str] = {}

    def add(caller: str, target: Target, line: int) -> None:
        if target.external:
            nodes[target.qualname] = UNRESOLVED if target.how == UNRESOLVED else EXTERNAL
        edge_lines[(caller, target.qualname)].add(line)
        edge_how[(caller, target.qualname)].add(target.how)

    sites: dict[str, list[tuple[Any, ...]]] = defaultdict(list)
    for module in index.modules:
        for site in module.calls:
            targets = resolver.resolve_call(site)
            for target in targets:
                add(site.caller, target, site.line)
            if not site.attribute_read:
                sites[site.caller].append(
                    (
                        site.line,
                        site.callee_text,
                        site.guards,
                        tuple(target.qualname for target in targets),
                        tuple(target.how for target in targets),
                    )
                )

    attributes, property_reads = _group_attributes(resolver, index)
    for access, getter, how in property_reads:
        add(access.function, Target(getter, how), access.line)
    for qualname, accesses in attributes.items():
        if qualname not in symbols:
            symbols[qualname] = _attribute_symbol(qualname, accesses, symbols)
    for caller, callee in edge_lines:
        for name in (caller, callee):
            if name not in symbols and name not in nodes:
                nodes[name] = UNRESOLVED

    keys: dict[tuple[str, ...], list[KeyAccess]] = defaultdict(list)
    for module in index.modules:
        for key_access in module.keys:
            if key_access.key:
                keys[key_access.key].append(key_access)
                continue
            for value in resolver.key_values(key_access.function, key_access.expression):
                keys[(value,)].append(dataclasses.replace(key_access, key=(value,)))

    state = {
        "source": (info.package, info.version, info.commit, info.repo_url),
        "symbols": {name: _as_tuple(symbols[name]) for name in sorted(symbols)},
        "edges": [
            (caller, callee, tuple(sorted(edge_lines[(caller, callee)])), tuple(sorted(edge_how[(caller, callee)])))
            for caller, callee in sorted(edge_lines)
        ],
        "nodes": dict(sorted(nodes.items())),
        "attributes": {name: tuple(_as_tuple(access) for access in accesses) for name, accesses in attributes.items()},
        "keys": {
            key: tuple(_as_tuple(access) for access in sorted(found, key=_access_order))
            for key, found in sorted(keys.items())
        },
        "sites": {caller: tuple(sorted(found, key=lambda raw: raw[0])) for caller, found in sorted(sites.items())},
        "returns": {
            function: tuple(_as_tuple(site) for site in found)
            for function, found in sorted(_returns_by_function(index).items())
        },
        "exports": tuple(_module_bindings(resolver, index)),
        "external_exports": tuple(_external_bindings(resolver, index)),
        "bases": {cls: bases for cls, bases in sorted(resolver.bases.items()) if bases},
        "subclasses": {cls: tuple(sorted(subs)) for cls, subs in sorted(resolver.subclasses.items())},
        "diagnostics": tuple((d.path, d.line, d.message) for d in index.diagnostics),
    }
    return CodeModel(state)


def _module_bindings(resolver: Resolver, index: ProjectIndex) -> list[tuple[str, str, str]]:
    """(module, name, defining qualname) for every module-level import of a package symbol."""
    found = set()
    for module in index.modules:
        for record in module.imports:
            if record.scope != module.module or record.name == "*":
                continue
            target = resolver.canonical(record.target)
            if target is not None and target in resolver.symbols:
                found.add((module.module, record.name, target))
    return sorted(found)


def _external_bindings(resolver: Resolver, index: ProjectIndex) -> list[tuple[str, str, str]]:
    """(module, name, outside dotted name) for module-level imports of other packages' names."""
    found = set()
    for module in index.modules:
        for record in module.imports:
            if record.scope != module.module or record.name == "*" or resolver.canonical(record.target) is not None:
                continue
            outside = resolver.outside_name(record.target)
            if outside is not None:
                found.add((module.module, record.name, outside))
    return sorted(found)


def _returns_by_function(index: ProjectIndex) -> dict[str, list[ReturnSite]]:
    found: dict[str, list[ReturnSite]] = defaultdict(list)
    for module in index.modules:
        for site in module.returns:
            found[site.function].append(site)
    return found


def _access_order(access: KeyAccess | AttributeAccess) -> tuple[str, int, str]:
    return (access.function, access.line, access.kind)


def _group_attributes(
    resolver: Resolver, index: ProjectIndex
) -> tuple[dict[str, tuple[AttributeAccess, ...]], list[tuple[AttributeAccess, str, str]]]:
    """Accesses grouped under the class that introduces the attribute; property reads apart."""
    grouped: dict[str, list[AttributeAccess]] = defaultdict(list)
    property_reads: list[tuple[AttributeAccess, str, str]] = []
    for module in index.modules:
        for access in module.attributes:
            if not access.owner:
                continue
            member = resolver.member(access.owner, access.attribute)
            kind = resolver.symbols[member].kind if member else ""
            if kind == METHOD:
                continue  # ``self.m`` in ``self.m()``: a call, already an edge
            if access.kind == READ and kind in ("", PROPERTY, ATTRIBUTE):
                # a subclass may define the attribute as a property (virtual dispatch)
                for override in resolver.overrides(access.owner, access.attribute):
                    if resolver.symbols[override].kind == PROPERTY:
                        property_reads.append((access, override, "override"))
            if kind == PROPERTY and member:
                if access.kind == READ:
                    property_reads.append((access, member, "property"))
                continue
            if member:
                owner = member.rpartition(".")[0]
            else:
                owner = resolver.attribute_owner(access.owner, access.attribute) or access.owner
            grouped[f"{owner}.{access.attribute}"].append(access)
    result = {qualname: tuple(sorted(accesses, key=_access_order)) for qualname, accesses in sorted(grouped.items())}
    return result, property_reads


def _attribute_symbol(qualname: str, accesses: tuple[AttributeAccess, ...], symbols: dict[str, Symbol]) -> Symbol:
    """A symbol for ``self.<attr>``, placed at its first write (in ``__init__`` if any)."""
    owner = qualname.rpartition(".")[0]
    own = [access for access in accesses if access.owner == owner]
    writes = [access for access in own if access.kind == "write"] or own or list(accesses)
    writes.sort(key=lambda access: (not access.function.endswith(".__init__"), access.line))
    first = writes[0]
    function = symbols.get(first.function)
    return Symbol(
        qualname=qualname,
        kind=ATTRIBUTE,
        path=function.path if function is not None else "",
        line=first.line,
        end_line=first.line,
        value=first.value,
        annotation=first.annotation,
    )
