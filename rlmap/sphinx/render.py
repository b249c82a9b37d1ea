"""One section, built and rendered to rst for a directive, with the page templates and formatters.

The body comes from the same builder a profile's section uses (:data:`rlmap.pages.compose.BUILDERS`),
and the text from the same template (``templates/sections/<kind>.j2``) rendered by
:class:`rlmap.render.renderer.Renderer` in the sandbox; only two things differ from a generated
page: a heading inside a section becomes a rubric (the hand-written page owns its section
structure), and a diagram is inline DOT, drawn only when ``sphinx.ext.graphviz`` is loaded.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rlmap.pages.compose import BUILDERS
from rlmap.pages.diagrams import Diagram
from rlmap.pages.refs import UnknownSymbol
from rlmap.pages.sections.base import Context
from rlmap.pages.sections.specs import Spec
from rlmap.render.formatters import RstFormatter
from rlmap.render.renderer import Renderer
from rlmap.sphinx.state import BuildState


class DirectiveFormatter(RstFormatter):
    """rst for text nested in a hand-written page."""

    def __init__(self, graphviz: bool) -> None:
        super().__init__()
        self.graphviz = graphviz

    def heading(self, text: str, level: int = 1) -> str:
        del level
        return f".. rubric:: {self.text(text)}"

    def diagram(self, diagram: Diagram) -> str:
        if not self.graphviz:
            return ""
        body = "\n".join(f"   {line}" if line.strip() else "" for line in diagram.dot.splitlines())
        return ".. graphviz::\n\n" + body + "\n"


@dataclass(frozen=True, slots=True)
class PageContext(Context):
    """Names as a page writes them: ``Collector.pre_collect_hook`` also finds a member the class
    inherits (defined on a base), the way a profile's ``class`` + member name does."""

    def name(self, value: str, parameter: str) -> str:
        try:
            return Context.name(self, value, parameter)
        except UnknownSymbol:
            owner, _, member = value.rpartition(".")
            if not owner:
                raise
            try:
                cls = Context.name(self, owner, parameter)
            except UnknownSymbol:
                cls = ""
            found = self.model.find_member(cls, member) if cls else None
            if found is None:
                raise
            return found


def render_section(state: BuildState, kind: str, spec: Spec, where: str) -> str:
    """The rst of one section of ``kind``; a name that no longer resolves raises, naming ``where``."""
    body = BUILDERS[kind](spec, PageContext(state.model, state.refs, where))
    renderer = Renderer(state.environment, state.refs, "rst", state.source.stamp(), state.terms)
    renderer.f = DirectiveFormatter(state.graphviz)
    renderer.f.terms = state.terms
    context: dict[str, Any] = {"b": body, "lead": ""}
    return renderer.page(f"sections/{kind}.j2", context, {})
