"""Parsed docs pages cached by content: a warm audit parses only the pages and docstrings that changed.

docutils is most of an audit's time once the model is cached.  What a parse yields
(:class:`~rlmap.audit.pageparts.PageParts`: references with places, labels, code blocks) is plain
data, stored in rlmap's cache (:mod:`rlmap.index.cache`: MessagePack checked by a SHA-256, decoded
into these exact types, never unpickled) under a key of the page's text, how it is parsed, the
code of the parsers and the releases of the libraries they use (docutils, markdown-it), so a
changed parser never serves an old parse.
"""

from __future__ import annotations

from rlmap.audit.mdscan import parse_markdown
from rlmap.audit.pageparts import PageParts
from rlmap.audit.rstscan import parse_rst
from rlmap.index.cache import DOCS_PARSERS, Cache, code_version, content_key, docs_parsers_identity

NAMESPACE = "docs"
# the modules a page's parts depend on (a test checks that every audit module they import is listed)
PARSER_MODULES = ("audit.pageparts", "audit.locate", "audit.rstscan", "audit.mdscan")
# the libraries that parse the pages: a release of theirs may read a page otherwise
PARSER_LIBRARIES = DOCS_PARSERS
_PARSERS = f"{code_version(*PARSER_MODULES)} {docs_parsers_identity()}"


def parse_page(text: str, markdown: bool, cache: Cache | None, first_line: int = 1, module: str = "") -> PageParts:
    """``parse_markdown(text)`` or ``parse_rst(text, first_line, module)``, from ``cache`` when it has it."""
    if cache is None or cache.directory is None:
        return _parse(text, markdown, first_line, module)
    key = content_key(_PARSERS, "md" if markdown else "rst", str(first_line), module, text)
    parts = cache.get(NAMESPACE, key, PageParts)
    if parts is None:
        parts = _parse(text, markdown, first_line, module)
        cache.put(NAMESPACE, key, parts)
    return parts


def _parse(text: str, markdown: bool, first_line: int, module: str) -> PageParts:
    return parse_markdown(text) if markdown else parse_rst(text, first_line, module)
