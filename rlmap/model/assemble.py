"""Assembling the model's tables from the index and the resolver: call edges, attributes, keys, bindings.

Each function reads the :class:`~rlmap.index.indexer.ProjectIndex` once and returns plain records
grouped and sorted for :func:`rlmap.model.codemodel.build_model`, which stores them.
"""

from __future__ import annotations

import dataclasses
import operator
import typing
import zlib
from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Any

import msgspec

from rlmap.index.indexer import ProjectIndex, give_back_memory, interned
from rlmap.index.records import (
    ATTRIBUTE,
    METHOD,
    PROPERTY,
    READ,
    AttributeAccess,
    CallSite,
    FlowRow,
    KeyAccess,
    ModuleIndex,
    ReturnSite,
    Symbol,
)
from rlmap.index.source import companion_path
from rlmap.model.admission import admitted
from rlmap.model.aside import run_aside
from rlmap.model.pointsto import CAP
from rlmap.model.resolve import Resolver, Target
from rlmap.model.valueflow import SiteKey, ValueFlow

EXTERNAL = "external"
UNRESOLVED = "unresolved"
LAMBDA = "lambda"  # a lambda found by the value flow (``mod.f.<lambda1>``), not a symbol

_PAIR = operator.itemgetter(0)


def _held(value: Any) -> Any:  # a pair's lines or hows: one held as itself, more as a set
    return value if type(value) is set else (value,)


EdgeRow = tuple[str, str, tuple[int, ...], tuple[str, ...]]  # caller, callee, lines, hows
EdgeOut = tuple[str, tuple[int, ...], tuple[str, ...]]  # callee, lines, hows (a row of its caller's)


def _edge_out(callee: str, lines: int | set[int], hows: str | set[str]) -> EdgeOut:
    """An edge as its caller's row, from what :class:`CallEdges` holds of it: its lines and hows sorted."""
    return (
        callee,
        (lines,) if type(lines) is int else tuple(sorted(lines)),  # type: ignore[arg-type]
        (hows,) if type(hows) is str else tuple(sorted(hows)),  # type: ignore[arg-type]
    )


SiteRow = tuple[int, str, tuple[str, ...], tuple[str, ...], tuple[str, ...]]  # line, text, guards, targets, hows


class CallEdges:
    """Call edges as they are found: every line and every ``how`` of each (caller, callee) pair."""

    def __init__(self) -> None:
        # pair -> (lines, hows): one line and one how as themselves (most edges: torch's 300,000
        # pairs would hold 600,000 sets of one, 130 MB), a set of each once there are more
        self._found: dict[tuple[str, str], tuple[int | set[int], str | set[str]]] = {}
        self.nodes: dict[str, str] = {}  # external and unresolved callees -> their kind
        self._since: set[tuple[str, str]] | None = None  # the pairs added to since track() (see CallTables)

    def add(self, caller: str, target: Target, line: int) -> None:
        how = target.how
        if target.external:  # (an unresolved callee's name is its text after "?:": never an external's)
            self.nodes[target.qualname] = UNRESOLVED if how == UNRESOLVED else EXTERNAL
        pair = (caller, target.qualname)
        found = self._found.get(pair)
        if found is None:
            self._found[pair] = (line, how)
            if self._since is not None:
                self._since.add(pair)
            return
        lines, hows = found
        if self._since is not None and (line not in _held(lines) or how not in _held(hows)):
            self._since.add(pair)
        if type(lines) is not int:
            lines.add(line)  # type: ignore[union-attr]
        elif lines != line:
            lines = {lines, line}
        if type(hows) is not str:
            hows.add(how)  # type: ignore[union-attr]
        elif hows != how:
            hows = {hows, how}
        if lines is not found[0] or hows is not found[1]:
            self._found[pair] = (lines, hows)

    def mark_unknown(self, symbols: dict[str, Symbol], pairs: Iterable[tuple[str, str]] | None = None) -> None:
        """Name every end of an edge (of ``pairs`` only, when given) that is neither a symbol nor
        an external node as unresolved."""
        pairs = self._found if pairs is None else pairs
        ends = {caller for caller, _ in pairs}  # each name once (a caller has many edges)
        ends.update(callee for _, callee in pairs)
        for name in ends:
            if name not in symbols and name not in self.nodes:
                self.nodes[name] = LAMBDA if ".<lambda" in name else UNRESOLVED

    def rows(self) -> list[EdgeRow]:
        """The edges sorted by (caller, callee), each with its sorted lines and hows."""
        ordered = sorted(self._found.items(), key=_PAIR)  # pairs are unique: the sets are never compared
        return [(caller, *_edge_out(callee, *found)) for (caller, callee), found in ordered]

    def out(self, caller: str, callee: str) -> EdgeOut:
        """The edge from ``caller`` to ``callee`` as its caller's row: callee, sorted lines and hows."""
        return _edge_out(callee, *self._found[(caller, callee)])

    def track(self) -> None:
        """Note from now on the pairs that gain an edge, a line or a how (:meth:`tracked`)."""
        self._since = set()

    def tracked(self) -> set[tuple[str, str]]:
        """The pairs that gained an edge, a line or a how since :meth:`track` (none without it);
        stops noting."""
        since, self._since = self._since or set(), None
        return since


