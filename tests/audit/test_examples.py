"""Every audit rule's examples (what ``rlmap audit --explain`` shows) run through the real audit.

On the installed torchrl 0.14.1: a rule's INVALID example must produce that rule's finding and
its VALID example must not.  A docs rule's examples are a docs page audited against torchrl's
model; a code rule's examples are a module added to a copy of torchrl's sources (inside the
profile's focus), audited with the profile's glossary and focus, as ``rlmap audit`` does.
A rule added without examples that work fails here.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from rlmap.audit.catalog import RULES, Rule
from rlmap.audit.coderules import REPORTS as CODE_REPORTS
from rlmap.audit.docrules import REPORTS as DOCS_REPORTS
from rlmap.audit.docscan import report_root, scan_docs
from rlmap.audit.rules import AuditContext, Finding, run_audit
from rlmap.index.cache import Cache
from rlmap.index.source import SourceTree, locate_source
from rlmap.model.codemodel import CodeModel
from rlmap.model.session import load_model
from rlmap.pages.profile import Profile, builtin_profile_path, load_profile
from tests.conftest import TORCHRL_EXTENSIONS, TORCHRL_VALUE_CAP

CODE_RULES = frozenset().union(*CODE_REPORTS.values())
DOCS_RULES = frozenset().union(*DOCS_REPORTS.values())
KINDS = ("valid", "invalid")
EXAMPLES_UNDER = "torchrl/collectors"  # in the TorchRL profile's focus


def example_path(rule: str, kind: str) -> str:
    module = re.sub(r"\W", "_", f"_rlmap_example_{rule}_{kind}")
    return f"{EXAMPLES_UNDER}/{module}.py"


@pytest.fixture(scope="module")
def profile() -> Profile:
    path = builtin_profile_path("torchrl")
    assert path is not None
    return load_profile(path, builtin=True)


@pytest.fixture(scope="module")
def torchrl_with_examples(
    torchrl_source: SourceTree, torchrl_cache: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[SourceTree, CodeModel]:
    """torchrl's sources plus one module per code rule example (files parsed once: the cache is shared)."""
    root = tmp_path_factory.mktemp("torchrl-with-examples")
    ignore = shutil.ignore_patterns("__pycache__", "*.so", "*.pyc")
    shutil.copytree(torchrl_source.package_dir, root / "torchrl", ignore=ignore)
    for rule in sorted(CODE_RULES):
        for kind in KINDS:
            (root / example_path(rule, kind)).write_text(getattr(RULES[rule], kind) + "\n", encoding="utf-8")
    source = locate_source(root, package="torchrl")
    cache = Cache.at(torchrl_cache)
    return source, load_model(source, cache, extensions=TORCHRL_EXTENSIONS, value_cap=TORCHRL_VALUE_CAP).model


def audit_example(
    rule: Rule,
    kind: str,
    tmp_path: Path,
    profile: Profile,
    torchrl_source: SourceTree,
    torchrl_model: CodeModel,
    torchrl_with_examples: tuple[SourceTree, CodeModel],
) -> list[Finding]:
    """The findings of ``rule`` the audit reports in one of its examples."""
    docs = tmp_path / "docs"
    docs.mkdir(parents=True)
    if rule.id in CODE_RULES:
        source, model = torchrl_with_examples
        where = example_path(rule.id, kind)
        (docs / "index.rst").write_text("Nothing here mentions the examples.\n", encoding="utf-8")
    else:
        source, model = torchrl_source, torchrl_model
        where = "page.rst"
        (docs / where).write_text(getattr(rule, kind) + "\n", encoding="utf-8")
    context = AuditContext(
        model=model,
        docs=scan_docs([docs], report_root([docs])),
        root=source.root,
        package="torchrl",
        focus=profile.focus,
        terms=profile.glossary,
        # missing-path runs on checkouts only: the installed tree stands in for one (torchrl
        # 0.14.1's wheel installs benchmarks/ beside the package, where a checkout has it)
        is_checkout=True,
    )
    return [f for f in run_audit(context, [rule.id]) if f.path == where]


def test_every_rule_is_a_docs_rule_or_a_code_rule() -> None:
    assert set(RULES) == DOCS_RULES | CODE_RULES
    assert not DOCS_RULES & CODE_RULES


@pytest.mark.torchrl
@pytest.mark.parametrize("rule_id", list(RULES))
def test_rule_examples(
    rule_id: str,
    tmp_path: Path,
    profile: Profile,
    torchrl_source: SourceTree,
    torchrl_model: CodeModel,
    torchrl_with_examples: tuple[SourceTree, CodeModel],
) -> None:
    rule = RULES[rule_id]
    given = (profile, torchrl_source, torchrl_model, torchrl_with_examples)
    invalid = audit_example(rule, "invalid", tmp_path / "invalid", *given)
    valid = audit_example(rule, "valid", tmp_path / "valid", *given)
    assert invalid, f"{rule_id}: the INVALID example is not a finding:\n{rule.invalid}"
    assert valid == [], f"{rule_id}: the VALID example is a finding: {valid}"
