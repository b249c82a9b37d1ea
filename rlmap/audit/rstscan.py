"""reStructuredText pages parsed with docutils: roles, literals, labels, code, and what to skip.

Every role and every directive is handled here, whatever its name, and nothing a page says can
make the parse read a file or run code: the lookups docutils would make for a role or directive
are answered by :func:`_any_role` and :class:`_AnyDirective` while a page is parsed, so
``include``, ``raw``, ``literalinclude`` and ``csv-table :file:`` only record their text, and a
role or directive that plain docutils does not know (all of Sphinx's) neither fails nor prints.
Comments, literal blocks, ``code-block`` bodies and ``raw`` are never read for references; Python
code (a Python ``code-block``, a literal block that parses as Python, doctest lines) is kept for
the example rule.

Docs come from pull requests: the reporter is silent, and docutils' inline patterns that take
time quadratic in a paragraph (standalone URIs, ``name_`` references) are switched off; a line
longer than :data:`MAX_LINE_CHARS` or a paragraph longer than :data:`MAX_BLOCK_CHARS` is left out
of the parse with a diagnostic, and a page whose unmatched inline markup would take too long to
parse (:data:`MAX_INLINE_SCAN`) is skipped with one.
"""

from __future__ import annotations

import ast
import contextlib
import re
from collections.abc import Iterator
from typing import Any, ClassVar

from docutils import nodes, utils
from docutils.frontend import get_default_settings
from docutils.parsers.rst import Directive, Parser, directives, roles
from docutils.parsers.rst.states import Inliner, build_regexp

from rlmap.audit.locate import Locator
from rlmap.audit.pageparts import DOTTED, PYTHON_LANGUAGES, CodeBlock, PageParts, add_ref

MAX_LINE_CHARS = 10_000
MAX_BLOCK_CHARS = 150_000
# docutils' inline parser searches from each ``*`` or backquote for the string that would close it,
# to the end of its paragraph: a paragraph of unmatched ones takes time in the square of its length
# (38 kB: 6.7 s).  The characters those searches read are counted, and a page past this many
# is skipped with a diagnostic (a count of characters, not a clock: the same page is skipped
# whatever the machine; under a second).  TorchRL's pages and docstrings need 62,000 at most.
MAX_INLINE_SCAN = 20_000_000
# the inliner's patterns that search a paragraph's rest for an end-string
_END_PATTERNS = ("emphasis", "strong", "interpreted_or_phrase_ref", "literal", "target", "substitution_ref")
_MODULE_DIRECTIVES = frozenset({"currentmodule", "module"})
# directives whose body is code: their language (None: the argument names it)
_CODE_DIRECTIVES: dict[str, str | None] = {
    "code-block": None,
    "code": None,
    "sourcecode": None,
    "ipython": "python",
    "testcode": "python",
    "testsetup": "python",
    "testcleanup": "python",
    "doctest": "python",
    "jupyter-execute": "python",
}
# directives whose body is neither rst nor Python: never read
_OPAQUE_DIRECTIVES = frozenset(
    {
        "raw",
        "include",
        "literalinclude",
        "math",
        "graphviz",
        "digraph",
        "graph",
        "mermaid",
        "aafig",
        "productionlist",
        "testoutput",
        "highlight",
        "toctree",
        "autosummary",
        "automodule",
        "inheritance-diagram",
        "image",
        "figure",
        "csv-table",
    }
)


_AUTODOC_DIRECTIVES = frozenset(
    {"autoclass", "autoexception", "autofunction", "autodata", "automethod", "autoattribute", "autoproperty"}
)
_ENTRY = re.compile(r"[~!]?([A-Za-z_][\w.]*+)")


