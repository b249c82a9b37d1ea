"""Formatters: the one place that knows rst and Markdown syntax (anchors, symbols, tables, code, diagrams).

Templates call ``f.<method>``; everything copied from the analysed tree passes through
:meth:`Formatter.text` or :meth:`Formatter.code`, which bound it to one line and escape it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rlmap.errors import RlmapError
from rlmap.index.records import ATTRIBUTE, PROPERTY, VARIABLE
from rlmap.pages.diagrams import Diagram
from rlmap.pages.refs import Anchor, Ref

if TYPE_CHECKING:
    from rlmap.pages.sections.base import Site

# Text copied from the analysed tree (docstring lines, code, keys) is one line and bounded on a
# page: a hostile file cannot break out of its line or inflate the pages.
MAX_TEXT = 500
MAX_CODE = 2000
_HOLDERS = {PROPERTY: "a property", ATTRIBUTE: "an attribute", VARIABLE: "a variable"}
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]+")


def inline(value: Any, limit: int) -> str:
    """``value`` as one line (control characters and line breaks become a space), at most ``limit`` long."""
    text = _CONTROL.sub(" ", str(value))
    return text if len(text) <= limit else text[: limit - 1] + "…"


LITERAL = re.compile(r"``[^`]+``")  # a ``double-backtick literal``: code in rst and Markdown


def keep_literals(text: str, escape: Any) -> str:
    """``escape`` applied to everything but ````double-backtick literals```` (code in both formats)."""
    parts = []
    position = 0
    for match in LITERAL.finditer(text):
        parts.append(escape(text[position : match.start()]))
        parts.append(match.group())
        position = match.end()
    parts.append(escape(text[position:]))
    return "".join(parts)


class TemplateError(RlmapError):
    """A template or a prose entry that cannot be rendered."""


class Formatter:
    """Shared helpers; subclasses implement one markup language."""

    def __init__(self) -> None:
        self.slug = ""  # the page being rendered
        self.sections: dict[str, str] = {}
        self.terms: dict[str, str] = {}  # term or alias (lower case) -> term

    def section(self, ident: str, level: int = 2) -> str:
        """A section heading from the page's section table, with a label others can link to."""
        title = self.sections[ident]
        return self.label(f"rlmap_{self.slug}_{ident}") + "\n" + self.heading(title, level)

    def glossary_term(self, name: str) -> str:
        term = self.terms.get(name.lower())
        if term is None:
            raise TemplateError(f"'{name}' is no glossary term", "add it to the glossary or fix the name")
        return self.term_link(name, term)

    def term_link(self, text: str, term: str) -> str:
        raise NotImplementedError

    def heading(self, text: str, level: int = 1) -> str:
        raise NotImplementedError

    def label(self, name: str) -> str:
        raise NotImplementedError

    def text(self, value: Any) -> str:
        return str(value)

    def sym(self, ref: Ref) -> str:
        """A symbol: its role (when public) or literal name, then its source anchor."""
        name = self.symbol_name(ref)
        return f"{name} ({self.src(ref.anchor)})" if ref.anchor else name

    def at(self, anchor: Anchor | None) -> str:
        """An anchor after the name its line holds: ``name`` (path:line)."""
        if anchor is None:
            return "(no source)"
        return f"{self.code(anchor.name)} ({self.src(anchor)})"

    def at_sites(self, sites: Sequence[Site]) -> str:
        """A key's lines in one function, each after the name it holds: ``name`` (path:line,
        Lline), the lines that hold one name together; a line that declares the key rather than
        accesses it, or writes a local copy, says so (``path:line: declared in in_keys``)."""
        by_name: dict[str, list[Site]] = {}
        for site in sites:
            if site.anchor is not None:
                by_name.setdefault(site.anchor.name, []).append(site)
        if not by_name:
            return "(no source)"
        parts = []
        for name, group in by_name.items():
            places = []
            for number, site in enumerate(group):
                place = self.src(site.anchor) if not number else self.line(site.anchor)
                if site.declared_in:
                    place += f": declared in {self.code(site.declared_in)}"
                elif site.on_copy:
                    place += ": on a copy"
                places.append(place)
            parts.append(f"{self.code(name)} ({', '.join(places)})")
        return ", ".join(parts)

    def target(self, value: Ref | str) -> str:
        """A call's target; a property or an attribute says that its value is what is called."""
        return self.sym(value) + self.called_value(value) if isinstance(value, Ref) else self.code(value)

    def called_value(self, ref: Ref, here: str = "") -> str:
        """`` (a property: what it returns is called)`` for a target that is not a function;
        `` [the wrapper `@d` puts around `A.m` and `B.m`]`` for a decorator's wrapper (a method in the
        file ``here`` with its line alone, as the outline names its targets)."""
        if ref.wraps:
            methods = _listed(
                [
                    f"{self.symbol_name(method)} ({self.line(method.anchor)})"
                    if here and method.anchor and method.anchor.path == here
                    else self.sym(method)
                    for method in ref.wraps
                ]
            )
            return f" [the wrapper {self.code('@' + ref.decorator)} puts around {methods}]"
        kind = _HOLDERS.get(ref.kind)
        return f" ({kind}: {'what it returns' if ref.kind == PROPERTY else 'what it holds'} is called)" if kind else ""

    def symbol_name(self, ref: Ref) -> str:
        raise NotImplementedError

    def code(self, text: str) -> str:
        raise NotImplementedError

    def src(self, anchor: Anchor | None) -> str:
        """``path:line`` of an anchor, linked to its permalink when there is one."""
        if anchor is None:
            return "(no source)"
        return self.external(anchor.location, anchor.url) if anchor.url else self.code(anchor.location)

    def line(self, anchor: Anchor | None) -> str:
        """A line of the file being described, as ``L2125``, linked to its permalink."""
        if anchor is None:
            return "(no source)"
        title = f"L{anchor.line}"
        return self.external(title, anchor.url) if anchor.url else self.code(title)

    def external(self, title: str, url: str) -> str:
        raise NotImplementedError


