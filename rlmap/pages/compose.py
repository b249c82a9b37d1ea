"""Page models: each page of the profile, its sections built over the code model.

The result is typed and frozen (:class:`PageModel` of :class:`SectionModel`); templates render
it, and nothing here formats rst or Markdown.  A name the profile uses that no longer resolves
fails here, naming the profile file, the line and the section.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rlmap.errors import CacheError, ConfigError, RlmapError
from rlmap.model.codemodel import CodeModel
from rlmap.pages.claimcheck import ClaimChecker, ClaimsFailed
from rlmap.pages.diagrams import Diagram
from rlmap.pages.header import builtin_profile_folder
from rlmap.pages.profile import Page, Profile, Section
from rlmap.pages.refs import Refs
from rlmap.pages.sections import code, curated, data, flow, helpers, keyuse
from rlmap.pages.sections.base import Context
from rlmap.pages.versions import matches

# kind -> builder(spec, context) over the model; curated kinds also read the profile
BUILDERS: dict[str, Callable[..., Any]] = {
    "flow": flow.build_flow,
    "callees": code.build_callees,
    "calls": code.build_calls,
    "quotes": code.build_quotes,
    "returns": code.build_returns,
    "dispatch": code.build_dispatch,
    "prose": code.build_text,
    "subclasses": code.build_subclasses,
    "inventory": code.build_inventory,
    "helpers": helpers.build_helpers,
    "symbols": code.build_symbols,
    "caveats": code.build_caveats,
    "accesses": data.build_accesses,
    "keys": data.build_keys,  # without a profile: literal accesses only (see CURATED_BUILDERS)
    "callers": data.build_callers,
}
CURATED_BUILDERS: dict[str, Callable[..., Any]] = {
    "glossary": curated.build_glossary,
    "symptoms": curated.build_symptoms,
    "contents": curated.build_contents,
    "claims": curated.build_claims,
    "keys": data.build_keys,  # in a profile, its ``through`` rows come from the profile's claims
    "key_use": keyuse.build_key_use,  # the profile's extensions say what names a key
}


@dataclass(frozen=True, slots=True)
class SectionModel:
    kind: str
    id: str | None
    title: str | None
    prose: str | None
    body: Any  # the kind's frozen body (e.g. :class:`rlmap.pages.sections.flow.FlowBody`)
    declared: Section


@dataclass(frozen=True, slots=True)
class PageModel:
    page: Page
    sections: tuple[SectionModel, ...]

    @property
    def diagrams(self) -> tuple[Diagram, ...]:
        found = [diagram for section in self.sections for diagram in section.body.diagrams]
        return tuple(sorted(found, key=lambda diagram: diagram.name))


_BUILTIN_HINT = (
    "the built-in profile was written for another version of the code: copy rlmap/profiles/{name}/ "
    "({where}) into your repository, point [tool.rlmap] profile at the copy and update it there"
)


def build_pages(
    model: CodeModel, refs: Refs, profile: Profile, tick: Callable[[int, int], None] | None = None
) -> list[PageModel]:
    """Every page's sections; every section whose names no longer resolve is reported, in one error.
    ``tick(done, total)``: told as each section is built (sections written for other releases count
    as built)."""
    pages = []
    failures: list[RlmapError] = []
    total = sum(len(page.sections) for page in profile.pages.values())
    built = 0
    try:  # every static claim the curated words make still holds
        ClaimChecker(model, refs).check_all(profile.claims)
    except CacheError:  # a damaged cached section: not the profile's fault (the command runs again)
        raise
    except RlmapError as error:
        failures.append(error)
    for page in profile.pages.values():
        sections = []
        for declared in page.sections:
            if tick is not None:
                tick(built, total)
            built += 1
            if declared.spec.versions and not matches(model.source.version, declared.spec.versions):
                continue  # written for other releases of the package
            try:
                body = _build(declared, Context(model, refs, declared.where), profile)
            except CacheError:
                raise
            except RlmapError as error:
                failures.append(error)
                continue
            sections.append(SectionModel(declared.kind, declared.id, declared.title, declared.prose, body, declared))
        pages.append(PageModel(page, tuple(sections)))
    if tick is not None:
        tick(built, total)
    if failures:
        raise _combined(failures, profile)
    return pages


def _build(declared: Section, context: Context, profile: Profile) -> Any:
    if declared.kind in CURATED_BUILDERS:
        return CURATED_BUILDERS[declared.kind](declared.spec, context, profile)
    return BUILDERS[declared.kind](declared.spec, context)


def _combined(failures: list[RlmapError], profile: Profile) -> RlmapError:
    """One error for every place of the profile that failed, so a user fixes them in one pass.

    A claim that no longer holds is reported by the claims check and again by each section that
    shows it: each problem is listed once."""
    problems: list[str] = []
    for error in failures:
        for problem in error.problems if isinstance(error, ClaimsFailed) else (error.message,):
            if problem not in problems:
                problems.append(problem)
    first = failures[0]
    if len(failures) > 1:
        listed = "\n".join(f"  - {problem}" for problem in problems)
        places = f" in {len(problems)} places" if len(problems) > 1 else ""
        kind = ConfigError if isinstance(first, ClaimsFailed) else type(first)  # (built from its problems)
        first = kind(f"the profile no longer matches the code{places}:\n{listed}", first.hint)
    if profile.builtin:  # the user cannot fix rlmap's own files: say what they can do
        first.hint = _BUILTIN_HINT.format(name=profile.name, where=builtin_profile_folder(profile.name))
    return first
