"""The extension on the synthetic fixture package: facts from the code in rst and MyST pages,
errors located at the directive, pages read again when the code changes, nothing imported."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, write_package

DOCS = FIXTURES / "sphinx" / "fixture"
COLLECTOR = FIXTURES / "pkg" / "collector.py"


def line_of(path: Path, text: str) -> int:
    """The 1-based line of ``path`` holding ``text`` (computed, never typed in a test)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return next(number for number, line in enumerate(lines, start=1) if text in line)


def build(source: Path, out: Path, builder: str = "html", overrides: tuple[str, ...] = (), fresh: bool = True) -> int:
    from sphinx.cmd.build import build_main

    args = ["-W", "--keep-going", "-q", "-b", builder, *(["-E"] if fresh else [])]
    for override in overrides:
        args += ["-D", override]
    return build_main([*args, str(source), str(out)])


def visible(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


@pytest.fixture(scope="module")
def fixture_html(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("html")
    with _no_python_warnings():
        assert build(DOCS, out) == 0, "sphinx-build -W failed on the fixture docs; see the warnings above"
    return out


class _no_python_warnings:
    """myst-parser still touches a Sphinx attribute Sphinx has deprecated: theirs to fix, ignored
    as in tests/output; every other Python warning stays an error."""

    def __enter__(self) -> None:
        import warnings

        self._catcher = warnings.catch_warnings()
        self._catcher.__enter__()
        warnings.filterwarnings("ignore", message=".*is deprecated. Check CHANGES for Sphinx API modifications")

    def __exit__(self, *exc: object) -> None:
        self._catcher.__exit__(*exc)


def test_rst_page_shows_the_flow_with_lines_computed_from_the_code(fixture_html: Path) -> None:
    html = (fixture_html / "index.html").read_text(encoding="utf-8")
    step = line_of(COLLECTOR, "self.env.step_and_maybe_reset(self._carrier)")
    sync = line_of(COLLECTOR, "self._sync()")
    text = visible(html)
    assert "self.env.step_and_maybe_reset -&gt; Env.step_and_maybe_reset" in text
    assert f"at L{step}" in text
    called = "(an attribute: what it holds is called)"
    assert f"self._sync -&gt; BaseCollector._sync ( L18 ) {called} at L{sync} - only if self._cast" in text
    assert re.search(rf'href="https://github\.com/example/pkg/blob/[^/"]+/pkg/collector\.py#L{step}"', html)


def test_role_links_the_name_to_its_definition_line(fixture_html: Path) -> None:
    html = (fixture_html / "index.html").read_text(encoding="utf-8")
    rollout = _collector_rollout_line()
    link = re.search(
        r'<a class="reference external" href="([^"]+)"[^>]*><code[^>]*><span class="pre">Collector.rollout</span>', html
    )
    assert link is not None, "the :rlmap: role rendered no link"
    assert link.group(1).endswith(f"/pkg/collector.py#L{rollout}")


def _collector_rollout_line() -> int:
    """``Collector.rollout`` (not ``BaseCollector.rollout``): the ``def rollout`` after ``class Collector``."""
    lines = COLLECTOR.read_text(encoding="utf-8").splitlines()
    start = next(n for n, line in enumerate(lines) if line.startswith("class Collector("))
    return next(n for n, line in enumerate(lines[start:], start=start + 1) if "def rollout(self)" in line)


def test_accesses_keys_callers_and_returns_sections(fixture_html: Path) -> None:
    text = visible((fixture_html / "index.html").read_text(encoding="utf-8"))
    assigned = line_of(COLLECTOR, "self._carrier = None")
    traj = line_of(COLLECTOR, 'data.set(("collector", "traj_ids"), 0)')
    called = line_of(COLLECTOR, "self._prepare()")
    assert f"write at _carrier ( pkg/collector.py:{assigned} ): None" in text
    assert f"traj_ids ( pkg/collector.py:{traj} ) in Collector._prepare ( set )" in text
    assert f"in BaseCollector.collect at _prepare ( pkg/collector.py:{called} )" in text
    get_sync = line_of(COLLECTOR, "def _get_sync(self, flag)")
    assert f"What BaseCollector._get_sync ( pkg/collector.py:{get_sync} ) returns" in text  # inherited, found


def test_the_same_directives_and_role_work_from_markdown(fixture_html: Path) -> None:
    html = (fixture_html / "markdown.html").read_text(encoding="utf-8")
    text = visible(html)
    step = line_of(COLLECTOR, "self.env.step_and_maybe_reset(self._carrier)")
    assert "self.env.step_and_maybe_reset -&gt; Env.step_and_maybe_reset" in text
    assert f"at L{step}" in text
    assert f"read in Collector.rollout at _carrier ( pkg/collector.py:{step} )" in text
    assert 'class="rubric"' in html  # the by-attribute layout's heading, as a rubric
    assert f"/pkg/collector.py#L{_collector_rollout_line()}" in html  # the {rlmap} role


def test_no_diagram_without_graphviz_and_inline_dot_with_it(fixture_html: Path, tmp_path: Path) -> None:
    assert "digraph" not in (fixture_html / "index.html").read_text(encoding="utf-8")
    with _no_python_warnings():
        code = build(DOCS, tmp_path, "text", ("extensions=rlmap.sphinx,myst_parser,sphinx.ext.graphviz",))
    assert code == 0
    assert "[graph]" in (tmp_path / "index.txt").read_text(encoding="utf-8")


def _docs_copy(tmp_path: Path, extra: dict[str, str]) -> Path:
    docs = tmp_path / "docs"
    shutil.copytree(DOCS, docs)
    for name, text in extra.items():
        (docs / name).write_text(textwrap.dedent(text), encoding="utf-8")
    return docs


def _moved(source: Path) -> tuple[str, ...]:
    """The settings of a copy of the docs: its relative paths no longer lead anywhere."""
    return (f"rlmap_source={source}", f"rlmap_profile={FIXTURES / 'profile.toml'}")


def test_a_name_that_no_longer_resolves_fails_the_build_at_the_directive(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = _docs_copy(
        tmp_path,
        {
            "index.rst": """\
            Broken
            ======

            Text.

            .. rlmap-flow:: Collector.vanished
               :loop: for t in range(3)

            And :rlmap:`Collector.gone_too`.
            """
        },
    )
    with _no_python_warnings():
        code = build(docs, tmp_path / "out", overrides=_moved(FIXTURES))
    err = capsys.readouterr().err
    assert code != 0
    assert re.search(r"index\.rst:6: ERROR: rlmap: .*'Collector\.vanished' names no symbol of pkg", err), err
    assert re.search(r"index\.rst:9: ERROR: rlmap: .*'Collector\.gone_too' names no symbol", err), err
    assert "Traceback" not in err


def test_options_are_checked_by_the_section_schema(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    docs = _docs_copy(
        tmp_path,
        {
            "index.rst": """\
            Options
            =======

            .. rlmap-section::
               :kind: flow
               :function: Collector.rollout
               :layout: list

            .. rlmap-section::
               :kind: glossary
            """
        },
    )
    with _no_python_warnings():
        code = build(docs, tmp_path / "out", overrides=_moved(FIXTURES))
    err = capsys.readouterr().err
    assert code != 0
    assert re.search(r"index\.rst:4: ERROR: rlmap: rlmap-section: option: unknown key 'layout'", err), err
    assert re.search(r"index\.rst:9: ERROR: .*':kind: glossary' is not a section a directive can show", err), err


def test_a_page_is_read_again_when_the_code_changes(tmp_path: Path) -> None:
    checkout = tmp_path / "checkout"
    shutil.copytree(FIXTURES / "pkg", checkout / "pkg")
    docs = _docs_copy(tmp_path, {})
    out = tmp_path / "out"
    overrides = _moved(checkout)
    collector = checkout / "pkg" / "collector.py"
    step = line_of(collector, "self.env.step_and_maybe_reset(self._carrier)")
    with _no_python_warnings():
        assert build(docs, out, "text", overrides) == 0
        assert f"pkg/collector.py:{step}" in (out / "index.txt").read_text(encoding="utf-8")
        collector.write_text("# moved\n# down\n" + collector.read_text(encoding="utf-8"), encoding="utf-8")
        assert build(docs, out, "text", overrides, fresh=False) == 0  # index.rst itself did not change
    assert f"pkg/collector.py:{step + 2}" in (out / "index.txt").read_text(encoding="utf-8")


def test_hostile_code_text_stays_text(tmp_path: Path) -> None:
    """A guard and a call copied from the code carry rst markup: the page shows it, never runs it."""
    checkout = write_package(
        tmp_path / "checkout",
        {
            "h/__init__.py": "",
            "h/m.py": """
                def target():
                    return 1


                def f(s):
                    if "**bold** `x <javascript:alert(1)>`_ .. raw:: html" in s:
                        target()
            """,
        },
    )
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "conf.py").write_text(
        f'extensions = ["rlmap.sphinx"]\nrlmap_source = {str(checkout)!r}\nrlmap_package = "h"\nrlmap_cache_dir = None\n'
    )
    (docs / "index.rst").write_text("Hostile\n=======\n\n.. rlmap-flow:: h.m.f\n")
    assert build(docs, tmp_path / "out") == 0
    html = (tmp_path / "out" / "index.html").read_text(encoding="utf-8")
    assert "**bold**" in html  # shown as written
    assert "<strong>bold</strong>" not in html  # (the outline's own step numbers are bold)
    assert 'href="javascript' not in html


# Builds the docs in a fresh interpreter, then reports which analysed modules got imported.
PROBE = textwrap.dedent(
    """
    import json, sys
    from sphinx.cmd.build import build_main
    code = build_main(["-W", "-q", "-E", "-b", "text", sys.argv[1], sys.argv[2]])
    leaked = sorted(m for m in sys.modules if m.split(".")[0] in ("a", "torchrl", "torch", "tensordict"))
    print(json.dumps({"code": code, "leaked": leaked}), file=sys.stderr)
    """
)


def test_building_never_imports_the_documented_package(tmp_path: Path) -> None:
    """``a`` found on sys.path (no rlmap_source): importing it would write a marker file."""
    marker = tmp_path / "imported"
    site = write_package(
        tmp_path / "site",
        {
            "a/__init__.py": f"open({str(marker)!r}, 'a').write('a')\n",
            "a/b.py": f"open({str(marker)!r}, 'a').write('b')\ndef f():\n    return g()\n\n\ndef g():\n    return 1\n",
        },
    )
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "conf.py").write_text('extensions = ["rlmap.sphinx"]\nrlmap_package = "a"\nrlmap_cache_dir = None\n')
    (docs / "index.rst").write_text("Static\n======\n\n:rlmap:`f`\n\n.. rlmap-callers:: a.b.g\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(Path.cwd())])}
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(docs), str(tmp_path / "out")],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    report = json.loads(done.stderr.strip().splitlines()[-1])
    assert not marker.exists(), "the documented package was imported"
    assert report == {"code": 0, "leaked": []}, done.stderr
    text = (tmp_path / "out" / "index.txt").read_text(encoding="utf-8")
    assert 'in "f" at "g" ("a/b.py:3")' in text  # the call site of g, from the code


def test_a_build_whose_value_flow_dropped_values_says_so_without_failing_a_strict_build(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    classes = "".join(f"class A{number}:\n    def run(self):\n        return {number}\n\n\n" for number in range(12))
    calls = "".join(f"    pick(A{number}())\n" for number in range(12))
    checkout = write_package(
        tmp_path / "checkout",
        {"cp/__init__.py": f"{classes}def pick(x):\n    return x.run()\n\n\ndef main():\n{calls}"},
    )
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "profile.toml").write_text("[profile]\nvalue_cap = 8\n", encoding="utf-8")
    conf = f'extensions = ["rlmap.sphinx"]\nrlmap_source = {str(checkout)!r}\nrlmap_package = "cp"\nrlmap_cache_dir = None\n'
    (docs / "conf.py").write_text(conf + 'rlmap_profile = "profile.toml"\n')
    (docs / "index.rst").write_text("Capped\n======\n\n.. rlmap-flow:: cp.pick\n")
    from sphinx.cmd.build import build_main

    assert build_main(["-W", "-E", "-b", "text", str(docs), str(tmp_path / "out")]) == 0
    assert (
        "rlmap: the value flow dropped values past its cap of 8 per variable in 1 variable" in capsys.readouterr().out
    )


def test_a_profile_template_that_loops_for_ever_stops_the_build_with_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The directives rendered a profile's template overrides in the Sphinx process, unbounded: a
    loop over a million characters a million times held ``sphinx-build`` for ever (``rlmap
    generate`` stops it). They now render under the same CPU and memory limits."""
    monkeypatch.setenv("RLMAP_RENDER_CPU_SECONDS", "2")
    profile = tmp_path / "profile"
    shutil.copytree(FIXTURES, profile, ignore=shutil.ignore_patterns("pkg", "sphinx", "docs"))
    (profile / "templates" / "sections").mkdir(parents=True, exist_ok=True)
    looping = "{% for a in 'x' * 1000000 %}{% for b in 'x' * 1000000 %}{% endfor %}{% endfor %}\n"
    (profile / "templates" / "sections" / "flow.j2").write_text(looping, encoding="utf-8")
    docs = _docs_copy(tmp_path, {"index.rst": "Loops\n=====\n\n.. rlmap-flow:: Collector.rollout\n"})
    overrides = (f"rlmap_source={FIXTURES}", f"rlmap_profile={profile / 'profile.toml'}")
    with _no_python_warnings():
        code = build(docs, tmp_path / "out", overrides=overrides)
    err = capsys.readouterr().err
    assert code != 0
    assert re.search(r"index\.rst:4: ERROR: rlmap: rendering the section stopped: it took over 2 s of CPU", err), err


@pytest.mark.parametrize(
    ("override", "says"),
    [
        ("rlmap_package=7", "conf.py: rlmap_package = 7 is not a string - set rlmap_package to one"),
        ("rlmap_cache_dir=5", "conf.py: rlmap_cache_dir = 5 is not a string"),
        ("rlmap_source=/no/such/checkout", "rlmap_source in conf.py"),
    ],
)
def test_a_bad_setting_in_conf_py_is_an_error_in_its_terms(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], override: str, says: str
) -> None:
    """A number where conf.py wants a path ended in a TypeError's traceback; a missing source was
    answered with "pass --source", an option of the command line.  (Sphinx itself prints any error
    an extension raises with its versions and a traceback summary.)"""
    docs = _docs_copy(tmp_path, {})
    settings = [f"rlmap_source={FIXTURES}", f"rlmap_profile={FIXTURES / 'profile.toml'}"]
    name = override.partition("=")[0]
    settings = [setting for setting in settings if not setting.startswith(name + "=")] + [override]
    conf = docs / "conf.py"
    if override.endswith(("=7", "=5")):  # a number: set in conf.py itself (-D gives strings)
        conf.write_text(conf.read_text(encoding="utf-8") + f"\n{override}\n", encoding="utf-8")
        settings.remove(override)
    with _no_python_warnings():
        code = build(docs, tmp_path / "out", overrides=tuple(settings))
    err = capsys.readouterr().err
    assert code != 0
    assert says in err, err
    assert "TypeError" not in err
    assert "--source" not in err