class CallTables:
    """The model's tables of calls (``calls``, ``called_by``, ``sites``, ``nodes``), made from the
    edges and the sites' rows.

    Made while the flow is solved aside (by :func:`resolve_sites`'s ``waiting``), of what is known
    then: once the flow is back, :meth:`state` makes again only what it changed (the rows of the
    callers it gave an edge, a line or a how; the callers of the callees it gave a new one; the
    rows of the callers whose sites it gave callees).  Made after the flow, nothing is left to
    make again.  The tables are the same either way: the edges are a set, and each row is
    sorted."""

    def __init__(self, edges: CallEdges, sites: dict[str, list[SiteRow]]) -> None:
        self.edges = edges
        self.sites = sites
        calls: dict[str, list[EdgeOut]] = defaultdict(list)
        called_by: dict[str, list[str]] = defaultdict(list)
        for caller, callee, lines, hows in edges.rows():  # sorted by (caller, callee)
            calls[caller].append((callee, lines, hows))
            called_by[callee].append(caller)
        # each table's keys in sorted order (a key the flow adds sorts them again)
        self.calls = {caller: tuple(rows) for caller, rows in calls.items()}
        self.called_by = {callee: tuple(callers) for callee, callers in sorted(called_by.items())}
        self.sites_by_line = {caller: _by_line(found) for caller, found in sorted(sites.items())}
        edges.track()

    def state(self, symbols: dict[str, Symbol], replaced: Iterable[str] = ()) -> dict[str, Any]:
        """The four tables, with what the edges gained since they were made, and the callers of
        ``replaced`` rows (their sites' rows, sorted again: the flow adds no caller of a site)."""
        edges = self.edges
        since = edges.tracked()
        edges.mark_unknown(symbols, since)
        callees: dict[str, set[str]] = defaultdict(set)
        for caller, callee in since:
            callees[caller].add(callee)
        calls, called_by = self.calls, self.called_by
        new_callers = any(caller not in calls for caller in callees)
        joining: dict[str, list[str]] = defaultdict(list)  # callee -> its new callers
        for caller, added in callees.items():
            before = calls.get(caller, ())
            rows = {row[0]: row for row in before}  # (in the callees' order)
            for callee in added:
                if callee not in rows:
                    joining[callee].append(caller)
                rows[callee] = edges.out(caller, callee)
            calls[caller] = tuple(rows.values() if len(rows) == len(before) else [rows[c] for c in sorted(rows)])
        new_callees = any(callee not in called_by for callee in joining)
        for callee, callers in joining.items():
            called_by[callee] = tuple(sorted((*called_by.get(callee, ()), *callers)))
        for caller in replaced:
            self.sites_by_line[caller] = _by_line(self.sites[caller])
        return {
            "calls": {caller: calls[caller] for caller in sorted(calls)} if new_callers else calls,
            "called_by": {callee: called_by[callee] for callee in sorted(called_by)} if new_callees else called_by,
            "nodes": dict(sorted(edges.nodes.items())),
            "sites": self.sites_by_line,
        }


