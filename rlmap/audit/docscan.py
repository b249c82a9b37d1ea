"""Scan documentation (rst and Markdown) for references to code, labels, documents and lines.

Plain data out: every :class:`DocRef` carries the file, line, kind, the raw text and the
context Sphinx would use to resolve it (the current module).  Nothing here knows the code.

Docs come from pull requests, so every input is bounded and every skip is a diagnostic:

- a file larger than :data:`MAX_DOC_BYTES` (4 MiB; TorchRL's largest page is 37 kB) is skipped;
- so is anything that is not a regular file (a FIFO, a device) and a symlink that leads out of
  the report root;
- a reference longer than :data:`MAX_REF_CHARS` is not checked (no Python name is that long);
- every pattern runs in time linear in the line (no nested quantifiers that can backtrack;
  possessive quantifiers and look-behinds where a token must be taken whole).

Paths in findings are relative to one root, :func:`report_root`: the repository holding the
docs, independent of the directory rlmap runs in.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from rlmap.audit.examples import example_names
from rlmap.audit.pagecache import parse_page
from rlmap.audit.pageparts import MAX_REF_CHARS, CodeBlock
from rlmap.index.cache import Cache
from rlmap.index.indexer import Progress
from rlmap.index.records import Diagnostic
from rlmap.pages.docstree import MAX_DOC_BYTES, DocsReader, DocsTree, scan_rst, unread_doc
from rlmap.readfile import read_regular, walk_files
from rlmap.terminal import has_control

ROOT_MARKERS = (".git", "pyproject.toml")

# A path starts where a run of path characters starts: without the look-behind every position
# of a long run would be a start, each scanning to the run's end.
LINE_ANCHOR = re.compile(r"(?<![\w./-])(?P<path>[\w./-]*\w\.py)(?:(?::|#L)(?P<line>\d+)|\s+L(?P<lline>\d+)\b)")
_URL = re.compile(r"https?://[^\s>)]+")  # a permalink's ``#L123`` is the link, not an anchor
REPO_PATH = re.compile(
    r"(?<![\w/.-])((?:examples|test|tests|benchmarks|sota-implementations|tutorials)/[\w./-]+\.py)\b"
)
_WORD = re.compile(r"[A-Za-z_]\w+")
_GALLERY_LABEL = re.compile(r"\.\. _([^:`\s]+):")


@dataclass(frozen=True, slots=True)
class DocRef:
    path: str  # as shown in findings
    line: int
    kind: str  # role name, "literal", "ref", "doc", "anchor", "path", "example"
    text: str  # the target as written (title stripped for roles); examples: the full dotted path meant
    module: str = ""  # the current module when the reference was made
    beside: str = ""  # anchors: the name written next to the line number, if any
    anchor_line: int = 0  # anchors: the line number
    column: int = 0  # 1-based column where the reference starts (0: unknown)
    span: tuple[int, int] | None = None  # offsets of the target's text in the page, when it can be edited
    written: str = ""  # examples: the dotted text as written (``envs.GymEnv``)
    is_import: bool = False  # examples: written in an import statement
    docstring_line: int = 0  # in a docstring: the source line where its string literal starts
    clause: str = ""  # examples: ``m import Name`` of a one-name ``from`` import (see ExampleName)
    clause_span: tuple[int, int] | None = None  # its offsets in the page, when it can be edited
    aliased: bool = False  # examples: ``from m import Name as other``


@dataclass(frozen=True, slots=True)
class DocsScan:
    refs: tuple[DocRef, ...]
    labels: frozenset[str]
    documents: frozenset[str]  # document names relative to each docs root, without suffix
    text_names: frozenset[str]  # every identifier-like word seen in the docs (for orphan checks)
    diagnostics: tuple[Diagnostic, ...]
    # the Python objects the docs document (autodoc, autosummary, objects.inv); None when they document none
    tree: DocsTree | None = None


_DEF_AFTER = re.compile(r"\s*+(?:(?:->|:|-)\s*+)?(?:def|class)\s+(\w+)")
_DEF_BEFORE = re.compile(r"(?:def|class)\s+(\w+)\s*$")
# rst: ``literal`` (single backticks may be inside), :code:`with \`escaped\` backticks`, or
# :role:`Name <target>`; md: a code span, its fence longer than any run of backticks inside
_RST_NAMES = re.compile(r"``((?:[^`]|`(?!`))+)``|:code:`((?:\\.|[^`\\])*)`|:\w+:`([^`<]+?)(?: <[^>]+>)?`")
_MD_NAMES = re.compile(r"(?<!`)(?:``` ?((?:[^`]|`{1,2}(?!`))+?) ?```|`` ?((?:[^`]|`(?!`))+?) ?``|`([^`]+)`)(?!`)")
_ESCAPED = re.compile(r"\\(.)")
_NAME_SPLIT = re.compile(r"[.(\[ ]")


def _beside(text: str, start: int, end: int, is_rst: bool) -> str:
    """The code name written next to a line anchor: ``def name``, or the literal or role before it.

    Only a fixed window on either side is read, so each anchor costs the same on any line.
    """
    after = text[end : end + 80]
    match = _DEF_AFTER.match(after)
    if match:
        return match.group(1)
    head = text[max(0, start - 200) : start]
    if is_rst:
        names = [literal or _ESCAPED.sub(r"\1", code) or role for literal, code, role in _RST_NAMES.findall(head)]
    else:
        names = [three or two or one for three, two, one in _MD_NAMES.findall(head)]
    if names:
        return _NAME_SPLIT.split(names[-1].lstrip("~").rstrip("().,:;"))[-1]
    match = _DEF_BEFORE.search(head)
    return match.group(1) if match else ""


def read_bounded(path: Path, shown: str, limit: int = MAX_DOC_BYTES) -> tuple[bytes | None, Diagnostic | None]:
    """The bytes of a regular file of at most ``limit`` bytes, or why it is skipped
    (:func:`rlmap.readfile.read_regular`: never a FIFO or a device)."""
    found = read_regular(path, limit)
    if isinstance(found, bytes):
        return found, None
    return None, Diagnostic(shown, 1, unread_doc(found, limit))


def scan_file(
    path: Path, shown: str, documented: DocsReader | None = None, document: str = "", cache: Cache | None = None
) -> tuple[list[DocRef], set[str], set[str], list[Diagnostic]]:
    """The references, labels and words of one page; an rst page's autodoc entries go to ``documented``;
    the parse comes from ``cache`` when the page is unchanged."""
    data, problem = read_bounded(path, shown)
    if data is None:
        return [], set(), set(), [problem] if problem is not None else []
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        return [], set(), set(), [Diagnostic(shown, 1, f"not valid UTF-8 ({error.reason}); file skipped")]
    is_rst = path.suffix == ".rst"
    if is_rst and documented is not None:
        scan_rst(text, documented, document)
    parts = parse_page(text, not is_rst, cache)
    refs = [
        DocRef(shown, ref.place.line, ref.kind, ref.target, ref.module, column=ref.place.column, span=ref.span)
        for ref in parts.refs
    ]
    lines = text.split("\n")
    refs.extend(example_refs(shown, lines, parts.code))
    for number, line in enumerate(lines, start=1):
        if number in parts.hidden:
            continue
        for kind, target, beside, anchor_line in _line_references(line, is_rst):
            if len(target) > MAX_REF_CHARS:
                parts.too_long.append(number)
            else:
                refs.append(DocRef(shown, number, kind, target, "", beside, anchor_line))
    problems = [Diagnostic(shown, line, why) for line, why in parts.skipped]
    if parts.too_long:
        problems.append(
            Diagnostic(
                shown,
                min(parts.too_long),
                f"{len(parts.too_long)} reference(s) longer than {MAX_REF_CHARS} characters not checked "
                "(no code name is that long)",
            )
        )
    return refs, parts.labels, set(_WORD.findall(text)), problems


def example_refs(shown: str, lines: list[str], code: list[CodeBlock]) -> list[DocRef]:
    """The package names the page's Python examples use, each with the span of its text when exact."""
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)

    def span(line: int, column: int, text: str) -> tuple[int, int] | None:
        """The page offsets of ``text`` at ``line``/``column`` (1-based), when it is written there."""
        if not text or not 0 < line <= len(lines) or lines[line - 1][column - 1 : column - 1 + len(text)] != text:
            return None
        return starts[line - 1] + column - 1, starts[line - 1] + column - 1 + len(text)

    return [
        DocRef(
            shown,
            name.line,
            "example",
            name.dotted,
            column=name.column,
            span=span(name.line, name.column, name.written),
            written=name.written,
            is_import=name.is_import,
            clause=name.clause,
            clause_span=span(name.line, name.clause_column, name.clause),
            aliased=name.aliased,
        )
        for name in example_names(code)
    ]


