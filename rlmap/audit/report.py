"""Audit output: text grouped by file, stable JSON, SARIF 2.1.0, GitHub annotations; baselines.

Every path in every format (and in baseline fingerprints) is relative to one root, the
*report root* (:func:`rlmap.audit.docscan.report_root`: the repository holding the docs), so the
same input gives the same bytes from any working directory, hash seed or ``-j``.  SARIF names
that root ``%SRCROOT%`` (``originalUriBaseIds``) and percent-encodes every URI.

Text and GitHub output go to terminals and log viewers: control characters that reach them
from docs or code (escape sequences, carriage returns, bidi overrides) are shown as ``\\x1b``-
style escapes, never emitted.  JSON and SARIF escape them as JSON does (``\\u001b``).
"""

from __future__ import annotations

import json
import os
import re
import stat
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, metadata
from pathlib import Path
from typing import Any
from urllib.parse import quote

from rlmap import __version__
from rlmap.audit.catalog import NOTE, RULES, Finding, Rule, unknown_rule_hint
from rlmap.audit.replace import replace_file
from rlmap.errors import ConfigError, UsageError, WriteFailed, device_failed
from rlmap.index.records import Diagnostic
from rlmap.terminal import inert

_RULE_WIDTH = max(len(rule_id) for rule_id in RULES)  # the rule column of the text report (two spaces after)

ROOT_ID = "%SRCROOT%"
ROOT_DESCRIPTION = (
    "The report root: the nearest directory at or above the docs that holds .git or pyproject.toml "
    "(else the deepest directory holding every docs path). Files of the analysed package that lie "
    "outside it are given by their path inside the package's own tree (e.g. torchrl/envs/common.py)."
)
MAX_BASELINE_BYTES = 64 * 1024 * 1024
# 2: one fingerprint per occurrence (rule + file + name + occurrence index); version 1 baselines
# (rule + file + name) still hold: a finding is known when either fingerprint is recorded
BASELINE_VERSION = 2
_SARIF_LEVEL = {"error": "error", "warning": "warning", "note": "note"}
_FINGERPRINT = re.compile(r"[0-9a-f]{20}")


@dataclass(frozen=True, slots=True)
class Baseline:
    fingerprints: frozenset[str]


def _fix_baseline(path: Path) -> str:
    return f"regenerate it with 'rlmap audit --write-baseline {path}' (or pass another --baseline)"


