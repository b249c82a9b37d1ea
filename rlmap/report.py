"""Audit output: text grouped by file, stable JSON, SARIF 2.1.0, GitHub annotations; baselines."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlmap import __version__
from rlmap.audit import NOTE, RULES, Finding
from rlmap.errors import ConfigError

REPORT_FORMATS = ("text", "json", "sarif", "github")
_SARIF_LEVEL = {"error": "error", "warning": "warning", "note": "note"}


@dataclass(frozen=True, slots=True)
class Baseline:
    fingerprints: frozenset[str]


def load_baseline(path: Path) -> Baseline:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"baseline '{path}' does not exist", "create it with --write-baseline FILE") from None
    except (OSError, json.JSONDecodeError) as error:
        raise ConfigError(
            f"baseline '{path}' is not readable JSON: {error}", "regenerate it with --write-baseline"
        ) from None
    if not isinstance(data, dict) or not isinstance(data.get("findings"), list):
        raise ConfigError(f"baseline '{path}' has no 'findings' list", "regenerate it with --write-baseline")
    return Baseline(frozenset(str(item.get("fingerprint", "")) for item in data["findings"] if isinstance(item, dict)))


def baseline_json(findings: Sequence[Finding]) -> str:
    """A baseline keyed by fingerprints (rule + file + name), so moving a line keeps it valid."""
    entries = sorted(
        ({"fingerprint": f.fingerprint, "rule": f.rule, "path": f.path, "name": f.name} for f in findings),
        key=lambda entry: (entry["path"], entry["rule"], entry["name"]),
    )
    return json.dumps({"version": 1, "tool": "rlmap", "findings": entries}, indent=2, sort_keys=True) + "\n"


def _summary(findings: Sequence[Finding], known: frozenset[str]) -> dict[str, Any]:
    by_rule: dict[str, int] = {}
    for finding in findings:
        by_rule[finding.rule] = by_rule.get(finding.rule, 0) + 1
    new = sum(1 for f in findings if f.fingerprint not in known)
    return {"total": len(findings), "new": new, "known": len(findings) - new, "by_rule": dict(sorted(by_rule.items()))}


def render_text(findings: Sequence[Finding], known: frozenset[str]) -> str:
    lines: list[str] = []
    current = None
    for finding in findings:
        if finding.path != current:
            if current is not None:
                lines.append("")
            lines.append(finding.path)
            current = finding.path
        mark = " (known)" if finding.fingerprint in known else ""
        lines.append(f"  {finding.line:>5}  {finding.severity:<7}  {finding.rule:<19} {finding.message}{mark}")
        if finding.suggestion:
            lines.append(f"  {'':>5}  {'':<7}  {'':<19} -> {finding.suggestion}")
    summary = _summary(findings, known)
    if lines:
        lines.append("")
    counts = ", ".join(f"{count} {rule}" for rule, count in summary["by_rule"].items()) or "no findings"
    lines.append(f"{summary['total']} findings ({summary['new']} new, {summary['known']} known): {counts}")
    return "\n".join(lines) + "\n"


def render_json(findings: Sequence[Finding], known: frozenset[str], stamp: str) -> str:
    payload = {
        "tool": {"name": "rlmap", "version": __version__},
        "source": stamp,
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
                "known": f.fingerprint in known,
            }
            for f in findings
        ],
    }
    return json.dumps(payload, indent=2, sort_keys=True) + "\n"


def render_sarif(findings: Sequence[Finding], known: frozenset[str]) -> str:
    rules = [
        {
            "id": rule.id,
            "name": rule.id,
            "shortDescription": {"text": rule.summary},
            "fullDescription": {"text": f"{rule.summary} Example: {rule.invalid}"},
            "help": {"text": f"Finding: {rule.invalid}\nNot a finding: {rule.valid}"},
            "defaultConfiguration": {"level": _SARIF_LEVEL[rule.severity]},
        }
        for rule in RULES.values()
    ]
    index = {rule_id: position for position, rule_id in enumerate(RULES)}
    results = []
    for f in findings:
        text = f.message + (f" Suggestion: {f.suggestion}" if f.suggestion else "")
        results.append(
            {
                "ruleId": f.rule,
                "ruleIndex": index[f.rule],
                "level": _SARIF_LEVEL[f.severity],
                "message": {"text": text},
                "locations": [
                    {
                        "physicalLocation": {
                            "artifactLocation": {"uri": f.path},
                            "region": {"startLine": max(1, f.line)},
                        }
                    }
                ],
                "partialFingerprints": {"rlmapFingerprint/v1": f.fingerprint},
                "baselineState": "unchanged" if f.fingerprint in known else "new",
            }
        )
    sarif = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "rlmap",
                        "version": __version__,
                        "informationUri": "https://github.com/pytorch/rl",
                        "rules": rules,
                    }
                },
                "results": results,
            }
        ],
    }
    return json.dumps(sarif, indent=2, sort_keys=True) + "\n"


def render_github(findings: Sequence[Finding], known: frozenset[str]) -> str:
    lines = []
    for f in findings:
        if f.fingerprint in known:
            continue
        level = "notice" if f.severity == NOTE else ("error" if f.severity == "error" else "warning")
        text = f.message + (f" - {f.suggestion}" if f.suggestion else "")
        text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
        path = f.path.replace("%", "%25").replace(",", "%2C").replace(":", "%3A")
        lines.append(f"::{level} file={path},line={f.line},title=rlmap {f.rule}::{text}")
    return "\n".join(lines) + ("\n" if lines else "")


def explain(rule_id: str) -> str:
    rule = RULES.get(rule_id)
    if rule is None:
        raise ConfigError(f"unknown rule '{rule_id}'", f"rules are {', '.join(RULES)}")
    indent = "\n    "
    return (
        f"{rule.id} ({rule.severity})\n\n{rule.summary}\n\nFinding:\n    {rule.invalid.replace(chr(10), indent)}\n\n"
        f"Not a finding:\n    {rule.valid.replace(chr(10), indent)}\n"
    )
