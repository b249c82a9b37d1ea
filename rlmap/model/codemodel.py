"""The resolved model of a package: symbols, call graph, attribute and tensordict-key flows.

``build_model(index, source)`` resolves every call site with :class:`rlmap.model.resolve.Resolver`
and groups attribute and key accesses.  The model keeps its records as plain tuples keyed by
qualified name (``state``/``STATE``, plain typed data); the accessors turn them back into the
frozen records of :mod:`rlmap.index.records` one query at a time, and the networkx graph is built
only when a caller asks for it.  A model from the cache is decoded lazily (:data:`LAZY_STATE`,
:meth:`CodeModel.from_cache`): the names of every table at once, each row the first time a query
reads it, so that ``rlmap show`` decodes a few hundred rows of a 25 MB entry.
"""

from __future__ import annotations

import typing
from collections import defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import msgspec

from rlmap.errors import CacheError
from rlmap.index.records import AttributeAccess, Diagnostic, KeyAccess, ReturnSite, Symbol
from rlmap.index.source import SourceTree, companion_path, git_ref, permalink_url, source_stamp
from rlmap.model.mro import descendants, nearest_in_bases

if TYPE_CHECKING:
    from rlmap.index.indexer import ProjectIndex

# Every module the resolved model is computed by: the model cache must be keyed on all of them
# (``code_version(*MODEL_MODULES, ...)``; a test checks that no module of rlmap/model is left out).
MODEL_MODULES = (
    "model.target",
    "model.mro",
    "model.annotations",
    "model.admission",
    "model.symbols",
    "model.hierarchy",
    "model.inference",
    "model.constants",
    "model.calls",
    "model.resolve",
    "model.valueflow",
    "model.redefinitions",
    "model.assemble",
    "model.codemodel",
)

