"""The resolved model of a package: symbols, call graph, attribute and tensordict-key flows.

``build_model(index, source)`` resolves every call site with :class:`rlmap.model.resolve.Resolver`
and groups attribute and key accesses.  The model keeps its records as plain tuples keyed by
qualified name (``state``/``STATE``, plain typed data); the accessors turn them back into the
frozen records of :mod:`rlmap.index.records` one query at a time, and the networkx graph is built
only when a caller asks for it.  A model from the cache is read lazily (:func:`model_sections`,
:meth:`CodeModel.from_cache`): a small head at once, then each table's shard of ~128 rows (read,
checked and decoded) the first time a query reads one of its rows, so that ``rlmap show`` reads a
few hundred kilobytes of a 30 MB entry.
"""

from __future__ import annotations

import gc
import operator
import typing
import zlib
from bisect import bisect_left
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import msgspec

from rlmap.errors import CacheError
from rlmap.index.records import CLASS, FUNCTION, MODULE, AttributeAccess, Diagnostic, KeyAccess, ReturnSite, Symbol
from rlmap.index.source import SourceTree, companion_path, git_ref, permalink_url, source_stamp
from rlmap.model.mro import descendants, mro, nearest_in_bases
from rlmap.model.pointsto import CAP

if TYPE_CHECKING:
    from rlmap.index.cache import Sections
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
    "model.pointsto",
    "model.valueflow",
    "model.redefinitions",
    "model.aside",
    "model.assemble",
    "model.codemodel",
    "model.relabel",
)