def _autodoc_entries(name: str, argument: str, line: int, content: Any, first: int) -> list[tuple[int, str]]:
    """(line, name) of the objects an ``autosummary`` lists or an ``autoclass``-like directive names."""
    if name in _AUTODOC_DIRECTIVES:
        match = _ENTRY.match(argument.strip())
        return [(line, match.group(1))] if match else []
    if name != "autosummary":
        return []
    entries = []
    for offset, text in enumerate(content):
        stripped = text.strip()
        if stripped and not stripped.startswith(":"):
            match = _ENTRY.match(stripped)
            if match:
                entries.append((first + offset, match.group(1)))
    return entries


class _Role(nodes.Inline, nodes.TextElement):
    """A role of any name, as written."""


class _Module(nodes.Element):
    """``.. currentmodule::`` / ``.. module::`` / ``.. automodule::``: the module names after it are relative to."""


class _Code(nodes.Element):
    """A code directive's body (not parsed as rst)."""


class _Opaque(nodes.Element):
    """A directive whose body is not read."""


def _any_role(
    name: str,
    rawtext: str,
    text: str,
    lineno: int,
    *_: Any,
    **__: Any,
) -> tuple[list[nodes.Node], list[nodes.system_message]]:
    node = _Role(rawtext, utils.unescape(text))
    node["role"] = name.lower()
    node["lineno"] = lineno
    node["body"] = utils.unescape(text, restore_backslashes=True)
    return [node], []


class _AnyOptions(dict[str, Any]):
    """Every option name is accepted, its value kept as text."""

    def __missing__(self, key: str) -> Any:
        return directives.unchanged


class _AnyDirective(Directive):
    """Every directive: its body parsed as rst, kept as code, or skipped, by its name."""

    has_content = True
    optional_arguments = 1
    final_argument_whitespace = True
    option_spec: ClassVar[dict[str, Any]] = _AnyOptions()

    def run(self) -> list[nodes.Node]:
        name = self.name.lower().removeprefix("py:")
        first = self.content_offset + 1  # the page line of the body's first line
        argument = self.arguments[0] if self.arguments else ""
        if name in _MODULE_DIRECTIVES:
            node = _Module()
            node["module"] = "" if argument.strip() in ("", "None") else argument.split()[0]
            return [node]
        if name in _CODE_DIRECTIVES:
            code = _Code()
            code["language"] = _CODE_DIRECTIVES[name] or (argument.split()[0].lower() if argument else "default")
            code["first"], code["last"], code["text"] = first, first + len(self.content) - 1, "\n".join(self.content)
            return [code]
        if name in _OPAQUE_DIRECTIVES or name in _AUTODOC_DIRECTIVES:
            opaque = _Opaque()
            opaque["first"], opaque["last"] = first, first + len(self.content) - 1
            opaque["entries"] = _autodoc_entries(name, argument, self.lineno, self.content, first)
            if name == "automodule" and argument.strip():  # autodoc's ``py:module``: names after it are relative to it
                module = _Module()
                module["module"] = argument.split()[0]
                return [module, opaque]
            return [opaque]
        container = nodes.container()
        if argument and not name.startswith("auto"):
            inline, _ = self.state.inline_text(argument, self.lineno)
            container += nodes.paragraph("", "", *inline)
        if self.content:
            self.state.nested_parse(self.content, self.content_offset, container)
        return [container]


def _inliner() -> Inliner:
    """docutils' inline parser without the patterns that are quadratic on hostile paragraphs.

    Standalone URIs and ``name_`` / footnote references are not references to code, and their
    patterns re-scan a run like ``path.py:path.py:...`` from every delimiter; role names are
    bounded (``:py:class:`` has at most two parts).
    """
    inliner = Inliner()

    def customize(settings: Any) -> None:
        Inliner.init_customizations(inliner, settings)
        inliner.implicit_dispatch = []
        name, prefix, suffix, parts = inliner.parts
        never = ("whole", "", "", [r"(?P<refname>(?!))(?P<refend>(?!))", r"(?P<fnend>(?!))"])
        role = r"(?P<role>(:[^\W_][\w.+-]{0,63}+(?::[^\W_][\w.+-]{0,63}+)?+:)?)"
        kept = [
            never if part[0] == "whole" else ("backquote", role, part[2], part[3]) if part[0] == "backquote" else part
            for part in parts
        ]
        inliner.patterns.initial = build_regexp((name, prefix, suffix, kept))
        budget = [MAX_INLINE_SCAN]  # (one page's: an inliner parses one page)
        for pattern in _END_PATTERNS:
            setattr(inliner.patterns, pattern, _Metered(getattr(inliner.patterns, pattern), budget))

    inliner.init_customizations = customize  # type: ignore[method-assign]
    return inliner


