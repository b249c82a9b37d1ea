"""``rlmap generate``: snapshots of the fixture pages, torchrl anchors, Sphinx/MyST builds, drift."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from rlmap.cli import main
from rlmap.index.source import SourceTree
from tests.conftest import FIXTURES, Run

SNAPSHOTS = Path(__file__).parent / "snapshots"
REPO = Path(__file__).parent.parent.parent
UPDATE = os.environ.get("RLMAP_UPDATE_SNAPSHOTS") == "1"
REGENERATE = "RLMAP_UPDATE_SNAPSHOTS=1 nox -s tests -- tests/output/test_generate.py"


def fixture_generate(out: Path, *extra: str) -> list[str]:
    return [
        "generate",
        "--source",
        str(FIXTURES),
        "--package",
        "pkg",
        "--profile",
        str(FIXTURES / "profile.toml"),
        "--out",
        str(out),
        "--no-cache",
        "-q",
        *extra,
    ]


@pytest.fixture(scope="module")
def fixture_pages(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("fixture-pages")
    assert main(fixture_generate(out)) == 0
    return out


PAGES = [
    f"{fmt}/{page}.{fmt}"
    for fmt in ("rst", "md")
    for page in (
        "collectors_internals",
        "recurrent_state_lifecycle",
        "advantages_internals",
        "undocumented_helpers",
        "glossary",
        "debugging_map",
        "internals_index",
    )
]


@pytest.mark.parametrize("page", PAGES)
def test_fixture_page_snapshot(fixture_pages: Path, page: str) -> None:
    generated = (fixture_pages / page).read_text(encoding="utf-8")
    # the rlmap version is volatile: mask it so that a release does not churn the snapshots
    generated = re.sub(r"rlmap \d+\.\d+\.\d+\S*", "rlmap <version>", generated)
    snapshot = SNAPSHOTS / page.replace("/", "__")
    if UPDATE:
        snapshot.parent.mkdir(parents=True, exist_ok=True)
        snapshot.write_text(generated, encoding="utf-8")
    assert snapshot.is_file(), f"no snapshot for {page}: run {REGENERATE}"
    assert generated == snapshot.read_text(encoding="utf-8"), (
        f"{page} differs from its snapshot; if the change is intended, run {REGENERATE} and review the diff"
    )


def test_fixture_pages_state_the_code_facts(fixture_pages: Path) -> None:
    page = (fixture_pages / "md" / "collectors_internals.md").read_text()
    # an attribute holding a callable: the row says that what it holds is what runs
    assert (
        "- **3** `self._sync` -> `BaseCollector._sync` (`L18`) (an attribute: what it holds is called)"
        " at `L53` - only if `self._cast`"
    ) in page
    assert (
        '- write at `_carrier` (`pkg/collector.py:49`): `self.env.reset()` - only `if self.mode == "recurrent"`' in page
    )
    assert "| `_noop` | `if flag` | `return` (`pkg/collector.py:22`) |" in page
    assert (
        "- set in `Collector.__init__` (`pkg/collector.py:41`) at `_cast` (`pkg/collector.py:45`): `env.batch_size != 1`"
        in page
    )
    assert "still uses the old name: write of `_shuttle` (`pkg/collector.py:79`)" in page
    recurrent = (fixture_pages / "md" / "recurrent_state_lifecycle.md").read_text()
    assert '- `hidden = td.get("hidden").transpose(0, 1)` (`pkg/rnn.py:50`)' in recurrent
    assert "Warning: Needs is_init in its input." in recurrent
    # a function that writes a key on several lines is listed at each (only its first line was),
    # a write into a local copy says so, and so does a line that declares the key; a write into an
    # expression is not a declaration, and a line reading the key twice is listed once
    glossary = (fixture_pages / "md" / "glossary.md").read_text()
    assert (
        "written by\n  `_mark_first_steps` at `is_init` (`pkg/rnn.py:56`, `L58`, `L60`: on a copy, `L61`);" in glossary
    )
    assert (  # (a function a line: one line for them all passed docutils' line limit on torchrl)
        "`_Marker` at `is_init` (`pkg/rnn.py:66`: declared in `in_keys`),\n  `_mark_first_steps` at `is_init` (`pkg/rnn.py:61`)\n"
        in glossary
    )


def test_generation_is_deterministic_and_has_no_absolute_paths(tmp_path: Path) -> None:
    first, second = tmp_path / "one", tmp_path / "two"
    assert main(fixture_generate(first)) == 0
    assert main(fixture_generate(second)) == 0
    files = sorted(p.relative_to(first) for p in first.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(second) for p in second.rglob("*") if p.is_file())
    for relative in files:
        data = (first / relative).read_bytes()
        assert data == (second / relative).read_bytes(), relative
        assert b"\r\n" not in data
        assert str(tmp_path).encode() not in data
        assert str(FIXTURES).encode() not in data


def _fixture_copy(tmp_path: Path) -> tuple[Path, list[str]]:
    """A copy of the fixture package and its profile in ``tmp_path``, and the options that name them."""
    source = tmp_path / "src"
    shutil.copytree(FIXTURES / "pkg", source / "pkg")
    for name in ("profile.toml", "glossary.toml", "symptoms.toml"):
        shutil.copy(FIXTURES / name, tmp_path / name)
    profile = str(tmp_path / "profile.toml")
    return source, ["--source", str(source), "--package", "pkg", "--profile", profile, "--no-cache", "-q"]


def test_check_passes_then_fails_on_drift(run: Run, tmp_path: Path) -> None:
    source, args = _fixture_copy(tmp_path)
    args += ["--out", str(tmp_path / "out")]
    assert run("generate", *args)[0] == 0
    assert run("generate", "--check", *args)[0] == 0
    buffers = source / "pkg" / "buffers.py"
    buffers.write_text("\n" * 10 + buffers.read_text())  # Buffer.add moves down ten lines
    before = (tmp_path / "out" / "md" / "collectors_internals.md").read_bytes()
    code, out, err = run("generate", "--check", *args)
    assert code == 1
    assert "-   - **4** `self.buffer.add` -> `Buffer.add` (`pkg/buffers.py:8`) at `L54`" in out
    assert "+   - **4** `self.buffer.add` -> `Buffer.add` (`pkg/buffers.py:18`) at `L54`" in out
    assert "are stale - run 'rlmap generate" in err
    assert (tmp_path / "out" / "md" / "collectors_internals.md").read_bytes() == before  # check writes nothing
    # an output folder that does not exist (a wrong --out) is said to be missing, not stale
    args[-1] = str(tmp_path / "elsewhere")
    code, out, err = run("generate", "--check", *args)
    assert code == 1
    assert f"rlmap: error: {tmp_path / 'elsewhere'} does not exist: " in err
    assert out.startswith("diff --git ")  # into a pipe or a log: the diff that makes the pages (git apply)
    # on a terminal, not every file's text before the error (a wrong --out printed 10,169 lines)
    command = [sys.executable, "-m", "rlmap", "generate", "--check", *args]
    shown = subprocess.run(
        ["script", "-qec", shlex.join(command), "/dev/null"], capture_output=True, text=True, check=False
    )
    assert shown.returncode == 1, shown.stdout
    assert "does not exist: " in shown.stdout
    assert "diff --git" not in shown.stdout
    assert not (tmp_path / "elsewhere").exists()
    # an empty folder (a fresh docs tree, a wrong --out) is said to hold no generated file, not
    # to hold 36 stale ones
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "notes.md").write_text("mine\n")
    code, out, err = run("generate", "--check", *args)
    assert code == 1
    assert f"rlmap: error: {tmp_path / 'elsewhere'} holds no generated file: " in err
    assert "are stale" not in err


def test_a_check_after_lines_moved_says_what_a_fresh_check_says(
    run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a cache, lines moved in a file (a comment line added) give the last model moved
    rather than resolved (rlmap.model.relabel): the check reports the same stale lines, word for
    word, as one that resolves from nothing."""
    source, args = _fixture_copy(tmp_path)
    cached = [*[arg for arg in args if arg not in ("--no-cache", "-q")], "--cache-dir", str(tmp_path / "cache")]
    cached += ["--out", str(tmp_path / "out")]
    assert run("generate", *cached)[0] == 0
    buffers = source / "pkg" / "buffers.py"
    buffers.write_text(buffers.read_text().replace("class Buffer:", "# the buffer\nclass Buffer:"))
    with monkeypatch.context() as patched:  # nothing is resolved: the last model is moved
        patched.setattr("rlmap.model.session.build_model", _not_called)
        code, out, err = run("generate", "--check", *cached)
    assert code == 1, err
    fresh, fresh_out, _ = run("generate", "--check", *args, "--out", str(tmp_path / "out"))
    assert fresh == 1
    assert out == fresh_out
    assert "`Buffer.add` (`pkg/buffers.py:9`)" in out