def _by_line(rows: list[SiteRow]) -> tuple[SiteRow, ...]:
    return tuple(sorted(rows, key=_PAIR))  # by line (stable: two sites on a line keep their order)


def resolve_sites(
    resolver: Resolver,
    index: ProjectIndex,
    edges: CallEdges,
    companions: tuple[str, ...] = (),
    consume: bool = False,
    cap: int = CAP,
    meanwhile: Callable[[], None] | None = None,
    aside: bool = False,
    waiting: Callable[[dict[str, list[SiteRow]]], None] | None = None,
    replaced: set[str] | None = None,
) -> tuple[dict[str, list[SiteRow]], int]:
    """Resolve every call site into ``edges``; the calls written in each function, as rows.

    Each site's targets are the resolver's (by name and type), joined by what the whole-program
    value flow (:mod:`rlmap.model.valueflow`) finds reaching its callee; the calls only the value
    flow sees (a decorator applied, ``__enter__``, a property setter) become edges of their own.

    A companion package (tensordict beside torchrl) takes part through its definitions, classes
    and annotations, not its value flow: its functions' bodies are library code, whose
    flow-insensitive merge (tensorclass's generated methods, ``__getattr__`` fallbacks) would
    reach every receiver that passes through them.  A value it returns is typed by its annotation.

    ``consume``: the caller lets ``index`` go with the model; its flow rows are handed to the
    solve (see :func:`take_rows`), and a large index's call sites wait for it packed
    (:class:`PackedCalls`).  Also returns how many variables of the value flow dropped a value
    past ``cap`` (see :mod:`rlmap.model.valueflow`).

    ``aside``: the flow is solved in a forked child (:mod:`rlmap.model.aside`) while this process
    settles every site as far as the flow cannot change it (by name and type: its edges, its
    row) and runs ``meanwhile`` (work that reads neither the flow nor the sites' rows); once the
    flow is back, only what it can change is left to do (torchrl: 12,000 of 64,000 sites get
    callees from it), and ``waiting`` runs (what is left to do that does not read the flow; it is
    given the sites' rows as they are then).  The callers whose rows the flow changes after that
    are added to ``replaced``.
    Without it, or when the child fails, the flow is solved here, first.
    A packed index (torch) is solved here: a child would hold a second copy of every page of
    the records it reads.
    """
    documented = [module for module in index.modules if not companion_path(companions, module.path)]
    packed = PackedCalls.of(index.modules) if consume else None
    unread = PackedRecords.of(index.modules) if packed is not None else None
    if packed is not None:
        give_back_memory()  # the packing's buffers
    rows = take_rows(index.modules, documented) if consume else None
    resolve, add = resolver.resolve_call, edges.add
    # a call written the same way twice in a function (and under the same guards) resolves the
    # same way: its line is not read (the lists are only read)
    resolved: dict[tuple[str, str, tuple[str, ...], tuple[str, ...], bool], list[Target]] = {}
    sites: dict[str, list[SiteRow]] = defaultdict(list)
    # the sites whose targets the flow may change, while it is not known: each site, its targets
    # by name and type, and where its row is in its caller's (a list: a table by site key would
    # hold 64,000 more keys and lists through the wait, on torchrl)
    opened: list[tuple[CallSite, list[Target], int]] = []
    used: set[SiteKey] = set()  # the flow's sites that are call sites (the others: edges of their own)

    def with_flow(
        site: CallSite, targets: list[Target], flowed: Callable[[SiteKey], list[Target] | None]
    ) -> list[Target] | None:
        """The site's targets joined by the flow's callees there (its site noted as used);
        ``None`` when the flow found none."""
        key = (site.caller, site.line, site.callee_text)
        found = flowed(key)
        if not found:
            return None
        used.add(key)
        giving = giving_way(targets)  # (a guess does not narrow what the flow found)
        standing = [target for target in targets if target.qualname not in giving] if giving else targets
        return merge_targets(targets, admitted(resolver, site, standing, found))

    def settle(flowed: Callable[[SiteKey], list[Target] | None] | None) -> None:
        """Every site's edges and row, by name and type and by the flow (``flowed``: the flow's
        callees of a site).  Before the flow is known (``None``), a site it may change is
        settled as far as the flow cannot change it, and left in ``opened`` for :func:`close`:
        the edges are a set (nothing of them depends on the order they are added in), and the
        row keeps its place."""
        for number, module in enumerate(index.modules):
            for site in module.calls if packed is None else packed.take(number):
                written = (site.caller, site.callee_text, site.parts, site.guards, site.attribute_read)
                targets = resolved.get(written)
                if targets is None:
                    targets = resolved[written] = resolve(site)
                caller, line = site.caller, site.line
                if not site.attribute_read and site.parts:
                    # a computed callee (``make()(x)``) keeps its flow edges out of the site's row:
                    # the function it calls is not written at the site
                    if flowed is None:
                        opened.append((site, targets, len(sites[caller])))
                        giving = giving_way(targets)
                        for target in targets:
                            if target.qualname not in giving:  # kept whatever the flow finds
                                add(caller, target, line)
                        sites[caller].append(_row(site, targets))
                        continue
                    merged = with_flow(site, targets, flowed)
                    if merged is not None:  # (empty when the flow's callees were all refused)
                        targets = merged
                for target in targets:
                    add(caller, target, line)
                if not site.attribute_read:
                    sites[caller].append(_row(site, targets))

    def close(flow: dict[SiteKey, list[Target]]) -> None:
        """The sites left open by :func:`settle`, now that the flow is known."""
        for site, targets, place in opened:
            caller, line = site.caller, site.line
            merged = with_flow(site, targets, flow.get)
            if merged is None:  # what settle left out: the targets that give way to a flow found
                giving = giving_way(targets)
                for target in targets:
                    if target.qualname in giving:
                        add(caller, target, line)
                continue
            for target in merged:
                add(caller, target, line)
            sites[caller][place] = _row(site, merged)
            if replaced is not None:
                replaced.add(caller)
        opened.clear()

    def before_the_flow() -> None:
        settle(None)
        if meanwhile is not None:
            meanwhile()
        if waiting is not None:
            waiting(sites)

    solved_aside = None
    if aside and packed is None:
        solved_aside = run_aside(lambda: _solved_aside(resolver, documented, companions, cap, rows), before_the_flow)
    if solved_aside is not None:
        flow, over_cap = _decode_solved(solved_aside)
        del rows
        close(flow)
    else:
        flow, over_cap = _solve(resolver, documented, companions, cap, rows, consume)
        del rows
        if unread is not None:
            unread.restore(index.modules)
        if aside and packed is None:  # the child failed, after this process settled the sites
            close(flow)
        else:
            if meanwhile is not None:
                meanwhile()
            settle(flow.get)
    for key, found in flow.items():
        if key not in used:
            for target in found:
                edges.add(key[0], target, key[1])
    return sites, over_cap