class _TooCostly(Exception):
    """A page's inline markup has made the end-string searches read more than :data:`MAX_INLINE_SCAN`."""


class _Metered:
    """An end-string pattern whose searches count what they are handed against a page's budget."""

    __slots__ = ("_budget", "_pattern")

    def __init__(self, pattern: re.Pattern[str], budget: list[int]) -> None:
        self._pattern, self._budget = pattern, budget

    def search(self, string: str, *args: Any) -> re.Match[str] | None:
        found = self._pattern.search(string, *args)
        self._budget[0] -= found.end() if found is not None else len(string)  # (what the search read)
        if self._budget[0] < 0:
            raise _TooCostly
        return found

    def __getattr__(self, name: str) -> Any:
        return getattr(self._pattern, name)


_SETTINGS: list[Any] = []


def _settings() -> Any:
    if not _SETTINGS:
        settings = get_default_settings(Parser)
        settings.report_level = 5
        settings.halt_level = 5
        settings.warning_stream = False
        settings.file_insertion_enabled = False
        settings.raw_enabled = False
        settings.line_length_limit = MAX_LINE_CHARS + 1
        settings.character_level_inline_markup = False
        settings.pep_references = False
        settings.rfc_references = False
        _SETTINGS.append(settings)
    return _SETTINGS[0]


@contextlib.contextmanager
def _every_role_and_directive() -> Iterator[None]:
    """docutils looks roles and directives up through two module functions: answer both, then restore."""
    saved_role, saved_directive = roles.role, directives.directive
    roles.role = lambda *_, **__: (_any_role, [])  # type: ignore[assignment]
    directives.directive = lambda *_, **__: (_AnyDirective, [])  # type: ignore[assignment]
    try:
        yield
    finally:
        roles.role, directives.directive = saved_role, saved_directive


def bounded(text: str, parts: PageParts) -> str:
    """The page with over-long lines and paragraphs blanked (line numbers kept)."""
    lines = text.split("\n")
    block_start, block_chars = 0, 0
    for number, given in enumerate(lines):
        line = given
        if len(line) > MAX_LINE_CHARS:
            parts.skipped.append((number + 1, f"a line of {len(line)} characters (over {MAX_LINE_CHARS}) not parsed"))
            lines[number] = line = ""
        if not line.strip():
            block_start, block_chars = number + 1, 0
            continue
        block_chars += len(line)
        if block_chars > MAX_BLOCK_CHARS:
            parts.skipped.append(
                (block_start + 1, f"a paragraph over {MAX_BLOCK_CHARS} characters without a blank line not parsed")
            )
            for index in range(block_start, number + 1):
                lines[index] = ""
            block_start, block_chars = number + 1, 0
    return "\n".join(lines)


def parse_rst(text: str, first_line: int = 1, module: str = "") -> PageParts:
    """The references, labels and code of one rst page (or of rst embedded at ``first_line``)."""
    parts = PageParts()
    document = utils.new_document("page.rst", _settings())
    source = bounded(text, parts)
    with _every_role_and_directive():
        try:
            Parser(inliner=_inliner()).parse(source, document)
        except (RecursionError, MemoryError):
            parts.skipped.append((1, "nested too deeply to parse; page skipped"))
            return parts
        except _TooCostly:
            parts.skipped.append(
                (
                    1,
                    f"inline markup whose end-strings take over {MAX_INLINE_SCAN:,} characters to find; page skipped",
                )
            )
            return parts
    _Walk(parts, Locator(text), text.split("\n"), first_line - 1, module).run(document)
    return parts