def _not_called(*_: object, **__: object) -> None:
    raise AssertionError("the model was resolved")


def test_a_check_of_the_working_directory_names_files_git_apply_takes(tmp_path: Path) -> None:
    """``generate --check --out .`` (checked from the output directory): the diff names
    ``md/x.md``, not ``./md/x.md`` (which ``git apply`` refuses), and applies there."""
    source, args = _fixture_copy(tmp_path)
    out = tmp_path / "out"
    command = [sys.executable, "-m", "rlmap", "generate", *args, "--out", "."]
    subprocess.run([*command[:-1], "out"], cwd=tmp_path, check=True, capture_output=True)  # (never written to ".")
    buffers = source / "pkg" / "buffers.py"
    buffers.write_text("\n" * 10 + buffers.read_text())  # Buffer.add moves down ten lines
    done = subprocess.run([*command, "--check"], cwd=out, capture_output=True, text=True, check=False)
    assert done.returncode == 1
    assert "diff --git a/md/collectors_internals.md b/md/collectors_internals.md" in done.stdout
    assert "a/./" not in done.stdout
    assert "apply this diff from the working directory (no git checkout holds the output directory)" in done.stderr
    (tmp_path / "pages.diff").write_text(done.stdout, encoding="utf-8")
    subprocess.run(["git", "apply", str(tmp_path / "pages.diff")], cwd=out, check=True, capture_output=True)
    assert subprocess.run([*command, "--check"], cwd=out, capture_output=True, check=False).returncode == 0