# The resolver's targets that give way to what the flow finds at the site (see giving_way).
_GIVE_WAY = frozenset({UNRESOLVED, "unique-name"})


def giving_way(targets: list[Target]) -> set[str]:
    """The resolver's targets of a site that give way to what the value flow finds there: the
    unresolved placeholder, a guess by name, and what calling an object of a declared type runs
    (:func:`object_called`)."""
    return {target.qualname for target in targets if target.how in _GIVE_WAY} | object_called(targets)


def object_called(targets: list[Target]) -> set[str]:
    """Of a site's targets, what calling an object of a declared type runs: its class's
    ``__call__`` or ``forward`` (``instance``) and the overrides of that method."""
    called = {target.qualname.rpartition(".")[2] for target in targets if target.how == "instance"}
    if not called:
        return set()
    return {
        target.qualname
        for target in targets
        if target.how == "instance" or (target.how == "override" and target.qualname.rpartition(".")[2] in called)
    }


def _row(site: CallSite, targets: list[Target]) -> SiteRow:
    """A site's row: what it calls, as shown.  A lambda has no name to show at the site: an edge
    of the graph, not of the row."""
    shown = [target for target in targets if ".<lambda" not in target.qualname] or targets[:1]
    return (site.line, site.callee_text, site.guards, tuple([t.qualname for t in shown]), tuple([t.how for t in shown]))


