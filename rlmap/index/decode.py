"""Admission of one file: decode its bytes as Python does, parse it with ``ast``, refuse what is too deep.

Every refusal is a :class:`Skip` (the line and why), which the extraction driver turns into the
file's diagnostic.  Input comes from a possibly hostile branch, so the checks here run before
libcst ever sees the text: libcst's native parser crashes the process on a few thousand levels
of nesting and is quadratic in depth on chains (``a.b.c...``, ``a[0][0]...``).
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Callable

from rlmap.index import lines as L
from rlmap.terminal import clipped

# Deepest libcst tree indexed.  Real code stays far below it (torch's deepest module: 94,
# torchrl's: 27), so deeper files are skipped before libcst sees them.
MAX_NESTING = 500


class Skip(Exception):
    """This file cannot be indexed: ``line`` and why (the diagnostic's message)."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(message)
        self.line = line
        self.message = message


def _line_of(data: bytes, offset: int) -> int:
    """1-based line of byte ``offset``, counting ``\\n``, ``\\r\\n`` and ``\\r`` as Python does."""
    head = data[:offset]
    return head.count(b"\n") + head.count(b"\r") - head.count(b"\r\n") + 1


def _cookie_line(source: bytes) -> int:
    """The line (1 or 2) of a PEP 263 coding declaration."""
    return next((number for number, text in enumerate(source.splitlines()[:2], 1) if b"coding" in text), 1)


def _display_encoding(encoding: str) -> str:
    return "UTF-8" if encoding in ("utf-8", "utf-8-sig") else encoding


def _detect_encoding(source: bytes) -> str:
    """A UTF-8 BOM's or a PEP 263 cookie's encoding, else UTF-8; a bad cookie is a :class:`Skip`."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(source).readline)
    except SyntaxError as error:  # no cookie and line 1/2 not UTF-8, or a bad cookie
        try:
            source.decode("utf-8")
        except UnicodeDecodeError:
            return "utf-8"  # the decode that follows says where
        raise Skip(_cookie_line(source), f"bad encoding declaration ({_short(error.msg)}); file skipped") from None
    return encoding


def _short(reason: object) -> str:
    """A reason that quotes the file (an encoding name), bounded."""
    return clipped(str(reason), 160)


def decode_source(source: bytes) -> str:
    """The text of a source file, decoded as Python decodes it, with ``\\n`` newlines.

    The encoding comes from a UTF-8 BOM or a PEP 263 ``coding`` cookie on line 1 or 2,
    else UTF-8.  Raises :class:`Skip` for bytes Python would refuse.
    """
    encoding = _detect_encoding(source)
    try:
        text = source.decode(encoding)
    except UnicodeDecodeError as error:
        raise Skip(
            _line_of(source, error.start),
            f"not valid {_display_encoding(encoding)} ({error.reason}); file skipped",
        ) from None
    except LookupError as error:  # a codec that does not decode bytes to text (``rot13``)
        raise Skip(_cookie_line(source), f"bad encoding declaration ({_short(error)}); file skipped") from None
    except UnicodeError as error:  # a codec that fails in its own way (``punycode``, ``undefined``)
        raise Skip(
            _cookie_line(source), f"cannot be decoded as {_short(encoding)} ({_short(error)}); file skipped"
        ) from None
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")  # Python reads all three as newlines
    nul = text.find("\0")
    if nul != -1:
        raise Skip(text.count("\n", 0, nul) + 1, "NUL byte in the source (Python refuses it); file skipped")
    return text


# A dotted name, ``a.b .c``; linear: possessive repeats, and it starts only at a word's start.
_DOTTED = re.compile(r"(?<!\w)\w++(?:[ \t\f]*+\.[ \t\f]*+\w++)++")


def _long_dotted_import(text: str) -> tuple[int, int]:
    """``(line, dots)`` of an import whose dotted name has more than ``MAX_NESTING`` dots, else ``(0, 0)``.

    CPython's parser joins such a name one part at a time: quadratic (``import a.a.a...``
    100,000 parts long takes 30 s), so it is caught before ``ast.parse``.  Any dotted name on
    a line holding ``import`` counts: a chain that long is too deep as an expression too.
    """
    if text.count(".") <= MAX_NESTING:
        return 0, 0
    parts: list[str] = []
    first = 1
    for number, line in enumerate(text.split("\n"), 1):
        if not parts:
            first = number
        if line.endswith("\\"):  # a continuation line: ``import a.\\`` + ``b``
            parts.append(line[:-1])
            continue
        logical = "".join([*parts, line]) if parts else line
        parts = []
        if logical.count(".") <= MAX_NESTING or "import" not in logical:
            continue
        dots = max((match.group().count(".") for match in _DOTTED.finditer(logical)), default=0)
        if dots > MAX_NESTING:
            return first, dots
    return 0, 0


def _too_deep_for_ast(text: str) -> bool:
    try:
        ast.parse(text)  # warnings are off (extract_module)
    except (RecursionError, MemoryError):
        return True
    except (SyntaxError, ValueError):
        return False
    return False


def _deepest_line(text: str) -> int:
    """The first line at which the file becomes too deep for ``ast`` (a bisection on prefixes)."""
    lines = [line + "\n" for line in text.split("\n")]  # Python's lines (splitlines also cuts at \f)
    low, high = 0, len(lines)  # the prefix of ``high`` lines is too deep; of ``low`` lines is not
    while high - low > 1:
        middle = (low + high) // 2
        if _too_deep_for_ast("".join(lines[:middle])):
            high = middle
        else:
            low = middle
    return max(high, 1)


def too_deep(line: int, detail: str = "") -> Skip:
    return Skip(line, f"nesting too deep to index{detail}; file skipped")


def ast_index(text: str, path: str) -> tuple[dict[str, list[L.Position]], Callable[[], int], ast.Module]:
    """The ``ast`` positions of a decoded file (:func:`rlmap.index.lines.index_lines`), a
    function giving the line of its deepest nesting (read only when libcst recurses too deep,
    so only then computed), and the tree (the value-flow summary is read from it,
    :mod:`rlmap.index.summaries`).

    Raises :class:`Skip` for a syntax error, a dotted name or a nesting deeper than
    ``MAX_NESTING`` (found before parsing when it would make the parse itself quadratic).
    """
    line, dots = _long_dotted_import(text)
    if line:
        raise too_deep(line, f" ({dots} dots in a dotted name, limit {MAX_NESTING})")
    try:
        tree = ast.parse(text, filename=path)
    except SyntaxError as error:
        raise Skip(error.lineno or 1, f"syntax error: {error.msg}; file skipped") from None
    except (RecursionError, MemoryError):  # CPython's parser stops at ~3000 levels, or its stack
        raise too_deep(_deepest_line(text), " (deeper than Python's own parser allows)") from None
    source = text.encode("utf-8")
    positions, nesting = L.index_lines(tree, source, MAX_NESTING)
    if nesting is not None:
        raise too_deep(nesting.line, f" ({nesting.depth} levels, limit {MAX_NESTING})")
    return positions, lambda: L.index_ast(tree, source, MAX_NESTING)[1].line, tree