def test_a_check_of_an_output_directory_that_is_its_own_checkout_applies_there(tmp_path: Path) -> None:
    """A docs repository checked out as the output directory: the diff named ``out/md/x.md``
    (relative to the working directory), which ``git apply`` from that repository's root refuses;
    it names ``md/x.md`` now, and the message says where to apply it from."""
    source, args = _fixture_copy(tmp_path)
    out = tmp_path / "out"
    command = [sys.executable, "-m", "rlmap", "generate", *args, "--out", "out"]
    subprocess.run(command, cwd=tmp_path, check=True, capture_output=True)
    subprocess.run(["git", "init", "-q", str(out)], check=True, capture_output=True)
    buffers = source / "pkg" / "buffers.py"
    buffers.write_text("\n" * 10 + buffers.read_text())  # Buffer.add moves down ten lines
    done = subprocess.run([*command, "--check"], cwd=tmp_path, capture_output=True, text=True, check=False)
    assert done.returncode == 1
    assert "diff --git a/md/collectors_internals.md b/md/collectors_internals.md" in done.stdout
    assert "apply this diff from the repository root with git apply" in done.stderr
    (tmp_path / "pages.diff").write_text(done.stdout, encoding="utf-8")
    subprocess.run(["git", "apply", str(tmp_path / "pages.diff")], cwd=out, check=True, capture_output=True)
    assert subprocess.run([*command, "--check"], cwd=tmp_path, capture_output=True, check=False).returncode == 0


def test_renamed_flag_fails_generation(run: Run, tmp_path: Path) -> None:
    source = tmp_path / "src"
    shutil.copytree(FIXTURES / "pkg", source / "pkg")
    collector = source / "pkg" / "collector.py"
    collector.write_text(collector.read_text().replace("self._cast", "self._cast_to_device"))
    out = tmp_path / "out"
    code, _, err = run(
        "generate",
        "--source",
        str(source),
        "--package",
        "pkg",
        "--profile",
        str(FIXTURES / "profile.toml"),
        "--out",
        str(out),
        "--no-cache",
        "-q",
    )
    assert code == 2
    text = (FIXTURES / "profile.toml").read_text().splitlines()
    flag = text.index('attributes = ["_cast"]')
    header = max(n for n, line in enumerate(text[:flag]) if line == "[[pages.collectors.sections]]") + 1
    expected = f"profile.toml:{header}: [pages.collectors] section 6 (accesses) attributes: 'pkg.collector.Collector._cast' names no symbol"
    assert expected in err
    assert not out.exists()  # nothing half-written