def load_baseline(path: Path) -> Baseline:
    """The fingerprints recorded in a baseline file; :class:`ConfigError` when it is not one."""
    try:
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        raise ConfigError(f"{path}: baseline does not exist", "create it with --write-baseline FILE") from None
    except OSError as error:
        raise ConfigError(
            f"{path}: cannot read the baseline ({error.strerror})", "check the path and its permissions"
        ) from None
    info = os.fstat(descriptor)
    if not stat.S_ISREG(info.st_mode):
        os.close(descriptor)
        if stat.S_ISDIR(info.st_mode):
            raise ConfigError(f"{path}: is a directory, not a baseline file", "pass --baseline the JSON file")
        raise ConfigError(f"{path}: is not a regular file", "pass --baseline a JSON file")
    with os.fdopen(descriptor, "rb") as handle:
        try:
            data = handle.read(MAX_BASELINE_BYTES + 1)
        except OSError as error:
            raise ConfigError(f"{path}: cannot read the baseline ({error.strerror})", _fix_baseline(path)) from None
    if len(data) > MAX_BASELINE_BYTES:
        raise ConfigError(
            f"{path}: baseline is larger than {MAX_BASELINE_BYTES // (1024 * 1024)} MiB", _fix_baseline(path)
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ConfigError(
            f"{path}: baseline is not UTF-8 text ({error.reason} at byte {error.start})", _fix_baseline(path)
        ) from None
    try:
        payload = json.loads(text)
    except json.JSONDecodeError as error:
        raise ConfigError(
            f"{path}: baseline is not valid JSON ({error.msg} at line {error.lineno} column {error.colno})",
            _fix_baseline(path),
        ) from None
    except RecursionError:
        raise ConfigError(f"{path}: baseline is not valid JSON (nested too deeply)", _fix_baseline(path)) from None
    except ValueError as error:  # an integer past Python's digit limit
        raise ConfigError(f"{path}: baseline is not valid JSON ({error})", _fix_baseline(path)) from None
    return Baseline(_fingerprints(path, payload))


def _fingerprints(path: Path, payload: Any) -> frozenset[str]:
    """The fingerprints of a parsed baseline; :class:`ConfigError` naming the first thing wrong."""
    if not isinstance(payload, dict) or not isinstance(payload.get("findings"), list):
        raise ConfigError(
            f"{path}: not an rlmap baseline (expected an object with a 'findings' list)", _fix_baseline(path)
        )
    version = payload.get("version", 1)
    if version not in (1, BASELINE_VERSION) or isinstance(version, bool):
        raise ConfigError(
            f"{path}: baseline version {version!r} is not supported (expected 1 or {BASELINE_VERSION})",
            _fix_baseline(path),
        )
    found: set[str] = set()
    for position, entry in enumerate(payload["findings"]):
        fingerprint = entry.get("fingerprint") if isinstance(entry, dict) else None
        if not isinstance(fingerprint, str) or not _FINGERPRINT.fullmatch(fingerprint):
            raise ConfigError(
                f"{path}: findings[{position}] has no valid 'fingerprint' (20 lowercase hex digits)",
                _fix_baseline(path),
            )
        found.add(fingerprint)
    return frozenset(found)


def check_baseline_target(path: Path) -> None:
    """Fail before the audit runs when ``--write-baseline PATH`` cannot be written.

    Only a missing path or a regular file is replaced: never a device (``/dev/null``), a FIFO,
    a directory or a symbolic link, which a rename would destroy.
    """
    if path.is_dir():
        raise UsageError(f"{path}: is a directory", "pass --write-baseline a file path")
    folder = path.parent
    if folder.exists() and not folder.is_dir():
        raise UsageError(
            f"{path}: cannot write the baseline ('{folder}' is not a directory)",
            "pass --write-baseline a path in an existing directory",
        )
    if not folder.is_dir():
        raise UsageError(
            f"{path}: cannot write the baseline (directory '{folder}' does not exist)",
            "create the directory or pass --write-baseline another path",
        )
    if not os.access(folder, os.W_OK | os.X_OK):
        raise UsageError(
            f"{path}: cannot write the baseline (directory '{folder}' is not writable)",
            "pass --write-baseline a path in a writable directory",
        )
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as error:
        raise UsageError(f"{path}: cannot write the baseline ({error.strerror})", "pass another path") from None
    if mode is not None and not stat.S_ISREG(mode):
        kind = "a symbolic link" if stat.S_ISLNK(mode) else "not a regular file"
        raise UsageError(
            f"{path}: is {kind}; rlmap replaces only a regular file with a baseline",
            "pass --write-baseline the path of a regular file (or a new one)",
        )


def save_baseline(path: Path, findings: Sequence[Finding]) -> None:
    """Write the baseline all-or-nothing: a new file renamed over the old (a symlink is replaced, not followed)."""
    check_baseline_target(path)
    try:
        replace_file(path, baseline_json(findings).encode("utf-8"), 0o644)
    except OSError as error:
        if device_failed(error):  # the disk, not the path chosen
            raise WriteFailed(f"the baseline {path}", error, "pass --write-baseline another path") from None
        raise UsageError(
            f"{path}: cannot write the baseline ({error.strerror or error})",
            "pass --write-baseline a path in a writable directory",
        ) from None


def baseline_json(findings: Sequence[Finding]) -> str:
    """A baseline keyed by fingerprints (rule + file + name + occurrence), so moving a line keeps it valid.

    Paths are relative to the report root, never to the working directory.
    """
    entries = sorted(
        (
            {"fingerprint": f.fingerprint, "rule": f.rule, "path": f.path, "name": f.name, "occurrence": f.occurrence}
            for f in findings
        ),
        key=lambda entry: (entry["path"], entry["rule"], entry["name"], entry["occurrence"]),
    )
    payload = {"version": BASELINE_VERSION, "tool": "rlmap", "findings": entries}
    return json.dumps(payload, indent=2, sort_keys=True) + "\n"


def _summary(findings: Sequence[Finding], known: frozenset[str]) -> dict[str, Any]:
    by_rule: dict[str, int] = {}
    by_severity = dict.fromkeys(_LEVEL_ORDER, 0)
    for finding in findings:
        by_rule[finding.rule] = by_rule.get(finding.rule, 0) + 1
        by_severity[finding.severity] += 1
    new = sum(1 for f in findings if not f.known_in(known))
    return {
        "total": len(findings),
        "new": new,
        "known": len(findings) - new,
        "by_severity": by_severity,
        "by_rule": dict(sorted(by_rule.items())),
    }


def _severities(summary: dict[str, Any]) -> str:
    """``12 errors, 131 warnings, 126 notes``: what fails a run first (notes never do)."""
    return ", ".join(
        f"{count} {severity}{'' if count == 1 else 's'}" for severity, count in summary["by_severity"].items() if count
    )


def render_text(
    findings: Sequence[Finding],
    known: frozenset[str],
    summary_line: bool = True,
    width: int = 0,
    baselined: bool = True,
) -> str:
    """A table per file; the occurrences of one rule, name, message and suggestion are one entry
    (at its first line) with a count and their other lines; then, with ``summary_line``, the
    counts (``--quiet`` leaves them out).  ``width`` (a terminal's columns; 0: none) wraps a
    message or suggestion under its column, never cutting a word; into a pipe lines stay whole."""
    lines: list[str] = []
    column = 2 + 5 + 2 + 7 + 2 + _RULE_WIDTH + 2  # where a message starts
    narrow = bool(width) and width - column < _NARROWEST
    hang = " " * (8 if narrow else column)
    wrapper = textwrap.TextWrapper(
        max(width, 40), subsequent_indent=hang, break_long_words=False, break_on_hyphens=False
    )

    def add(line: str) -> None:
        lines.extend(wrapper.wrap(line) or [line] if width and len(line) > width else [line])

    current = None
    hidden = 0  # under a baseline, the known findings: counted, not listed (the new ones are the news)
    for group in _grouped(findings):
        finding = group[0]
        if baselined and all(f.known_in(known) for f in group):
            hidden += len(group)
            continue
        if finding.path != current:
            if current is not None:
                lines.append("")
            lines.append(inert(finding.path))
            current = finding.path
        if narrow:  # the message, its count and its suggestion under the rule, all at one indent
            lines.append(f"  {finding.line:>5}  {finding.severity:<7}  {finding.rule}")
            lead = hang
            add(lead + inert(finding.message))
        else:
            lead = f"  {'':>5}  {'':<7}  {' ' * _RULE_WIDTH}  "
            rule = finding.rule.ljust(_RULE_WIDTH)
            add(f"  {finding.line:>5}  {finding.severity:<7}  {rule}  {inert(finding.message)}")
        if len(group) > 1:
            more = ", ".join(str(f.line) for f in group[1:])
            add(f"{lead}x{len(group)} (also line {more})")
        if finding.suggestion:
            certain = " (certain)" if finding.certain else ""
            add(f"{lead}-> {inert(finding.suggestion)}{certain}")
    if not summary_line:
        return "".join(f"{line}\n" for line in lines)
    if lines:
        lines.append("")
    lines.append(text_summary(findings, known, baselined, unlisted=bool(hidden)))
    return "\n".join(lines) + "\n"


def text_summary(findings: Sequence[Finding], known: frozenset[str], baselined: bool, unlisted: bool = False) -> str:
    """The text report's last line: the findings counted by severity (a note never fails a run),
    split into new and known under a baseline (``unlisted``: the known ones were left out of the
    report), then by rule."""
    summary = _summary(findings, known)
    counts = ", ".join(f"{count} {rule}" for rule, count in summary["by_rule"].items()) or "no findings"
    left_out = "; the known ones are not listed" if unlisted else ""
    parts = [_severities(summary)] if findings else []
    if baselined:  # (no baseline: no split)
        parts.append(f"{summary['new']} new, {summary['known']} known{left_out}")
    return f"{summary['total']} findings{' (' + '; '.join(parts) + ')' if parts else ''}: {counts}"


# Below this many columns left for a message, it wraps under an indent of its own, not its column.
_NARROWEST = 50


def _grouped(findings: Sequence[Finding]) -> list[list[Finding]]:
    """Findings of one file with the same rule, name, message and suggestion, in order of first line."""
    groups: dict[tuple[str, str, str, str, str], list[Finding]] = {}
    for finding in findings:
        key = (finding.path, finding.rule, finding.name, finding.message, finding.suggestion)
        groups.setdefault(key, []).append(finding)
    return sorted(groups.values(), key=lambda group: group[0].sort_key())


def render_json(
    findings: Sequence[Finding], known: frozenset[str], stamp: str, notes: Sequence[Diagnostic] = ()
) -> str:
    """The findings as JSON; ``skipped``: the input that could not be read (rlmap exits 3), and
    ``complete``: whether there was none, so that an empty list of findings is not read as clean."""
    payload = {
        "tool": {"name": "rlmap", "version": __version__},
        "source": stamp,
        "complete": not notes,
        "skipped": [{"path": note.path, "line": note.line, "message": note.message} for note in notes],
        "summary": _summary(findings, known),
        "findings": [
            {
                "rule": f.rule,
                "severity": f.severity,
                "path": f.path,
                "line": f.line,
                "name": f.name,
                "message": f.message,
                "suggestion": f.suggestion,
                "fingerprint": f.fingerprint,
                "known": f.known_in(known),
                "column": f.column,
                "occurrence": f.occurrence,
                "certain": f.certain,
                "fixable": f.edit is not None,
            }
            for f in findings
        ],
    }
    return json.dumps(payload, indent=2, sort_keys=True) + "\n"


HELP_ANCHOR = "#auditing-hand-written-docs-and-docstrings"  # the README's section on the audit


@dataclass(frozen=True, slots=True)
class ProjectUrls:
    """rlmap's own addresses (``[project.urls]`` in its pyproject.toml), for SARIF's
    ``informationUri`` and each rule's ``helpUri``; empty when unknown."""

    home: str = ""
    documentation: str = ""

    @property
    def help(self) -> str:
        base = (self.documentation or self.home).partition("#")[0]
        return base + HELP_ANCHOR if base else ""


def project_urls(entries: Sequence[str] | None = None) -> ProjectUrls:
    """rlmap's addresses from its installed metadata's ``Project-URL: Label, URL`` entries (or
    ``entries``)."""
    if entries is None:
        try:
            entries = metadata("rlmap").get_all("Project-URL") or []
        except PackageNotFoundError:
            entries = []
    found: dict[str, str] = {}
    for entry in entries:
        label, _, url = entry.partition(",")
        found.setdefault(label.strip().lower(), url.strip())
    home = found.get("homepage") or found.get("home") or found.get("repository") or found.get("source") or ""
    return ProjectUrls(home, found.get("documentation", ""))


def _rule_help(rule: Rule, urls: ProjectUrls) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "id": rule.id,
        "name": rule.id,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": f"{rule.summary} Example: {rule.invalid}"},
        "help": {
            "text": f"Finding: {rule.invalid}\nNot a finding: {rule.valid}",
            "markdown": (
                f"**{rule.id}** ({rule.severity}): {rule.summary}\n\n"
                f"A finding:\n\n```\n{rule.invalid}\n```\n\nNot a finding:\n\n```\n{rule.valid}\n```\n\n"
                f"`rlmap audit --explain {rule.id}` shows the same."
                + (f" Every rule: [the README's audit section]({urls.help})." if urls.help else "")
            ),
        },
        "defaultConfiguration": {"level": _SARIF_LEVEL[rule.severity]},
    }
    if urls.help:
        entry["helpUri"] = urls.help
    return entry


