"""The audit's rules (id, severity, summary, examples) and the :class:`Finding` each one reports.

Every rule carries a VALID and an INVALID example: ``rlmap audit --explain`` shows them, and
``tests/audit/test_examples.py`` runs each through the real audit against the installed
torchrl.  A docs rule's examples are docs pages (reStructuredText); a code rule's examples are
Python modules of the audited package.
"""

from __future__ import annotations

import difflib
import hashlib
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Edit:
    """A certain replacement ``rlmap audit --fix`` may make: ``old`` becomes ``new`` in one file.

    In a docs page, at offsets ``start:end`` of its text; in a docstring (``docstring_line`` set),
    inside the string literal whose definition starts on that line, through libcst.
    """

    start: int
    end: int
    old: str
    new: str
    docstring_line: int = 0


@dataclass(frozen=True, slots=True)
class Finding:
    """One thing an audit rule found: where (path, line), about what (name), and what to do about it.

    Every occurrence is a finding: ``occurrence`` counts the earlier findings of the same rule and
    name in the same file, so the fingerprint is distinct per occurrence and survives line moves.
    """

    rule: str
    severity: str
    path: str
    line: int
    name: str  # what the finding is about: the fingerprint survives line moves
    message: str
    suggestion: str = ""
    column: int = 0
    occurrence: int = 0
    certain: bool = False  # the suggestion is certain (history, full member coverage, a unique move)
    edit: Edit | None = None  # what --fix would change (certain suggestions with an exact span only)

    @classmethod
    def of(
        cls,
        rule: str,
        path: str,
        line: int,
        name: str,
        message: str,
        suggestion: str,
        *,
        column: int = 0,
        certain: bool = False,
        edit: Edit | None = None,
    ) -> Finding:
        """A finding of ``rule``, at that rule's severity."""
        kept = edit if certain else None  # an uncertain suggestion is never applied
        return cls(rule, RULES[rule].severity, path, line, name, message, suggestion, column, 0, certain, kept)

    @property
    def fingerprint(self) -> str:
        key = f"{self.rule}|{self.path}|{self.name}|{self.occurrence}"
        return hashlib.sha256(key.encode()).hexdigest()[:20]

    @property
    def legacy_fingerprint(self) -> str:
        """The fingerprint of baseline version 1 (rule + file + name: one for all occurrences)."""
        return hashlib.sha256(f"{self.rule}|{self.path}|{self.name}".encode()).hexdigest()[:20]

    def known_in(self, known: frozenset[str]) -> bool:
        return self.fingerprint in known or self.legacy_fingerprint in known

    def sort_key(self) -> tuple[str, int, int, str, str]:
        return (self.path, self.line, self.column, self.rule, self.name)


@dataclass(frozen=True, slots=True)
class Rule:
    """An audit rule as ``--explain``, SARIF and the example tests see it."""

    id: str
    severity: str
    summary: str
    valid: str  # an example that is not a finding
    invalid: str  # an example that is


ERROR = "error"
WARNING = "warning"
NOTE = "note"


RULES: dict[str, Rule] = {
    rule.id: rule
    for rule in (
        Rule(
            "stale-ref",
            ERROR,
            "A reference to code (Sphinx role or double-backtick dotted name) that resolves to nothing.",
            ".. currentmodule:: torchrl.record.loggers\n\n:class:`TensorboardLogger`",
            ".. currentmodule:: torchrl.record.loggers\n\n:class:`TensorBoardLogger`",
        ),
        Rule(
            "stale-example-ref",
            ERROR,
            "An import or dotted name of the package in a code example (Python code block, literal block "
            "that parses as Python, doctest line) that resolves to nothing.",
            ".. code-block:: python\n\n    from torchrl.record.loggers import TensorboardLogger",
            ".. code-block:: python\n\n    from torchrl.record.loggers import TensorBoardLogger",
        ),
        Rule(
            "unlinkable-ref",
            WARNING,
            "A role whose target exists but that Sphinx cannot link (private, under-qualified, or a path "
            "the docs tree's autodoc/autosummary entries do not document): readers see plain text.",
            ":meth:`torchrl.collectors.Collector.rollout`",
            ":meth:`torchrl.collectors.Collector._make_carrier`",
        ),
        Rule(
            "stale-docstring-ref",
            ERROR,
            "A docstring that lists a method or parameter that no longer exists, or a method that now only raises.",
            "class M:\n    '''Methods:\n        forward: runs it.\n    '''\n    def forward(self): ...",
            "class M:\n    '''Methods:\n        set_mode: sets it.\n    '''\n"
            "    def set_mode(self):\n        raise RuntimeError('removed')",
        ),
        Rule(
            "stale-line-anchor",
            ERROR,
            "A path.py:LINE reference whose line no longer holds the symbol named beside it (as a whole word; "
            "at a decorator, the definition below it), or whose file in the package is gone.",
            "``rollout`` (torchrl/collectors/_single.py:2030)",
            "``rollout`` (torchrl/collectors/_single.py:1638)",
        ),
        Rule(
            "broken-label",
            ERROR,
            "A :ref: label or :doc: target that exists nowhere in the docs tree.",
            ".. _ref_data_layout:\n\n:ref:`ref_data_layout`",
            ":ref:`ref_data_layout` (no such label anywhere)",
        ),
        Rule(
            "missing-path",
            ERROR,
            "A repository file path named in the docs that does not exist (checkouts only).",
            "benchmarks/bench_collectors.py (exists)",
            "examples/collectors/gone.py",
        ),
        Rule(
            "stale-alias",
            WARNING,
            "An old name still used in code after the glossary declares it replaced (or, with --since, after "
            "git history renamed the attribute).",
            "class Collector:\n    def reset(self, env):\n        self._carrier = env.reset()",
            "class Collector:\n    def reset(self, env):\n"
            "        self._shuttle = env.reset()  # glossary: shuttle -> carrier",
        ),
        Rule(
            "orphaned-symbol",
            WARNING,
            "A central private helper or attribute with no docstring that no doc page mentions.",
            "def _update_traj_ids(out):\n    '''Give each new trajectory an id.'''\n    return out\n"
            "def rollout(out):\n    return _update_traj_ids(out)\n"
            "def step(out):\n    return _update_traj_ids(out)\n"
            "def reset(out):\n    return _update_traj_ids(out)",
            "def _update_traj_ids(out):  # 3 callers, no docstring, no doc page names it\n    return out\n"
            "def rollout(out):\n    return _update_traj_ids(out)\n"
            "def step(out):\n    return _update_traj_ids(out)\n"
            "def reset(out):\n    return _update_traj_ids(out)",
        ),
        Rule(
            "undocumented-helper",
            NOTE,
            "A private function without a docstring in the focus subsystems, ranked by callers.",
            "def _helper():\n    '''Does this.'''\n    return 1\ndef run():\n    return _helper()",
            "def _helper():  # called, no docstring\n    return 1\ndef run():\n    return _helper()",
        ),
    )
}


def unknown_rule_hint(rule_id: str) -> str:
    """What to do about a rule id that names no rule: the id spelled like it, if any, then every id."""
    close = difflib.get_close_matches(rule_id, list(RULES), n=1, cutoff=0.6)
    every = f"rules are {', '.join(RULES)}"
    return f"did you mean '{close[0]}'? ({every})" if close else every
