"""``rlmap audit`` (and ``rlmap graph``) on hostile input.

Every pattern over docs text runs in linear time; cost is near-linear in the code and the docs
(deep hierarchies, thousands of anchors and stale references, huge files); the same input gives
the same bytes from any working directory and hash seed; control characters from the docs never
reach a terminal; a bad baseline is a usage error (exit 2), never a crash or a silent accept.

Cost tests either count work (file opens, spelling comparisons) or give a subprocess a timeout
that the quadratic or backtracking code this replaced exceeded many times over (measured on the
2-core CI machine; see each test).
"""

from __future__ import annotations

import difflib
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, ClassVar

import pytest

from rlmap.audit.docscan import MAX_DOC_BYTES
from rlmap.audit.rstscan import MAX_LINE_CHARS
from rlmap.audit.rules import SPELLING_BUDGET
from rlmap.model.resolve import Resolver
from tests.conftest import FIXTURES, Run, model_of

REPO = Path(__file__).parent.parent.parent
SCHEMA = REPO.parent / "shared" / "schemas" / "sarif-schema-2.1.0.json"
# What a terminal must never receive raw: C0 controls but tab and newline, DEL, C1, bidi overrides.
RAW_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def rlmap(*args: str, cwd: Path, timeout: float, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m rlmap ARGS`` in ``cwd``; a run that outlives ``timeout`` fails the test."""
    environment = {**os.environ, **(env or {})}
    environment["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), environment.get("PYTHONPATH", "")]))
    try:
        return subprocess.run(
            [sys.executable, "-m", "rlmap", *args],
            cwd=cwd,
            env=environment,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"rlmap {' '.join(args[:2])} did not finish within {timeout} s")


def fixture_args(docs: Path, *extra: str) -> list[str]:
    return ["audit", "--source", str(FIXTURES), "--package", "pkg", "--docs", str(docs), "--no-cache", "-q", *extra]


STALE = ".. currentmodule:: pkg.collector\n\n:class:`Colector`\n"  # a stale-ref two lines down
STALE_MD = "See `pkg.collector.Colector`.\n"


# -- 1. every pattern over docs text is linear in the line ----------------------------------------

MB = 1_000_000
LONG_LINES = {
    # old cost of one such 1 MB line, measured: "> 60 s" means killed after 60 s
    "backticks": "`" * MB,  # 0.1 s
    "double-backtick-dotted": "``" + "a." * (MB // 2),  # > 60 s (``[\w.]*\.[\w.]*\w`` backtracks)
    "backtick-dotted": "`" + "a." * (MB // 2),  # > 60 s
    "colons": ":" * MB,
    "dotted": "a." * (MB // 2),  # > 60 s (every position starts a path that scans the run)
    "word": "a" * MB,  # > 60 s
    "path-colon": "path.py:" * (MB // 8),
    "dot-py": ".py" * (MB // 3),  # > 60 s
    "repo-paths": "examples/" * (MB // 9),  # > 60 s
    "slashes": "a/" * (MB // 2),  # > 60 s
    "spaces": " " * MB + "x",
    "open-angles": ":class:`" + "<" * MB + "`",  # ``^.*<([^>]+)>$`` is quadratic without a '>'
    "anchors": "a.py:1 " * (MB // 7),  # 142,857 anchors: each looks at a fixed window only
    "roles": ":class:`" * (MB // 8),
}


def test_megabyte_lines_are_skipped_and_the_rest_of_the_page_read(tmp_path: Path) -> None:
    """docutils is handed no line over MAX_LINE_CHARS: such a line is blanked and said, the page read on."""
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, line in LONG_LINES.items():
        (docs / f"{name}.rst").write_text(f"Title\n\n{line}\n\n{STALE}", encoding="utf-8")
        (docs / f"{name}.md").write_text(f"# Title\n\n{line}\n\n{STALE_MD}", encoding="utf-8")
    done = rlmap(*fixture_args(docs, "--rule", "stale-ref", "--format", "json"), cwd=tmp_path, timeout=90)
    assert done.returncode == 1, done.stderr  # findings (the pages not fully read are said on stderr)
    findings = json.loads(done.stdout)["findings"]
    # every file was scanned to its end: the line after the megabyte still yields its finding
    stale = {(f["path"], f["line"]) for f in findings if f["name"].endswith("Colector")}
    expected = {(f"{name}.rst", 7) for name in LONG_LINES} | {(f"{name}.md", 5) for name in LONG_LINES}
    assert stale == expected
    assert f"open-angles.rst:3: a line of 1000009 characters (over {MAX_LINE_CHARS}) not parsed" in done.stderr


def test_hostile_paragraphs_within_the_limits_parse_in_linear_time(tmp_path: Path) -> None:
    """Each shape cut into paragraphs of lines just under the limit: a quarter megabyte per page.

    Measured before docutils' quadratic inline patterns (standalone URIs, ``name_`` references)
    were switched off and MyST roles read with a bounded rule: ``path-colon`` > 60 s (rst), ``colons``
    37 s (Markdown); now the 56 pages take about 15 s together.
    """
    docs = tmp_path / "docs"
    docs.mkdir()
    width = MAX_LINE_CHARS - 1000
    for name, line in LONG_LINES.items():
        chunks = [line[start : start + width] for start in range(0, MB // 4, width)]
        for joint in ("\n\n", "\n"):  # paragraphs, and one paragraph of many lines (until the block limit)
            suffix = "p" if joint == "\n\n" else "l"
            body = joint.join(chunks)
            (docs / f"{name}-{suffix}.rst").write_text(f"Title\n\n{body}\n\n{STALE}", encoding="utf-8")
            (docs / f"{name}-{suffix}.md").write_text(f"# Title\n\n{body}\n\n{STALE_MD}", encoding="utf-8")
    done = rlmap(*fixture_args(docs, "--rule", "stale-ref", "--format", "json"), cwd=tmp_path, timeout=240)
    assert done.returncode in (1, 3), done.stderr
    findings = json.loads(done.stdout)["findings"]
    found = {f["path"] for f in findings if f["name"].endswith("Colector")}
    # (the last, shorter line of backticks cannot close the Markdown fence the first one opens)
    assert found == {f"{name}-{s}.{x}" for name in LONG_LINES for s in "pl" for x in ("rst", "md")} - {"backticks-l.md"}


# -- 2. cost near-linear in the input -------------------------------------------------------------


def _chain(root: Path, depth: int, reads: int) -> Path:
    """A package with a ``depth``-level inheritance chain; each level reads ``reads`` inherited attributes."""
    attributes = [f"a{k}" for k in range(reads)]
    body = " + ".join(["self.step()", "super().step()", "self.x.run()", *(f"self.{a}" for a in attributes)])
    parts = [
        "class Helper:\n    def run(self):\n        return 1\n",
        textwrap.dedent(f'''
            class C0:
                """The root.

                Methods:
                    step: one step.
                """

                def __init__(self, size):
                    self.x = Helper()
                    self.size = size
                    {" = ".join(f"self.{a}" for a in attributes)} = 0

                def step(self):
                    return self.x.run()
        '''),
    ]
    for level in range(1, depth):
        parts.append(
            f'class C{level}(C{level - 1}):\n    """Level {level}.\n\n    Methods:\n        step: one step.\n    """\n\n'
            f"    def m{level}(self):\n        return {body}\n"
        )
    package = root / "deep"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "chain.py").write_text("\n\n".join(parts))
    return package


class _Counting(dict):  # type: ignore[type-arg]
    """A dict that counts its lookups (``get``, ``[]``, ``in``) into ``self.count[0]``."""

    count: ClassVar[list[int]] = [0]

    def get(self, key, default=None):  # type: ignore[no-untyped-def]
        self.count[0] += 1
        return super().get(key, default)

    def __getitem__(self, key):  # type: ignore[no-untyped-def]
        self.count[0] += 1
        return super().__getitem__(key)

    def __contains__(self, key):  # type: ignore[no-untyped-def]
        self.count[0] += 1
        return super().__contains__(key)


def test_a_3000_level_inheritance_chain_resolves_with_linear_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Counted: lookups in the class-hierarchy tables while the model is resolved.  Before, every
    # member lookup walked a materialized MRO and every attribute read walked all subclasses:
    # about 3000 x 7 reads x 1500 levels = 30 million lookups (graph > 3 minutes on the
    # reviewer's chain); now each question is answered once per class.
    package = _chain(tmp_path / "src", 3000, 4)
    counter = [0]
    monkeypatch.setattr(_Counting, "count", counter)
    original = Resolver.__init__

    def counting_init(self: Resolver, modules: Any) -> None:
        original(self, modules)
        counter[0] = 0  # building the tables is linear by construction: count what follows
        self.bases = _Counting(self.bases)
        self.subclasses = _Counting(self.subclasses)
        self.members = _Counting(self.members)  # type: ignore[assignment]

    monkeypatch.setattr(Resolver, "__init__", counting_init)
    model = model_of(package, "deep")
    assert counter[0] <= 60 * 3000, counter[0]
    edges = {(edge.caller, edge.callee) for edge in model.edges()}
    # resolution is unchanged: the deepest class still reaches the root's members
    assert ("deep.chain.C2999.m2999", "deep.chain.C0.step") in edges
    assert ("deep.chain.C2999.m2999", "deep.chain.Helper.run") in edges


def test_auditing_a_3000_level_chain_costs_linear_time(tmp_path: Path) -> None:
    # Measured: 7 s (6 of them parsing); before, one ast.walk of the whole file per docstring
    # and a breadth-first walk up the chain per ``Methods:`` entry took 150 s.
    package = _chain(tmp_path / "src", 3000, 4)
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.rst").write_text(
        ".. currentmodule:: deep.chain\n\n"
        + "".join(f":meth:`C{level}.step` and :meth:`C{level}.gone`\n" for level in range(0, 3000, 3))
    )
    audit = rlmap(
        "audit", "--source", str(package), "--package", "deep", "--docs", str(docs), "--no-cache",
        "-q", "--format", "json", "--rule", "stale-ref", "--rule", "stale-docstring-ref",
        cwd=tmp_path, timeout=40,
    )  # fmt: skip
    assert audit.returncode == 1, audit.stderr
    findings = json.loads(audit.stdout)["findings"]
    assert {f["name"] for f in findings} == {f"C{level}.gone" for level in range(0, 3000, 3)}


def test_a_chain_defined_leaf_first_does_not_hit_the_recursion_limit(run: Run, tmp_path: Path) -> None:
    # ``class C0(C1)`` ... ``class C2999``: the first MRO asked for is 3000 deep (was exit 70)
    package = tmp_path / "rev"
    package.mkdir()
    (package / "__init__.py").write_text("")
    classes = [
        f"class C{level}(C{level + 1}):\n    def m{level}(self):\n        return self.base()\n" for level in range(2999)
    ]
    (package / "chain.py").write_text("\n\n".join([*classes, "class C2999:\n    def base(self):\n        return 1\n"]))
    code, out, err = run("graph", "--source", str(package), "--package", "rev", "--no-cache", "-q", "-j", "1")
    assert code == 0, err
    edges = {(edge["caller"], edge["callee"]) for edge in json.loads(out)["edges"]}
    assert ("rev.chain.C0.m0", "rev.chain.C2999.base") in edges


def _many_functions(root: Path, count: int) -> Path:
    package = root / "big"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "mod.py").write_text("".join(f"def handler_{i:04d}(x):\n    return x + {i}\n\n\n" for i in range(count)))
    return package


def test_line_anchors_read_each_source_file_once(run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Before: one read (and one split) of the whole file per anchor - 8,000 anchors into one
    # file took 170 s.  Counted here: opens of the file, whoever opens it.
    package = _many_functions(tmp_path / "src", 2000)
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "anchors.rst").write_text(
        "".join(f"``handler_{i % 2000:04d}`` is at big/mod.py:{(i * 7) % 8000 + 1}.\n" for i in range(8000))
    )
    opens: list[str] = []
    real_open, real_os_open = __import__("io").open, os.open

    def counting_open(file, *args, **kwargs):  # type: ignore[no-untyped-def]
        if str(file).endswith("mod.py"):
            opens.append(str(file))
        return real_open(file, *args, **kwargs)

    def counting_os_open(path, *args, **kwargs):  # type: ignore[no-untyped-def]
        if str(path).endswith("mod.py"):
            opens.append(str(path))
        return real_os_open(path, *args, **kwargs)

    monkeypatch.setattr("io.open", counting_open)
    monkeypatch.setattr("builtins.open", counting_open)
    monkeypatch.setattr(os, "open", counting_os_open)
    code, out, _ = run(
        "audit", "--source", str(package), "--package", "big", "--docs", str(docs), "--no-cache", "-q", "-j", "1",
        "--rule", "stale-line-anchor", "--format", "json",
    )  # fmt: skip
    assert code == 1
    findings = json.loads(out)["findings"]
    right = sum(1 for i in range(8000) if (i * 7) % 8000 + 1 == 4 * (i % 2000) + 1)
    assert len(findings) == 8000 - right > 7000
    assert "handler_0001 is now at big/mod.py:5" in {f["suggestion"].split(";")[0] for f in findings}
    assert len(opens) <= 4, opens  # indexing (hash + parse) and the audit: not one per anchor


def test_spelling_suggestions_are_bounded(run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Before: difflib over every name of the package for each stale reference - 5,000 distinct
    # ones took > 60 s.  Counted here: SequenceMatcher comparisons (one set_seq1 per candidate).
    package = _many_functions(tmp_path / "src", 3000)
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "stale.rst").write_text("".join(f"Use ``big.mod.handlr_{i:04d}``.\n" for i in range(5000)))
    compared = [0]
    set_seq1 = difflib.SequenceMatcher.set_seq1

    def counting(self: difflib.SequenceMatcher[str], a: str) -> None:
        compared[0] += 1
        set_seq1(self, a)

    monkeypatch.setattr(difflib.SequenceMatcher, "set_seq1", counting)
    code, out, _ = run(
        "audit", "--source", str(package), "--package", "big", "--docs", str(docs), "--no-cache", "-q", "-j", "1",
        "--rule", "stale-ref", "--format", "json",
    )  # fmt: skip
    assert code == 1
    findings = json.loads(out)["findings"]
    assert len(findings) == 5000
    assert compared[0] <= SPELLING_BUDGET + 5000  # the old search: 5000 x 3000 = 15,000,000
    # the budget still buys real suggestions, exact ones, for the first references
    assert findings[0]["suggestion"].startswith("did you mean big.mod.handler_0000")
    assert findings[-1]["suggestion"] == "remove the reference or point it at the code that replaced it"


def test_huge_and_special_docs_files_are_skipped_with_a_diagnostic(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    with open(docs / "huge.rst", "wb") as handle:
        handle.truncate(100 * 1024 * 1024)  # 100 MB (sparse): was read whole and scanned line by line
    (docs / "small.rst").write_text(STALE)
    os.mkfifo(docs / "pipe.rst")  # opening it for reading would block forever
    outside = tmp_path / "secret.txt"
    outside.write_text(":class:`Leaked`\n")
    (docs / "link.md").symlink_to(outside)
    done = rlmap(*fixture_args(docs, "--rule", "stale-ref", "--format", "json"), cwd=tmp_path, timeout=30)
    assert done.returncode == 1, done.stderr
    assert [(f["path"], f["name"]) for f in json.loads(done.stdout)["findings"]] == [("small.rst", "Colector")]
    assert f"huge.rst:1: 104857600 bytes, over the {MAX_DOC_BYTES // 2**20} MiB limit for a docs file" in done.stderr
    assert "pipe.rst:1: not a regular file; skipped" in done.stderr
    assert "link.md:1: a symlink out of docs/ (the report root); file skipped" in done.stderr


# -- 3. same input, same bytes ---------------------------------------------------------------------


@pytest.fixture
def repository(tmp_path: Path) -> Path:
    """A checkout (``.git``) with its package under ``src/`` and docs with an awkward file name."""
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    package = repo / "src" / "dp"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "mod.py").write_text(
        'class Module:\n    """A module.\n\n    Args:\n        colour: gone.\n    """\n\n'
        "    def __init__(self, size):\n        self.size = size\n\n    def forward(self):\n        return 1\n"
    )
    docs = repo / "docs"
    docs.mkdir()
    (docs / "we ird #%?.rst").write_text(
        ".. currentmodule:: dp.mod\n\n:class:`Modul`, :meth:`Module.forwad`, ``dp.mod.Gone`` and :ref:`nowhere`.\n"
        "``forward`` is at dp/mod.py:3.\n"
    )
    (docs / "b.md").write_text("See `dp.mod.Missing` and `dp.mod.Module`.\n")
    return repo


def _audit_bytes(repo: Path, cwd: Path, seed: str, jobs: str, *extra: str) -> str:
    done = rlmap(
        "audit", "--source", str(repo / "src"), "--package", "dp", "--docs", str(repo / "docs"), "--no-cache", "-q",
        "-j", jobs, "--fail-on", "none", *extra,
        cwd=cwd, timeout=60, env={"PYTHONHASHSEED": seed},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_same_bytes_from_any_directory_hash_seed_and_job_count(repository: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere" / "deeper"
    elsewhere.mkdir(parents=True)
    for output_format in ("json", "sarif", "text", "github"):
        first = _audit_bytes(repository, repository, "0", "1", "--format", output_format)
        second = _audit_bytes(repository, elsewhere, "4242", "2", "--format", output_format)
        assert first == second, output_format
        if output_format == "json":
            paths = {f["path"] for f in json.loads(first)["findings"]}
            # one root, the repository: docs and code alike (the package lives under src/)
            assert paths == {"docs/we ird #%?.rst", "docs/b.md", "src/dp/mod.py"}
        if output_format == "sarif":
            import jsonschema

            sarif = json.loads(first)
            jsonschema.validate(sarif, json.loads(SCHEMA.read_text()))
            run = sarif["runs"][0]
            assert set(run["originalUriBaseIds"]) == {"%SRCROOT%"}
            locations = [r["locations"][0]["physicalLocation"]["artifactLocation"] for r in run["results"]]
            assert {location["uriBaseId"] for location in locations} == {"%SRCROOT%"}
            assert {location["uri"] for location in locations} == {
                "docs/we%20ird%20%23%25%3F.rst",
                "docs/b.md",
                "src/dp/mod.py",
            }


def test_a_baseline_written_in_one_directory_holds_in_another(repository: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    baseline = tmp_path / "baseline.json"
    _audit_bytes(repository, repository, "1", "1", "--write-baseline", str(baseline))
    report = json.loads(_audit_bytes(repository, elsewhere, "2", "2", "--baseline", str(baseline), "--format", "json"))
    assert report["summary"]["total"] >= 5
    assert report["summary"]["new"] == 0
    recorded = {entry["path"] for entry in json.loads(baseline.read_text())["findings"]}
    assert recorded == {"docs/we ird #%?.rst", "docs/b.md", "src/dp/mod.py"}


# -- 4. control characters never reach a terminal raw -----------------------------------------------


def test_control_characters_are_inert_in_text_and_github_output(run: Run, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    # (no NUL: docutils reads it as a backslash, so ``\x00`` would escape the closing backquote)
    hostile = ["Colector\x1b]0;pwned\x07", "Gone\x1b[2J\rX", "Bad\x9b31m\x01", "Bidi\u202etxt\x7f"]
    text = ".. currentmodule:: pkg.collector\n\n" + "".join(f":class:`{name}`\n" for name in hostile)
    (docs / "page.rst").write_text(text)
    (docs / "evil\x1b[2J.rst").write_text(STALE)
    outputs = {}
    for output_format in ("text", "github", "json", "sarif"):
        code, out, err = run(*fixture_args(docs, "--rule", "stale-ref", "--format", output_format))
        assert code == 1
        outputs[output_format] = out
        # a page named so is skipped (its name would be a path in every report), said escaped
        assert "rlmap: warning: evil\\x1b[2J.rst:1: name holds a control character; file skipped" in err
        assert not RAW_CONTROL.search(err)
    for output_format in ("text", "github"):
        out = outputs[output_format]
        assert not RAW_CONTROL.search(out), (output_format, RAW_CONTROL.findall(out))
        assert "\r" not in out
        assert "Colector\\x1b]0;pwned\\x07" in out  # shown, not obeyed
        assert "\\u202e" in out
        assert "\\x9b" in out
        assert "evil" not in out
    for output_format in ("json", "sarif"):
        assert not RAW_CONTROL.search(outputs[output_format])  # JSON escapes them (\u001b)
    names = {f["name"] for f in json.loads(outputs["json"])["findings"]}
    # and keeps them exact for machines (a carriage return ends a line, for docutils as for Sphinx)
    assert {name.replace("\r", "\n") for name in hostile} <= names
    messages = [r["message"]["text"] for r in json.loads(outputs["sarif"])["runs"][0]["results"]]
    assert any("Gone\x1b[2J\nX" in message for message in messages)


# -- 5. bad baselines are usage errors ------------------------------------------------------------

BAD_BASELINES: dict[str, tuple[bytes | None, str]] = {
    "not-json": (b"{not json", "baseline is not valid JSON (Expecting property name"),
    "a-list": (b"[]", "not an rlmap baseline"),
    "findings-not-a-list": (b'{"findings": {}}', "not an rlmap baseline"),
    "fingerprint-not-a-string": (b'{"findings": [{"fingerprint": 5}]}', "findings[0] has no valid 'fingerprint'"),
    "entry-not-an-object": (b'{"findings": ["abc"]}', "findings[0] has no valid 'fingerprint'"),
    "future-version": (b'{"version": 3, "findings": []}', "baseline version 3 is not supported"),
    "not-utf8": (b'\xff\xfe{"findings": []}', "baseline is not UTF-8 text"),
    "nested-deeply": (b"[" * 200_000, "baseline is not valid JSON (nested too deeply)"),
    "huge-integer": (b'{"version": 1' + b"0" * 10_000 + b"}", "baseline is not valid JSON (Exceeds the limit"),
    "directory": (None, "is a directory, not a baseline file"),
    "fifo": (None, "is not a regular file"),
}


@pytest.mark.parametrize("case", sorted(BAD_BASELINES))
def test_a_bad_baseline_is_exit_2_with_file_problem_and_fix(run: Run, tmp_path: Path, case: str) -> None:
    content, problem = BAD_BASELINES[case]
    path = tmp_path / "baseline.json"
    if case == "directory":
        path.mkdir()
    elif case == "fifo":
        os.mkfifo(path)  # reading it would block: it must be refused unopened
    elif content is not None:
        path.write_bytes(content)
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "page.rst").write_text(STALE)
    code, out, err = run(*fixture_args(docs, "--baseline", str(path)))
    assert code == 2
    assert out == ""
    assert err.startswith(f"rlmap: error: {path}: {problem}"), err
    assert " - " in err  # what happened - what to do
    assert err.count("\n") == 1


@pytest.mark.parametrize(
    ("where", "problem"),
    [
        ("missing/baseline.json", "directory '{tmp}/missing' does not exist"),
        ("a-directory", "is a directory"),
        ("a-file/baseline.json", "'{tmp}/a-file' is not a directory"),
    ],
)
def test_an_unwritable_write_baseline_is_exit_2_before_the_audit(
    run: Run, tmp_path: Path, where: str, problem: str
) -> None:
    (tmp_path / "a-directory").mkdir()
    (tmp_path / "a-file").write_text("")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "page.rst").write_text(STALE)
    target = tmp_path / where
    code, out, err = run(*fixture_args(docs, "--write-baseline", str(target)))
    assert code == 2
    assert out == ""  # refused before auditing anything
    assert err.startswith(f"rlmap: error: {target}: ")
    assert problem.format(tmp=tmp_path) in err
    assert " - " in err


def test_the_baseline_is_replaced_whole_and_never_written_through_a_link(run: Run, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "page.rst").write_text(STALE)
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    baseline = tmp_path / "baseline.json"
    baseline.symlink_to(victim)  # planted in the checkout by a pull request: refused, neither followed nor replaced
    code, _, err = run(*fixture_args(docs, "--rule", "stale-ref", "--write-baseline", str(baseline)))
    assert code == 2
    assert "is a symbolic link" in err
    assert victim.read_text() == "keep me\n"
    assert baseline.is_symlink()
    baseline.unlink()
    baseline.write_text("old\n")  # a regular file is replaced whole
    code, _, _ = run(*fixture_args(docs, "--rule", "stale-ref", "--write-baseline", str(baseline)))
    assert code == 0
    assert [entry["name"] for entry in json.loads(baseline.read_text())["findings"]] == ["Colector"]
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".baseline")] == []


@pytest.mark.parametrize("target", ["/dev/null", "fifo"])
def test_write_baseline_never_replaces_a_device_or_fifo(run: Run, tmp_path: Path, target: str) -> None:
    if target == "fifo":
        target = str(tmp_path / "fifo")
        os.mkfifo(target)
    before = os.stat(target).st_mode
    code, _, err = run(
        "audit", "--source", str(FIXTURES), "--package", "pkg", "--no-cache", "-q", "--write-baseline", target
    )
    assert code == 2
    assert "is not a regular file" in err
    assert os.stat(target).st_mode == before


def test_a_docs_folder_too_deep_to_list_is_skipped_not_a_crash(run: Run, tmp_path: Path) -> None:
    """A folder whose path is longer than the system allows (a pull request can nest one) made
    the walk of the docs raise: an internal error, exit 70.  It is skipped with a warning, the
    pages beside it are audited, and the run says it is incomplete (exit 3)."""
    docs = tmp_path / "docs"
    (docs / "ok").mkdir(parents=True)
    (docs / "ok" / "page.rst").write_text("Title\n=====\n\nSee :class:`pkg.collector.Collector`.\n")
    deep = os.open(docs, os.O_RDONLY)
    try:
        for number in range(24):  # each step from the last: no path given to the system is too long
            name = f"d{number:02d}" + "x" * 200
            os.mkdir(name, dir_fd=deep)
            inner = os.open(name, os.O_RDONLY, dir_fd=deep)
            os.close(deep)
            deep = inner
    finally:
        os.close(deep)
    args = ("audit", "--source", str(FIXTURES), "--package", "pkg", "--docs", str(docs), "--no-cache")
    code, _, err = run(*args, "--fail-on", "none")
    assert code == 3
    assert "cannot list folder" in err
    assert "internal error" not in err


def test_unmatched_inline_markup_is_bounded_per_page(tmp_path: Path) -> None:
    """docutils searches from each unmatched ``*`` or backquote to the end of its paragraph: a
    96 kB page of them took 36 s (exit 0, no word), and the same text as a docstring did the same
    to the code's audit.  The characters searched are counted: past the budget the page is
    skipped and said, and the other pages are read."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "bomb.rst").write_text("T\n=\n\n" + ("*a `b " * 1600 + "\n") * 8 + "\n", encoding="utf-8")
    (docs / "page.rst").write_text(f"Title\n\n{STALE}", encoding="utf-8")
    done = rlmap(*fixture_args(docs, "--rule", "stale-ref", "--format", "json"), cwd=tmp_path, timeout=90)
    assert done.returncode == 1, done.stderr  # findings (the page not read is said on stderr)
    assert "bomb.rst:1: inline markup whose end-strings take over 20,000,000 characters to find; page skipped" in (
        done.stderr
    )
    assert {f["path"] for f in json.loads(done.stdout)["findings"]} == {"page.rst"}


def test_a_link_to_a_folder_in_the_docs_is_said_not_followed(run: Run, tmp_path: Path) -> None:
    """``docs/api -> /elsewhere``, holding a stale reference, was left out without a word (a link
    to a file is said): it is said, and the run says its input was not read in full."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "x.rst").write_text(f"T\n=\n\n{STALE}", encoding="utf-8")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.rst").write_text("T\n=\n\nNothing stale.\n", encoding="utf-8")
    (docs / "api").symlink_to(elsewhere, target_is_directory=True)
    code, _, err = run(*fixture_args(docs, "--rule", "stale-ref"))
    assert code == 3
    assert "rlmap: warning: api:1: a link to a folder, not followed; skipped" in err