def test_template_naming_a_vanished_symbol_fails(run: Run, tmp_path: Path) -> None:
    templates = tmp_path / "templates"
    (templates / "sections").mkdir(parents=True)
    inventory = templates / "sections" / "inventory.j2"
    inventory.write_text('{{ f.heading(title) }}\n\nSee {{ sym("Collector.no_longer_here") }}.\n')
    out = tmp_path / "out"
    code, _, err = run(*fixture_generate(out, "--templates", str(templates)))
    assert code == 2
    assert f"{inventory}:3: 'Collector.no_longer_here' names no symbol of pkg" in err
    assert not out.exists()


def test_prose_naming_a_vanished_symbol_names_file_and_line(run: Run, tmp_path: Path) -> None:
    profile = tmp_path / "profile.toml"
    prose = "carrier = \"The carrier is {{ sym('Collector._carrier') }}.\""
    text = (FIXTURES / "profile.toml").read_text()
    assert prose in text
    profile.write_text(text.replace(prose, prose.replace("Collector._carrier", "Collector._gone")))
    for name in ("glossary.toml", "symptoms.toml"):
        shutil.copy(FIXTURES / name, tmp_path / name)
    code, _, err = run(
        "generate",
        "--source",
        str(FIXTURES),
        "--package",
        "pkg",
        "--profile",
        str(profile),
        "--out",
        str(tmp_path / "out"),
        "--no-cache",
        "-q",
    )
    assert code == 2
    line = next(n for n, text in enumerate(profile.read_text().splitlines(), 1) if text.startswith('carrier = "The'))
    assert f"profile.toml:{line}: 'Collector._gone' names no symbol" in err
    assert "did you mean" not in err  # (nothing is spelled like it)
    # a misspelt name gets what show would suggest, and the misspelling is named as a cause
    profile.write_text(text.replace(prose, prose.replace("Collector._carrier", "Collector._carier")))
    code, _, err = run(
        "generate", "--source", str(FIXTURES), "--package", "pkg", "--profile", str(profile),
        "--out", str(tmp_path / "out"), "--no-cache", "-q",
    )  # fmt: skip
    assert code == 2
    assert (
        f"profile.toml:{line}: 'Collector._carier' names no symbol of pkg (unknown version) - did you mean 'Collector._carrier'? "
        in err
    )
    assert "the name is misspelt, or the code was renamed" in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--format", "html"], "unknown format(s) html"),
        (["--templates", "/no/such/dir"], "templates directory '/no/such/dir' does not exist"),
    ],
)
def test_bad_options(run: Run, tmp_path: Path, args: list[str], message: str) -> None:
    code, _, err = run(*fixture_generate(tmp_path / "out", *args))
    assert code == 2
    assert message in err


@pytest.mark.parametrize("below", ["", "sub"])
def test_an_output_directory_that_cannot_be_made_is_refused_before_anything_runs(
    run: Run, tmp_path: Path, below: str
) -> None:
    afile = tmp_path / "afile"
    afile.write_text("not a folder\n")
    out = afile / below if below else afile
    code, _, err = run(*fixture_generate(out, "--source", str(tmp_path / "no-such-source")))
    assert code == 2
    # said before the source is looked at (the source given does not exist), in words that say why
    if below:
        assert f"'{afile}' is a file, not a directory" in err
    else:
        assert f"'{afile}' exists and is not a directory" in err
    assert afile.read_text() == "not a folder\n"


def test_bad_config_file(run: Run, tmp_path: Path) -> None:
    config = tmp_path / "pyproject.toml"
    config.write_text('[tool.rlmap]\noutput = "docs"\n')
    code, _, err = run("generate", "--config", str(config), "--no-cache")
    assert code == 2
    assert "pyproject.toml: [tool.rlmap]: unknown key 'output' - did you mean 'out'?" in err


