"""Markdown pages parsed with markdown-it (CommonMark, tables) and MyST's syntax.

MyST roles (``{class}`Collector```, ``{ref}`label```), targets (``(label)=``), comments
(``% ...``), front matter, ``{currentmodule}`` and ``{eval-rst}`` blocks (read as rst) are
understood; a code span is a literal (a dotted name in one is checked like rst's ````a.b````),
never a role, so ```:ref:`x` ``` in a code span is text.  HTML blocks and comments, and code
fences other than Python, are never read for references.
"""

from __future__ import annotations

import re

from markdown_it import MarkdownIt
from markdown_it.rules_inline import StateInline
from markdown_it.token import Token
from mdit_py_plugins.front_matter import front_matter_plugin
from mdit_py_plugins.myst_blocks import myst_block_plugin

from rlmap.audit.locate import Locator
from rlmap.audit.pageparts import DOTTED, PYTHON_LANGUAGES, CodeBlock, PageParts, add_ref
from rlmap.audit.rstscan import bounded, parse_rst

MAX_NESTING = 8  # MyST directives inside directives, at most this deep
_ROLE_NAME = re.compile(r"\{([\w+:-]{1,64})\}(`+)")
_PARSERS: list[MarkdownIt] = []


def _myst_role(state: StateInline, silent: bool) -> bool:
    """``{name}`content```: MyST's role syntax, read in time linear in the paragraph.

    The search for the closing backticks remembers, per backtick count, the last place it found
    none, so a paragraph of unclosed roles is not re-scanned from each one.
    """
    source = state.src
    if source[state.pos] != "{":
        return False
    match = _ROLE_NAME.match(source, state.pos)
    if match is None:
        return False
    ticks = match.group(2)
    misses: dict[str, int] = state.env.setdefault("rlmap_role_misses", {}).setdefault(id(source), {})
    if misses.get(ticks, len(source) + 1) <= match.end():
        return False
    closing = source.find(ticks, match.end())
    while closing >= 0 and source.startswith("`", closing + len(ticks)):  # a longer run does not close it
        closing = source.find(ticks, closing + len(ticks) + 1)
    if closing < 0:
        misses[ticks] = match.end()
        return False
    if not silent:
        token = state.push("myst_role", "", 0)
        token.meta = {"name": match.group(1)}
        token.content = source[match.end() : closing].replace("\n", " ")
    state.pos = closing + len(ticks)
    return True


def _parser() -> MarkdownIt:
    if not _PARSERS:
        parser = MarkdownIt("commonmark", {"maxNesting": 40}).enable("table")
        parser.use(front_matter_plugin).use(myst_block_plugin)
        parser.inline.ruler.before("backticks", "myst_role", _myst_role)
        _PARSERS.append(parser)
    return _PARSERS[0]


def parse_markdown(text: str) -> PageParts:
    """The references, labels and code of one Markdown page."""
    parts = PageParts()
    source = bounded(text, parts)
    _Walk(parts, Locator(text), text.split("\n")).run(source, 0, 0)
    return parts


class _Walk:
    def __init__(self, parts: PageParts, locator: Locator, lines: list[str]) -> None:
        self.parts, self.locator, self.lines, self.module = parts, locator, lines, ""

    def run(self, text: str, shift: int, depth: int) -> None:
        """Read ``text`` (the page, or a directive's body starting ``shift`` lines into it)."""
        try:
            tokens = _parser().parse(text)
        except RecursionError:
            self.parts.skipped.append((shift + 1, "nested too deeply to parse; skipped"))
            return
        line = shift + 1
        for token in tokens:
            if token.map is not None:
                line = token.map[0] + shift + 1
            if token.type == "inline":
                self.inline(token.children or [], line)
            elif token.type == "myst_target":
                self.parts.labels.add(token.content.strip().lower())
            elif token.type == "fence":
                self.fence(token, line, shift, depth)
            elif token.type in ("code_block", "html_block", "myst_line_comment", "front_matter"):
                self.hide(token, shift)

    def hide(self, token: Token, shift: int) -> None:
        if token.map is not None:
            self.parts.hidden.update(range(token.map[0] + shift + 1, token.map[1] + shift + 1))

    def inline(self, children: list[Token], line: int) -> None:
        for child in children:
            if child.type == "myst_role":
                kind = str(child.meta.get("name", "")).lower().removeprefix("py:")
                raw = f"{{{child.meta.get('name', '')}}}`{child.content}`"
                self.add(kind, raw, child.content, line)
            elif child.type == "code_inline" and DOTTED.fullmatch(child.content):
                self.add("literal", f"{child.markup}{child.content}{child.markup}", child.content, line)

    def add(self, kind: str, raw: str, body: str, line: int) -> None:
        before = len(self.parts.refs)
        add_ref(self.parts, self.locator, kind, raw, body, self.module, line)
        if len(self.parts.refs) == before:  # written differently (more backticks, a space inside)
            add_ref(self.parts, self.locator, kind, body, body, self.module, line)

    def fence(self, token: Token, line: int, shift: int, depth: int) -> None:
        self.hide(token, shift)
        info = token.info.strip()
        first = line + 1  # the body starts below the opening fence
        if info.startswith("{") and "}" in info:
            name, _, argument = info[1:].partition("}")
            name = name.strip().lower().removeprefix("py:")
            argument = argument.strip()
            if name in ("currentmodule", "module"):
                self.module = "" if argument in ("", "None") else argument.split()[0]
            elif name == "eval-rst":
                self.embedded_rst(token.content, first)
            elif name in ("code-block", "code", "sourcecode", "code-cell", "ipython"):
                language = argument.split()[0].lower() if argument else "python"
                if language in PYTHON_LANGUAGES:
                    self.code(token.content, first)
            elif depth < MAX_NESTING and name not in ("mermaid", "math", "graphviz", "raw", "include", "toctree"):
                self.run(token.content, first - 1, depth + 1)
            return
        language = info.split()[0].lower() if info else ""
        if language in PYTHON_LANGUAGES or (not language and token.content.lstrip().startswith(">>>")):
            self.code(token.content, first)

    def embedded_rst(self, text: str, first: int) -> None:
        inner = parse_rst(text, first, self.module)
        self.parts.refs.extend(inner.refs)
        self.parts.labels |= inner.labels
        self.parts.code.extend(inner.code)
        self.parts.too_long.extend(inner.too_long)
        self.parts.skipped.extend(inner.skipped)

    def code(self, text: str, first: int) -> None:
        body = text.split("\n")
        page = self.lines[first - 1 : first - 1 + len(body)]
        indents = [len(line) - len(line.lstrip()) for line in page if line.strip()]
        self.parts.code.append(CodeBlock(text, first, (min(indents) if indents else 0) + 1, self.module))
