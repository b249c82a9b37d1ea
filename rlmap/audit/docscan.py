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
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from rlmap.index.records import Diagnostic
from rlmap.pages.docstree import DocsReader, DocsTree, scan_rst

MAX_DOC_BYTES = 4 * 1024 * 1024
MAX_REF_CHARS = 1000
ROOT_MARKERS = (".git", "pyproject.toml")

ROLE = re.compile(r":(?:py:)?(class|meth|func|attr|mod|data|obj|exc):`([^`]+)`")
REF = re.compile(r":ref:`([^`]+)`")
DOC = re.compile(r":doc:`([^`]+)`")
LABEL = re.compile(r"^\.\. _([^:]+):\s*$")
CURRENT_MODULE = re.compile(r"^\.\. (?:py:)?(?:currentmodule|module)::\s*(\S+)")
# A dotted name: taken whole (possessive), then checked to hold a dot and to end in a word
# character; ``[\w.]*\.[\w.]*\w`` would try every split of a long ``a.a.a...`` run.
RST_LITERAL = re.compile(r"``([A-Za-z_](?=\w*\.)[\w.]*+)(?<=\w)``")
MD_LITERAL = re.compile(r"(?<!`)`([A-Za-z_](?=\w*\.)[\w.]*+)(?<=\w)`(?!`)")
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
    kind: str  # role name, "literal", "ref", "doc", "anchor", "path"
    text: str  # the target as written (title stripped for roles)
    module: str = ""  # the current module when the reference was made
    beside: str = ""  # anchors: the name written next to the line number, if any
    anchor_line: int = 0  # anchors: the line number


@dataclass(frozen=True, slots=True)
class DocsScan:
    refs: tuple[DocRef, ...]
    labels: frozenset[str]
    documents: frozenset[str]  # document names relative to each docs root, without suffix
    text_names: frozenset[str]  # every identifier-like word seen in the docs (for orphan checks)
    diagnostics: tuple[Diagnostic, ...]
    # the Python objects the docs document (autodoc, autosummary, objects.inv); None when they document none
    tree: DocsTree | None = None


def _role_target(raw: str) -> str:
    target = _explicit_target(raw.strip())
    return target.lstrip("~!").rstrip("()")


def _explicit_target(text: str) -> str:
    """``title <target>`` -> ``target`` (the last ``<`` that leaves a non-empty target); else ``text``.

    What ``^.*<([^>]+)>$`` matches, without that pattern's quadratic backtracking on ``<<<<...``.
    """
    if not text.endswith(">"):
        return text
    body = text[:-1]
    start = body.rfind(">") + 1  # the target cannot hold '>'
    opening = body.rfind("<", start)
    if opening == len(body) - 1:  # ``<>``: an earlier '<' may still leave a target
        opening = body.rfind("<", start, opening)
    if opening < 0:
        return text
    return body[opening + 1 :].strip()


_DEF_AFTER = re.compile(r"\s*+(?:(?:->|:|-)\s*+)?(?:def|class)\s+(\w+)")
_DEF_BEFORE = re.compile(r"(?:def|class)\s+(\w+)\s*$")
_RST_NAMES = re.compile(r"``([^`]+)``|:\w+:`([^`<]+?)(?: <[^>]+>)?`")
_MD_NAMES = re.compile(r"(?<!`)`([^`]+)`(?!`)")
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
    names = [a or b for a, b in _RST_NAMES.findall(head)] if is_rst else _MD_NAMES.findall(head)
    if names:
        return _NAME_SPLIT.split(names[-1].lstrip("~").rstrip("()"))[-1]
    match = _DEF_BEFORE.search(head)
    return match.group(1) if match else ""


def read_bounded(path: Path, shown: str, limit: int = MAX_DOC_BYTES) -> tuple[bytes | None, Diagnostic | None]:
    """The bytes of a regular file of at most ``limit`` bytes, or why it is skipped.

    Never blocks on a FIFO or reads a device: the file is opened non-blocking and must be a
    regular file once open; at most ``limit + 1`` bytes are read.
    """
    try:
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as error:
        return None, Diagnostic(shown, 1, f"cannot read file: {error.strerror}; file skipped")
    info = os.fstat(descriptor)
    if not stat.S_ISREG(info.st_mode):
        os.close(descriptor)
        return None, Diagnostic(shown, 1, "not a regular file; skipped")
    with os.fdopen(descriptor, "rb") as handle:
        if info.st_size > limit:
            return None, Diagnostic(shown, 1, _too_large(info.st_size, limit))
        try:
            data = handle.read(limit + 1)
        except OSError as error:
            return None, Diagnostic(shown, 1, f"cannot read file: {error.strerror}; file skipped")
    if len(data) > limit:
        return None, Diagnostic(shown, 1, _too_large(len(data), limit))
    return data, None