def render_sarif(
    findings: Sequence[Finding],
    known: frozenset[str],
    complete: bool = True,
    notes: Sequence[Diagnostic] = (),
    urls: ProjectUrls | None = None,
) -> str:
    """SARIF 2.1.0: one base (the report root), every rule with help, and one invocation that says
    whether every input was read (``executionSuccessful`` is false when rlmap exits 3)."""
    urls = project_urls() if urls is None else urls
    rules = [_rule_help(rule, urls) for rule in RULES.values()]
    index = {rule_id: position for position, rule_id in enumerate(RULES)}
    results = []
    for f in findings:
        end = "" if f.message.endswith((".", "!", "?")) else "."  # (the message and the suggestion: two sentences)
        text = f.message + (f"{end} Suggestion: {f.suggestion}" if f.suggestion else "")
        region: dict[str, int] = {"startLine": max(1, f.line)}
        if f.column > 0:
            region["startColumn"] = f.column
        results.append(
            {
                "ruleId": f.rule,
                "ruleIndex": index[f.rule],
                "level": _SARIF_LEVEL[f.severity],
                "message": {"text": text},
                "locations": [_location(f.path, region)],
                "partialFingerprints": {"rlmapFingerprint/v2": f.fingerprint},
                "baselineState": "unchanged" if f.known_in(known) else "new",
            }
        )
    invocation = {
        "executionSuccessful": complete,
        "toolExecutionNotifications": [
            {
                "level": "warning",
                "message": {"text": note.message},
                "locations": [_location(note.path, {"startLine": max(1, note.line)})],
            }
            for note in notes
        ],
    }
    driver: dict[str, Any] = {"name": "rlmap", "version": __version__, "rules": rules}
    if urls.home:
        driver["informationUri"] = urls.home
    sarif = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [
            {
                "tool": {"driver": driver},
                "originalUriBaseIds": {ROOT_ID: {"description": {"text": ROOT_DESCRIPTION}}},
                "invocations": [invocation],
                "columnKind": "unicodeCodePoints",
                "results": results,
            }
        ],
    }
    return json.dumps(sarif, indent=2, sort_keys=True) + "\n"


