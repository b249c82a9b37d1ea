"""Sections made of curated data: the glossary, the symptoms and the contents of the profile."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rlmap.errors import ConfigError
from rlmap.index.records import CLASS, VARIABLE, format_key
from rlmap.model.codemodel import CodeModel
from rlmap.pages.claimcheck import ClaimChecker
from rlmap.pages.curated import check_markup
from rlmap.pages.docstree import DocsTree
from rlmap.pages.refs import Anchor, Ref
from rlmap.pages.sections import specs
from rlmap.pages.sections.base import READERS, WRITERS, Body, Context, Site
from rlmap.pages.sections.data import key_through

if TYPE_CHECKING:
    from rlmap.pages.curated import Symptom, Term
    from rlmap.pages.profile import Profile


@dataclass(frozen=True, slots=True)
class SymbolUse:
    """How the code uses a symbol, each figure counting one thing (resolved statically)."""

    ref: Ref
    calls: int  # call lines that resolve to it (a class: lines constructing it by name)
    accesses: int  # attribute reads and writes of it
    subclasses: int  # classes deriving from it, directly or not
    files: int  # files holding those calls and accesses
    is_class: bool = False
    # a method: other call lines naming a method of its name on an object rlmap does not type;
    # a module-level instance: call lines of its methods (``manager.get_mode()``), by name
    by_name: int = 0
    is_instance: bool = False


@dataclass(frozen=True, slots=True)
class KeyFlow:
    key: str
    writers: tuple[Site, ...]
    readers: tuple[Site, ...]
    places: int  # accesses through a literal key
    held: int  # accesses through a name or a key list that holds the key
    files: int


@dataclass(frozen=True, slots=True)
class GlossaryTerm:
    entry: Term  # as the glossary file has it
    symbols: tuple[SymbolUse, ...]
    key_flows: tuple[KeyFlow, ...]
    existing: tuple[str, ...] = ()  # the docs tree's own terms among its names: it defines them, rlmap does not


@dataclass(frozen=True, slots=True)
class GlossaryBody(Body):
    terms: tuple[GlossaryTerm, ...]  # the terms this glossary defines
    elsewhere: tuple[GlossaryTerm, ...] = ()  # terms the docs tree defines: live facts only, linked to its entry
    document: str = ""  # the docs tree's document holding its glossary


def existing_terms(term: Term, docs: DocsTree | None) -> tuple[str, ...]:
    """The docs tree's own spelling of each of a term's names it already defines (in order, once)."""
    if docs is None:
        return ()
    found = [docs.term(name) for name in term.names()]
    return tuple(dict.fromkeys(name for name in found if name))


def term_targets(profile: Profile, docs: DocsTree | None) -> dict[str, str]:
    """Lower-cased term, alias or former name -> the glossary term a ``:term:`` link names.

    A name the docs tree defines links to its entry; another name of such a term links to the
    first of its names the tree defines; every other name links to the profile's term, as
    without a docs tree.
    """
    targets: dict[str, str] = {}
    for term in profile.glossary:
        existing = existing_terms(term, docs)
        for name in term.names():
            own = docs.term(name) if docs is not None else ""
            targets[name.lower()] = own or (existing[0] if existing else term.term)
    return targets


def build_glossary(spec: specs.Glossary, ctx: Context, profile: Profile) -> GlossaryBody:
    del spec
    docs = ctx.refs.docs
    entries = []
    through = profile_through(ctx, profile)
    named = CallsByName(ctx.model)
    for term in sorted(profile.glossary, key=lambda t: t.term.lower()):
        symbols = []
        for name in term.symbols:
            qualname = ctx.refs.lookup(name, term.origin)
            symbols.append(usage(ctx.model, ctx.ref(qualname), named))
        keys = []
        for key in term.keys:
            accesses = ctx.model.key_accesses(key)
            if not accesses:
                raise ConfigError(f"{term.origin}: key {format_key(key)} is used nowhere", "update the key")
            keys.append(
                KeyFlow(
                    key=format_key(key),
                    writers=tuple(_with(ctx.key_functions(key, WRITERS), through.get((key, "write"), []))),
                    readers=tuple(_with(ctx.key_functions(key, READERS), through.get((key, "read"), []))),
                    places=sum(1 for access in accesses if not access.expression),
                    held=sum(1 for access in accesses if access.expression),
                    files=len({ctx.model.path_of(a.function) for a in accesses}),
                )
            )
        entries.append(GlossaryTerm(term, tuple(symbols), tuple(keys), existing_terms(term, docs)))
    return GlossaryBody(
        tuple(entry for entry in entries if not entry.existing),
        tuple(entry for entry in entries if entry.existing),
        docs.term_document if docs is not None else "",
    )


def profile_through(ctx: Context, profile: Profile) -> dict[tuple[tuple[str, ...], str], list[Site]]:
    """The accesses values hold, from every keys section of the profile (``through`` rows)."""
    rows: dict[tuple[tuple[str, ...], str], list[Site]] = {}
    for page in profile.pages.values():
        for section in page.sections:
            if isinstance(section.spec, specs.Keys) and section.spec.through:
                for found, sites in key_through(section.spec, ctx, profile).items():
                    rows.setdefault(found, []).extend(sites)
    return rows


def _with(literal: list[Site], held: list[Site]) -> list[Site]:
    """One row per function: the literal accesses, then those values hold in other functions."""
    seen = {site.function.qualname for site in literal if site.function is not None}
    extra = [site for site in held if site.function is not None and site.function.qualname not in seen]
    return [*literal, *sorted(extra, key=lambda site: site.function.qualname if site.function else "")]


@dataclass(frozen=True, slots=True)
class SectionLink:
    title: str
    slug: str
    section: str


@dataclass(frozen=True, slots=True)
class Evidence:
    """A line that shows a symptom's cause: where it raises or warns (with the message the code
    writes) or the line a claim of the symptom checks."""

    kind: str  # raises / warns / line
    function: Ref
    anchor: Anchor | None
    text: str  # the message, or the line's code


@dataclass(frozen=True, slots=True)
class SymptomRow:
    entry: Symptom  # as the symptoms file has it
    look: tuple[Ref, ...]
    key_names: tuple[str, ...]
    see: tuple[SectionLink, ...]
    evidence: tuple[Evidence, ...] = ()
    tests: tuple[str, ...] = ()  # the runtime tests that run what it says


@dataclass(frozen=True, slots=True)
class SymptomsBody(Body):
    symptoms: tuple[SymptomRow, ...]


def build_symptoms(spec: specs.Symptoms, ctx: Context, profile: Profile) -> SymptomsBody:
    del spec
    rows = []
    for symptom in profile.symptoms:
        look = tuple(ctx.ref(ctx.refs.lookup(name, symptom.origin)) for name in symptom.look)
        keys = []
        for key in symptom.keys:
            if not ctx.model.key_accesses(key):
                raise ConfigError(f"{symptom.origin}: key {format_key(key)} is used nowhere", "update the key")
            keys.append(format_key(key))
        see = tuple(
            SectionLink(profile.pages[page].titles()[section], profile.pages[page].slug, section)
            for page, section in symptom.see
        )
        evidence, tests = _evidence(f"symptom:{symptom.id}", ctx, profile)
        rows.append(SymptomRow(symptom, look, tuple(keys), see, evidence, tests))
    return SymptomsBody(tuple(rows))


def _evidence(text_id: str, ctx: Context, profile: Profile) -> tuple[tuple[Evidence, ...], tuple[str, ...]]:
    """The lines the claims backing a curated text check (raising and warning lines first), and
    the tests that run it."""
    checker = ClaimChecker(ctx.model, ctx.refs)
    found: list[Evidence] = []
    tests: list[str] = []
    for claim in profile.claims.claims:
        if not any(back == text_id for back, _ in claim.backs):
            continue
        if claim.spec.test and claim.spec.test not in tests:
            tests.append(claim.spec.test)
        if not claim.static:
            continue
        held = checker.check(claim)
        kind = claim.kind if claim.kind in ("raises", "warns") else "line"
        line = Evidence(kind, ctx.ref(held.function), held.anchor, _short(held.text, 160))
        # two claims checking one line (its call and its condition, two sentences of a docstring)
        # show it once
        if not any((e.kind, e.function, e.anchor) == (line.kind, line.function, line.anchor) for e in found):
            found.append(line)
    order = {"raises": 0, "warns": 1, "line": 2}
    found.sort(key=lambda e: order[e.kind])  # stable: claims file order within a kind
    return tuple(found), tuple(tests)


@dataclass(frozen=True, slots=True)
class PageLink:
    title: str
    slug: str
    summary: str


@dataclass(frozen=True, slots=True)
class ContentsBody(Body):
    pages: tuple[PageLink, ...]
    related: tuple[specs.Link, ...]


def build_contents(spec: specs.Contents, ctx: Context, profile: Profile) -> ContentsBody:
    del ctx
    return ContentsBody(listed_pages(profile), tuple(spec.related))


def listed_pages(profile: Profile) -> tuple[PageLink, ...]:
    return tuple(PageLink(page.title, page.slug, page.summary) for page in profile.pages.values() if page.listed)


class CallsByName:
    """Every call line of the package by the names its callee is written with, built on first use:
    the last name (``x.make_primer()`` -> ``make_primer``) and the first (``manager.get_mode()``
    -> ``manager``)."""

    def __init__(self, model: CodeModel) -> None:
        self.model = model
        self._last: dict[str, list[tuple[str, int, tuple[str, ...]]]] | None = None
        self._first: dict[str, set[tuple[str, int]]] = defaultdict(set)

    def _build(self) -> dict[str, list[tuple[str, int, tuple[str, ...]]]]:
        if self._last is None:
            self._last = defaultdict(list)
            for function, sites in self.model.all_call_sites():
                for site in sites:
                    # ``step_mdp(td).select(...)`` calls ``select``: the name a call is written with
                    # is the last of its callee, and a first name followed by ``(`` is a call's result
                    text = site.callee_text
                    self._last[text.rsplit(".", 1)[-1]].append((function, site.line, site.targets))
                    first, dot, _ = text.partition(".")
                    if dot and "(" not in first:
                        self._first[first].add((function, site.line))
        return self._last

    def unresolved(self, qualname: str) -> int:
        """Call lines naming ``qualname``'s name that resolve to nothing of that name (an
        unresolved call's placeholder ``?:x.name`` is no resolution)."""
        name = qualname.rsplit(".", 1)[-1]
        lines = {
            (function, line)
            for function, line, targets in self._build().get(name, ())
            if not any(target.rsplit(".", 1)[-1] == name and not target.startswith("?:") for target in targets)
        }
        return len(lines)

    def methods_of(self, qualname: str) -> int:
        """Call lines of a method of the module-level name ``qualname`` (``manager.get_mode()``),
        in its module or a module that imports it under that name."""
        self._build()
        name = qualname.rsplit(".", 1)[-1]
        module_path = self.model.path_of(qualname)
        importers = {module for module, bound, target in self.model.exports() if target == qualname and bound == name}
        return sum(
            1
            for function, _ in self._first.get(name, ())
            if self.model.path_of(function) == module_path or any(function.startswith(m + ".") for m in importers)
        )