__all__ = [
    "EXTERNAL",
    "LAZY_STATE",
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
    # The packages indexed with it, never documented: no link into them (they are not in the
    # repository), and :meth:`CodeModel.symbols` leaves their symbols out.
    companions: tuple[str, ...] = ()
    # (name, version, repository URL) of each: its files link to its own repository's tag
    companion_links: tuple[tuple[str, str, str], ...] = ()
    # Per-file link refs (the last commit that changed each file) and the files no commit holds
    # as they are (see rlmap.index.history); empty: every link uses ``ref``.
    pins: Mapping[str, str] = field(default_factory=dict, compare=False)
    unlinked: frozenset[str] = frozenset()

    @classmethod
    def of(cls, source: SourceTree) -> SourceInfo:
        return cls(
            source.package,
            source.version,
            source.commit,
            source.repo_url,
            source.companion_names,
            source.companion_links(),
        )

    def is_companion_path(self, path: str) -> bool:
        """Whether ``path`` is a file of a companion package (indexed, not documented)."""
        return bool(self.companions) and companion_path(self.companions, path)

    @property
    def ref(self) -> str:
        return git_ref(self.commit, self.version)

    def permalink(self, path: str, line: int | None = None) -> str:
        """The link to ``path`` (at ``line``); ``""`` without a repository URL or a path, or for a
        file whose worktree lines no commit holds."""
        if not path or path in self.unlinked:
            return ""
        if self.is_companion_path(path):  # a companion's file: at its own tag, in its own repository
            for name, version, url in self.companion_links:
                if companion_path((name,), path):
                    return permalink_url(url, f"v{version}", path, line) if url and version else ""
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


# The node kinds of call-graph ends that are not symbols of the package (as rlmap.model.assemble
# writes them; named here too so that reading a model never imports the resolver).
EXTERNAL = "external"
UNRESOLVED = "unresolved"

K = TypeVar("K")
V = TypeVar("V")


def _row(record: type) -> Any:
    """The tuple type of a record's fields in declaration order: ``tuple[str, str, int, ...]``."""
    hints = typing.get_type_hints(record)
    return tuple.__class_getitem__(tuple(hints[name] for name in record.__slots__))  # type: ignore[attr-defined]


_EDGE_OUT = tuple[str, tuple[int, ...], tuple[str, ...]]  # callee, lines, hows (of one caller)

# The tables of the model: each maps a name to its rows, typed to the last field, so that the
# cache decodes (and validates) them into exactly what ``CodeModel`` expects.
_TABLES: dict[str, Any] = {
    "symbols": _row(Symbol),
    "calls": tuple[_EDGE_OUT, ...],  # caller -> its edges, sorted by callee
    "attributes": tuple[_row(AttributeAccess), ...],  # type: ignore[misc]
    "keys": tuple[_row(KeyAccess), ...],  # type: ignore[misc]
    "sites": tuple[_row(ResolvedCall), ...],  # type: ignore[misc]
    "returns": tuple[_row(ReturnSite), ...],  # type: ignore[misc]
}
_TABLE_KEYS: dict[str, Any] = {"keys": tuple[str, ...]}

_PLAIN = {
    "source": tuple[str, str, str, str, tuple[str, ...], tuple[tuple[str, str, str], ...]],
    "called_by": dict[str, tuple[str, ...]],  # callee -> its callers, sorted
    "nodes": dict[str, str],
    "exports": tuple[tuple[str, str, str], ...],
    "external_exports": tuple[tuple[str, str, str], ...],
    "bases": dict[str, tuple[str, ...]],
    "subclasses": dict[str, tuple[str, ...]],
    "diagnostics": tuple[tuple[str, int, str], ...],
}

# The model's state: plain typed data, all of it decoded (what build_model makes, what the cache
# stores) ...
STATE = typing.TypedDict(  # type: ignore[operator]
    "STATE",
    {**_PLAIN, **{name: dict[_TABLE_KEYS.get(name, str), row] for name, row in _TABLES.items()}},  # type: ignore[misc]
)
# ... and the same bytes decoded lazily: each table kept as MessagePack until a query reads it, then
# its names, then each row the first time it is read.
LAZY_STATE = msgspec.defstruct("LAZY_STATE", [*_PLAIN.items(), *((name, msgspec.Raw) for name in _TABLES)])


class _SymbolHead(msgspec.Struct, array_like=True):
    """The first fields of a symbol's row (the rest is skipped unread)."""

    qualname: str
    kind: str
    path: str


def named_files(state: Any) -> set[str] | None:
    """The files the symbols of a :data:`LAZY_STATE` are in (the rest of each row is skipped);
    ``None`` when the table is malformed."""
    try:
        heads = msgspec.msgpack.decode(state.symbols, type=dict[str, _SymbolHead])
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    return {head.path for head in heads.values()}


class LazyRows(Mapping[K, V], Generic[K, V]):
    """A table whose rows are decoded (and validated) the first time they are read."""

    __slots__ = ("_decoded", "_encoded", "_index", "_key", "_row", "_table")

    def __init__(self, table: str, encoded: msgspec.Raw, key: Any, row: Any) -> None:
        self._table = table
        self._encoded = encoded
        self._key = key
        self._row = row
        self._index: dict[K, msgspec.Raw] | None = None  # name -> the row's MessagePack
        self._decoded: dict[K, V] = {}

    def _malformed(self, error: Exception) -> CacheError:
        return CacheError(
            f"the cached model's {self._table} table is malformed ({error})",
            "delete the cache directory (or run with --no-cache): it was not written by this rlmap",
        )

    @property
    def _rows(self) -> dict[K, msgspec.Raw]:
        if self._index is None:
            try:
                self._index = msgspec.msgpack.decode(self._encoded, type=dict[self._key, msgspec.Raw])  # type: ignore[name-defined]
            except (msgspec.DecodeError, msgspec.ValidationError) as error:
                raise self._malformed(error) from None
        return self._index

    def __getitem__(self, key: K) -> V:
        try:
            return self._decoded[key]
        except KeyError:
            raw = self._rows[key]
        try:
            value: V = msgspec.msgpack.decode(raw, type=self._row)
        except (msgspec.DecodeError, msgspec.ValidationError) as error:
            raise self._malformed(error) from None
        self._decoded[key] = value
        return value

    def __contains__(self, key: object) -> bool:
        return key in self._rows

    def __iter__(self) -> Iterator[K]:
        return iter(self._rows)

    def __len__(self) -> int:
        return len(self._rows)


class CodeModel:
    """Queries over one resolved package."""

    def __init__(self, state: dict[str, Any]) -> None:
        self._state = state
        self.source = SourceInfo(*state["source"])
        self._symbols: Mapping[str, tuple[Any, ...]] = state["symbols"]
        self._calls: Mapping[str, tuple[tuple[str, tuple[int, ...], tuple[str, ...]], ...]] = state["calls"]
        self._called_by: dict[str, tuple[str, ...]] = state["called_by"]
        self._nodes: dict[str, str] = state["nodes"]  # external / unresolved node kinds
        self._attributes: Mapping[str, tuple[tuple[Any, ...], ...]] = state["attributes"]
        self._keys: Mapping[tuple[str, ...], tuple[tuple[Any, ...], ...]] = state["keys"]
        self._sites: Mapping[str, tuple[tuple[Any, ...], ...]] = state["sites"]
        self._returns: Mapping[str, tuple[tuple[Any, ...], ...]] = state["returns"]
        self._exports: tuple[tuple[str, str, str], ...] = state["exports"]
        self._external_exports: tuple[tuple[str, str, str], ...] = state["external_exports"]
        self.bases: dict[str, tuple[str, ...]] = state["bases"]
        self.subclasses: dict[str, tuple[str, ...]] = state["subclasses"]
        self.diagnostics = tuple(Diagnostic(*item) for item in state["diagnostics"])
        self._graph: Any = None  # networkx.DiGraph, imported only when a caller asks for it
        self._nearest: dict[str, dict[str, tuple[int, str] | None]] = defaultdict(dict)
        self._descendants: dict[str, list[str]] = {}

    @classmethod
    def from_cache(cls, state: Any) -> CodeModel:
        """The model of a :data:`LAZY_STATE`: its tables decode row by row as queries read them."""
        lazy = msgspec.structs.asdict(state)
        for table, row in _TABLES.items():
            lazy[table] = LazyRows(table, lazy[table], _TABLE_KEYS.get(table, str), row)
        return cls(lazy)

    # -- persistence -----------------------------------------------------------------------
    @property
    def state(self) -> dict[str, Any]:
        """Everything a built model holds, as plain data of type :data:`STATE` (what the cache stores)."""
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
        """Every symbol's name, the companion packages' too (``show`` and ``graph`` reach them)."""
        return iter(self._symbols)

    def symbols(self) -> Iterator[Symbol]:
        """The documented package's symbols: what pages and the audit go through (a companion
        package's, such as tensordict's for torchrl, are reached by name only)."""
        source = self.source
        for raw in self._symbols.values():
            if not source.is_companion_path(raw[2]):
                yield Symbol(*raw)

    def all_symbols(self) -> Iterator[Symbol]:
        """Every symbol, the companion packages' too."""
        for raw in self._symbols.values():
            yield Symbol(*raw)

    def node_kind(self, qualname: str) -> str:
        raw = self._symbols.get(qualname)
        if raw is not None:
            return str(raw[1])
        return self._nodes.get(qualname, "")

    # -- calls -----------------------------------------------------------------------------
    def callees(self, qualname: str) -> list[Edge]:
        """Outgoing edges in order of their first call-site line."""
        edges = [Edge(qualname, *row) for row in self._calls.get(qualname, ())]
        return sorted(edges, key=lambda edge: (edge.lines[0], edge.callee))

    def callers(self, qualname: str) -> list[Edge]:
        edges = [edge for caller in self._called_by.get(qualname, ()) if (edge := self.edge(caller, qualname))]
        return sorted(edges, key=lambda edge: (edge.caller, edge.lines[0]))

    def edge(self, caller: str, callee: str) -> Edge | None:
        for row in self._calls.get(caller, ()):
            if row[0] == callee:
                return Edge(caller, *row)
        return None

    def edges(self) -> list[Edge]:
        """Every edge, sorted by (caller, callee)."""
        return [Edge(caller, *row) for caller, rows in self._calls.items() for row in rows]

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
            for edge in self.edges():
                graph.add_edge(edge.caller, edge.callee, lines=edge.lines, how=edge.how)
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
    from rlmap.model import assemble  # the resolver: imported by the runs that resolve, only
    from rlmap.model.assemble import as_tuple
    from rlmap.model.redefinitions import keep_chosen_definitions
    from rlmap.model.resolve import Resolver, Target

    info = source if isinstance(source, SourceInfo) else SourceInfo.of(source)
    index = keep_chosen_definitions(index)  # a function defined twice: the records of the def Python binds
    resolver = Resolver(index.modules)
    symbols = dict(resolver.symbols)
    edges = assemble.CallEdges()
    sites = assemble.resolve_sites(resolver, index, edges, info.companions)
    attributes, property_reads = assemble.group_attributes(resolver, index)
    for access, getter, how in property_reads:
        edges.add(access.function, Target(getter, how), access.line)
    for qualname, accesses in attributes.items():
        if qualname not in symbols:
            symbols[qualname] = assemble.attribute_symbol(qualname, accesses, symbols)
    edges.mark_unknown(symbols)
    keys = assemble.group_keys(resolver, index, info.companions)
    calls: dict[str, list[tuple[str, tuple[int, ...], tuple[str, ...]]]] = defaultdict(list)
    called_by: dict[str, list[str]] = defaultdict(list)
    for caller, callee, call_lines, hows in edges.rows():  # sorted by (caller, callee)
        calls[caller].append((callee, call_lines, hows))
        called_by[callee].append(caller)

    def _rows(records: typing.Iterable[Any]) -> tuple[tuple[Any, ...], ...]:
        return tuple(as_tuple(record) for record in records)

    return CodeModel(
        {
            "source": (
                info.package,
                info.version,
                info.commit,
                info.repo_url,
                info.companions,
                info.companion_links,
            ),
            "symbols": {name: as_tuple(symbols[name]) for name in sorted(symbols)},
            "calls": {caller: tuple(rows) for caller, rows in calls.items()},
            "called_by": {callee: tuple(callers) for callee, callers in sorted(called_by.items())},
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
