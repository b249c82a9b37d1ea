"""``rlmap audit --fix``: the certain replacements applied, or shown as a diff (``--diff``).

In a docs page an edit replaces the exact span of the stale text.  In a docstring it goes through
libcst: the string literal whose definition starts on the finding's docstring line is replaced with
the same literal in which the stale dotted name (taken whole) is rewritten, and the module's code
is printed back, so the file is byte-identical outside the edited text.  Uncertain findings carry
no edit and are never changed.  A file is replaced whole (temporary file + rename); a symbolic
link, or a file whose real location is outside the report root, is never written.
"""

from __future__ import annotations

import difflib
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from rlmap.audit.catalog import Edit, Finding
from rlmap.audit.replace import replace_file
from rlmap.errors import WriteFailed, device_failed


@dataclass(frozen=True, slots=True)
class FileFix:
    path: str  # as shown in findings
    before: str
    after: str
    edits: int


@dataclass(frozen=True, slots=True)
class FixPlan:
    files: tuple[FileFix, ...]
    skipped: tuple[str, ...]  # why a file with certain edits is left alone

    def diff(self) -> str:
        chunks: list[str] = []
        for fix in self.files:
            chunks.extend(
                difflib.unified_diff(
                    fix.before.splitlines(keepends=True),
                    fix.after.splitlines(keepends=True),
                    f"a/{fix.path}",
                    f"b/{fix.path}",
                )
            )
        return "".join(chunks)


def plan_fixes(findings: list[Finding], report_root: Path, code_root: Path, code_prefix: str) -> FixPlan:
    """The new text of every file a certain finding edits (nothing is written)."""
    by_file: dict[str, list[Edit]] = {}
    for finding in findings:
        if finding.certain and finding.edit is not None:
            by_file.setdefault(finding.path, []).append(finding.edit)
    files: list[FileFix] = []
    skipped: list[str] = []
    for shown, edits in sorted(by_file.items()):
        path = _real_path(shown, report_root, code_root, code_prefix)
        problem = _unwritable(path, report_root, code_root)
        if problem:
            skipped.append(f"{shown}: {problem}; not edited")
            continue
        try:
            before = path.read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError) as error:
            skipped.append(f"{shown}: cannot read it ({error}); not edited")
            continue
        try:
            after, count = _apply(before, edits)
        except (cst.ParserSyntaxError, RecursionError):
            skipped.append(f"{shown}: libcst cannot parse it; not edited")
            continue
        if count:
            files.append(FileFix(shown, before, after, count))
    return FixPlan(tuple(files), tuple(skipped))


def write_fixes(plan: FixPlan, report_root: Path, code_root: Path, code_prefix: str) -> None:
    """Replace each planned file whole (a new file renamed over the old, its mode kept)."""
    for fix in plan.files:
        path = _real_path(fix.path, report_root, code_root, code_prefix)
        if _unwritable(path, report_root, code_root):
            continue
        try:
            replace_file(path, fix.after.encode("utf-8"), stat.S_IMODE(os.lstat(path).st_mode))
        except OSError as error:
            if device_failed(error):  # the disk: this file is as it was, and those not yet fixed too
                raise WriteFailed(f"the fixed {fix.path} (the files before it are fixed)", error) from None
            raise


def _real_path(shown: str, report_root: Path, code_root: Path, code_prefix: str) -> Path:
    if not code_prefix and (code_root / shown).is_file() and not (report_root / shown).is_file():
        return code_root / shown  # a package file outside the report root, shown by its package path
    return report_root / shown


def _unwritable(path: Path, report_root: Path, code_root: Path) -> str:
    if path.is_symlink():
        return "a symbolic link"
    if not path.is_file():
        return "not a regular file"
    real = path.resolve()
    if not any(real.is_relative_to(root.resolve()) for root in (report_root, code_root)):
        return "outside the docs and source trees"
    if _INSTALLED.intersection(real.parts):  # lost at the next install, and no one's checkout
        return "a file of an installed package (pass --source a checkout to fix its docstrings)"
    return ""


# The directories pip installs packages into: their files are never rewritten.
_INSTALLED = frozenset({"site-packages", "dist-packages"})


def _apply(text: str, edits: list[Edit]) -> tuple[str, int]:
    spans = sorted({(e.start, e.end, e.old, e.new) for e in edits if not e.docstring_line}, reverse=True)
    count = 0
    last = len(text) + 1
    for start, end, old, new in spans:
        if end > last or text[start:end] != old:
            continue  # overlapping, or the file changed since the audit
        text = text[:start] + new + text[end:]
        last = start
        count += 1
    docstrings: dict[int, dict[str, str]] = {}
    for edit in edits:
        if edit.docstring_line:
            docstrings.setdefault(edit.docstring_line, {})[edit.old] = edit.new
    if docstrings:
        text, done = _edit_docstrings(text, docstrings)
        count += done
    return text, count


def _edit_docstrings(code: str, by_line: dict[int, dict[str, str]]) -> tuple[str, int]:
    """Rewrite stale dotted names in the string literals starting on the given lines (libcst)."""
    wrapper = MetadataWrapper(cst.parse_module(code))
    positions = wrapper.resolve(PositionProvider)
    edited = [0]

    class Rewrite(cst.CSTTransformer):
        def leave_SimpleString(self, original: cst.SimpleString, updated: cst.SimpleString) -> cst.SimpleString:
            line = positions[original].start.line
            replacements = by_line.get(line)
            if not replacements or "f" in original.prefix.lower() or "b" in original.prefix.lower():
                return updated
            value = updated.value
            for old, new in replacements.items():
                pattern = re.compile(rf"(?<![\w.]){re.escape(old)}(?![\w])")
                value, made = pattern.subn(new, value)
                edited[0] += made
            return updated.with_changes(value=value)

    module = wrapper.module.visit(Rewrite())
    return module.code, edited[0]