def usage(model: CodeModel, ref: Ref, named: CallsByName | None = None) -> SymbolUse:
    """Call lines, attribute accesses and subclasses of a symbol, and the files of the first two.

    A class is called where it is constructed: calls that resolve to the ``__init__`` it runs
    (its own or a base's) and are written with the class's name.  A module-level instance counts
    the call lines of its methods; a function, the call lines that may call it unresolved.
    """
    qualname = ref.qualname
    calls = 0
    files: set[str] = set()
    kind = model.node_kind(qualname)
    is_class = kind == CLASS
    if is_class:
        # a class with no ``__init__`` in the source (a dataclass's is generated) is the target
        constructor = model.find_member(qualname, "__init__") or qualname
        name = qualname.rsplit(".", 1)[-1]
        for edge in model.callers(constructor):
            for site in model.call_sites(edge.caller):
                if constructor in site.targets and site.callee_text.rsplit(".", 1)[-1] == name:
                    calls += 1
                    files.add(model.path_of(edge.caller))
    else:
        for edge in model.callers(qualname):
            calls += len(edge.lines)
            files.add(model.path_of(edge.caller))
    accesses = model.attribute_accesses(qualname)
    files.update(model.path_of(access.function) for access in accesses)
    files.discard("")
    subclasses = len(model.subclasses_of(qualname)) if is_class else 0
    is_instance = kind == VARIABLE
    by_name = 0
    if named is not None and not is_class:
        by_name = named.methods_of(qualname) if is_instance else named.unresolved(qualname)
    return SymbolUse(ref, calls, len(accesses), subclasses, len(files), is_class, by_name, is_instance)


