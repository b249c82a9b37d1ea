"""``rlmap audit``: every rule on small synthetic docs, the real TorchRL docs, SARIF, baselines."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from rlmap.audit.rules import RULES
from rlmap.cli import main
from tests.conftest import FIXTURES, Run

REPO = Path(__file__).parent.parent.parent
SHARED = REPO.parent / "shared"
CORPUS = SHARED / "torchrl-docs"


def fixture_run(run: Run, docs: Path, *extra: str, quiet: bool = True) -> tuple[int, str, str]:
    """``rlmap audit`` of the fixture package with ``docs`` (no cache, quiet): code, stdout, stderr."""
    args = ("audit", "--source", str(FIXTURES), "--package", "pkg", "--docs", str(docs), "--no-cache")
    return run(*args, *(("-q",) if quiet else ()), *extra)


def fixture_audit(run: Run, docs: Path, *extra: str) -> tuple[int, list[dict[str, object]], str]:
    """The same with the fixture profile, as JSON: code, findings, stderr."""
    code, out, err = fixture_run(run, docs, "--profile", str(FIXTURES / "profile.toml"), "--format", "json", *extra)
    return code, json.loads(out)["findings"], err


def write_docs(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "docs"
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(textwrap.dedent(text).lstrip("\n"))
    return root


# One VALID and one INVALID document per docs rule, on the fixture package (they are also the
# examples ``rlmap audit --explain`` shows, in TorchRL terms).
CASES = {
    "stale-ref": (
        ".. currentmodule:: pkg.collector\n\nSee :class:`Collector` and ``pkg.envs.base.Env.step``.\n",
        ".. currentmodule:: pkg.collector\n\nSee :class:`Colector` and ``pkg.envs.base.Env.stepp``.\n",
    ),
    "unlinkable-ref": (
        "See :meth:`pkg.collector.Collector.rollout`.\n",
        "See :meth:`pkg.collector.Collector._prepare`.\n",
    ),
    "broken-label": (
        ".. _intro:\n\nIntro\n=====\n\nSee :ref:`intro` and :doc:`page`.\n",
        "Intro\n=====\n\nSee :ref:`no_such_label` and :doc:`no_such_page`.\n",
    ),
    "stale-line-anchor": (
        "``rollout`` is at pkg/collector.py:47.\n",
        "``rollout`` is at pkg/collector.py:12.\n",
    ),
}


@pytest.mark.parametrize("rule", sorted(CASES))
def test_rule_valid_and_invalid(run: Run, tmp_path: Path, rule: str) -> None:
    valid, invalid = CASES[rule]
    good = write_docs(tmp_path / "good", {"page.rst": valid})
    bad = write_docs(tmp_path / "bad", {"page.rst": invalid})
    _, good_findings, _ = fixture_audit(run, good, "--rule", rule)
    code, bad_findings, _ = fixture_audit(run, bad, "--rule", rule)
    assert good_findings == []
    assert bad_findings, f"{rule}: the INVALID example produced no finding"
    assert {f["rule"] for f in bad_findings} == {rule}
    assert code == 1


def test_stale_ref_suggests_the_renamed_symbol(run: Run, tmp_path: Path) -> None:
    docs = write_docs(tmp_path, {"page.rst": ".. currentmodule:: pkg.buffers\n\nUse :class:`Bufer`.\n"})
    _, findings, _ = fixture_audit(run, docs, "--rule", "stale-ref")
    assert [(f["line"], f["name"]) for f in findings] == [(3, "Bufer")]
    assert "pkg.buffers.Buffer" in str(findings[0]["suggestion"])


def test_code_rules_on_the_fixture(run: Run, tmp_path: Path) -> None:
    docs = write_docs(tmp_path, {"page.md": "# Nothing here\n"})
    _, findings, _ = fixture_audit(run, docs)
    by_rule = {(f["rule"], f["name"]) for f in findings}
    assert ("stale-alias", "pkg.collector.LLMCollector._shuttle") in by_rule
    assert ("undocumented-helper", "pkg.advantages._sanitize") in by_rule


def test_docstrings_are_audited_for_stale_references_with_no_docs(run: Run, make_package) -> None:  # type: ignore[no-untyped-def]
    """``--rule stale-ref`` read the docstrings' references once pages were given, and was refused
    with none ("nothing to audit"): the docstrings are docs of their own."""
    root = make_package(
        {
            "ds/__init__.py": "",
            "ds/mod.py": '''
                def run():
                    """Run it; see :func:`ds.mod.gone` and :func:`ds.mod.run`."""
            ''',
        }
    )
    args = ("audit", "--source", str(root / "ds"), "--package", "ds", "--format", "json", "--no-cache", "-q")
    code, out, err = run(*args, "--rule", "stale-ref")
    assert code == 1, err
    assert [(f["rule"], f["name"]) for f in json.loads(out)["findings"]] == [("stale-ref", "ds.mod.gone")]
    code, _, err = run(*args, "--rule", "broken-label")  # a rule of pages alone: still nothing to read
    assert code == 2
    assert "nothing to audit: no docs given" in err


def test_stale_docstring_ref(run: Run, make_package) -> None:  # type: ignore[no-untyped-def]
    root = make_package(
        {
            "dp/__init__.py": "",
            "dp/mod.py": '''
                class Module:
                    """A module.

                    Args:
                        size (int): the size.
                        colour (str): no longer taken.

                    Methods:
                        forward: runs it.
                        set_mode: sets the mode.
                        gone: was removed long ago.
                    """

                    def __init__(self, size):
                        self.size = size

                    def forward(self):
                        return self.size

                    def set_mode(self, mode=True):
                        raise RuntimeError("set_mode() has been removed; use the context manager")
            ''',
        }
    )
    code, out, _ = run(
        "audit",
        "--source",
        str(root / "dp"),
        "--package",
        "dp",
        "--rule",
        "stale-docstring-ref",
        "--format",
        "json",
        "--no-cache",
        "-q",
    )
    findings = json.loads(out)["findings"]
    assert [(f["line"], f["name"]) for f in findings] == [
        (6, "dp.mod.Module(colour)"),
        (10, "dp.mod.Module.set_mode"),
        (11, "dp.mod.Module.gone"),
    ]
    assert "now only raises" in str(findings[1]["message"])
    assert code == 1


def test_baseline_survives_a_line_move(run: Run, tmp_path: Path) -> None:
    docs = write_docs(tmp_path, {"page.rst": "See :ref:`missing_label`.\n"})
    baseline = tmp_path / "baseline.json"
    code, out, err = fixture_run(run, docs, "--rule", "broken-label", "--write-baseline", str(baseline), quiet=False)
    assert code == 0  # writing a baseline records the findings: it does not fail on them
    assert "recorded 1 finding(s)" in err
    assert out == "1 findings (1 error): 1 broken-label\n"  # the text report is its counts: the file holds the findings
    code, _, err = fixture_audit(run, docs, "--rule", "broken-label", "--write-baseline", str(baseline))
    assert (code, err) == (0, "")  # --quiet: no summary line
    (docs / "page.rst").write_text("Intro\n\nMore text.\n\nSee :ref:`missing_label`.\n")  # moved down four lines
    code, findings, _ = fixture_audit(
        run, docs, "--rule", "broken-label", "--baseline", str(baseline), "--fail-on", "new"
    )
    assert code == 0
    assert [(f["line"], f["known"]) for f in findings] == [(5, True)]
    # with a baseline, --fail-on new is the default; --fail-on any counts the known findings too
    assert fixture_audit(run, docs, "--rule", "broken-label", "--baseline", str(baseline))[0] == 0
    assert fixture_audit(run, docs, "--rule", "broken-label", "--baseline", str(baseline), "--fail-on", "any")[0] == 1
    (docs / "other.rst").write_text("See :ref:`another_missing`.\n")
    code, findings, _ = fixture_audit(
        run, docs, "--rule", "broken-label", "--baseline", str(baseline), "--fail-on", "new"
    )
    assert code == 1
    assert sorted((f["name"], f["known"]) for f in findings) == [("another_missing", False), ("missing_label", True)]


def test_fail_on_none_and_text_output(run: Run, tmp_path: Path) -> None:
    docs = write_docs(tmp_path, {"page.rst": "See :ref:`missing_label`.\n"})
    code, out, _ = fixture_run(run, docs, "--rule", "broken-label", "--fail-on", "none", quiet=False)
    assert code == 0
    assert out.splitlines()[0] == "page.rst"  # relative to the report root (here: the docs directory)
    assert (
        "broken-label         :ref:`missing_label` names no label in the docs" in out
    )  # two spaces after the longest id
    assert out.rstrip().endswith("\n1 findings (1 error): 1 broken-label")  # (no baseline: no new/known split)
    code, quiet, _ = fixture_run(run, docs, "--rule", "broken-label", "--fail-on", "none")
    assert code == 0
    assert quiet == out[: out.rindex("\n\n") + 1]  # --quiet: the findings, without the summary line
    baseline = tmp_path / "baseline.json"
    fixture_run(run, docs, "--rule", "broken-label", "--fail-on", "none", "--write-baseline", str(baseline))
    code, out, _ = fixture_run(run, docs, "--rule", "broken-label", "--baseline", str(baseline), quiet=False)
    assert code == 0
    # under a baseline the known findings are counted, not listed: a new one is not lost among them
    assert out == "1 findings (1 error; 0 new, 1 known; the known ones are not listed): 1 broken-label\n"
    (docs / "page.rst").write_text("See :ref:`missing_label`.\n\nAnd :ref:`new_label`.\n")
    code, out, _ = fixture_run(run, docs, "--rule", "broken-label", "--baseline", str(baseline), quiet=False)
    assert code == 1
    assert "new_label" in out
    assert "missing_label" not in out
    assert out.rstrip().endswith("2 findings (2 errors; 1 new, 1 known; the known ones are not listed): 2 broken-label")


def test_github_annotations(run: Run, tmp_path: Path) -> None:
    docs = write_docs(tmp_path, {"page.rst": "See :ref:`missing_label`.\n"})
    code, out, _ = fixture_run(run, docs, "--rule", "broken-label", "--format", "github")
    assert code == 1
    assert out.startswith("::error file=")
    assert ",line=1,col=5,title=rlmap broken-label::" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--docs", "/no/such/docs"], "docs path '/no/such/docs' does not exist"),
        (["--rule", "nope"], "unknown --rule 'nope' - rules are stale-ref, "),
        (["--rule", "stale-rf"], "unknown --rule 'stale-rf' - did you mean 'stale-ref'? (rules are "),
        (["--explain", "brokn-label"], "unknown rule 'brokn-label' - did you mean 'broken-label'? (rules are "),
        (["--format", "xml"], "'--format': 'xml' is not one of 'text', 'json', 'sarif', 'github'"),
        (["--fail-on", "some"], "'--fail-on': 'some' is not one of 'any', 'new', 'none'"),
        (["--baseline", "/no/such/baseline.json"], "/no/such/baseline.json: baseline does not exist"),
    ],
)
def test_usage_errors(run: Run, args: list[str], message: str) -> None:
    code, _, err = run("audit", "--source", str(FIXTURES), "--package", "pkg", "--no-cache", "-q", *args)
    assert code == 2
    assert err.startswith("rlmap: error: ")
    assert message in err


def test_a_docs_path_without_pages_is_refused(run: Run, tmp_path: Path) -> None:
    """An empty directory or a file that is no page was audited as docs with no page: every
    central symbol was reported as documented nowhere, with no word that nothing was read."""
    empty = tmp_path / "empty"
    (empty / "images").mkdir(parents=True)
    (empty / "images" / "logo.png").write_bytes(b"png")
    text = tmp_path / "notes.txt"
    text.write_text("See :ref:`x`.\n")
    code_dir = FIXTURES / "pkg"  # the package's code given as docs: modules, no gallery label
    for path, says in [
        (empty, f"no .rst or .md page (nor a sphinx-gallery script with a label) under docs path '{empty}'"),
        (code_dir, f"no .rst or .md page (nor a sphinx-gallery script with a label) under docs path '{code_dir}'"),
        (text, f"docs path '{text}' is not a page (.rst, .md) nor a Sphinx inventory (.inv)"),
    ]:
        code, out, err = run(
            "audit", "--source", str(FIXTURES), "--package", "pkg", "--no-cache", "-q", "--docs", str(path)
        )
        assert code == 2
        assert err.startswith(f"rlmap: error: {says}")
        assert out == ""
    # a directory of gallery scripts (the labels they define), a page under a directory of
    # other files, or a page given alone, is read
    gallery = tmp_path / "tutorials"
    gallery.mkdir()
    (gallery / "intro.py").write_text('"""\n.. _intro_tutorial:\n\nIntro\n=====\n"""\n')
    (empty / "images" / "page.md").write_text("See `pkg.missing.Thing`.\n")
    (tmp_path / "page.MARKDOWN").write_text("See `pkg.missing.Thing`.\n")
    (tmp_path / "linked").symlink_to(tmp_path / "page.MARKDOWN")  # (the page it names is read)
    for path in (gallery, empty, empty / "images" / "page.md", tmp_path / "page.MARKDOWN", tmp_path / "linked"):
        code, _, err = run(
            "audit", "--source", str(FIXTURES), "--package", "pkg", "--no-cache", "-q", "--docs", str(path)
        )
        assert code in (0, 1), err


def test_sarif_gives_the_message_and_the_suggestion_as_two_sentences(run: Run, tmp_path: Path) -> None:
    """The message ran into the suggestion (``... in the docs Suggestion: ...``)."""
    docs = write_docs(tmp_path, {"page.rst": "See :ref:`missing_label`.\n"})
    code, out, _ = fixture_run(run, docs, "--rule", "broken-label", "--format", "sarif", "--fail-on", "none")
    assert code == 0
    text = json.loads(out)["runs"][0]["results"][0]["message"]["text"]
    assert ":ref:`missing_label` names no label in the docs. Suggestion: " in text


def test_diff_is_refused_with_a_json_or_sarif_document(run: Run, tmp_path: Path) -> None:
    """--diff printed its unified diff before the document on stdout: neither a JSON reader nor a
    SARIF upload could read it."""
    docs = write_docs(tmp_path, {"page.rst": "See :ref:`missing_label`.\n"})
    for report in ("json", "sarif"):
        code, out, err = fixture_run(run, docs, "--diff", "--format", report)
        assert code == 2
        assert err.startswith(f"rlmap: error: --diff prints a unified diff, which a --format {report} document")
        assert out == ""
    code, _, err = fixture_run(run, docs, "--diff", "--format", "github", "--fail-on", "none")
    assert code == 0, err


def test_unreadable_doc_is_reported_and_the_rest_audited(run: Run, tmp_path: Path) -> None:
    docs = write_docs(tmp_path, {"good.rst": "See :ref:`missing_label`.\n"})
    (docs / "bad.rst").write_bytes(b"Title\n=====\n\ncaf\xe9 :ref:`x`\n")
    code, findings, err = fixture_audit(run, docs, "--rule", "broken-label")
    assert code == 1
    assert [f["name"] for f in findings] == ["missing_label"]
    assert "bad.rst:1: not valid UTF-8" in err


def test_explain_every_rule(run: Run) -> None:
    for rule in RULES:
        code, out, _ = run("audit", "--explain", rule)
        assert code == 0
        assert out.startswith(f"{rule} (")
        assert "Finding:" in out
        assert "Not a finding:" in out
        code, out, _ = run("audit", "--explain", rule, "--format", "json")  # (it printed the text)
        assert code == 0
        described = json.loads(out)
        assert (described["id"], described["summary"]) == (rule, RULES[rule].summary)
        assert (described["finding"], described["not_finding"]) == (RULES[rule].invalid, RULES[rule].valid)
    code, out, err = run("audit", "--explain", "stale-ref", "--format", "sarif")
    assert (code, out) == (2, "")
    assert "--explain has no sarif form" in err
    # --explain all: the rules could not be listed (audit --help names none)
    code, out, _ = run("audit", "--explain", "all")
    assert code == 0
    assert [line.split()[0] for line in out.split("\n\n")[0].splitlines()] == list(RULES)
    code, out, _ = run("audit", "--explain", "all", "--format", "json")
    assert [(row["id"], row["summary"]) for row in json.loads(out)] == [(r.id, r.summary) for r in RULES.values()]


# -- the real TorchRL docs ----------------------------------------------------------------------

# Every stale-ref the corpus yields, reviewed by hand against torchrl 0.14.1.
EXPECTED_STALE_REFS = {
    # (file, line, target): true positive?
    (
        "docs/source/reference/envs_recorders.rst",
        25,
        "torchrl.record.loggers.TensorBoardLogger",
    ): True,  # TensorboardLogger
    ("docs/source/reference/envs_transforms.rst", 132, "torchrl.envs._apply_transform"): True,  # a Transform method
    ("docs/source/reference/envs_vectorized.rst", 148, "torchrl.envs.batch_locked"): True,  # an EnvBase property
    ("docs/source/reference/llms.rst", 253, "torchrl.envs.llm.MLGymEnv"): True,  # never existed
    # autosummary entries autodoc cannot import (checked: the module has no such attribute)
    ("docs/source/reference/envs_libraries.rst", 118, "SafetyGymnasiumEnv"): True,  # torchrl.envs.libs only
    ("docs/source/reference/envs_libraries.rst", 119, "SafetyGymnasiumWrapper"): True,
    ("docs/source/reference/modules_models.rst", 12, "ACTModel"): True,  # torchrl.modules.models only
    # in torchrl's own docstrings (the focus subsystems); each checked: the module has no such attribute
    ("torchrl/collectors/_async_batched.py", 80, "torchrl.modules.SlotTransport"): True,  # modules.inference_server
    ("torchrl/collectors/_async_batched.py", 81, "torchrl.modules.ThreadingTransport"): True,
    ("torchrl/collectors/_async_batched.py", 533, "torchrl.modules.InferenceServer"): True,
    ("torchrl/collectors/_async_batched.py", 552, "torchrl.modules.InferenceServer"): True,
    ("torchrl/collectors/_async_batched.py", 682, "torchrl.modules.InferenceServer"): True,
    ("torchrl/collectors/_multi_base.py", 345, "torchrl.collectors.MultiProcessWeightSyncScheme"): True,
    # in the docstring of the implementation that follows update_policy_weights_'s overloads
    ("torchrl/collectors/_base.py", 1052, "torchrl.collectors.LocalWeightsUpdaterBase"): True,
    ("torchrl/collectors/_base.py", 1053, "torchrl.collectors.RemoteWeightsUpdaterBase"): True,
    ("torchrl/collectors/distributed/_ray_eval_runtime.py", 17, "torchrl.collectors.RayEvalWorker"): True,
    ("torchrl/collectors/weight_update.py", 33, "torchrl.collector.BaseCollector.update_policy_weights_"): True,
    # no module torchrl.modules.rnn (it is torchrl.modules.tensordict_module.rnn)
    ("torchrl/modules/tensordict_module/rnn.py", 919, "torchrl.modules.rnn.LSTMModule.make_tensordict_primer"): True,
    ("torchrl/modules/tensordict_module/rnn.py", 2350, "torchrl.modules.rnn.GRUModule.make_tensordict_primer"): True,
    # ":class:`~torchrl.modules.recurrent_mode``": a stray backquote makes the role's target wrong
    ("torchrl/modules/tensordict_module/rnn.py", 3178, "torchrl.modules.recurrent_mode`"): True,
}
# Every stale-example-ref (docstring examples of the focus subsystems), checked the same way.
EXPECTED_STALE_EXAMPLES = {
    ("torchrl/collectors/_evaluator.py", 262, "torchrl.weight_update.MultiProcessedWeightSyncScheme"),
    ("torchrl/collectors/llm/base.py", 92, "torchrl.modules.vLLMWrapper"),  # torchrl.modules.llm
    ("torchrl/collectors/llm/base.py", 94, "torchrl.envs.LLMEnv"),  # torchrl.envs.llm
    ("torchrl/collectors/llm/base.py", 100, "torchrl.envs.LLMEnv.from_dataloader"),
}


@pytest.mark.torchrl
def test_real_corpus(torchrl_cache: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    if not CORPUS.is_dir():
        pytest.fail(f"the TorchRL docs corpus is missing: expected {CORPUS} (../shared beside the repo)")
    monkeypatch.chdir(CORPUS)
    code = main(
        [
            "audit",
            "--docs",
            "docs/source",
            "--docs",
            "knowledge_base",
            "--format",
            "json",
            "--cache-dir",
            str(torchrl_cache),
            "-q",
            "--fail-on",
            "none",
        ]
    )
    findings = json.loads(capsys.readouterr().out)["findings"]
    assert code == 0
    stale = {(f["path"], f["line"], f["name"]) for f in findings if f["rule"] == "stale-ref"}
    assert stale == set(EXPECTED_STALE_REFS), "the corpus's stale-ref findings changed: review them and update the list"
    examples = {(f["path"], f["line"], f["name"]) for f in findings if f["rule"] == "stale-example-ref"}
    assert examples == EXPECTED_STALE_EXAMPLES
    false_positives = sum(1 for ok in EXPECTED_STALE_REFS.values() if not ok)
    assert false_positives <= 0.10 * len(EXPECTED_STALE_REFS)
    names = {(f["rule"], f["name"]) for f in findings}
    assert ("broken-label", "ref_data_layout") in names
    assert ("stale-docstring-ref", "torchrl.modules.tensordict_module.rnn.LSTMModule.set_recurrent_mode") in names
    assert ("stale-docstring-ref", "torchrl.modules.tensordict_module.rnn.GRUModule.set_recurrent_mode") in names
    assert ("stale-alias", "torchrl.collectors.llm.base.LLMCollector._shuttle") in names
    flagged = {f["name"] for f in findings}
    for harmless in (
        "env.reset",
        "env.batch_size",
        "collector.update_policy_weights_",
        "FutureWarning",
        "tensordict.TensorDictBase",
        "torch.nn.LSTM",
    ):
        assert harmless not in flagged


@pytest.mark.torchrl
def test_a_suggestion_leads_with_the_written_class(run: Run, torchrl_cache: Path, tmp_path: Path) -> None:
    """``Collector.rolout`` suggested ``AsyncBatchedCollector.rollout`` first, and
    ``rnn.LSTMModule.make_tensordict_primer`` ``GRUModule``'s: the class written leads."""
    docs = write_docs(
        tmp_path,
        {
            "page.rst": ":meth:`torchrl.collectors.Collector.rolout`\n\n"
            ":meth:`torchrl.modules.rnn.GRUModule.make_tensordict_primer`\n\n"
            ":meth:`torchrl.modules.rnn.LSTMModule.make_tensordict_primer`\n"
        },
    )
    code, out, _ = run(
        "audit", "--docs", str(docs), "--rule", "stale-ref", "--format", "json", "--cache-dir", str(torchrl_cache), "-q"
    )
    assert code == 1
    found = {f["name"]: f for f in json.loads(out)["findings"] if f["path"].endswith("page.rst")}
    spelt = str(found["torchrl.collectors.Collector.rolout"]["suggestion"])
    assert spelt == "did you mean torchrl.collectors.Collector.rollout? (a member of Collector)"
    for cls in ("GRUModule", "LSTMModule"):
        finding = found[f"torchrl.modules.rnn.{cls}.make_tensordict_primer"]
        assert str(finding["suggestion"]).startswith(
            f"the name exists as torchrl.modules.{cls}.make_tensordict_primer, "
        )