def _location(path: str, region: dict[str, int]) -> dict[str, Any]:
    return {"physicalLocation": {"artifactLocation": {"uri": sarif_uri(path), "uriBaseId": ROOT_ID}, "region": region}}


def sarif_uri(path: str) -> str:
    """A relative path as a URI reference: every character outside RFC 3986's unreserved set and
    ``/`` percent-encoded (``we ird #%?.rst`` -> ``we%20ird%20%23%25%3F.rst``)."""
    return quote(path, safe="/", errors="backslashreplace")


GITHUB_ANNOTATIONS_PER_LEVEL = 10  # what GitHub shows of each level (error, warning, notice) per step
_LEVEL_ORDER = {"error": 0, "warning": 1, "note": 2}


def render_github(
    findings: Sequence[Finding], known: frozenset[str], summarized: bool = False, notes: Sequence[Diagnostic] = ()
) -> str:
    """Workflow commands, errors first, at most what GitHub shows per level; a notice counts the
    rest, and says where they are listed: the job summary when it was written (``summarized``),
    else the text report.  Each input that could not be read (``notes``: rlmap exits 3) is a
    warning at its file first: without one, the step failed with nothing annotated."""
    lines = []
    shown: dict[str, int] = {}
    left = 0
    unread = 0  # the inputs not read past what GitHub shows
    for note in notes:
        if shown.get("warning", 0) >= GITHUB_ANNOTATIONS_PER_LEVEL:
            unread += 1
            continue
        shown["warning"] = shown.get("warning", 0) + 1
        text = _escape(inert(f"{note.message}: not read, so not audited"))
        if inert(note.path) != note.path:  # a name with a control character is no path to annotate
            lines.append(f"::warning title=rlmap input not read::{text}")
            continue
        path = _file_property(note.path)
        lines.append(f"::warning file={path},line={max(1, note.line)},title=rlmap input not read::{text}")
    for f in sorted(findings, key=lambda f: (_LEVEL_ORDER[f.severity], f.sort_key())):
        if f.known_in(known):
            continue
        level = "notice" if f.severity == NOTE else ("error" if f.severity == "error" else "warning")
        if shown.get(level, 0) >= GITHUB_ANNOTATIONS_PER_LEVEL:
            left += 1
            continue
        shown[level] = shown.get(level, 0) + 1
        text = _escape(inert(f.message + (f" - {f.suggestion}" if f.suggestion else "")))
        path = _file_property(inert(f.path))
        column = f",col={f.column}" if f.column > 0 else ""
        lines.append(f"::{level} file={path},line={f.line}{column},title=rlmap {f.rule}::{text}")
    if unread:
        lines.append(
            f"::notice title=rlmap::{unread} more input(s) not read, not annotated; the log's warnings list them all"
        )
    if left:
        lines.append(
            f"::notice title=rlmap::{left} more finding(s) not annotated (GitHub shows "
            f"{GITHUB_ANNOTATIONS_PER_LEVEL} per level per step); "
            + ("the job summary lists them all" if summarized else "rlmap audit --format text lists them all")
        )
    return "\n".join(lines) + ("\n" if lines else "")


