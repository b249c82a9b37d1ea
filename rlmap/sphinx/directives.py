"""The directives and the role: live facts from the code inside hand-written pages.

``.. rlmap-flow:: Collector.rollout``, ``.. rlmap-accesses::``, ``.. rlmap-keys::``,
``.. rlmap-callers::`` take the section's main parameter as their argument; ``.. rlmap-section::``
takes ``:kind:`` and any parameter of that kind.  Each builds and renders the section, then parses
the rst into the document.  ``:rlmap:`Collector.rollout``` is the name linked to its line.

Any problem (a name that no longer resolves, a misspelt option) is a Sphinx error located at the
directive or role, so ``sphinx-build -W`` fails on it; never a traceback.
"""

from __future__ import annotations

from typing import Any, ClassVar

from docutils import nodes
from docutils.parsers.rst import directives
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective, SphinxRole
from sphinx.util.nodes import split_explicit_title

from rlmap.errors import RlmapError
from rlmap.output.generate import render_bounded
from rlmap.sphinx.options import DIRECTIVE_KINDS, option_names, section_parameters
from rlmap.sphinx.render import render_section
from rlmap.sphinx.state import BuildState, note_page, state_of

_NOT_LOADED = "rlmap's model is not loaded: add 'rlmap.sphinx' to extensions in conf.py"


class SectionDirective(SphinxDirective):
    """``.. rlmap-section::`` with ``:kind:`` and the kind's parameters as options."""

    has_content = False
    required_arguments = 0
    optional_arguments = 0
    final_argument_whitespace = True
    option_spec: ClassVar[dict[str, Any]] = {
        "kind": directives.unchanged_required,
        **dict.fromkeys(option_names(), directives.unchanged),
    }
    kind = ""  # fixed by a shortcut directive
    argument = ""  # the parameter a shortcut's argument fills

    def run(self) -> list[nodes.Node]:
        state = state_of(self.env)
        if state is None:
            raise self.error(f"{self.name}: {_NOT_LOADED}")
        options = dict(self.options)
        kind = self.kind or options.pop("kind", "")
        if self.argument:
            options[self.argument] = " ".join(self.arguments)
        try:
            spec = section_parameters(kind, options, self.name)
            # (in a child under the page rendering's limits: a profile's template may loop for ever)
            text = render_bounded(lambda: render_section(state, kind, spec, self.name))
        except RlmapError as error:
            raise self.error(f"rlmap: {error}") from None
        note_page(self.env, state.key)
        return self._parse(state, kind, text)

    def _parse(self, state: BuildState, kind: str, text: str) -> list[nodes.Node]:
        del state
        container = nodes.container(classes=["rlmap", f"rlmap-{kind}"])
        self.set_source_info(container)
        lines = text.splitlines()
        if type(self.state).__module__.startswith("myst_parser"):
            # MyST parses nested text as Markdown: hand it the rst through its {eval-rst} fence
            fence = "`" * (max((len(run) for run in _backtick_runs(text)), default=0) + 3)
            lines = [f"{fence}{{eval-rst}}", *lines, fence]
        source, line = self.get_source_info()
        content = StringList(lines, items=[(source, max(line - 1, 0))] * len(lines))
        self.state.nested_parse(content, 0, container)
        return [container]


def _backtick_runs(text: str) -> list[str]:
    runs: list[str] = []
    current = ""
    for character in text:
        if character == "`":
            current += "`"
        elif current:
            runs.append(current)
            current = ""
    return [*runs, current] if current else runs


def shortcut(kind: str, argument: str) -> type[SectionDirective]:
    """``.. rlmap-<kind>:: NAME ...``: the section with ``argument`` set to the directive's argument."""
    names = option_names((kind,))
    return type(
        f"{kind.title()}Directive",
        (SectionDirective,),
        {
            "kind": kind,
            "argument": argument,
            "required_arguments": 1,
            "option_spec": {name: directives.unchanged for name in names if name != argument},
            "__doc__": f"``.. rlmap-{kind}::`` (its argument: ``{argument}``).",
        },
    )


SHORTCUTS = {"flow": "function", "accesses": "attributes", "keys": "keys", "callers": "targets"}
DIRECTIVES: dict[str, type[SectionDirective]] = {
    "rlmap-section": SectionDirective,
    **{f"rlmap-{kind}": shortcut(kind, argument) for kind, argument in SHORTCUTS.items()},
}
assert set(SHORTCUTS) <= set(DIRECTIVE_KINDS)


class SymbolRole(SphinxRole):
    """``:rlmap:`Collector.rollout``` (or ``:rlmap:`title <Name>```): the name as code, linked to
    the permalink of its definition line."""

    def run(self) -> tuple[list[nodes.Node], list[nodes.system_message]]:
        state = state_of(self.env)
        explicit, title, name = split_explicit_title(self.text)
        try:
            if state is None:
                raise RlmapError(_NOT_LOADED)
            ref = state.refs.ref(state.refs.lookup(name.strip(), f":{self.name}: role"))
        except RlmapError as error:
            message = self.inliner.reporter.error(f"rlmap: {error}", line=self.lineno)
            problem = self.inliner.problematic(self.rawtext, self.rawtext, message)
            return [problem], [message]
        note_page(self.env, state.key)
        shown = title if explicit else ref.display
        literal = nodes.literal(shown, shown, classes=["rlmap", "xref"])
        if ref.anchor is None or not ref.anchor.url:
            if ref.anchor is not None:
                literal["title"] = ref.anchor.location
            return [literal], []
        link = nodes.reference("", "", literal, refuri=ref.anchor.url, reftitle=ref.anchor.location, internal=False)
        return [link], []
