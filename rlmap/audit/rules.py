"""``rlmap audit``'s entry point: run the rules, merge and sort their findings.

The audit finds where hand-written docs, docstrings and code disagree, and what nobody documents.
Its parts: :mod:`~rlmap.audit.catalog` (the rules, their examples and :class:`Finding`),
:mod:`~rlmap.audit.context` (resolution as Sphinx does it; sources read once),
:mod:`~rlmap.audit.spelling` ("did you mean" hints), :mod:`~rlmap.audit.docrules` and
:mod:`~rlmap.audit.coderules` (the rules over the docs and over the code).

Cost is linear in the docs and the code: every source file is read and parsed at most once,
every index is built once, and the spelling search is bounded per run.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import replace

from rlmap.audit import coderules, docrules
from rlmap.audit.catalog import ERROR, NOTE, RULES, WARNING, Edit, Finding, Rule
from rlmap.audit.context import AuditContext
from rlmap.audit.docstrings import docstring_refs
from rlmap.audit.spelling import SPELLING_BUDGET

__all__ = [
    "ERROR",
    "NOTE",
    "REPORTS",
    "RULES",
    "SPELLING_BUDGET",
    "WARNING",
    "AuditContext",
    "Edit",
    "Finding",
    "Rule",
    "run_audit",
]

# Every rule function and the rules it reports: ``--rule X`` runs only the functions that report X.
REPORTS = {**docrules.REPORTS, **coderules.REPORTS}


# the rules that read the code's docstrings as docs (their references, their examples): with no
# docs page, they still have those to read
DOCSTRING_RULES = frozenset({"stale-ref", "stale-example-ref"})


def run_audit(ctx: AuditContext, rules: Iterable[str] = ()) -> list[Finding]:
    """The findings of ``rules`` (all rules when empty), one per occurrence, sorted and numbered.

    Two rules' views of one place (same rule, file, line, column and name) are one finding; each
    finding's ``occurrence`` is its index among the findings of its rule and name in its file.
    """
    wanted = set(rules)
    ctx.rules = frozenset(wanted)
    reads_docstrings = not wanted or wanted & DOCSTRING_RULES
    # the code's docstrings are docs too: their references join the pages' (once per context)
    if reads_docstrings and not any(ref.docstring_line for ref in ctx.docs.refs):
        ctx.docs = replace(ctx.docs, refs=ctx.docs.refs + tuple(docstring_refs(ctx)))
    found: dict[tuple[str, str, int, int, str], Finding] = {}
    for function, reported in REPORTS.items():
        if wanted and not wanted & reported:
            continue
        for finding in function(ctx):
            if wanted and finding.rule not in wanted:
                continue
            found.setdefault((finding.rule, finding.path, finding.line, finding.column, finding.name), finding)
    numbered: list[Finding] = []
    seen: Counter[tuple[str, str, str]] = Counter()
    for finding in sorted(found.values(), key=Finding.sort_key):
        key = (finding.rule, finding.path, finding.name)
        numbered.append(replace(finding, occurrence=seen[key]))
        seen[key] += 1
    return numbered