def _solve(
    resolver: Resolver,
    documented: list[ModuleIndex],
    companions: tuple[str, ...],
    cap: int,
    rows: list[FlowRow] | None,
    consume: bool = False,
) -> tuple[dict[SiteKey, list[Target]], int]:
    """The value flow's callees of each site, and how many variables dropped a value past ``cap``."""
    solved = ValueFlow(resolver, documented, companions, cap, rows=rows)
    over_cap = solved.over_cap()
    solved.release()  # the graph goes first: the targets are read from the edges alone
    if consume:
        give_back_memory()  # the graph's largest tables: what the model is assembled in next
    return solved.targets(), over_cap


def _solved_aside(
    resolver: Resolver, documented: list[ModuleIndex], companions: tuple[str, ...], cap: int, rows: list[FlowRow] | None
) -> bytes:
    """:func:`_solve` in the forked child, encoded for the parent (:func:`_encode_solved`).  The
    child leaves with ``os._exit`` once it has sent them: the graph is kept to the end rather
    than freed object by object for nothing (torchrl: 0.2 s of the child's 3.5)."""
    solved = ValueFlow(resolver, documented, companions, cap, rows=rows)
    _KEPT_TO_EXIT.append(solved)
    return _encode_solved(solved.targets(), solved.over_cap())


_KEPT_TO_EXIT: list[ValueFlow] = []  # (in the child only: see _solved_aside)

_SOLVED = tuple[int, list[tuple[SiteKey, list[tuple[str, str, bool]]]]]


def _encode_solved(flow: dict[SiteKey, list[Target]], over_cap: int) -> bytes:
    """What a solve done aside sends back: each site's callees as (qualname, how), in order."""
    found = [
        (key, [(target.qualname, target.how, target.external) for target in targets]) for key, targets in flow.items()
    ]
    return msgspec.msgpack.encode((over_cap, found))


def _decode_solved(data: bytes) -> tuple[dict[SiteKey, list[Target]], int]:
    over_cap, found = msgspec.msgpack.decode(data, type=_SOLVED)
    return {key: [Target(*each) for each in targets] for key, targets in found}, over_cap


class PackedCalls:
    """The call sites of a large index, out of its modules while the solve runs: each module's as
    compressed MessagePack (torch: 420,000 sites, 70 MB of records, 7 MB packed), unpacked one
    module at a time as they are resolved, then let go (nothing after reads a site: its row is
    the model's).  The solve reads the flow rows and the resolver's tables, never a site.  Below
    :data:`PACKED_SITES` sites nothing is packed (torchrl's resolution would pay for it and gain
    little)."""

    def __init__(self, packed: list[bytes]) -> None:
        self.packed = packed
        self._decode = msgspec.msgpack.Decoder(
            list[tuple[str, str, tuple[str, ...], int, tuple[str, ...], bool]]
        ).decode

    @classmethod
    def of(cls, modules: Iterable[ModuleIndex]) -> PackedCalls | None:
        """The sites of ``modules`` packed and taken out of them, in order; ``None`` (and nothing
        taken) when there are too few to be worth it."""
        modules = tuple(modules)
        if sum(len(module.calls) for module in modules) < PACKED_SITES:
            return None
        encode = msgspec.msgpack.Encoder().encode
        packed = []
        for module in modules:
            packed.append(zlib.compress(encode([as_tuple(site) for site in module.calls]), 1))
            object.__setattr__(module, "calls", ())  # frozen: the index's owner lets the model take them
        return cls(packed)

    def take(self, number: int) -> list[CallSite]:
        """The sites of module ``number`` (in the order given to :meth:`of`), the records they were,
        their texts and line numbers shared as the compacted index shares them
        (:func:`rlmap.index.indexer.interned`); the packed bytes are let go."""
        packed, self.packed[number] = self.packed[number], b""
        return [CallSite(*interned(row)) for row in self._decode(zlib.decompress(packed))]