@dataclass(frozen=True, slots=True)
class ClaimRow:
    cells: tuple[str, ...]  # the claim's ``row``
    says: str
    function: Ref | None  # where the deciding line is (static claims)
    anchor: Anchor | None
    code: str  # the deciding statement's code, or the message quoted
    test: str  # the test that runs it ("" when none)
    message: bool = False  # ``code`` is a raised or warned message


@dataclass(frozen=True, slots=True)
class ClaimsBody(Body):
    columns: tuple[str, ...]
    rows: tuple[ClaimRow, ...]


def build_claims(spec: specs.Claims, ctx: Context, profile: Profile) -> ClaimsBody:
    """The claims of one group, each with the line that decides it (checked again here)."""
    for column in spec.columns:
        check_markup(column, f"{ctx.where} columns")
    chosen = profile.claims.group(spec.group)
    if not chosen:
        raise ctx.fail(f"group '{spec.group}' has no claim in {profile.claims.origin or 'the profile'}")
    checker = ClaimChecker(ctx.model, ctx.refs)
    rows = []
    for claim in chosen:
        if len(claim.spec.row) != len(spec.columns):
            raise ctx.fail(f"{claim.origin}: its row has {len(claim.spec.row)} cells, the section {len(spec.columns)}")
        held = checker.check(claim)
        rows.append(
            ClaimRow(
                cells=tuple(claim.spec.row),
                says=claim.spec.says,
                function=ctx.ref(held.function) if held.function else None,
                anchor=held.anchor,
                code=_short(held.text),
                test=claim.spec.test or "",
                message=claim.kind in ("raises", "warns"),
            )
        )
    return ClaimsBody(tuple(spec.columns), tuple(rows))


def _short(code: str, limit: int = 100) -> str:
    """A deciding line as a table shows it: one line, at most ``limit`` characters."""
    line = " ".join(code.split())
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"