__all__ = [
    "EXTERNAL",
    "MODEL_MODULES",
    "STATE",
    "UNRESOLVED",
    "CodeModel",
    "Edge",
    "ModelHead",
    "ResolvedCall",
    "SourceInfo",
    "build_model",
    "model_sections",
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


_CALLEE = operator.itemgetter(0)  # of a caller's row in the calls table

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

# The tables of the model: each maps a name to its row, typed, so that the cache decodes (and
# validates) them into exactly what ``CodeModel`` expects.
_TABLES: dict[str, Any] = {
    "symbols": _row(Symbol),
    "calls": tuple[_EDGE_OUT, ...],  # caller -> its edges, sorted by callee
    "called_by": tuple[str, ...],  # callee -> its callers, sorted
    "attributes": tuple[_row(AttributeAccess), ...],  # type: ignore[misc]
    "keys": tuple[_row(KeyAccess), ...],  # type: ignore[misc]
    "sites": tuple[_row(ResolvedCall), ...],  # type: ignore[misc]
    "returns": tuple[_row(ReturnSite), ...],  # type: ignore[misc]
}
_TABLE_KEYS: dict[str, Any] = {"keys": tuple[str, ...]}
# A cached symbol row holds the index of its file in the head's list of files, not the path:
# every path a cached model can show is one of the files the head names (and the session checks).
_STORED_SYMBOL = tuple.__class_getitem__(  # type: ignore[attr-defined]
    tuple(int if name == "path" else kind for name, kind in zip(Symbol.__slots__, _row(Symbol).__args__, strict=True))
)

# What the model holds beyond its tables, each decoded whole (a table decodes a shard at a time).
_PLAIN = {
    "nodes": dict[str, str],  # external / unresolved node -> its kind
    "exports": tuple[tuple[str, str, str], ...],
    "external_exports": tuple[tuple[str, str, str], ...],
    "lazy_exports": dict[str, tuple[str, ...]],  # a module with __getattr__ -> the names its __all__ lists
    "bases": dict[str, tuple[str, ...]],
    "subclasses": dict[str, tuple[str, ...]],
}
_SOURCE = tuple[str, str, str, str, tuple[str, ...], tuple[tuple[str, str, str], ...]]
_DIAGNOSTICS = tuple[tuple[str, int, str], ...]
_VALUE_FLOW = tuple[int, int]  # the cap per variable, how many variables reached it

# The model's state: plain typed data, all of it decoded (what build_model makes, what
# :func:`model_sections` stores).
STATE = typing.TypedDict(  # type: ignore[operator]
    "STATE",
    {
        "source": _SOURCE,
        "diagnostics": _DIAGNOSTICS,
        "value_flow": _VALUE_FLOW,
        **_PLAIN,  # type: ignore[misc]
        **{name: dict[_TABLE_KEYS.get(name, str), row] for name, row in _TABLES.items()},  # type: ignore[misc]
    },
)

# Rows per shard of a cached table: a query that reads one row decodes ~64.
_SHARD_ROWS = 64


class ModelHead(msgspec.Struct, array_like=True, forbid_unknown_fields=True):
    """The head of a cached model (decoded whole on load): the rest is in sections, decoded
    when a query reads them (see :meth:`CodeModel.from_cache`)."""

    source: _SOURCE  # type: ignore[valid-type]
    diagnostics: _DIAGNOSTICS  # type: ignore[valid-type]
    files: tuple[str, ...]  # every file a symbol is in, sorted
    rows: dict[str, int]  # table -> its number of rows
    shards: dict[str, int]  # table -> its number of shards
    value_flow: _VALUE_FLOW  # type: ignore[valid-type]


def _shard_of(key: Any, shards: int) -> int:
    return zlib.crc32(msgspec.msgpack.encode(key)) % shards if shards > 1 else 0


# A table or plain value encoded (see encode_sections): its rows and shards (``None`` for a
# plain value), and its sections by name.
Encoded = tuple[int | None, int | None, dict[str, bytes]]


def model_sections(
    state: dict[str, Any], encoded: Mapping[str, Encoded] | None = None
) -> tuple[ModelHead, dict[str, bytes]]:
    """A built model's state as a :class:`ModelHead` and its sections (MessagePack each): for
    every table its names in order (``symbols:names``) and its shards (``symbols:0``...), rows
    spread by a CRC of their name; the symbols' kinds in the order of their names
    (``symbols:kinds``: what the kind of a call's target needs); each plain value whole
    (``bases``).  ``encoded``: what :func:`encode_sections` gave already, of this state."""
    files = _files_of(state["symbols"])
    sections: dict[str, bytes] = {}
    rows: dict[str, int] = {}
    shards: dict[str, int] = {}
    for name in (*_TABLES, *_PLAIN):
        done = encoded.get(name) if encoded is not None else None
        count, parts, encoded_sections = done or encode_sections(name, state[name], files)
        if count is not None and parts is not None:
            rows[name], shards[name] = count, parts
        sections.update(encoded_sections)
    head = ModelHead(
        tuple(state["source"]), tuple(state["diagnostics"]), tuple(files), rows, shards, tuple(state["value_flow"])
    )
    return head, sections


def _files_of(symbols: Mapping[str, tuple[Any, ...]]) -> list[str]:
    return sorted({row[2] for row in symbols.values()})


def encode_sections(name: str, values: Any, files: list[str] | None = None) -> Encoded:
    """The sections of one table or plain value of a model's state (:func:`model_sections`);
    ``files``: every symbol's file, sorted (a symbol row stores its file's place in them)."""
    encode = msgspec.msgpack.encode
    if name in _PLAIN:
        return None, None, {name: encode(values)}
    if name == "symbols":
        position = {path: number for number, path in enumerate(files if files is not None else _files_of(values))}
        values = {key: (*row[:2], position[row[2]], *row[3:]) for key, row in values.items()}
    count = len(values)
    parts = max(1, -(-count // _SHARD_ROWS))
    buckets: list[dict[Any, Any]] = [{} for _ in range(parts)]
    for key, row in values.items():
        buckets[_shard_of(key, parts)][key] = row
    sections = {f"{name}:names": encode(list(values))}
    if name == "symbols":
        sections["symbols:kinds"] = encode([row[1] for row in values.values()])
    for number, bucket in enumerate(buckets):
        sections[f"{name}:{number}"] = encode(bucket)
    return count, parts, sections


def _malformed(table: str, problem: str) -> CacheError:
    return CacheError(
        f"the cached model's {table} table is malformed ({problem})",
        "delete the cache directory (or run with --no-cache): it was not written by this rlmap",
    )


def _decode(entry: Sections[ModelHead], section: str, kind: Any, table: str) -> Any:
    data = entry.read(section)  # a damaged section raises rlmap.index.cache.DamagedEntry
    if data is None:
        raise _malformed(table, f"it has no section {section}")
    enabled = gc.isenabled()
    gc.disable()  # rows are tuples without a cycle: a collection during decoding only costs time
    try:
        return msgspec.msgpack.decode(data, type=kind)
    except (msgspec.DecodeError, msgspec.ValidationError) as error:
        raise _malformed(table, str(error)) from None
    finally:
        if enabled:
            gc.enable()


class LazyRows(Mapping[K, V], Generic[K, V]):
    """A cached table: a row is read, checked and decoded with its shard the first time it is
    read; the names (for iteration) only when the table is iterated."""

    __slots__ = ("_count", "_entry", "_files", "_key", "_names", "_row", "_shards", "_table")

    def __init__(self, entry: Sections[ModelHead], table: str) -> None:
        self._entry = entry
        self._table = table
        self._key = _TABLE_KEYS.get(table, str)
        self._row = _STORED_SYMBOL if table == "symbols" else _TABLES[table]
        self._files = entry.head.files if table == "symbols" else None
        self._count = entry.head.rows.get(table, 0)
        self._shards: list[dict[K, V] | None] = [None] * max(1, entry.head.shards.get(table, 1))
        self._names: list[K] | None = None

    def _shard(self, number: int) -> dict[K, V]:
        shard = self._shards[number]
        if shard is None:
            shard = _decode(self._entry, f"{self._table}:{number}", dict[self._key, self._row], self._table)  # type: ignore[name-defined]
            if self._files is not None:
                shard = self._with_paths(shard)
            self._shards[number] = shard
        return shard

    def _with_paths(self, shard: dict[Any, Any]) -> dict[K, V]:
        files = self._files
        assert files is not None
        try:
            return {name: (*row[:2], files[row[2]], *row[3:]) for name, row in shard.items()}  # type: ignore[misc]
        except IndexError:
            raise _malformed(self._table, "a symbol's file is not one the model names") from None

    def __getitem__(self, key: K) -> V:
        return self._shard(_shard_of(key, len(self._shards)))[key]

    def __contains__(self, key: object) -> bool:
        try:
            return key in self._shard(_shard_of(key, len(self._shards)))
        except TypeError:  # not a name of this table's kind
            return False

    def __iter__(self) -> Iterator[K]:
        return iter(self.names())

    def names(self) -> list[K]:
        if self._names is None:
            self._names = _decode(self._entry, f"{self._table}:names", list[self._key], self._table)  # type: ignore[name-defined]
        return self._names

    def kinds(self) -> dict[K, str]:
        """Name -> kind (the second field of each row) of the symbols table, from its own section."""
        names = self.names()
        kinds = _decode(self._entry, f"{self._table}:kinds", list[str], self._table)
        if len(kinds) != len(names):
            raise _malformed(self._table, "kinds and names differ in number")
        return dict(zip(names, kinds, strict=True))

    def __len__(self) -> int:
        return self._count

    def values(self) -> Any:
        return [row for _, row in self.items()]

    def items(self) -> Any:
        """Every row, in the order of the names: each shard decoded once, no name hashed to its
        shard (a page scans the symbols a few times: 23,000 CRCs a scan)."""
        rows: dict[K, V] = {}
        for number in range(len(self._shards)):
            rows.update(self._shard(number))
        try:
            return [(name, rows[name]) for name in self.names()]
        except KeyError:
            raise _malformed(self._table, "a name without a row") from None


class _LazyPlain(Mapping[K, V], Generic[K, V]):
    """A cached plain mapping (``bases``), decoded whole the first time it is read."""

    __slots__ = ("_entry", "_name", "_value")

    def __init__(self, entry: Sections[ModelHead], name: str) -> None:
        self._entry = entry
        self._name = name
        self._value: dict[K, V] | None = None

    @property
    def value(self) -> dict[K, V]:
        if self._value is None:
            self._value = _decode(self._entry, self._name, _PLAIN[self._name], self._name)
        return self._value

    def __getitem__(self, key: K) -> V:
        return self.value[key]

    def __iter__(self) -> Iterator[K]:
        return iter(self.value)

    def __len__(self) -> int:
        return len(self.value)


_DEFINED = (CLASS, FUNCTION)  # what a module's lazy ``__getattr__`` is taken to import (see CodeModel.member_of)


class CodeModel:
    """Queries over one resolved package."""

    def __init__(self, state: dict[str, Any]) -> None:
        self._state = state
        self.source = SourceInfo(*state["source"])
        self._symbols: Mapping[str, tuple[Any, ...]] = state["symbols"]
        self._calls: Mapping[str, tuple[tuple[str, tuple[int, ...], tuple[str, ...]], ...]] = state["calls"]
        self._called_by: Mapping[str, tuple[str, ...]] = state["called_by"]
        self._nodes: Mapping[str, str] = state["nodes"]  # external / unresolved node kinds
        self._attributes: Mapping[str, tuple[tuple[Any, ...], ...]] = state["attributes"]
        self._keys: Mapping[tuple[str, ...], tuple[tuple[Any, ...], ...]] = state["keys"]
        self._sites: Mapping[str, tuple[tuple[Any, ...], ...]] = state["sites"]
        self._returns: Mapping[str, tuple[tuple[Any, ...], ...]] = state["returns"]
        self._exports: tuple[tuple[str, str, str], ...] | _LazyPlain[Any, Any] = state["exports"]
        self._external_exports: tuple[tuple[str, str, str], ...] | _LazyPlain[Any, Any] = state["external_exports"]
        self._lazy_exports: Mapping[str, tuple[str, ...]] = state["lazy_exports"]
        self.bases: Mapping[str, tuple[str, ...]] = state["bases"]
        self.subclasses: Mapping[str, tuple[str, ...]] = state["subclasses"]
        self.diagnostics = tuple(Diagnostic(*item) for item in state["diagnostics"])
        # the value flow's cap per variable, and how many variables dropped a value past it
        # (rlmap.model.valueflow)
        self.value_cap, self.over_cap = state["value_flow"]
        self._kinds: Mapping[str, str] | None = None  # symbol -> kind (a cached model reads them apart)
        self._graph: Any = None  # networkx.DiGraph, imported only when a caller asks for it
        self._nearest: dict[str, dict[str, tuple[int, str] | None]] = defaultdict(dict)
        self._descendants: dict[str, list[str]] = {}
        self._documented: list[Symbol] | None = None  # see symbols
        self._by_last: dict[str, list[str]] | None = None  # see qualnames_ending
        self._bound: dict[tuple[str, str], str] | None = None  # see bound
        self._bound_outside: dict[tuple[str, str], str] | None = None  # see bound_outside
        self._scanned = False
        self._accesses: dict[str, tuple[AttributeAccess, ...]] = {}  # see attribute_accesses
        self._call_sites: dict[str, tuple[ResolvedCall, ...]] = {}  # see call_sites

    @classmethod
    def from_cache(cls, entry: Sections[ModelHead]) -> CodeModel:
        """The model of a cached entry (:func:`model_sections`): its tables are read shard by
        shard, its other values whole, as queries read them."""
        head = entry.head
        lazy: dict[str, Any] = {"source": head.source, "diagnostics": head.diagnostics, "value_flow": head.value_flow}
        lazy.update({table: LazyRows(entry, table) for table in _TABLES})
        lazy.update({name: _LazyPlain(entry, name) for name in _PLAIN})
        return cls(lazy)

    def cap_note(self) -> str:
        """What a model whose value flow dropped values past its cap may miss, and what raises
        the cap ("" when no variable dropped one)."""
        if not self.over_cap:
            return ""
        variables, them = (f"{self.over_cap:,} variables", "them") if self.over_cap != 1 else ("1 variable", "it")
        return (
            f"the value flow dropped values past its cap of {self.value_cap:,} per variable in {variables}: calls "
            f"found through {them} may be incomplete (set a higher value_cap in the profile's [profile] table)"
        )

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

    def qualnames_ending(self, suffix: str) -> list[str]:
        """The qualnames that end with ``suffix`` (``.rollout``, ``.Collector.rollout``), sorted.
        A first question scans the names; from the second on (the pages ask a hundred), they
        are found through a table of each name's last part, made once."""
        last = suffix.rpartition(".")[2]
        if self._by_last is None:
            if not self._scanned:
                self._scanned = True
                return sorted(name for name in self.qualnames() if name.endswith(suffix))
            self._by_last = defaultdict(list)
            for name in self.qualnames():
                self._by_last[name.rpartition(".")[2]].append(name)
        return sorted(name for name in self._by_last.get(last, ()) if name.endswith(suffix))

    def symbols(self) -> Iterator[Symbol]:
        """The documented package's symbols: what pages and the audit go through (a companion
        package's, such as tensordict's for torchrl, are reached by name only).  Made once: the
        pages and the audit go through them several times."""
        if self._documented is None:
            source = self.source
            self._documented = [Symbol(*raw) for raw in self._symbols.values() if not source.is_companion_path(raw[2])]
        return iter(self._documented)

    def all_symbols(self) -> Iterator[Symbol]:
        """Every symbol, the companion packages' too."""
        for raw in self._symbols.values():
            yield Symbol(*raw)

    def node_kind(self, qualname: str) -> str:
        if self._kinds is None:
            symbols = self._symbols
            self._kinds = symbols.kinds() if isinstance(symbols, LazyRows) else {n: r[1] for n, r in symbols.items()}
        kind = self._kinds.get(qualname)
        return kind if kind is not None else self._nodes.get(qualname, "")

    # -- calls -----------------------------------------------------------------------------
    def callees(self, qualname: str) -> list[Edge]:
        """Outgoing edges in order of their first call-site line."""
        edges = [Edge(qualname, *row) for row in self._calls.get(qualname, ())]
        return sorted(edges, key=lambda edge: (edge.lines[0], edge.callee))

    def callers(self, qualname: str) -> list[Edge]:
        edges = [edge for caller in self._called_by.get(qualname, ()) if (edge := self.edge(caller, qualname))]
        return sorted(edges, key=lambda edge: (edge.caller, edge.lines[0]))

    def edge(self, caller: str, callee: str) -> Edge | None:
        rows = self._calls.get(caller, ())
        place = bisect_left(rows, callee, key=_CALLEE)  # a caller's rows are sorted by callee
        if place < len(rows) and rows[place][0] == callee:
            return Edge(caller, *rows[place])
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
        """Every call written in ``function`` (not its nested functions), in code order (made once
        per function: the pages ask for the same ones again and again)."""
        found = self._call_sites.get(function)
        if found is None:
            found = self._call_sites[function] = tuple([ResolvedCall(*raw) for raw in self._sites.get(function, ())])
        return list(found)

    def all_call_sites(self) -> Iterator[tuple[str, list[ResolvedCall]]]:
        """Every symbol's calls (:meth:`call_sites`), by symbol name in sorted order: the table
        read whole, not a symbol at a time."""
        has_symbol = self.has_symbol
        for function, rows in self._sites.items():  # stored sorted by function
            if has_symbol(function):
                yield function, [ResolvedCall(*raw) for raw in rows]

    def lazy_exports(self) -> Mapping[str, tuple[str, ...]]:
        """Module -> the names its ``__getattr__`` serves lazily (its ``__all__``; see :meth:`member_of`)."""
        return self._lazy_exports

    def exports(self) -> tuple[tuple[str, str, str], ...]:
        """(module, name, qualname): names modules bind by import to the package's symbols."""
        if isinstance(self._exports, _LazyPlain):
            self._exports = self._exports.value  # type: ignore[assignment]
        return self._exports  # type: ignore[return-value]

    def bound(self, module: str, name: str) -> str | None:
        """The package symbol ``module`` binds ``name`` to by an import (the first it binds), or
        ``None`` (a table of :meth:`exports`, made on the first question)."""
        if self._bound is None:
            self._bound = {}
            for owner, bound_name, target in self.exports():
                self._bound.setdefault((owner, bound_name), target)
        return self._bound.get((module, name))

    def bound_outside(self, module: str, name: str) -> str | None:
        """The dotted name of another package's object ``module`` binds ``name`` to by an import
        (the first it binds), or ``None`` (a table of :meth:`external_exports`)."""
        if self._bound_outside is None:
            self._bound_outside = {}
            for owner, bound_name, target in self.external_exports():
                self._bound_outside.setdefault((owner, bound_name), target)
        return self._bound_outside.get((module, name))

    def external_exports(self) -> tuple[tuple[str, str, str], ...]:
        """(module, name, dotted): names modules bind by import to other packages' objects."""
        if isinstance(self._external_exports, _LazyPlain):
            self._external_exports = self._external_exports.value  # type: ignore[assignment]
        return self._external_exports  # type: ignore[return-value]

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

    def member_of(self, owner: str, name: str) -> str | None:
        """The symbol ``owner.name`` reaches as Python's attribute lookup would: one defined in
        ``owner``; in a module, the package symbol an import binds the name to, or, when the
        module defines ``__getattr__`` (a lazy import), lists the name in its ``__all__`` and binds
        no other package's object to it (:meth:`bound_outside`), the module-level class or function
        of that name below the module (else anywhere in the package: TorchRL's lazy exports also
        reach into sibling packages; the first, sorted); in a class, the member of the first class
        of its method resolution order (C3) that defines it.  ``None`` when none of the package's does."""
        own = f"{owner}.{name}"
        if own in self._symbols:
            return own
        kind = self.node_kind(owner)
        if kind == MODULE:
            target = self.bound(owner, name)
            if target is not None and target in self._symbols:
                return target
            if name not in self._lazy_exports.get(owner, ()) or self.bound_outside(owner, name) is not None:
                return None  # (not served lazily; a name bound to another package's object is not looked up)
            defined = [
                found
                for found in self.qualnames_ending("." + name)
                if self.node_kind(found) in _DEFINED and self.node_kind(found.rpartition(".")[0]) == MODULE
            ]
            return next((found for found in defined if found.startswith(owner + ".")), defined[0] if defined else None)
        if kind == CLASS:  # Python's order: C3 (find_member's nearest base differs on some diamonds)
            return next((f"{cls}.{name}" for cls in mro(self.bases, owner) if f"{cls}.{name}" in self._symbols), None)
        return None

    def follow(self, dotted: str, member: Callable[[str, str], str | None] | None = None) -> str | None:
        """The symbol the import path ``dotted`` names: from its longest prefix that is a module,
        each further part looked up in what the one before reaches (``member``: default
        :meth:`member_of`), through imports (``torchrl.envs.TransformedEnv``) and inheritance
        (``torchrl.envs.TransformedEnv.rollout`` is ``EnvBase.rollout``); ``None`` when a part
        reaches nothing, or no prefix is a module."""
        step = member or self.member_of
        parts = dotted.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            current = ".".join(parts[:cut])
            if self.node_kind(current) != MODULE:
                continue
            for part in parts[cut:]:
                reached = step(current, part)
                if reached is None:
                    return None
                current = reached
            return current
        return None

    def subclasses_of(self, cls: str) -> list[str]:
        """Every direct and indirect subclass, sorted."""
        if cls not in self._descendants:
            self._descendants[cls] = descendants(self.subclasses, cls)
        return list(self._descendants[cls])

    # -- attributes and keys ---------------------------------------------------------------
    def attribute_names(self) -> Iterator[str]:
        return iter(self._attributes)

    def attribute_accesses(self, qualname: str) -> tuple[AttributeAccess, ...]:
        """Every access to attribute ``qualname`` (made once per attribute: a page's conditions
        ask for the same ones again and again)."""
        found = self._accesses.get(qualname)
        if found is None:
            found = self._accesses[qualname] = tuple(
                [AttributeAccess(*raw) for raw in self._attributes.get(qualname, ())]
            )
        return found

    def tensordict_keys(self) -> list[tuple[str, ...]]:
        """Every tensordict key read or written."""
        return list(self._keys)

    def key_accesses(self, key: tuple[str, ...]) -> tuple[KeyAccess, ...]:
        return tuple(KeyAccess(*raw) for raw in self._keys.get(key, ()))


def build_model(
    index: ProjectIndex,
    source: SourceTree | SourceInfo,
    value_cap: int = CAP,
    consume: bool = False,
    aside: bool = False,
    encoded: dict[str, Encoded] | None = None,
) -> CodeModel:
    """Resolve every call, property read and attribute of ``index`` into a :class:`CodeModel`.

    ``value_cap``: the values a variable of the value flow keeps.

    ``consume``: the caller lets ``index`` go once the model is built (the session does), and
    ``index`` is left without what the model takes: its value-flow rows are handed to the solve
    rather than kept beside it (the solve keeps the rows it watches and lets the others go:
    torch's 470,000 copies, values, references and parameter lists), a large index's call sites
    wait for the solve packed (:class:`rlmap.model.assemble.PackedCalls`), and the local bindings
    go once the resolver has read them.

    ``aside``: the value flow is solved in a forked child while this process resolves the sites
    by name and type and groups the attributes and keys (see :func:`rlmap.model.assemble.resolve_sites`):
    for a machine with a second core.  The model is the same either way.

    ``encoded``: a model that will be cached.  While the flow is solved aside, this process
    also encodes (:func:`encode_sections`) what the flow does not change, into ``encoded``,
    for :func:`model_sections`.
    """
    from rlmap.model import assemble  # the resolver: imported by the runs that resolve, only
    from rlmap.model.assemble import as_tuple
    from rlmap.model.redefinitions import keep_chosen_definitions
    from rlmap.model.resolve import Resolver, Target

    info = source if isinstance(source, SourceInfo) else SourceInfo.of(source)
    chosen = keep_chosen_definitions(index)  # a function defined twice: the records of the def Python binds
    if consume and chosen is not index:  # the modules rebuilt: their rows and sites are no longer read
        assemble.let_go([old for old, new in zip(index.modules, chosen.modules, strict=True) if old is not new])
    index = chosen
    resolver = Resolver(index.modules)
    if consume:  # the resolver's tables hold what it reads of the local bindings
        assemble.let_go(index.modules, ("locals",))
    symbols = dict(resolver.symbols)
    edges = assemble.CallEdges()

    def _rows(records: typing.Iterable[Any]) -> tuple[tuple[Any, ...], ...]:
        return tuple(as_tuple(record) for record in records)

    tables: dict[str, Any] = {}
    property_reads: list[Any] = []

    def without_flow() -> None:  # the tables that read neither the flow nor the sites
        attributes, reads = assemble.group_attributes(resolver, index)
        property_reads.extend(reads)
        for qualname, accesses in attributes.items():
            if qualname not in symbols and qualname.rpartition(".")[2] not in assemble.EVERY_OBJECTS:
                symbols[qualname] = assemble.attribute_symbol(qualname, accesses, symbols)
        keys = assemble.group_keys(resolver, index, info.companions)
        tables["symbols"] = {name: as_tuple(symbols[name]) for name in sorted(symbols)}
        tables["attributes"] = {name: _rows(accesses) for name, accesses in attributes.items()}
        tables["keys"] = {key: _rows(sorted(found, key=assemble.access_order)) for key, found in sorted(keys.items())}
        tables["returns"] = {name: _rows(found) for name, found in sorted(assemble.returns_by_function(index).items())}
        tables["exports"] = tuple(assemble.module_bindings(resolver, index))
        tables["external_exports"] = tuple(assemble.external_bindings(resolver, index))
        tables["lazy_exports"] = {
            module.module: module.exports
            for module in index.modules
            if module.exports and f"{module.module}.__getattr__" in symbols
        }
        tables["bases"] = {cls: bases for cls, bases in sorted(resolver.bases.items()) if bases}
        tables["subclasses"] = {cls: tuple(sorted(subs)) for cls, subs in sorted(resolver.subclasses.items())}
        tables["diagnostics"] = tuple((d.path, d.line, d.message) for d in index.diagnostics)

    call_tables: list[assemble.CallTables] = []

    def assemble_calls(sites: dict[str, list[assemble.SiteRow]]) -> None:
        """The call tables as far as the edges and rows are known (all of them, after the flow)."""
        for access, getter, how in property_reads:  # (edges the flow does not change)
            edges.add(access.function, Target(getter, how), access.line)
        edges.mark_unknown(symbols)
        call_tables.append(assemble.CallTables(edges, sites))

    def waiting(sites: dict[str, list[assemble.SiteRow]]) -> None:  # (in the time the solve aside leaves)
        assemble_calls(sites)
        if encoded is None:
            return
        files = _files_of(tables["symbols"])
        for name, values in tables.items():  # (what the flow does not change: see without_flow)
            if name in _TABLES or name in _PLAIN:  # (the diagnostics are in the head)
                encoded[name] = encode_sections(name, values, files)

    replaced: set[str] = set()
    sites, over_cap = assemble.resolve_sites(
        resolver,
        index,
        edges,
        info.companions,
        consume=consume,
        cap=value_cap,
        meanwhile=without_flow,
        aside=aside,
        waiting=waiting,
        replaced=replaced,
    )
    if not call_tables:  # solved first: every edge and row is known now
        assemble_calls(sites)
    calls = call_tables[0].state(symbols, replaced)

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
            "symbols": tables["symbols"],
            "calls": calls["calls"],
            "called_by": calls["called_by"],
            "nodes": calls["nodes"],
            "attributes": tables["attributes"],
            "keys": tables["keys"],
            "sites": calls["sites"],
            "returns": tables["returns"],
            "exports": tables["exports"],
            "external_exports": tables["external_exports"],
            "lazy_exports": tables["lazy_exports"],
            "bases": tables["bases"],
            "subclasses": tables["subclasses"],
            "diagnostics": tables["diagnostics"],
            "value_flow": (value_cap, over_cap),
        }
    )