def _file_property(path: str) -> str:
    """A path as a workflow command's ``file=`` property: escaped, its ``,`` and ``:`` too."""
    return _escape(path).replace(",", "%2C").replace(":", "%3A")


def _escape(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def step_summary(findings: Sequence[Finding], known: frozenset[str]) -> str:
    """A Markdown table of every finding for ``$GITHUB_STEP_SUMMARY`` (new ones first, errors first)."""
    summary = _summary(findings, known)
    counts = ", ".join(f"{count} {rule}" for rule, count in summary["by_rule"].items()) or "no findings"
    lines = [
        "### rlmap audit",
        "",
        f"{summary['total']} findings ({_severities(summary) or 'none'}; {summary['new']} new, "
        f"{summary['known']} known): {counts}",
        "",
    ]
    if findings:
        lines += ["| | rule | where | what | suggestion |", "|---|---|---|---|---|"]
        ordered = sorted(findings, key=lambda f: (f.known_in(known), _LEVEL_ORDER[f.severity], f.sort_key()))
        for f in ordered:
            state = "known" if f.known_in(known) else f.severity
            cells = [state, f"`{f.rule}`", f"{f.path}:{f.line}", f.message, f.suggestion]
            lines.append("| " + " | ".join(_cell(cell) for cell in cells) + " |")
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    return inert(text).replace("|", "\\|").replace("\n", " ")


def explain(rule_id: str, as_json: bool = False) -> str:
    """What a rule finds, with a finding and a non-finding; as JSON (``id``, ``severity``,
    ``summary``, ``finding``, ``not_finding``) with ``as_json``.  ``all``: every rule, its id,
    severity and summary (a list of them, as JSON)."""
    if rule_id == "all":
        if as_json:
            rows = [{"id": rule.id, "severity": rule.severity, "summary": rule.summary} for rule in RULES.values()]
            return json.dumps(rows, indent=2, sort_keys=True) + "\n"
        width = max(len(rule_id) for rule_id in RULES)
        listed = [f"{rule.id:<{width}}  {rule.severity:<7}  {rule.summary}" for rule in RULES.values()]
        return "\n".join(listed) + "\n\nrlmap audit --explain ID describes one, with examples.\n"
    rule = RULES.get(rule_id)
    if rule is None:
        raise ConfigError(f"unknown rule '{rule_id}'", unknown_rule_hint(rule_id))
    if as_json:
        described = {
            "id": rule.id,
            "severity": rule.severity,
            "summary": rule.summary,
            "finding": rule.invalid,
            "not_finding": rule.valid,
        }
        return json.dumps(described, indent=2, sort_keys=True) + "\n"
    indent = "\n    "
    return (
        f"{rule.id} ({rule.severity})\n\n{rule.summary}\n\nFinding:\n    {rule.invalid.replace(chr(10), indent)}\n\n"
        f"Not a finding:\n    {rule.valid.replace(chr(10), indent)}\n"
    )