class _Walk:
    """One pass over a parsed page in document order, tracking the current module."""

    def __init__(self, parts: PageParts, locator: Locator, lines: list[str], shift: int, module: str) -> None:
        self.parts, self.locator, self.lines, self.shift, self.module = parts, locator, lines, shift, module

    def run(self, document: nodes.document) -> None:
        stack: list[nodes.Node] = [document]
        while stack:
            node = stack.pop()
            if self.visit(node):
                stack.extend(reversed(node.children))

    def hide(self, first: int, last: int) -> None:
        self.parts.hidden.update(range(first + self.shift, last + self.shift + 1))

    def visit(self, node: nodes.Node) -> bool:
        """Record what ``node`` holds; whether its children are read."""
        if isinstance(node, _Module):
            self.module = node["module"]
        elif isinstance(node, _Role):
            kind = node["role"].removeprefix("py:")
            add_ref(self.parts, self.locator, kind, node.rawsource, node["body"], self.module, node["lineno"])
            self.shifted()
        elif isinstance(node, nodes.literal):
            body = node.astext()
            if DOTTED.fullmatch(body):
                add_ref(self.parts, self.locator, "literal", node.rawsource, body, self.module, _line(node))
                self.shifted()
        elif isinstance(node, nodes.target) and not node.get("refuri"):
            self.parts.labels.update(name.lower() for name in node.get("names", ()))
        elif isinstance(node, nodes.comment):
            end = (node.line or 2) - 1
            self.hide(end - node.rawsource.count("\n"), end)
        elif isinstance(node, nodes.literal_block | nodes.doctest_block):
            self.code_block(node)
        elif isinstance(node, _Code):
            self.hide(node["first"], node["last"])
            if node["language"] in PYTHON_LANGUAGES or node["text"].lstrip().startswith(">>>"):
                self.add_code(node["text"], node["first"], node["last"])
        elif isinstance(node, _Opaque):
            self.hide(node["first"], node["last"])
            for line, entry in node["entries"]:
                add_ref(self.parts, self.locator, "autodoc", entry, entry, self.module, line)
                self.shifted()
        else:
            return not isinstance(node, nodes.raw | nodes.system_message)
        return False

    def shifted(self) -> None:
        """Move the last reference to the page's own lines (rst embedded in Markdown)."""
        if self.shift and self.parts.refs:
            last = self.parts.refs[-1]
            place = type(last.place)(last.place.line + self.shift, last.place.column, -1, -1)
            self.parts.refs[-1] = type(last)(last.kind, last.target, last.module, place, None)

    def code_block(self, node: nodes.Element) -> None:
        first = node.line or 1
        last = first + node.rawsource.count("\n")
        self.hide(first, last)
        text = node.astext()
        if isinstance(node, nodes.doctest_block) or text.lstrip().startswith(">>>"):
            self.add_code(text, first, last)
            return
        try:
            ast.parse(text)  # parsed, never run
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            return
        self.add_code(text, first, last)

    def add_code(self, text: str, first: int, last: int) -> None:
        page = self.lines[first - 1 : last]
        indents = [len(line) - len(line.lstrip()) for line in page if line.strip()]
        column = (min(indents) if indents else 0) + 1
        self.parts.code.append(CodeBlock(text, first + self.shift, column, self.module))


def _line(node: nodes.Node) -> int:
    """The line of the nearest enclosing node that knows it (a title's is its underline: one back)."""
    current: nodes.Node | None = node
    while current is not None:
        line = getattr(current, "line", None)
        if line:
            return max(1, line - 1)
        current = current.parent
    return 1
