"""What a parsed docs page holds for the audit: references with exact places, labels, code examples.

Both page parsers (:mod:`~rlmap.audit.rstscan`, :mod:`~rlmap.audit.mdscan`) return a
:class:`PageParts`; :mod:`~rlmap.audit.docscan` turns it into :class:`~rlmap.audit.docscan.DocRef`
records.  Plain data: no parser node escapes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from rlmap.audit.locate import Locator, Place

# a reference's kind: a role name (class, meth, ...), "literal", "ref", "doc"
# code roles Sphinx's Python domain resolves (``py:`` prefix stripped)
CODE_ROLES = frozenset({"class", "meth", "func", "attr", "mod", "data", "obj", "exc", "const", "type"})
PYTHON_LANGUAGES = frozenset({"python", "py", "python3", "py3", "pycon", "ipython", "ipython3", "default"})
MAX_REF_CHARS = 1000
# a literal that names code: a dotted name, taken whole (possessive: linear on ``a.a.a...`` runs)
DOTTED = re.compile(r"[A-Za-z_](?=\w*\.)[\w.]*+(?<=\w)")


@dataclass(frozen=True, slots=True)
class PartRef:
    """A reference as written: kind, target, the current module, and where the target text is."""

    kind: str
    target: str
    module: str
    place: Place  # the whole reference (role or literal as written)
    span: tuple[int, int] | None  # offsets of the target text alone, when it can be edited


@dataclass(frozen=True, slots=True)
class CodeBlock:
    """Python code found in a page: a code block, a literal block that parses, or doctest lines."""

    code: str  # the Python source (doctest prompts removed)
    line: int  # the page line of the code's first line
    column: int  # the column (1-based) where each code line starts in the page
    module: str  # the current module where the block is
    doctest: bool = False


@dataclass(slots=True)
class PageParts:
    refs: list[PartRef] = field(default_factory=list)
    labels: set[str] = field(default_factory=set)
    code: list[CodeBlock] = field(default_factory=list)
    hidden: set[int] = field(default_factory=set)  # page lines that are comments or code: no anchors there
    too_long: list[int] = field(default_factory=list)  # lines of references too long to check
    skipped: list[tuple[int, str]] = field(default_factory=list)  # (line, why) of what the parser left out


def role_target(raw: str) -> tuple[str, int]:
    """The target of a role's text (``title <target>``, ``~a.b``, ``a.b()``) and where it starts in ``raw``."""
    text = raw.rstrip()
    start = len(raw) - len(raw.lstrip())
    text = text.strip()
    if text.endswith(">"):
        body = text[:-1]
        floor = body.rfind(">") + 1  # the target cannot hold '>'
        opening = body.rfind("<", floor)
        if opening == len(body) - 1:  # ``<>``: an earlier '<' may still leave a target
            opening = body.rfind("<", floor, opening)
        if opening >= 0:
            inner = body[opening + 1 :]
            skip = len(inner) - len(inner.lstrip())
            start += opening + 1 + skip
            text = inner.strip()
    lead = len(text) - len(text.lstrip("~!"))
    target = text[lead:]
    target = target[:-2] if target.endswith("()") else target
    return target, start + lead


def add_ref(parts: PageParts, locator: Locator, kind: str, raw: str, body: str, module: str, line: int) -> None:
    """Record a role or literal written as ``raw`` (found from ``line`` on) whose text is ``body``."""
    place = locator.find(raw, line)
    if place is None:
        return
    if kind in ("ref", "doc") or kind in CODE_ROLES:
        target, offset = role_target(body)
    else:
        target, offset = body, 0
    if len(target) > MAX_REF_CHARS:
        parts.too_long.append(place.line)
        return
    span = None
    head = raw.find(body) if body else -1
    if head >= 0 and target and raw[head + offset : head + offset + len(target)] == target:
        # the target's own text, when the page holds it exactly as written (not split over lines)
        start = place.start + head + offset
        if locator.text[start : start + len(target)] == target:
            span = (start, start + len(target))
    parts.refs.append(PartRef(kind, target.lower() if kind == "ref" else target, module, place, span))