PACKED_SITES = 200_000


class PackedRecords:
    """The attribute accesses and returns of a large index, out of its modules while the value
    flow is solved (nothing reads them then: torch's are 28 MiB as records, 3.2 MiB packed), and
    put back once it is, as the records they were (their texts and numbers shared as the
    compacted index shares them), for the tables built after it."""

    TABLES: tuple[tuple[str, type[Any]], ...] = (("attributes", AttributeAccess), ("returns", ReturnSite))

    def __init__(self, packed: dict[str, list[bytes]]) -> None:
        self.packed = packed

    @classmethod
    def of(cls, modules: Iterable[ModuleIndex]) -> PackedRecords:
        encode = msgspec.msgpack.Encoder().encode
        packed: dict[str, list[bytes]] = {table: [] for table, _ in cls.TABLES}
        for module in modules:
            for table, _ in cls.TABLES:
                records = [as_tuple(record) for record in getattr(module, table)]
                packed[table].append(zlib.compress(encode(records), 1) if records else b"")
                object.__setattr__(module, table, ())  # frozen: the index's owner lets the model take them
        return cls(packed)

    def restore(self, modules: Iterable[ModuleIndex]) -> None:
        """Put the records back into ``modules`` (the ones given to :meth:`of`, in order)."""
        modules = tuple(modules)
        for table, kind in self.TABLES:
            hints = typing.get_type_hints(kind)
            row = tuple[tuple(hints[name] for name in kind.__slots__)]  # type: ignore[misc, valid-type]
            decode = msgspec.msgpack.Decoder(list[row]).decode  # type: ignore[valid-type]
            for module, blob in zip(modules, self.packed[table], strict=True):
                if blob:
                    rows = decode(zlib.decompress(blob))
                    object.__setattr__(module, table, tuple([kind(*interned(row)) for row in rows]))
            self.packed[table] = []


def take_rows(modules: Iterable[ModuleIndex], documented: Iterable[ModuleIndex] = ()) -> list[FlowRow]:
    """The value-flow rows of ``documented``, in order, with every module of ``modules`` left
    without its rows: they are the solve's now, which keeps the facts it watches (a load, a call)
    and lets the others go as it reads them (torch: a third of 1.3 million rows)."""
    rows = [row for module in documented for row in module.flow]
    let_go(modules, ("flow",))  # the index's owner hands its rows over
    return rows


def let_go(modules: Iterable[ModuleIndex], tables: tuple[str, ...] = ("flow", "calls", "locals")) -> None:
    """Empty ``modules`` of the records of ``tables`` no one reads again: the modules replaced by
    others (which share their records: what the solve lets go and the sites packed are not held
    through them), the local bindings once the resolver holds what it reads of them."""
    for module in modules:
        for table in tables:
            object.__setattr__(module, table, ())  # frozen: the index's owner lets the model take them


def merge_targets(targets: list[Target], found: list[Target]) -> list[Target]:
    """The resolver's targets and the value flow's: a guess by name the flow does not confirm and
    the unresolved placeholder give way to what the flow found.  An attribute or variable called
    (``self._sync_policy()``) stays, beside the functions it holds."""
    flowed = {target.qualname for target in found}
    giving = giving_way(targets)
    called = object_called(targets)  # confirmed by the flow, said as the flow found it
    kept = [
        target
        for target in targets
        if target.qualname not in giving or (target.qualname in flowed and target.qualname not in called)
    ]
    known = {target.qualname for target in kept}
    return kept + [target for target in found if target.qualname not in known]