def test_render_svg_without_dot_says_so(run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no dot on this PATH
    out = tmp_path / "out"
    code, _, err = run(*fixture_generate(out, "--render-svg"))
    assert code == 2
    assert "--render-svg needs the 'dot' program" in err
    assert "apt-get install -y graphviz" in err
    assert not out.exists()


@pytest.mark.skipif(shutil.which("dot") is None, reason="graphviz's dot is not installed")
def test_render_svg_with_dot(run: Run, tmp_path: Path) -> None:
    out = tmp_path / "out"
    code, _, err = run(*[arg for arg in fixture_generate(out, "--render-svg") if arg != "-q"])
    assert code == 0, err
    svg = (out / "rst" / "collectors_rollout_flow.svg").read_text()
    assert svg.lstrip().startswith("<?xml")
    assert "Collector.rollout" in svg
    drawn = sorted(path.relative_to(out).as_posix() for path in out.rglob("*.svg"))
    assert f"and {len(drawn)} of {len(drawn)} SVG diagram(s)" in err  # the SVGs are said, with the pages
    code, _, err = run(*[arg for arg in fixture_generate(out, "--render-svg") if arg != "-q"])
    assert re.search(rf"wrote 0 of \d+ files and 0 of {len(drawn)} SVG diagram\(s\)", err), err  # none rewritten
    assert err.strip().endswith("): all were up to date")
    (out / drawn[-1]).unlink()  # one SVG drawn anew, no file: "all were up to date" would say the SVGs were too
    code, _, err = run(*[arg for arg in fixture_generate(out, "--render-svg") if arg != "-q"])
    assert re.search(
        rf"wrote 0 of \d+ files and 1 of {len(drawn)} SVG diagram\(s\) in .*: the files were up to date$", err.strip()
    ), err
    # --check --render-svg: a diagram without its SVG is stale (its layout is not compared)
    assert run(*fixture_generate(out, "--render-svg", "--check"))[0] == 0
    (out / drawn[0]).unlink()
    code, _, err = run(*fixture_generate(out, "--render-svg", "--check"))
    assert code == 1
    assert f"1 diagram(s) have no SVG in {out} ({drawn[0]}...)" in err
    assert "--render-svg' and commit" in err
    assert run(*fixture_generate(out, "--check"))[0] == 0  # without it, the SVGs are not asked for


@pytest.mark.parametrize("behaviour", ["hangs", "fails"])
def test_a_dot_that_hangs_or_fails_is_an_error(
    run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, behaviour: str
) -> None:
    """A ``dot`` that never answers ran without end; one that failed printed Python reprs."""
    from rlmap.output import generate

    fake = tmp_path / "bin" / "dot"
    fake.parent.mkdir()
    body = "sleep 30" if behaviour == "hangs" else "echo 'Error: <stdin>: syntax error in line 1' >&2; exit 1"
    fake.write_text(f"#!/bin/sh\ncat >/dev/null\n{body}\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}:{os.environ['PATH']}")
    monkeypatch.setattr(generate, "DOT_SECONDS", 1)
    out = tmp_path / "out"
    code, _, err = run(*fixture_generate(out, "--render-svg"))
    assert code == 2
    if behaviour == "hangs":
        assert "dot took more than 1 s to lay out" in err
    else:
        assert ".dot: Error: <stdin>: syntax error in line 1 - report this" in err
        assert "PosixPath" not in err
    assert not out.exists()


def _sphinx_build(source: Path, conf: str, index: str, out: Path) -> None:
    from sphinx.cmd.build import build_main

    (source / "conf.py").write_text(conf)
    if index:
        (source / "index.rst").write_text(index)
    code = build_main(["-W", "--keep-going", "-q", "-b", "dummy", str(source), str(out)])
    assert code == 0, "sphinx-build -W failed; see the warnings above"


def test_fixture_rst_builds_with_sphinx_warnings_as_errors(fixture_pages: Path, tmp_path: Path) -> None:
    source = tmp_path / "rst"
    shutil.copytree(fixture_pages / "rst", source)
    index = "Root\n====\n\n.. toctree::\n\n   internals_index\n"
    _sphinx_build(source, 'extensions = ["sphinx.ext.graphviz"]\n', index, tmp_path / "build")


# -- the real torchrl, and the committed pages -------------------------------------------------


@pytest.mark.torchrl
def test_committed_rst_builds_with_sphinx_inside_a_torchrl_like_tree(tmp_path: Path) -> None:
    """The committed pages placed as the README says (``reference/rlmap/``), beside TorchRL's own
    pages of the same names: no collision, and the links to data_layout and profiling resolve."""
    source = _torchrl_like_tree(tmp_path)
    _sphinx_build(source, 'extensions = ["sphinx.ext.graphviz"]\n', "", tmp_path / "build")


def _torchrl_like_tree(tmp_path: Path) -> Path:
    source = tmp_path / "source"
    reference = source / "reference"
    shutil.copytree(REPO / "generated_docs" / "rst", reference / "rlmap")
    for name, title in [
        ("data_layout", "Data layout"),
        ("profiling", "Profiling"),
        ("collectors_internals", "Collectors internals (TorchRL's hand page)"),
        ("recurrent_state_lifecycle", "Recurrent state (TorchRL's hand page)"),
    ]:
        (reference / f"{name}.rst").write_text(f"{title}\n{'=' * len(title)}\n")
    pages = "\n".join(f"   {name}" for name in ("data_layout", "profiling", "collectors_internals"))
    toctree = (
        f"Reference\n=========\n\n.. toctree::\n\n{pages}\n   recurrent_state_lifecycle\n   rlmap/internals_index\n"
    )
    (reference / "index.rst").write_text(toctree)
    (source / "index.rst").write_text("TorchRL\n=======\n\n.. toctree::\n\n   reference/index\n")
    return source


_NO_DIAGRAMS = """
from docutils.parsers.rst import Directive


class NoDiagram(Directive):  # the test machine may have no dot; the lists are what is checked
    required_arguments = 1

    def run(self):
        return []


def setup(app):
    app.add_directive("graphviz", NoDiagram)
"""


class _ListTree(HTMLParser):
    """The nesting of ``ul``/``ol``/``li`` in an HTML page, and the text of each ``li``."""

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.nested: list[tuple[str, ...]] = []  # the open tags around each list that is inside an item

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        del attrs
        if tag in ("ul", "ol", "li"):
            if tag in ("ul", "ol") and self.stack and self.stack[-1] == "li":
                self.nested.append(tuple(self.stack))
            self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag in ("ul", "ol", "li") and self.stack:
            self.stack.pop()


def test_committed_rst_renders_nested_lists_as_nested_lists_in_sphinx_html(tmp_path: Path) -> None:
    """Built by Sphinx (-W) to HTML: where the rst nests a list (a branch's steps under the branch,
    a phase's steps under the phase), the HTML has a list inside the item."""
    source = _torchrl_like_tree(tmp_path)
    (source / "conf.py").write_text(_NO_DIAGRAMS)
    from sphinx.cmd.build import build_main

    assert build_main(["-W", "--keep-going", "-q", "-b", "html", str(source), str(tmp_path / "html")]) == 0
    html = (tmp_path / "html" / "reference" / "rlmap" / "collectors_internals.html").read_text(encoding="utf-8")
    tree = _ListTree()
    tree.feed(html)
    rst = (source / "reference" / "rlmap" / "collectors_internals.rst").read_text(encoding="utf-8")
    nested_in_rst = len(re.findall(r"\n\n( +)- ", rst))  # an indented item after a blank line
    assert len(tree.nested) >= 20
    assert len(tree.nested) >= nested_in_rst // 4  # each nested list has at least a few items
    assert any(len(tags) >= 6 for tags in tree.nested)  # phase > branches > a branch's steps
    flow = html[html.index("Policy step (or a random action)") :]
    branches = flow.index("one of these branches:")
    assert flow.index("<ul", branches) < flow.index("</li>", branches)  # the branches inside the item


@pytest.mark.torchrl
def test_committed_generated_docs_are_up_to_date(run: Run, torchrl_cache: Path) -> None:
    """Dogfood: the committed generated_docs/ are what rlmap generates for torchrl 0.14.1."""
    code, out, err = run(
        "generate", "--check", "--out", str(REPO / "generated_docs"), "--cache-dir", str(torchrl_cache), "-q"
    )
    assert code == 0, f"generated_docs/ is stale: run 'rlmap generate' and commit\n{out}\n{err}"


LINK = re.compile(
    r"`(?P<loc>(?P<path>torchrl/[\w/]+\.py):(?P<line>\d+)) <https://github\.com/pytorch/rl/blob/v0\.14\.1/(?P=path)#L(?P=line)>`__"
)
MD_LINK = re.compile(
    r"\[(?P<path>torchrl/[\w/]+\.py):(?P<line>\d+)\]\(https://github\.com/pytorch/rl/blob/v0\.14\.1/(?P=path)#L(?P=line)\)"
)


def _named_before(text: str, start: int, fmt: str) -> str:
    """The name shown just before a link: ``name`` or :role:`Name <...>` or `name`, on the same line."""
    line_start = text.rfind("\n", 0, start) + 1
    head = text[line_start:start]
    # rst: ``literal``, :code:`literal with \`escaped\` backticks`, or :role:`Name <target>`;
    # md: a code span, its fence longer than any backtick run inside (links are [text](url))
    if fmt == "rst":
        found = re.findall(r"``((?:[^`]|`(?!`))+)``|:code:`((?:\\.|[^`\\])*)`|:\w+:`([^`<]+?)(?: <[^>]+>)?`", head)
        names = [re.sub(r"\\(.)", r"\1", code) if code else literal or role for literal, code, role in found]
    else:
        names = [match.group(2) for match in re.finditer(r"(`+) ?(.+?) ?\1(?!`)", head)]
    return names[-1].strip() if names else ""


@pytest.mark.torchrl
@pytest.mark.parametrize("fmt", ["rst", "md"])
def test_every_anchor_points_at_a_line_holding_its_symbol(torchrl_source: SourceTree, fmt: str) -> None:
    pattern = LINK if fmt == "rst" else MD_LINK
    checked = 0
    wrong = []
    cache: dict[str, list[str]] = {}
    for page in sorted((REPO / "generated_docs" / fmt).glob(f"*.{fmt}")):
        text = page.read_text(encoding="utf-8")
        for match in pattern.finditer(text):
            path, line = match.group("path"), int(match.group("line"))
            lines = cache.setdefault(path, (torchrl_source.root / path).read_text(encoding="utf-8").splitlines())
            source_line = lines[line - 1]
            name = _named_before(text, match.start(), fmt)
            # what a link names: a symbol (its last part), a call (its method), a key, or a quoted line
            token = re.split(r"[.(\[ ]", name.rstrip("()"))[-1] if name else ""
            candidates = {token, name.rsplit(".", 1)[-1], name}
            if not any(c and c.strip('"') in source_line for c in candidates):
                wrong.append(f"{page.name}: {name!r} -> {path}:{line}: {source_line.strip()!r}")
            checked += 1
    assert checked > 300
    assert not wrong, f"{len(wrong)} of {checked} anchors do not hold their symbol:\n" + "\n".join(wrong[:40])


def test_generate_runs_from_a_checkout_without_installing(tmp_path: Path) -> None:
    """``PYTHONPATH=. python -m rlmap`` in a checkout finds the templates in ``templates/``."""
    import subprocess
    import sys

    checkout = tmp_path / "checkout"
    shutil.copytree(REPO / "rlmap", checkout / "rlmap", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "templates", checkout / "templates")
    probe = (
        "import sys\n"
        "sys.meta_path[:] = [f for f in sys.meta_path if getattr(f, '__name__', '') != '_EditableFinder']\n"
        f"sys.path.insert(0, {str(checkout)!r})\n"
        "from rlmap.cli import main\n"
        "import rlmap.render.renderer\n"
        "assert rlmap.render.renderer.__file__.startswith(sys.path[0]), rlmap.render.renderer.__file__\n"
        f"args = ['generate', '--source', {str(FIXTURES)!r}, '--package', 'pkg', '--profile', {str(FIXTURES / 'profile.toml')!r}]\n"
        f"sys.exit(main([*args, '--out', {str(tmp_path / 'out')!r}, '--no-cache', '-q']))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "out" / "rst" / "collectors_internals.rst").is_file()


def test_committed_rst_nests_its_lists(tmp_path: Path) -> None:
    """A nested list needs a blank line before it in rst, or Sphinx runs it into its parent's line."""
    from docutils import nodes
    from docutils.core import publish_doctree

    page = (REPO / "generated_docs" / "rst" / "collectors_internals.rst").read_text(encoding="utf-8")
    page = re.sub(r":(?:meth|class|func|attr|data|mod|term|ref|doc):`", "`", page)  # plain docutils knows no roles
    page = re.sub(r"(?m)^\.\. (?:graphviz|toctree|glossary)::.*$", "", page)
    warnings = tmp_path / "warnings.txt"
    with warnings.open("w") as stream:
        tree = publish_doctree(page, settings_overrides={"warning_stream": stream, "report_level": 2})
    assert warnings.read_text() == ""
    nested = [bullets for bullets in tree.findall(nodes.bullet_list) if isinstance(bullets.parent, nodes.list_item)]
    assert len(nested) >= 5  # the carrier's writes and reads under each method, the hooks' call sites


def test_a_symptoms_lines_are_each_listed_once() -> None:
    """Two claims backing a symptom on one line (its call and its condition) listed that line twice
    under "Where it happens" (the committed pages are what generation gives: see above)."""
    page = (REPO / "generated_docs" / "md" / "debugging_map.md").read_text(encoding="utf-8")
    for symptom in page.split("\n## ")[1:]:
        where = symptom.partition("Where it happens, in the code:\n\n")[2].partition("\n\n")[0]
        rows = where.splitlines()
        assert len(rows) == len(set(rows)), symptom.splitlines()[0]
    assert page.count("Where it happens, in the code:") >= 10


def test_generate_tells_its_progress_as_sections_are_built_and_pages_rendered(
    run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A log saw "render (1.0 s)", then nothing for the seconds the pages took, then "render 36/36
    files": the child that renders now tells the sections it has built and the pages it has
    rendered, on a pipe, as it goes (what the counts say is checked against the profile)."""
    import tomllib
    from contextlib import contextmanager

    from rlmap.cli import common

    told: list[tuple[str, int, int]] = []

    @contextmanager
    def recorded(quiet: bool, first: str = "index"):  # type: ignore[no-untyped-def]
        del quiet, first
        yield lambda phase, done, total: told.append((phase, done, total))

    monkeypatch.setattr(common, "progress_display", recorded)
    out = tmp_path / "out"
    code, _, err = run(*[arg for arg in fixture_generate(out) if arg != "-q"])
    assert code == 0, err
    profile = tomllib.loads((FIXTURES / "profile.toml").read_text())
    sections = sum(len(page.get("sections", [])) for page in profile["pages"].values())
    pages = len(profile["pages"]) * 2  # rst and md
    assert sections > 3
    assert pages > 2
    for phase, total in (("build", sections), ("render", pages)):
        counts = [done for name, done, count in told if name == phase and count == total]
        assert counts == list(range(total + 1)), told  # each, in order
    phases = [name for name, _, _ in told]
    assert phases.index("build") < phases.index("render") < phases.index("write")
    assert re.search(r"wrote \d+ of \d+ files in .*: all|the other", err) is None  # (all written: no note)
    code, _, err = run(*[arg for arg in fixture_generate(out) if arg != "-q"])
    assert re.search(r"wrote 0 of (\d+) files in .*\): all were up to date$", err.strip()), err


def test_two_diagrams_of_one_name_are_refused(run: Run, tmp_path: Path) -> None:
    """Two sections drawing a diagram of one name wrote one ``.dot`` file, the second's, which both
    ``.. graphviz::`` directives then showed."""
    folder = tmp_path / "profile"
    shutil.copytree(FIXTURES, folder, ignore=shutil.ignore_patterns("pkg"))
    profile = folder / "profile.toml"
    text = profile.read_text(encoding="utf-8")
    profile.write_text(text.replace('diagram = "collectors_rollout_calls"', 'diagram = "collectors_rollout_flow"'))
    out = tmp_path / "out"
    code, _, err = run(
        "generate", "--source", str(FIXTURES), "--package", "pkg", "--profile", str(profile), "--out", str(out), "-q"
    )
    assert code == 2
    assert err.startswith("rlmap: error: two diagrams are named 'collectors_rollout_flow' (one on page ")
    assert not out.exists()


@pytest.mark.parametrize("fmt", ["rst", "md"])
def test_the_glossary_names_a_nested_key_expression_whole(fmt: str) -> None:
    """A key written through ``("next", self.tensor_keys.reward)`` spread over a call's lines is
    shown as that expression, not cut at its last dot (``at ``reward)````): every name the
    committed glossary shows before a key's line is balanced."""
    text = (REPO / "generated_docs" / fmt / f"glossary.{fmt}").read_text(encoding="utf-8")
    shown = re.findall(r" at ``([^`]+)`` \(" if fmt == "rst" else r" at `([^`]+)` \(", text)
    assert any(name.startswith('("next", self.tensor_keys.') for name in shown)
    unbalanced = [name for name in shown if name.count("(") != name.count(")") or name.count("[") != name.count("]")]
    assert not unbalanced, unbalanced[:10]


@pytest.mark.parametrize("fmt", ["rst", "md"])
def test_only_a_page_with_locations_vouches_for_them(fmt: str) -> None:
    """The index page said "every location below is computed from the code" over a list of pages
    with no location: a committed page says it exactly when it links to a source line."""
    for page in sorted((REPO / "generated_docs" / fmt).glob(f"*.{fmt}")):
        text = page.read_text(encoding="utf-8")
        links = (LINK if fmt == "rst" else MD_LINK).search(text) is not None
        assert ("every location below is computed from the code" in text) == links, page.name
