"""Sections about data: attribute accesses, tensordict keys, and the callers of a symbol."""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rlmap.index.records import format_key, key_of
from rlmap.pages.claimcheck import ClaimChecker, Held
from rlmap.pages.curated import check_markup
from rlmap.pages.diagrams import key_diagram
from rlmap.pages.refs import Ref
from rlmap.pages.sections import specs
from rlmap.pages.sections.base import ALL_KEY_ACCESSES, READERS, WRITERS, Body, Context, Entry, Site

if TYPE_CHECKING:
    from rlmap.pages.profile import Profile


@dataclass(frozen=True, slots=True)
class ByFunction:
    function: Ref | None
    writes: tuple[Site, ...]
    reads: tuple[Site, ...]
    passed: tuple[Site, ...] = ()  # reads that hand the value to a call, which may change it in place


@dataclass(frozen=True, slots=True)
class Attribute:
    ref: Ref
    assigned: tuple[Site, ...]
    set: tuple[Site, ...]
    called: tuple[Site, ...]
    read: tuple[Site, ...]


@dataclass(frozen=True, slots=True)
class AccessesBody(Body):
    attributes: tuple[Attribute, ...]
    by_function: tuple[ByFunction, ...]
    show: tuple[str, ...]


def build_accesses(spec: specs.Accesses, ctx: Context) -> AccessesBody:
    cls = ctx.name(spec.class_, "class") if spec.class_ else None
    scope = tuple(spec.scope)
    attributes = []
    grouped: dict[str, list[Site]] = defaultdict(list)
    for name in spec.attributes:
        qualname = ctx.attribute(cls, name, "attributes")
        if spec.layout == "by-function":
            for row in ctx.accesses(qualname, ("write", "read", "augmented", "delete", "mutate")):
                grouped[row.function.qualname if row.function else ""].append(row)
        attributes.append(
            Attribute(
                ref=ctx.ref(qualname),
                assigned=tuple(ctx.accesses(qualname, ("write",))) if "assigned" in spec.show else (),
                set=tuple(ctx.accesses(qualname, ("write", "augmented"))) if "set" in spec.show else (),
                called=tuple(ctx.calls_to(qualname, scope)) if "called" in spec.show else (),
                read=tuple(ctx.accesses(qualname, ("read",))) if "read" in spec.show else (),
            )
        )
    by_function = tuple(
        ByFunction(
            ctx.ref(function) if function else None,
            tuple(row for row in rows if row.kind != "read"),
            tuple(row for row in rows if row.kind == "read" and not row.how.startswith(_PASSED)),
            tuple(row for row in rows if row.kind == "read" and row.how.startswith(_PASSED)),
        )
        for function, rows in sorted(grouped.items(), key=lambda item: min(_line(r) for r in item[1]))
    )
    return AccessesBody(tuple(attributes), by_function, tuple(spec.show))


_PASSED = "passed to "  # the operation the index gives an attribute handed to a call


def _line(site: Site) -> int:
    return site.anchor.line if site.anchor else 0


@dataclass(frozen=True, slots=True)
class Key:
    key: str
    writers: tuple[Site, ...]
    readers: tuple[Site, ...]


@dataclass(frozen=True, slots=True)
class KeysBody(Body):
    keys: tuple[Key, ...]
    sites: tuple[Site, ...]  # every access, for the one-table layout
    scope: tuple[str, ...]
    layout: str
    through: bool = False  # rows the profile places, by claims (``through``), are among them


def build_keys(spec: specs.Keys, ctx: Context, profile: Profile | None = None) -> KeysBody:
    scope = tuple(spec.scope)
    keys = []
    sites: list[Site] = []
    through = key_through(spec, ctx, profile)
    for raw in spec.keys:
        key = ctx.key(raw, "keys")
        if spec.layout == "table":
            sites.extend(ctx.key_sites(key, ALL_KEY_ACCESSES, scope))
        writers = _placed(ctx.key_sites(key, WRITERS, scope), through.get((key, "write"), ()))
        readers = _placed(ctx.key_sites(key, READERS, scope), through.get((key, "read"), ()))
        keys.append(Key(format_key(key), writers, readers))
    diagrams = (key_diagram(spec.diagram, keys),) if spec.diagram else ()
    return KeysBody(tuple(keys), tuple(sites), scope, spec.layout, bool(through), diagrams=diagrams)


def _place(site: Site) -> tuple[str, str, int] | None:
    if site.anchor is None or site.function is None:
        return None
    return (site.function.qualname, site.anchor.path, site.anchor.line)


def _placed(found: list[Site], placed: list[Site] | tuple[Site, ...]) -> tuple[Site, ...]:
    """The accesses the model found, then the rows a profile places by claims; a placed row at
    the line of a found one (the model has come to find what a claim placed) gives that row its
    ``how`` rather than listing the access twice."""
    rows = list(found)
    at = {_place(site): number for number, site in enumerate(rows) if _place(site) is not None}
    for site in placed:
        number = at.get(_place(site))
        if number is None:
            rows.append(site)
        else:
            rows[number] = dataclasses.replace(rows[number], how=site.how)
    return tuple(rows)


def key_through(
    spec: specs.Keys, ctx: Context, profile: Profile | None
) -> dict[tuple[tuple[str, ...], str], list[Site]]:
    """(key, "write"/"read") -> the rows of the accesses values hold, each at its claim's line."""
    rows: dict[tuple[tuple[str, ...], str], list[Site]] = defaultdict(list)
    for key, kind, _, how, held in through_rows(spec, ctx, profile):
        rows[(key, kind)].append(Site(held.anchor, ctx.ref(held.function), guard=held.guard, how=how, kind=kind))
    return rows


def through_rows(
    spec: specs.Keys, ctx: Context, profile: Profile | None
) -> Iterator[tuple[tuple[str, ...], str, str, str, Held]]:
    """A keys section's ``through`` rows: each key, "write" or "read", the claim that places it,
    what the row says and the line the claim holds at (checked against the code: a claim that
    does not hold fails)."""
    if not spec.through:
        return
    claims = {claim.id: claim for claim in profile.claims.claims} if profile is not None else {}
    checker = ClaimChecker(ctx.model, ctx.refs)
    for entry in spec.through:
        check_markup(entry.how, f"{ctx.where} through '{entry.claim}' how")
        if entry.claim not in claims or not claims[entry.claim].static:
            raise ctx.fail(f"through: '{entry.claim}' is no static claim of the profile", "name a claim of claims.toml")
        held = checker.check(claims[entry.claim])
        for kind, names in (("write", entry.writes), ("read", entry.reads)):
            for raw in names:
                yield key_of(raw), kind, entry.claim, entry.how, held


@dataclass(frozen=True, slots=True)
class CallersBody(Body):
    targets: tuple[Entry, ...]  # target -> its call sites
    layout: str


def build_callers(spec: specs.Callers, ctx: Context) -> CallersBody:
    cls = ctx.name(spec.class_, "class") if spec.class_ else None
    scope = tuple(spec.scope)
    rows = []
    for name in spec.targets:
        target = ctx.member(cls, name, "targets")
        sites = ctx.calls_to(target, scope) if spec.layout == "sites" else ctx.readers(target)
        rows.append(Entry(ctx.ref(target), tuple(sites)))
    return CallersBody(tuple(rows), spec.layout)