def group_keys(
    resolver: Resolver, index: ProjectIndex, companions: tuple[str, ...] = ()
) -> dict[tuple[str, ...], list[KeyAccess]]:
    """Key accesses by key; a key written as an expression under each constant it can hold.

    Only the documented package's: a companion package's own key accesses (tensordict's) are
    not what the package's key flows are about.
    """
    keys: dict[tuple[str, ...], list[KeyAccess]] = defaultdict(list)
    for module in index.modules:
        if companions and companion_path(companions, module.path):
            continue
        for key_access in module.keys:
            if key_access.receiver and resolver.plain_container(key_access.function, key_access.receiver):
                continue  # ``info[self.init_key] = marker`` with ``info: dict``: not a tensordict
            if key_access.key:
                keys[key_access.key].append(key_access)
                continue
            for value in resolver.key_values(key_access.function, key_access.expression, key_access.guards):
                keys[value].append(dataclasses.replace(key_access, key=value))
    return keys


def module_bindings(resolver: Resolver, index: ProjectIndex) -> list[tuple[str, str, str]]:
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


def external_bindings(resolver: Resolver, index: ProjectIndex) -> list[tuple[str, str, str]]:
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


def returns_by_function(index: ProjectIndex) -> dict[str, list[ReturnSite]]:
    found: dict[str, list[ReturnSite]] = defaultdict(list)
    for module in index.modules:
        for site in module.returns:
            found[site.function].append(site)
    return found


def access_order(access: KeyAccess | AttributeAccess) -> tuple[str, int, str]:
    return (access.function, access.line, access.kind)


def group_attributes(
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
            property_reads.extend(_property_reads(resolver, access, member, kind))
            if kind != PROPERTY:
                grouped[_introducing_class(resolver, access, member) + "." + access.attribute].append(access)
    result = {qualname: tuple(sorted(accesses, key=access_order)) for qualname, accesses in sorted(grouped.items())}
    return result, property_reads


def _property_reads(
    resolver: Resolver, access: AttributeAccess, member: str | None, kind: str
) -> list[tuple[AttributeAccess, str, str]]:
    """The getters a read of ``self.<attribute>`` calls: overriding properties, then its own."""
    if access.kind != READ:
        return []
    found = []
    if kind in ("", PROPERTY, ATTRIBUTE):
        # a subclass may define the attribute as a property (virtual dispatch)
        for override in resolver.overrides(access.owner, access.attribute):
            if resolver.symbols[override].kind == PROPERTY:
                found.append((access, override, "override"))
    if kind == PROPERTY and member:
        found.append((access, member, "property"))
    return found


def _introducing_class(resolver: Resolver, access: AttributeAccess, member: str | None) -> str:
    """The class an attribute access is grouped under: its member's, else the first that assigns it."""
    if member:
        return member.rpartition(".")[0]
    return resolver.attribute_owner(access.owner, access.attribute) or access.owner


# What Python gives every object (``self.__class__.__name__``, ``self.__dict__.get(...)``): read
# through ``self``, they are no member of the class, and get no symbol (their accesses are kept).
EVERY_OBJECTS = frozenset({"__class__", "__dict__", "__doc__", "__module__", "__weakref__"})


def attribute_symbol(qualname: str, accesses: tuple[AttributeAccess, ...], symbols: dict[str, Symbol]) -> Symbol:
    """A symbol for ``self.<attr>``, placed at its first write (in ``__init__`` if any; of writes
    in several files, the first in the first file by path: lines of two files are not compared)."""
    owner = qualname.rpartition(".")[0]
    own = [access for access in accesses if access.owner == owner]
    writes = [access for access in own if access.kind == "write"] or own or list(accesses)

    def place(access: AttributeAccess) -> tuple[bool, str, int]:
        function = symbols.get(access.function)
        return (not access.function.endswith(".__init__"), function.path if function is not None else "", access.line)

    first = min(writes, key=place)
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


def as_tuple(record: Any) -> tuple[Any, ...]:
    """A slotted dataclass as the tuple of its fields, in declaration order (``__slots__``)."""
    kind = type(record)
    getter = _FIELDS.get(kind)
    if getter is None:
        slots = kind.__slots__
        getter = _FIELDS[kind] = operator.attrgetter(*slots) if len(slots) > 1 else lambda r: (getattr(r, slots[0]),)
    return getter(record)  # type: ignore[no-any-return]


_FIELDS: dict[type, Any] = {}  # record type -> what reads its fields as a tuple
