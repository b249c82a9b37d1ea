"""Page models: each page of the profile, its sections built over the code model.

The result is typed and frozen (:class:`PageModel` of :class:`SectionModel`); templates render
it, and nothing here formats rst or Markdown.  A name the profile uses that no longer resolves
fails here, naming the profile file, the line and the section.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rlmap.errors import RlmapError
from rlmap.model.codemodel import CodeModel
from rlmap.pages.diagrams import Diagram
from rlmap.pages.profile import Page, Profile, Section
from rlmap.pages.refs import Refs
from rlmap.pages.sections import code, curated, data
from rlmap.pages.sections.base import Context

# kind -> builder(spec, context) over the model; curated kinds also read the profile
BUILDERS: dict[str, Callable[..., Any]] = {
    "flow": code.build_flow,
    "callees": code.build_callees,
    "calls": code.build_calls,
    "quotes": code.build_quotes,
    "returns": code.build_returns,
    "dispatch": code.build_dispatch,
    "prose": code.build_text,
    "subclasses": code.build_subclasses,
    "inventory": code.build_inventory,
    "symbols": code.build_symbols,
    "caveats": code.build_caveats,
    "accesses": data.build_accesses,
    "keys": data.build_keys,
    "callers": data.build_callers,
}
CURATED_BUILDERS: dict[str, Callable[..., Any]] = {
    "glossary": curated.build_glossary,
    "symptoms": curated.build_symptoms,
    "contents": curated.build_contents,
}


@dataclass(frozen=True, slots=True)
class SectionModel:
    kind: str
    id: str | None
    title: str | None
    prose: str | None
    body: Any  # the kind's frozen body (e.g. :class:`rlmap.pages.sections.code.FlowBody`)
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
    "into your repository, point [tool.rlmap] profile at the copy and update it there"
)


def build_pages(model: CodeModel, refs: Refs, profile: Profile) -> list[PageModel]:
    pages = []
    for page in profile.pages.values():
        sections = []
        for declared in page.sections:
            context = Context(model, refs, declared.where.removesuffix(":"))
            try:
                if declared.kind in CURATED_BUILDERS:
                    body = CURATED_BUILDERS[declared.kind](declared.spec, context, profile)
                else:
                    body = BUILDERS[declared.kind](declared.spec, context)
            except RlmapError as error:
                if profile.builtin:  # the user cannot fix rlmap's own files: say what they can do
                    error.hint = _BUILTIN_HINT.format(name=profile.name)
                raise
            sections.append(SectionModel(declared.kind, declared.id, declared.title, declared.prose, body, declared))
        pages.append(PageModel(page, tuple(sections)))
    return pages
