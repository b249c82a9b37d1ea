"""Scan documentation (rst and Markdown) for references to code, labels, documents and lines.

Plain data out: every :class:`DocRef` carries the file, line, kind, the raw text and the
context Sphinx would use to resolve it (the current module).  Nothing here knows the code.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from rlmap.records import Diagnostic

ROLE = re.compile(r":(?:py:)?(class|meth|func|attr|mod|data|obj|exc):`([^`]+)`")
REF = re.compile(r":ref:`([^`]+)`")
DOC = re.compile(r":doc:`([^`]+)`")
LABEL = re.compile(r"^\.\. _([^:]+):\s*$")
CURRENT_MODULE = re.compile(r"^\.\. (?:py:)?(?:currentmodule|module)::\s*(\S+)")
RST_LITERAL = re.compile(r"``([A-Za-z_][\w.]*\.[\w.]*\w)``")
MD_LITERAL = re.compile(r"(?<!`)`([A-Za-z_][\w.]*\.[\w.]*\w)`(?!`)")
LINE_ANCHOR = re.compile(r"(?P<path>[\w./-]*\w\.py)(?:(?::|#L)(?P<line>\d+)|\s+L(?P<lline>\d+)\b)")
REPO_PATH = re.compile(
    r"(?<![\w/.-])((?:examples|test|tests|benchmarks|sota-implementations|tutorials)/[\w./-]+\.py)\b"
)


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


def _role_target(raw: str) -> str:
    target = raw.strip()
    match = re.match(r"^.*<([^>]+)>$", target, re.S)
    if match:
        target = match.group(1).strip()
    return target.lstrip("~!").rstrip("()")


_URL = re.compile(r"https?://[^\s>)]+")


def _beside(text: str, start: int, end: int, is_rst: bool) -> str:
    """The code name written next to a line anchor: ``def name``, or the literal or role before it."""
    after = text[end : end + 80]
    match = re.match(r"\s*(?:->|:|-)?\s*(?:def|class)\s+(\w+)", after)
    if match:
        return match.group(1)
    head = text[max(0, start - 200) : start]
    if is_rst:
        names = [a or b for a, b in re.findall(r"``([^`]+)``|:\w+:`([^`<]+?)(?: <[^>]+>)?`", head)]
    else:
        names = re.findall(r"(?<!`)`([^`]+)`(?!`)", head)
    if names:
        return re.split(r"[.(\[ ]", names[-1].lstrip("~").rstrip("()"))[-1]
    match = re.search(r"(?:def|class)\s+(\w+)\s*$", head)
    return match.group(1) if match else ""


def scan_file(path: Path, shown: str) -> tuple[list[DocRef], set[str], set[str], Diagnostic | None]:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        return [], set(), set(), Diagnostic(shown, 1, f"not valid UTF-8 ({error.reason}); file skipped")
    except OSError as error:
        return [], set(), set(), Diagnostic(shown, 1, f"cannot read file: {error.strerror}; file skipped")
    is_rst = path.suffix == ".rst"
    refs: list[DocRef] = []
    labels: set[str] = set()
    module = ""
    in_code = False
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
        for match in ROLE.finditer(line):
            refs.append(DocRef(shown, number, match.group(1), _role_target(match.group(2)), module))
        for match in REF.finditer(line):
            refs.append(DocRef(shown, number, "ref", _role_target(match.group(1)).lower(), module))
        for match in DOC.finditer(line):
            refs.append(DocRef(shown, number, "doc", _role_target(match.group(1)), module))
        literal = RST_LITERAL if is_rst else MD_LITERAL
        for match in literal.finditer(line):
            refs.append(DocRef(shown, number, "literal", match.group(1), module))
        # line anchors inside URLs (a permalink's ``#L123``) are the link, not a second reference
        visible = _URL.sub(lambda url: " " * len(url.group()), line)
        for match in LINE_ANCHOR.finditer(visible):
            value = int(match.group("line") or match.group("lline"))
            beside = _beside(visible, match.start(), match.end(), is_rst)
            refs.append(DocRef(shown, number, "anchor", match.group("path"), module, beside, value))
        for match in REPO_PATH.finditer(line):
            refs.append(DocRef(shown, number, "path", match.group(1), module))
    words = set(re.findall(r"[A-Za-z_]\w+", text))
    return refs, labels, words, None


def scan_docs(roots: list[Path], display_root: Path) -> DocsScan:
    """Every ``.rst`` and ``.md`` file under ``roots`` (files may be given directly)."""
    refs: list[DocRef] = []
    labels: set[str] = set()
    documents: set[str] = set()
    words: set[str] = set()
    diagnostics: list[Diagnostic] = []
    for root in roots:
        if root.is_dir():
            # sphinx-gallery tutorials define labels in their .py sources
            for script in sorted(root.rglob("*.py")):
                try:
                    labels |= {m.lower() for m in re.findall(r"\.\. _([^:`\s]+):", script.read_text(errors="replace"))}
                except OSError:
                    continue
        files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.suffix in (".rst", ".md"))
        base = root.parent if root.is_file() else root
        for path in files:
            if not path.is_file():
                continue
            shown = _display(path, display_root)
            documents.add(path.relative_to(base).with_suffix("").as_posix())
            found, found_labels, found_words, problem = scan_file(path, shown)
            refs.extend(found)
            labels |= found_labels
            words |= found_words
            if problem is not None:
                diagnostics.append(problem)
    return DocsScan(tuple(refs), frozenset(labels), frozenset(documents), frozenset(words), tuple(diagnostics))


def _display(path: Path, display_root: Path) -> str:
    """A path relative to where rlmap runs: findings never show absolute paths."""
    return Path(os.path.relpath(path.resolve(), display_root.resolve())).as_posix()
