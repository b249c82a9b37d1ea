"""The resolved model of a package: symbols, call graph, attribute and tensordict-key flows.

``build_model(index, source)`` resolves every call site with :class:`rlmap.model.resolve.Resolver`
and groups attribute and key accesses.  The model keeps its records as plain tuples so that it
loads from the cache in milliseconds (``state``/``STATE``, plain typed data); the accessors turn them
back into the frozen records of :mod:`rlmap.index.records` one query at a time, and the networkx
graph is built only when a caller asks for it.
"""

from __future__ import annotations

import typing
from collections import defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from rlmap.index.indexer import ProjectIndex
from rlmap.index.records import AttributeAccess, Diagnostic, KeyAccess, ReturnSite, Symbol
from rlmap.index.source import SourceTree, git_ref, permalink_url, source_stamp
from rlmap.model import assemble
from rlmap.model.assemble import EXTERNAL, UNRESOLVED, as_tuple
from rlmap.model.mro import descendants, nearest_in_bases
from rlmap.model.resolve import Resolver, Target

# Every module the resolved model is computed by: the model cache must be keyed on all of them
# (``code_version(*MODEL_MODULES, ...)``; a test checks that no module of rlmap/model is left out).
MODEL_MODULES = (
    "model.target",
    "model.mro",
    "model.symbols",
    "model.hierarchy",
    "model.inference",
    "model.constants",
    "model.calls",
    "model.resolve",
    "model.valueflow",
    "model.assemble",
    "model.codemodel",
)

__all__ = [
    "EXTERNAL",
    "MODEL_MODULES",
    "STATE",
    "UNRESOLVED",
    "CodeModel",
    "Edge",
    "ResolvedCall",
    "SourceInfo",
    "build_model",
]


@dataclass(frozen=True, slots=True)
class SourceInfo:
    """What generated output may say about the source: never an absolute path."""

    package: str
    version: str
    commit: str
    repo_url: str
    # Per-file link refs (the last commit that changed each file) and the files no commit holds
    # as they are (see rlmap.index.history); empty: every link uses ``ref``.
    pins: Mapping[str, str] = field(default_factory=dict, compare=False)
    unlinked: frozenset[str] = frozenset()

    @classmethod
    def of(cls, source: SourceTree) -> SourceInfo:
        return cls(source.package, source.version, source.commit, source.repo_url)

    @property
    def ref(self) -> str:
        return git_ref(self.commit, self.version)

    def permalink(self, path: str, line: int | None = None) -> str:
        """The link to ``path`` (at ``line``); ``""`` without a repository URL or a path, or for a
        file whose worktree lines no commit holds."""
        if not path or path in self.unlinked:
            return ""
        return permalink_url(self.repo_url, self.pins.get(path) or self.ref, path, line)

    def stamp(self) -> str:
        return source_stamp(self.package, self.version, self.commit)


@dataclass(frozen=True, slots=True)
class Edge:
    """A resolved call edge with every call-site line and every way it was resolved."""

    caller: str
    callee: str
    lines: tuple[int, ...]  # every line of ``caller`` that calls ``callee``, sorted
    how: tuple[str, ...]  # every way one of those calls was resolved, sorted


@dataclass(frozen=True, slots=True)
class ResolvedCall:
    """One call site of a function with what it resolved to, in code order."""

    line: int
    callee_text: str  # the called expression as written
    guards: tuple[str, ...]  # the headers of the enclosing ``if``/``while``/``for``
    targets: tuple[str, ...]  # what it resolved to, with ``how`` at the same position
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
        """``cls.name`` as defined in ``cls`` or the nearest base that defines it (memoized per name).

        Nearest first (see :func:`rlmap.model.mro.nearest_in_bases`), which differs from the
        resolver's depth-first :meth:`~rlmap.model.symbols.SymbolTable.member` on some diamonds.
        """
        symbols = self._symbols
        return nearest_in_bases(
            self.bases, cls, self._nearest[name], lambda node: f"{node}.{name}" if f"{node}.{name}" in symbols else None
        )

    def subclasses_of(self, cls: str) -> list[str]:
        """Every direct and indirect subclass, sorted."""
        if cls not in self._descendants:
            self._descendants[cls] = descendants(self.subclasses, cls)
        return list(self._descendants[cls])

    # -- attributes and keys ---------------------------------------------------------------
    def attribute_names(self) -> Iterator[str]:
        return iter(self._attributes)

    def attribute_accesses(self, qualname: str) -> tuple[AttributeAccess, ...]:
        return tuple(AttributeAccess(*raw) for raw in self._attributes.get(qualname, ()))

    def key_accesses(self, key: tuple[str, ...]) -> tuple[KeyAccess, ...]:
        return tuple(KeyAccess(*raw) for raw in self._keys.get(key, ()))


def build_model(index: ProjectIndex, source: SourceTree | SourceInfo) -> CodeModel:
    """Resolve every call, property read and attribute of ``index`` into a :class:`CodeModel`."""
    info = source if isinstance(source, SourceInfo) else SourceInfo.of(source)
    resolver = Resolver(index.modules)
    symbols = dict(resolver.symbols)
    edges = assemble.CallEdges()
    sites = assemble.resolve_sites(resolver, index, edges)
    attributes, property_reads = assemble.group_attributes(resolver, index)
    for access, getter, how in property_reads:
        edges.add(access.function, Target(getter, how), access.line)
    for qualname, accesses in attributes.items():
        if qualname not in symbols:
            symbols[qualname] = assemble.attribute_symbol(qualname, accesses, symbols)
    edges.mark_unknown(symbols)
    keys = assemble.group_keys(resolver, index)
    return CodeModel(
        {
            "source": (info.package, info.version, info.commit, info.repo_url),
            "symbols": {name: as_tuple(symbols[name]) for name in sorted(symbols)},
            "edges": edges.rows(),
            "nodes": dict(sorted(edges.nodes.items())),
            "attributes": {name: _rows(accesses) for name, accesses in attributes.items()},
            "keys": {key: _rows(sorted(found, key=assemble.access_order)) for key, found in sorted(keys.items())},
            "sites": {caller: tuple(sorted(found, key=lambda row: row[0])) for caller, found in sorted(sites.items())},
            "returns": {name: _rows(found) for name, found in sorted(assemble.returns_by_function(index).items())},
            "exports": tuple(assemble.module_bindings(resolver, index)),
            "external_exports": tuple(assemble.external_bindings(resolver, index)),
            "bases": {cls: bases for cls, bases in sorted(resolver.bases.items()) if bases},
            "subclasses": {cls: tuple(sorted(subs)) for cls, subs in sorted(resolver.subclasses.items())},
            "diagnostics": tuple((d.path, d.line, d.message) for d in index.diagnostics),
        }
    )


def _rows(records: typing.Iterable[Any]) -> tuple[tuple[Any, ...], ...]:
    return tuple(as_tuple(record) for record in records)