def _line_references(line: str, is_rst: bool) -> Iterator[tuple[str, str, str, int]]:
    """(kind, target, name beside, line number) of every line anchor and repository path on one line."""
    # line anchors inside URLs (a permalink's ``#L123``) are the link, not a second reference
    visible = _URL.sub(lambda url: " " * len(url.group()), line)
    for match in LINE_ANCHOR.finditer(visible):
        digits = match.group("line") or match.group("lline")
        if len(digits) > 9:  # no file has a billion lines; int() of 5,000 digits raises
            continue
        yield "anchor", match.group("path"), _beside(visible, match.start(), match.end(), is_rst), int(digits)
    for match in REPO_PATH.finditer(line):
        yield "path", match.group(1), "", 0


def report_root(roots: list[Path]) -> Path:
    """The directory every path in a report is relative to: the repository holding the docs.

    The nearest directory at or above the deepest common ancestor of ``roots`` that holds
    ``.git`` or ``pyproject.toml``; without one, that common ancestor.  It depends only on
    where the docs are, never on the directory rlmap runs in, so reports and baselines written
    from anywhere agree.
    """
    resolved = [root.resolve() for root in roots] or [Path.cwd().resolve()]
    folders = [path if path.is_dir() else path.parent for path in resolved]
    common = Path(os.path.commonpath([str(folder) for folder in folders]))
    for candidate in (common, *common.parents):
        if any(os.path.lexists(candidate / marker) for marker in ROOT_MARKERS):
            return candidate
    return common