@pytest.mark.torchrl
def test_sarif_is_valid_sarif_2_1_0(
    torchrl_cache: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import jsonschema

    schema = json.loads((SHARED / "schemas" / "sarif-schema-2.1.0.json").read_text())
    monkeypatch.chdir(CORPUS)
    main(["audit", "--docs", "docs/source", "--format", "sarif", "--cache-dir", str(torchrl_cache), "-q"])
    sarif = json.loads(capsys.readouterr().out)
    jsonschema.validate(sarif, schema)
    results = sarif["runs"][0]["results"]
    assert results
    assert all(r["locations"][0]["physicalLocation"]["region"]["startLine"] >= 1 for r in results)
    assert {rule["id"] for rule in sarif["runs"][0]["tool"]["driver"]["rules"]} == set(RULES)


@pytest.mark.torchrl
def test_dogfood_generated_docs_have_no_stale_references(run: Run, torchrl_cache: Path) -> None:
    """Our committed rst, dropped next to TorchRL's reference pages (which it links), audits clean."""
    code, out, _ = run(
        "audit",
        "--docs",
        str(REPO / "generated_docs" / "rst"),
        "--docs",
        str(REPO / "generated_docs" / "md"),
        "--docs",
        str(CORPUS / "docs" / "source" / "reference" / "data_layout.rst"),
        "--docs",
        str(CORPUS / "docs" / "source" / "reference" / "profiling.rst"),
        "--format",
        "json",
        "--rule",
        "stale-ref",
        "--rule",
        "stale-line-anchor",
        "--rule",
        "broken-label",
        "--cache-dir",
        str(torchrl_cache),
        "-q",
        "--fail-on",
        "none",
    )
    ours = [f for f in json.loads(out)["findings"] if "generated_docs" in str(f["path"])]
    assert ours == []
    assert code == 0


def test_orphan_thresholds_come_from_the_config(run: Run, tmp_path: Path) -> None:
    docs = write_docs(tmp_path, {"page.md": "# Nothing here\n"})
    config = tmp_path / "pyproject.toml"
    config.write_text("[tool.rlmap]\naudit-min-callers = 1\n")
    code, out, _ = fixture_run(run, docs, "--config", str(config), "--rule", "orphaned-symbol", "--format", "json")
    names = {f["name"] for f in json.loads(out)["findings"]}
    assert "pkg.advantages._sanitize" in names  # one caller: central at threshold 1, a mere note at 3
    assert code == 1


def test_an_orphan_is_a_helper_when_only_undocumented_helper_is_asked_for(run: Run, tmp_path: Path) -> None:
    """A helper central enough to be an orphaned-symbol was dropped from ``--rule
    undocumented-helper``, which asked for every helper with no docstring."""
    docs = write_docs(tmp_path, {"page.md": "# Nothing here\n"})
    config = tmp_path / "pyproject.toml"
    config.write_text("[tool.rlmap]\naudit-min-callers = 1\n")
    both = ("--config", str(config), "--format", "json", "--rule", "orphaned-symbol", "--rule", "undocumented-helper")
    _, out, _ = fixture_run(run, docs, *both)
    found = json.loads(out)["findings"]
    assert {f["name"]: f["rule"] for f in found}["pkg.advantages._sanitize"] == "orphaned-symbol"  # the stronger
    _, out, _ = fixture_run(run, docs, "--config", str(config), "--format", "json", "--rule", "undocumented-helper")
    helpers = {f["name"] for f in json.loads(out)["findings"] if f["rule"] == "undocumented-helper"}
    # every helper of the two rules' findings (an orphaned attribute is no helper: self.x ...)
    assert helpers == {f["name"] for f in found if not str(f["message"]).startswith("self.")}
    assert "pkg.advantages._sanitize" in helpers


def test_lazy_exports_resolve_and_relative_members_are_checked(run: Run, make_package, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    root = make_package(
        {
            "lz/__init__.py": """
                __all__ = ["Lazy"]

                def __getattr__(name):
                    from lz._impl import Lazy
                    return Lazy
            """,
            "lz/_impl.py": "class Lazy:\n    def run(self):\n        return 1\n",
        }
    )
    docs = write_docs(
        tmp_path,
        {
            "page.rst": ".. currentmodule:: lz\n\n:class:`lz.Lazy` and :meth:`Lazy.run` exist; :meth:`Lazy.gone` does not.\n",
        },
    )
    code, out, _ = run(
        "audit",
        "--source",
        str(root / "lz"),
        "--package",
        "lz",
        "--docs",
        str(docs),
        "--rule",
        "stale-ref",
        "--format",
        "json",
        "--no-cache",
        "-q",
    )
    assert [f["name"] for f in json.loads(out)["findings"]] == ["Lazy.gone"]
    assert code == 1


def test_autosummary_and_autoclass_entries_that_resolve_to_nothing(run: Run, tmp_path: Path) -> None:
    page = """
        .. currentmodule:: pkg.collector

        .. autosummary::
            :toctree: generated/

            Collector
            Colector

        .. autoclass:: pkg.collector.Gone
            :members:
    """
    docs = write_docs(tmp_path, {"page.rst": page})
    code, findings, _ = fixture_audit(run, docs, "--rule", "stale-ref", "--rule", "unlinkable-ref")
    assert [(f["rule"], f["line"], f["name"]) for f in findings] == [
        ("stale-ref", 7, "Colector"),
        ("stale-ref", 9, "pkg.collector.Gone"),
    ]
    assert code == 1


def test_every_occurrence_is_a_finding_with_its_own_fingerprint(run: Run, tmp_path: Path) -> None:
    page = ".. currentmodule:: pkg.collector\n\n:class:`Colector` and :class:`Colector`.\n\nAgain :class:`Colector`.\n"
    docs = write_docs(tmp_path, {"page.rst": page})
    baseline = tmp_path / "baseline.json"
    _, findings, _ = fixture_audit(run, docs, "--rule", "stale-ref", "--write-baseline", str(baseline))
    assert [(f["line"], f["column"], f["occurrence"]) for f in findings] == [(3, 1, 0), (3, 23, 1), (5, 7, 2)]
    assert len({f["fingerprint"] for f in findings}) == 3
    recorded = json.loads(baseline.read_text())
    assert recorded["version"] == 2
    assert [entry["occurrence"] for entry in recorded["findings"]] == [0, 1, 2]
    # lines move: the same three are known; a fourth occurrence is new
    (docs / "page.rst").write_text("Intro.\n\n" + page + "\nAnd :class:`Colector`.\n")
    code, findings, _ = fixture_audit(run, docs, "--rule", "stale-ref", "--baseline", str(baseline), "--fail-on", "new")
    assert [(f["line"], f["known"]) for f in findings] == [(5, True), (5, True), (7, True), (9, False)]
    assert code == 1
    # the text output groups the occurrences of one name with a count
    code, out, _ = run(
        "audit", "--source", str(FIXTURES), "--package", "pkg", "--docs", str(docs), "--rule", "stale-ref",
        "--no-cache",
    )  # fmt: skip
    assert "x4 (also line 5, 7, 9)" in out
    assert out.rstrip().endswith("4 findings (4 errors): 4 stale-ref")


def test_a_version_1_baseline_still_holds_every_occurrence(run: Run, tmp_path: Path) -> None:
    import hashlib

    page = ".. currentmodule:: pkg.collector\n\n:class:`Colector` and :class:`Colector`.\n"
    docs = write_docs(tmp_path, {"page.rst": page})
    legacy = hashlib.sha256(b"stale-ref|page.rst|Colector").hexdigest()[:20]
    baseline = tmp_path / "old.json"
    baseline.write_text(json.dumps({"version": 1, "findings": [{"fingerprint": legacy}]}))
    code, findings, _ = fixture_audit(run, docs, "--rule", "stale-ref", "--baseline", str(baseline), "--fail-on", "new")
    assert [f["known"] for f in findings] == [True, True]
    assert code == 0


def test_sarif_says_whether_every_input_was_read(run: Run, tmp_path: Path) -> None:
    import jsonschema

    schema = json.loads((SHARED / "schemas" / "sarif-schema-2.1.0.json").read_text())
    docs = write_docs(tmp_path, {"good.rst": ".. currentmodule:: pkg.collector\n\n:class:`Colector`\n"})
    args = ["audit", "--source", str(FIXTURES), "--package", "pkg", "--docs", str(docs), "--rule", "stale-ref"]
    code, out, _ = run(*args, "--format", "sarif", "--no-cache", "-q", "--fail-on", "none")
    sarif = json.loads(out)
    jsonschema.validate(sarif, schema)
    assert code == 0
    run_ = sarif["runs"][0]
    assert run_["invocations"] == [{"executionSuccessful": True, "toolExecutionNotifications": []}]
    assert list(run_["originalUriBaseIds"]) == ["%SRCROOT%"]
    (result,) = run_["results"]
    assert result["locations"][0]["physicalLocation"]["region"] == {"startLine": 3, "startColumn": 1}
    assert {r["id"]: "```" in r["help"]["markdown"] for r in run_["tool"]["driver"]["rules"]}["stale-ref"]
    (docs / "bad.rst").write_bytes(b"caf\xe9\n")
    code, out, _ = run(*args, "--format", "sarif", "--no-cache", "-q", "--fail-on", "none")
    invocation = json.loads(out)["runs"][0]["invocations"][0]
    assert code == 3
    assert invocation["executionSuccessful"] is False
    assert "not valid UTF-8" in invocation["toolExecutionNotifications"][0]["message"]["text"]
    # JSON and GitHub's annotations say it too: an empty list of findings is not a clean run
    code, out, _ = run(*args, "--format", "json", "--no-cache", "-q", "--fail-on", "none")
    payload = json.loads(out)
    assert code == 3
    assert payload["complete"] is False
    assert [(row["path"], "not valid UTF-8" in row["message"]) for row in payload["skipped"]] == [("bad.rst", True)]
    code, out, _ = run(*args, "--format", "github", "--no-cache", "-q", "--fail-on", "none")
    assert code == 3
    assert out.startswith("::warning file=bad.rst,line=1,title=rlmap input not read::")
    assert out.splitlines()[0].endswith(": not read, so not audited")
    (docs / "bad.rst").unlink()
    code, out, _ = run(*args, "--format", "json", "--no-cache", "-q", "--fail-on", "none")
    assert (code, json.loads(out)["complete"], json.loads(out)["skipped"]) == (0, True, [])


def test_sarif_links_rlmap_home_page_and_the_readme_section_on_every_rule() -> None:
    import tomllib

    from rlmap.audit.report import HELP_ANCHOR, project_urls, render_sarif

    declared = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["urls"]
    urls = project_urls([f"{label}, {url}" for label, url in declared.items()])  # as the metadata lists them
    assert urls.home == declared["Homepage"]
    assert urls.help == declared["Documentation"] + HELP_ANCHOR
    slug = HELP_ANCHOR[1:]  # GitHub's anchor of the README heading the help points at
    headings = [line.lstrip("#").strip() for line in (REPO / "README.md").read_text().splitlines() if line[:1] == "#"]
    assert slug in {"-".join(heading.lower().split()) for heading in headings}
    driver = json.loads(render_sarif([], frozenset(), urls=urls))["runs"][0]["tool"]["driver"]
    assert driver["informationUri"] == declared["Homepage"]
    assert {rule["helpUri"] for rule in driver["rules"]} == {urls.help}
    assert all(urls.help in rule["help"]["markdown"] for rule in driver["rules"])
    bare = json.loads(render_sarif([], frozenset(), urls=project_urls([])))["runs"][0]["tool"]["driver"]
    assert "informationUri" not in bare
    assert all("helpUri" not in rule for rule in bare["rules"])


def test_github_annotations_errors_first_within_limits_and_a_step_summary(
    run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    page = "See :meth:`pkg.collector.Collector._prepare`.\n\n.. currentmodule:: pkg.collector\n\n" + "".join(
        f":class:`Gone{i}`\n\n" for i in range(12)
    )
    docs = write_docs(tmp_path, {"page.rst": page})
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    code, out, _ = run(
        "audit", "--source", str(FIXTURES), "--package", "pkg", "--docs", str(docs), "--rule", "stale-ref",
        "--rule", "unlinkable-ref", "--format", "github", "--no-cache", "-q",
    )  # fmt: skip
    assert code == 1
    lines = out.splitlines()
    assert [line.split(" ", 1)[0] for line in lines] == ["::error"] * 10 + ["::warning", "::notice"]
    assert "2 more finding(s) not annotated" in lines[-1]
    assert lines[-1].endswith("the job summary lists them all")
    table = summary.read_text()
    assert table.startswith("earlier step\n### rlmap audit\n")  # appended, as GitHub expects
    # the count line says how many findings are of each severity (a note never fails a run)
    assert "\n13 findings (12 errors, 1 warning; 13 new, 0 known): 12 stale-ref, 1 unlinkable-ref\n" in table
    code, out, _ = run(
        "audit", "--source", str(FIXTURES), "--package", "pkg", "--docs", str(docs), "--rule", "stale-ref",
        "--rule", "unlinkable-ref", "--format", "json", "--no-cache", "-q",
    )  # fmt: skip
    report = json.loads(out)
    counted = {level: sum(f["severity"] == level for f in report["findings"]) for level in ("error", "warning", "note")}
    assert report["summary"]["by_severity"] == counted == {"error": 12, "warning": 1, "note": 0}
    assert table.count("| error | `stale-ref` |") == 12
    assert "| warning | `unlinkable-ref` | page.rst:1 |" in table
    # without a step summary (not on GitHub, or it cannot be written), the notice says where to look
    monkeypatch.delenv("GITHUB_STEP_SUMMARY")
    code, out, _ = run(
        "audit", "--source", str(FIXTURES), "--package", "pkg", "--docs", str(docs), "--rule", "stale-ref",
        "--rule", "unlinkable-ref", "--format", "github", "--no-cache", "-q",
    )  # fmt: skip
    assert out.splitlines()[-1].endswith("rlmap audit --format text lists them all")


@pytest.mark.torchrl
def test_show_finds_what_the_audit_resolves_in_torchrls_docs(torchrl_model: Any) -> None:
    """One walk of a dotted path (imports, inheritance) for the audit and for ``show``: every
    reference of TorchRL's docs the audit resolves to a symbol of the package, ``show`` finds."""
    from rlmap.audit.context import EXTERNAL_PREFIX, AuditContext
    from rlmap.audit.docscan import report_root, scan_docs
    from rlmap.query.lookup import find_symbols

    if not CORPUS.is_dir():
        pytest.skip(f"TorchRL's docs are not here: expected {CORPUS} (../shared beside the repository)")
    docs = [CORPUS / "docs" / "source"]
    context = AuditContext(
        model=torchrl_model, docs=scan_docs(docs, report_root(docs)), root=CORPUS, package="torchrl", focus=()
    )
    resolved = {
        reference: found
        for reference in set(context.code_references())
        if (found := context.resolve(reference)) is not None and not found.startswith(EXTERNAL_PREFIX)
    }
    inherited = {
        reference for reference, found in resolved.items() if not found.startswith(reference.rpartition(".")[0])
    }
    assert len(resolved) > 500
    assert inherited
    assert {reference: find_symbols(torchrl_model, reference) for reference in resolved} == {
        reference: [found] for reference, found in resolved.items()
    }


def test_a_method_named_by_another_role_is_unlinkable_with_the_role_that_fits(run: Run, tmp_path: Path) -> None:
    """``:func:`step``` for a method: not stale (the method exists), not a local function that
    happens to share the name: Sphinx cannot link it, and the role and path that would are said,
    the most general class's member first."""
    docs = write_docs(tmp_path, {"page.rst": ".. currentmodule:: pkg.collector\n\nSee :func:`step`.\n"})
    _, findings, _ = fixture_audit(run, docs, "--rule", "stale-ref", "--rule", "unlinkable-ref")
    assert [(f["rule"], f["line"], f["name"]) for f in findings] == [("unlinkable-ref", 3, "step")]
    assert str(findings[0]["suggestion"]).startswith("qualify it: :meth:`~pkg.Env.step`")


def test_the_audit_says_what_it_could_not_read_after_its_report(tmp_path: Path) -> None:
    """As show and graph do: the report, then the files left out and the summary (it printed
    "rlmap: error: 1 file(s) could not be read..." before the findings it qualifies)."""
    import subprocess
    import sys

    from tests.conftest import write_package

    root = write_package(
        tmp_path / "src", {"pk/__init__.py": "", "pk/ok.py": "def f():\n    pass\n", "pk/bad.py": "def g(:\n"}
    )
    docs = write_docs(tmp_path, {"page.rst": "See :ref:`missing_label`.\n"})
    args = [
        "audit",
        "--source",
        str(root),
        "--package",
        "pk",
        "--docs",
        str(docs),
        "--no-cache",
        "-q",
        "--fail-on",
        "none",
    ]
    done = subprocess.run(
        [sys.executable, "-m", "rlmap", *args], check=False, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    assert done.returncode == 3, done.stdout
    lines = done.stdout.splitlines()
    report = lines.index("page.rst")
    warning = next(n for n, line in enumerate(lines) if line.startswith("rlmap: warning: pk/bad.py:1: syntax error"))
    assert report < warning
    assert lines[-1].startswith("rlmap: error: 1 file(s) could not be read or indexed in full")


def test_a_line_anchor_holds_its_name_as_a_word_at_its_line_or_below_its_decorators(run: Run, tmp_path: Path) -> None:
    """An anchor into a file that is gone said nothing; one whose line held the name inside another
    (``prepare`` in ``def _prepare``) passed; one at a decorator (where ``inspect`` and Sphinx's
    ``linkcode`` put a decorated function) was stale."""
    docs = write_docs(
        tmp_path,
        {
            "page.rst": """
                ``Collector`` is at pkg/gone.py:3.

                ``prepare`` is at pkg/collector.py:29.

                ``mode`` is at pkg/collector.py:25.

                ``rollout`` is at pkg/collector.py:25.

                ``Helper`` is at other_project/gone.py:3.
            """
        },
    )
    _, findings, _ = fixture_audit(run, docs, "--rule", "stale-line-anchor")
    found = {(finding["line"], finding["message"]) for finding in findings}
    assert found == {
        (1, "pkg/gone.py does not exist in the pkg source"),
        (3, "pkg/collector.py:29 no longer holds prepare (it holds: 'def _prepare(self):')"),
        (7, "pkg/collector.py:25 no longer holds rollout (it holds: '@property')"),
    }


def test_an_example_in_a_docstring_has_no_column(run: Run, make_package) -> None:  # type: ignore[no-untyped-def]
    """A stale import in an indented docstring example was placed at a column off by the
    docstring's indentation (47 where the name is at 51): a finding in a docstring has none."""
    root = make_package(
        {
            "dx/__init__.py": "",
            "dx/mod.py": '''
                class Runner:
                    def run(self):
                        """Run it.

                        Examples:
                            >>> from dx.mod import Gone
                            >>> Gone()
                        """
            ''',
        }
    )
    args = ("audit", "--source", str(root / "dx"), "--package", "dx", "--format", "json", "--no-cache", "-q")
    code, out, err = run(*args, "--rule", "stale-example-ref")
    assert code == 1, err
    found = json.loads(out)["findings"]
    assert [(f["rule"], f["line"], f["column"]) for f in found] == [("stale-example-ref", 6, 0)]


def test_a_missing_member_is_matched_among_its_class_members_first(run: Run, tmp_path: Path) -> None:
    """``:meth:`EnvBase.rollout_trajectory``` was told to mean ``samplers._trajectory``, a private
    function of another module spelt like it: a member of the class it names comes first."""
    docs = write_docs(tmp_path, {"page.rst": "See :meth:`pkg.collector.Collector.rollout_steps`.\n"})
    _, findings, _ = fixture_audit(run, docs, "--rule", "stale-ref")
    assert [finding["suggestion"] for finding in findings] == [
        "did you mean pkg.collector.Collector.rollout? (a member of Collector)"
    ]


def test_the_text_report_wraps_under_its_column_on_a_terminal_only() -> None:
    """At 80 columns the report printed lines of about 250 characters, which the terminal folded
    at its left edge through the table; into a pipe (no width) lines stay whole, for grep."""
    from rlmap.audit.catalog import Finding
    from rlmap.audit.report import render_text

    message = "torchrl/objectives/value/advantages.py:1918 no longer holds reward " * 3
    suggestion = "reward is now at torchrl/objectives/value/advantages.py:239; better, refer to it by name " * 2
    finding = Finding("stale-line-anchor", "error", "page.rst", 12, "reward", message.strip(), suggestion.strip())
    piped = render_text([finding], frozenset(), summary_line=False)
    assert len(piped.splitlines()) == 3  # the path, the finding, its suggestion: whole
    wrapped = render_text([finding, finding], frozenset(), summary_line=False, width=80).splitlines()
    assert all(len(line) <= 80 for line in wrapped)
    # too little room in the message column: the rule alone on the finding's line, then the
    # message, its count and its suggestion at one indent (the count and the suggestion began
    # in the message's column and wrapped back to 8: the eye zig-zagged)
    assert wrapped[1].split() == ["12", "error", "stale-line-anchor"]
    assert all(line.startswith(" " * 8) and line[8] != " " for line in wrapped[2:])
    assert any(line.startswith(" " * 8 + "x2 (also line 12)") for line in wrapped)
    assert any(line.startswith(" " * 8 + "-> reward is now") for line in wrapped)
    assert " ".join(" ".join(line.split()) for line in wrapped[1:]).count("no longer holds reward") == 3
    wide = render_text([finding], frozenset(), summary_line=False, width=160).splitlines()
    column = wide[1].index("torchrl/")  # room enough: under the message's column
    assert all(len(line) <= 160 and line.startswith(" " * column) and line[column] != " " for line in wide[2:])
    # a role's option is never cut at its hyphen (``:undoc-`` / ``members:``)
    hyphened = Finding("x-rule", "error", "page.rst", 3, "n", "see the option " + ":undoc-members: " * 12, "")
    lines = render_text([hyphened], frozenset(), summary_line=False, width=100).splitlines()
    assert not any(line.rstrip().endswith(":undoc-") for line in lines), lines


def test_a_configured_docs_path_that_does_not_exist_names_its_file_not_an_option(run: Run, tmp_path: Path) -> None:
    """``docs = ["nodocs"]`` under ``[tool.rlmap]`` was reported as "pass --docs an existing
    directory", an option never passed: the error names the file and the key."""
    config = tmp_path / "rlmap.toml"
    config.write_text('[tool.rlmap]\ndocs = ["nodocs"]\n', encoding="utf-8")
    args = ("audit", "--source", str(FIXTURES), "--package", "pkg", "--no-cache", "-q")
    code, _, err = run(*args, "--config", str(config))
    assert code == 2
    assert err.startswith("rlmap: error: ")
    assert f"rlmap.toml: [tool.rlmap] docs: docs path '{tmp_path / 'nodocs'}' does not exist - " in err
    assert err.rstrip().endswith("fix the path in that file, or pass --docs")
    # the same path passed on the command line is the option's
    code, _, err = run(*args, "--config", str(config), "--docs", str(tmp_path / "nodocs"))
    assert code == 2
    assert "[tool.rlmap]" not in err
    assert err.rstrip().endswith("pass --docs an existing directory or file")


def test_the_check_phase_is_said_when_it_starts_and_when_it_ends(
    run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A log said ``check (at 0.6 s)`` and never that it ended, where every other phase has an
    end line: the check reports the rules it ran once they are done."""
    import contextlib

    from rlmap.audit.rules import RULES
    from rlmap.cli import common

    reports: list[tuple[str, int, int]] = []

    @contextlib.contextmanager
    def recorded(quiet: bool, first: str = "index"):  # type: ignore[no-untyped-def]
        del quiet, first
        yield lambda phase, done, total: reports.append((phase, done, total))

    monkeypatch.setattr(common, "progress_display", recorded)
    docs = write_docs(tmp_path, {"page.rst": "See :ref:`missing_label`.\n"})
    fixture_run(run, docs, "--fail-on", "none", quiet=False)
    checks = [report for report in reports if report[0] == "check"]
    assert checks == [("check", 0, 0), ("check", len(RULES), len(RULES))]
    reports.clear()
    fixture_run(run, docs, "--fail-on", "none", "--rule", "broken-label", quiet=False)
    assert [report for report in reports if report[0] == "check"] == [("check", 0, 0), ("check", 1, 1)]