def _too_large(size: int, limit: int) -> str:
    return (
        f"{size} bytes, over the {limit // (1024 * 1024)} MiB limit for a docs file; file skipped "
        "(split it, or leave it out of --docs)"
    )


def scan_file(
    path: Path, shown: str, documented: DocsReader | None = None, document: str = ""
) -> tuple[list[DocRef], set[str], set[str], Diagnostic | None]:
    """The references, labels and words of one page; an rst page's autodoc entries go to ``documented``."""
    data, problem = read_bounded(path, shown)
    if data is None:
        return [], set(), set(), problem
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        return [], set(), set(), Diagnostic(shown, 1, f"not valid UTF-8 ({error.reason}); file skipped")
    is_rst = path.suffix == ".rst"
    if is_rst and documented is not None:
        scan_rst(text, documented, document)
    refs: list[DocRef] = []
    labels: set[str] = set()
    module = ""
    in_code = False
    too_long: list[int] = []

    for number, line in enumerate(text.split("\n"), start=1):
        if not is_rst:
            if line.lstrip().startswith("```"):
                in_code = not in_code
                continue
            if in_code:
                continue
        else:
            current = CURRENT_MODULE.match(line)
            if current:
                module = "" if current.group(1) == "None" else current.group(1)
                continue
            label = LABEL.match(line)
            if label:
                labels.add(label.group(1).strip().lower())
                continue
            if line.lstrip().startswith(("...", ">>>")):
                continue  # doctest lines are code, not references
        for kind, target, beside, anchor_line in _line_references(line, is_rst):
            if len(target) > MAX_REF_CHARS:
                too_long.append(number)
            else:
                refs.append(DocRef(shown, number, kind, target, module, beside, anchor_line))
    words = set(_WORD.findall(text))
    problem = None
    if too_long:
        problem = Diagnostic(
            shown,
            too_long[0],
            f"{len(too_long)} reference(s) longer than {MAX_REF_CHARS} characters not checked "
            "(no code name is that long)",
        )
    return refs, labels, words, problem


def _line_references(line: str, is_rst: bool) -> Iterator[tuple[str, str, str, int]]:
    """(kind, target, name beside, line number) of every reference on one line of a page, in scan order."""
    for match in ROLE.finditer(line):
        yield match.group(1), _role_target(match.group(2)), "", 0
    for match in REF.finditer(line):
        yield "ref", _role_target(match.group(1)).lower(), "", 0
    for match in DOC.finditer(line):
        yield "doc", _role_target(match.group(1)), "", 0
    literal = RST_LITERAL if is_rst else MD_LITERAL
    for match in literal.finditer(line):
        yield "literal", match.group(1), "", 0
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


def scan_docs(roots: list[Path], display_root: Path) -> DocsScan:
    """Every ``.rst`` and ``.md`` file under ``roots`` (files may be given directly).

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
    for given in roots:
        root = given.resolve()
        if root.is_file() and root.name.endswith(".inv"):  # a built Sphinx inventory: what it documents
            documented.inventory(root)
            continue
        if root.is_dir():
            # sphinx-gallery tutorials define labels in their .py sources
            for script in sorted(root.rglob("*.py")):
                shown = _display(script, display_root)
                data, problem = _read_inside(script, shown, display_root)
                if data is None:
                    diagnostics.extend([problem] if problem is not None else [])
                    continue
                text = data.decode("utf-8", errors="replace")
                labels |= {m.lower() for m in _GALLERY_LABEL.findall(text)}
        files = [root] if not root.is_dir() else sorted(p for p in root.rglob("*") if p.suffix in (".rst", ".md"))
        base = root.parent if not root.is_dir() else root
        for path in files:
            if path.is_dir():
                continue
            shown = _display(path, display_root)
            document = path.relative_to(base).with_suffix("").as_posix()
            documents.add(document)
            escaped = _outside(path, display_root)
            if escaped is not None:
                diagnostics.append(Diagnostic(shown, 1, escaped))
                continue
            found, found_labels, found_words, problem = scan_file(path, shown, documented, document)
            refs.extend(found)
            labels |= found_labels
            words |= found_words
            if problem is not None:
                diagnostics.append(problem)
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