class RstFormatter(Formatter):
    def text(self, value: Any) -> str:
        """Plain prose from the code (docstring lines): one bounded line, rst markup neutralised
        but for ````inline literals````, whose content rst never interprets."""
        text = keep_literals(inline(value, MAX_TEXT), self._escape)
        if re.match(r"\.\.|_|\[", text):  # explicit markup (a directive, a target) at a paragraph start
            text = "\\" + text
        return text

    @staticmethod
    def _escape(text: str) -> str:
        text = re.sub(r"([\\*|`])", r"\\\1", text)
        text = re.sub(r"(\w):(?=\S)", r"\1\\:", text)  # no standalone URI (``javascript:...``) becomes a link
        return re.sub(r"([\w\]])_(?=\W|$)", r"\1\\_", text)

    def heading(self, text: str, level: int = 1) -> str:
        underline = "=-~^"[level - 1] * len(text)
        return f"{text}\n{underline}" if level > 1 else f"{'=' * len(text)}\n{text}\n{'=' * len(text)}"

    def label(self, name: str) -> str:
        return f".. _{name}:\n"

    def code(self, text: str) -> str:
        text = inline(text, MAX_CODE)
        if not text.strip():
            return "(none)"
        if "``" in text or text != text.strip():
            return ":code:`" + text.strip().replace("\\", "\\\\").replace("`", "\\`") + "`"
        return f"``{text}``"

    def symbol_name(self, ref: Ref) -> str:
        if ref.role:
            return f":{ref.role}:`{ref.display} <{ref.target}>`"
        return self.code(ref.display)

    def link(self, title: str, document: str) -> str:
        return f":doc:`{title} <{document}>`"

    def section_link(self, title: str, slug: str, ident: str) -> str:
        return f":ref:`{title} <rlmap_{slug}_{ident}>`"

    def term_link(self, text: str, term: str) -> str:
        return f":term:`{text} <{term}>`" if text.lower() != term.lower() else f":term:`{term}`"

    def external(self, title: str, url: str) -> str:
        return f"`{title} <{url}>`__"

    def table(self, headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
        if not rows:
            return "(none)\n"
        lines = [".. list-table::", "   :header-rows: 1", ""]
        for index, row in enumerate([list(headers), *[list(r) for r in rows]]):
            del index
            for column, cell in enumerate(row):
                marker = "* -" if column == 0 else "  -"
                text = str(cell).replace("\n", " ") or " "
                lines.append(f"   {marker} {text}")
        return "\n".join(lines) + "\n"

    def literal_block(self, text: str) -> str:
        return "::\n\n" + "\n".join(f"   {line}" for line in text.splitlines()) + "\n"

    def diagram(self, diagram: Diagram) -> str:
        return f".. graphviz:: {diagram.name}.dot\n"

    def toctree(self, documents: Sequence[str]) -> str:
        body = "\n".join(f"   {document}" for document in documents)
        return f".. toctree::\n   :maxdepth: 1\n   :hidden:\n\n{body}\n"  # the page lists them already


class MarkdownFormatter(Formatter):
    def heading(self, text: str, level: int = 1) -> str:
        return f"{'#' * level} {text}"

    def label(self, name: str) -> str:
        del name
        return ""

    def text(self, value: Any) -> str:
        """Plain prose from the code: one bounded line, Markdown/MyST markup and raw HTML neutralised."""
        return keep_literals(inline(value, MAX_TEXT), lambda part: re.sub(r"([\\`*_\[\]<>|{}&#!~])", r"\\\1", part))

    def code(self, text: str) -> str:
        text = inline(text, MAX_CODE)
        if not text.strip():
            return "(none)"
        longest = max((len(run) for run in re.findall("`+", text)), default=0)
        fence = "`" * (longest + 1)
        padding = " " if longest else ""
        return f"{fence}{padding}{text}{padding}{fence}"

    def symbol_name(self, ref: Ref) -> str:
        return self.code(ref.display)

    def link(self, title: str, document: str) -> str:
        return f"[{title}]({document}.md)"

    def section_link(self, title: str, slug: str, ident: str) -> str:
        del ident
        return f"[{title}]({slug}.md#{heading_anchor(title)})"

    def term_link(self, text: str, term: str) -> str:
        return f"[{text}](glossary.md#{heading_anchor(term)})"

    def external(self, title: str, url: str) -> str:
        return f"[{title}]({url})"

    def table(self, headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
        if not rows:
            return "(none)\n"

        def cell(value: Any) -> str:
            return str(value).replace("\n", " ").replace("|", "\\|") or " "

        lines = ["| " + " | ".join(cell(h) for h in headers) + " |", "|" + "---|" * len(headers)]
        lines.extend("| " + " | ".join(cell(value) for value in row) + " |" for row in rows)
        return "\n".join(lines) + "\n"

    def literal_block(self, text: str) -> str:
        return "```text\n" + text + "\n```\n"

    def diagram(self, diagram: Diagram) -> str:
        """A mermaid fence: GitHub draws it; MyST does with sphinxcontrib-mermaid and
        ``myst_fence_as_directive = ["mermaid"]`` (the conf.py lines the README gives)."""
        return "```mermaid\n" + diagram.mermaid + "```\n"

    def toctree(self, documents: Sequence[str]) -> str:
        """A MyST toctree fence, so that a MyST build includes every page (GitHub shows it as a short
        code block listing the pages)."""
        body = "".join(f"{document}\n" for document in documents)
        return "```{toctree}\n:maxdepth: 1\n:hidden:\n\n" + body + "```\n"  # the page lists them already


def heading_anchor(title: str) -> str:
    """The anchor GitHub (and MyST with ``myst_heading_anchors``) gives a Markdown heading."""
    return re.sub(r"[^a-z0-9 _-]", "", title.lower()).replace(" ", "-")


FORMATTERS: dict[str, type[Formatter]] = {"rst": RstFormatter, "md": MarkdownFormatter}


def _listed(names: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