DOCS_SUFFIXES = (".rst", ".md")  # the pages read under a docs directory


def defines_gallery_label(script: Path) -> bool:
    """Whether a ``.py`` file under a docs directory defines a label (a sphinx-gallery tutorial);
    read as the scan reads it (within the size bound, unreadable: no)."""
    data, _ = read_bounded(script, script.name)
    return data is not None and _GALLERY_LABEL.search(data.decode("utf-8", errors="replace")) is not None


def scan_docs(
    roots: list[Path], display_root: Path, cache: Cache | None = None, progress: Progress | None = None
) -> DocsScan:
    """Every ``.rst`` and ``.md`` file under ``roots`` (files may be given directly), each page's
    parse taken from ``cache`` when it is unchanged; ``progress`` is told ("read", pages read,
    pages found) as it goes.

    Paths are shown relative to ``display_root`` (see :func:`report_root`); a file whose real
    location is outside it (a symlink out of the repository) is skipped with a diagnostic.
    """
    refs: list[DocRef] = []
    labels: set[str] = set()
    documents: set[str] = set()
    words: set[str] = set()
    diagnostics: list[Diagnostic] = []
    documented = DocsReader()
    display_root = display_root.resolve()
    pages: list[tuple[Path, list[Path]]] = []  # (the folder pages are named from, its pages)
    for given in roots:
        root = given.resolve()
        if root.is_file() and root.name.endswith(".inv"):  # a built Sphinx inventory: what it documents
            documented.inventory(root)
            continue
        if root.is_dir():
            # the pages, and sphinx-gallery tutorials, which define labels in their .py sources
            listed, unlisted = walk_files(root, lambda name: name.endswith((".py", *DOCS_SUFFIXES)))
            for folder, why in unlisted:
                diagnostics.append(Diagnostic(_display(folder, display_root), 1, f"{why}; skipped"))
            for script in (path for path in listed if path.suffix == ".py"):
                shown = _display(script, display_root)
                data, problem = _read_inside(script, shown, display_root)
                if data is None:
                    diagnostics.extend([problem] if problem is not None else [])
                    continue
                text = data.decode("utf-8", errors="replace")
                labels |= {m.lower() for m in _GALLERY_LABEL.findall(text)}
            pages.append((root, [path for path in listed if path.suffix in DOCS_SUFFIXES]))
        else:
            pages.append((root.parent, [root]))
    total, read = sum(len(files) for _, files in pages), 0
    for base, files in pages:
        for path in files:
            read += 1
            if progress is not None:
                progress("read", read, total)
            if path.is_dir():
                continue
            shown = _display(path, display_root)
            if has_control(shown):  # the name would reach reports, --diff headers and CI logs
                diagnostics.append(Diagnostic(shown, 1, "name holds a control character; file skipped"))
                continue
            document = path.relative_to(base).with_suffix("").as_posix()
            documents.add(document)
            escaped = _outside(path, display_root)
            if escaped is not None:
                diagnostics.append(Diagnostic(shown, 1, escaped))
                continue
            found, found_labels, found_words, problems = scan_file(path, shown, documented, document, cache)
            refs.extend(found)
            labels |= found_labels
            words |= found_words
            diagnostics.extend(problems)
    tree = documented.tree()
    diagnostics.extend(tree.diagnostics)
    return DocsScan(
        tuple(refs),
        frozenset(labels),
        frozenset(documents),
        frozenset(words),
        tuple(diagnostics),
        tree if tree.objects else None,
    )


def _read_inside(path: Path, shown: str, display_root: Path) -> tuple[bytes | None, Diagnostic | None]:
    escaped = _outside(path, display_root)
    if escaped is not None:
        return None, Diagnostic(shown, 1, escaped)
    return read_bounded(path, shown)


def _outside(path: Path, display_root: Path) -> str | None:
    """Why ``path`` must not be read: it is a symlink whose target is outside ``display_root``."""
    if not path.is_symlink():
        return None
    try:
        path.resolve().relative_to(display_root)
    except (ValueError, OSError, RuntimeError):
        return f"a symlink out of {display_root.name or display_root}/ (the report root); file skipped"
    return None


def _display(path: Path, display_root: Path) -> str:
    """``path`` relative to the report root, ``/``-separated: findings never show absolute paths."""
    shown = Path(os.path.relpath(path, display_root)).as_posix()
    return printable_path(shown)


def printable_path(path: str) -> str:
    """A path that any output can hold: undecodable bytes of a file name shown as ``\\xff``."""
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
