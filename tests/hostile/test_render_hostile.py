"""Curated prose, glossary text and user templates cannot reach Python: every classic escape fails.

Each payload tries to run ``touch <marker>``; the test asserts that generation stops with a
clear error (exit 2, the file named) and that the marker was never created.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from rlmap.render.renderer import _described
from tests.conftest import FIXTURES, Run

TOUCH = "touch {marker}"

# Each one, in an unsandboxed jinja environment, reaches ``os`` or the template context.
ESCAPES = [
    "{{ ''.__class__.__mro__[1].__subclasses__() }}",
    "{{ cycler.__init__.__globals__.os.popen('CMD').read() }}",
    "{{ joiner.__init__.__globals__.os.popen('CMD').read() }}",
    "{{ namespace.__init__.__globals__.os.popen('CMD').read() }}",
    "{{ lipsum.__globals__['os'].popen('CMD').read() }}",
    "{{ self._TemplateReference__context.cycler.__init__.__globals__.os.popen('CMD').read() }}",
    "{{ sym.__globals__['__builtins__']['__import__']('os').popen('CMD').read() }}",
    "{{ (sym|attr('__globals__'))['__builtins__'] }}",
    "{{ sym['__globals__'] }}",
    "{{ '{0.__class__.__init__.__globals__}'.format(sym) }}",
    "{{ key.__self__.__class__ }}",
    "{% set x = range.__self__ %}{{ x }}",
    "{{ ().__class__.__base__.__subclasses__() }}",
    "{% include '/etc/passwd' %}",
    "{% import '_header.j2' as h %}{{ h }}",
    "{{ 'x' * 100000000000 }}",
    "{{ 9 ** 99999999 }}",
    "{{ '%999999999d' % 1 }}",
    "{{ '{:>999999999}'.format(1) }}",
    "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
    "{% macro m() %}{{ m() }}{% endmacro %}{{ m() }}",
    "{{ 1 / 0 }}",
    "{{ sym(['a']) }}",
    # a function or object printed as it is holds its address: the page changed at every run
    "{{ sym }}",
    "{{ namespace }}",
    "{{ cycler(1, 2) }}",
]


def _profile(tmp_path: Path, text: str, where: str = "prose") -> Path:
    folder = tmp_path / "profile"
    shutil.copytree(FIXTURES, folder, ignore=shutil.ignore_patterns("pkg"))
    profile = folder / "profile.toml"
    if where == "prose":
        body = profile.read_text(encoding="utf-8") + f"\n[prose.helpers]\nintro = {_toml_string(text)}\n"
        profile.write_text(body, encoding="utf-8")
    else:  # the glossary's first definition
        glossary = folder / "glossary.toml"
        lines = glossary.read_text(encoding="utf-8").splitlines()
        index = next(i for i, line in enumerate(lines) if line.startswith("definition"))
        lines[index] = f"definition = {_toml_string(text)}"
        glossary.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return profile


def _toml_string(text: str) -> str:
    return "'''" + text + "'''"


def _generate(run: Run, out: Path, *extra: str) -> tuple[int, str, str]:
    return run("generate", "--source", str(FIXTURES), "--package", "pkg", "--out", str(out), "--no-cache", "-q", *extra)


@pytest.mark.parametrize("payload", ESCAPES)
def test_prose_cannot_escape_the_sandbox(run: Run, tmp_path: Path, payload: str) -> None:
    marker = tmp_path / "marker"
    text = payload.replace("CMD", TOUCH.format(marker=marker))
    profile = _profile(tmp_path, text)
    code, out, err = _generate(run, tmp_path / "out", "--profile", str(profile))
    assert not marker.exists()
    assert code == 2, err
    assert f"rlmap: error: {profile}:" in err  # (the profile named as given)
    assert "Traceback" not in err + out
    assert ". - " not in err  # jinja2's sentence ("Range too big.") ends at the dash, not before it
    assert not (tmp_path / "out").exists()  # nothing half-written


@pytest.mark.parametrize("payload", ESCAPES[:8])
def test_user_template_cannot_escape_the_sandbox(run: Run, tmp_path: Path, payload: str) -> None:
    marker = tmp_path / "marker"
    templates = tmp_path / "templates"
    (templates / "sections").mkdir(parents=True)
    page = templates / "sections" / "contents.j2"  # the index page's one section
    page.write_text(payload.replace("CMD", TOUCH.format(marker=marker)) + "\n", encoding="utf-8")
    code, _, err = _generate(
        run, tmp_path / "out", "--profile", str(FIXTURES / "profile.toml"), "--templates", str(templates)
    )
    assert not marker.exists()
    assert code == 2, err
    assert "contents.j2" in err


def test_glossary_definition_is_not_a_template_that_runs(run: Run, tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    payload = ESCAPES[1].replace("CMD", TOUCH.format(marker=marker))
    profile = _profile(tmp_path, payload, where="glossary")
    code, _, _ = _generate(run, tmp_path / "out", "--profile", str(profile))
    assert not marker.exists()
    if code == 0:  # rendered as text: the payload appears literally, never evaluated
        glossary = (tmp_path / "out" / "md" / "glossary.md").read_text(encoding="utf-8")
        assert "__globals__" in glossary


def test_check_through_pyproject_profile_runs_nothing(
    run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A repository whose ``[tool.rlmap] profile`` points at a crafted profile: ``--check`` stays safe."""
    marker = tmp_path / "marker"
    profile = _profile(tmp_path, ESCAPES[1].replace("CMD", TOUCH.format(marker=marker)))
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "pyproject.toml").write_text(
        f'[tool.rlmap]\nsource = "{FIXTURES}"\npackage = "pkg"\nprofile = "{profile}"\nout = "docs"\n', encoding="utf-8"
    )
    monkeypatch.chdir(repo)
    code, _, err = run("generate", "--check", "--no-cache", "-q")
    assert not marker.exists()
    assert code == 2, err


def test_template_symlink_out_of_its_directory_is_refused(run: Run, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOPSECRET\n", encoding="utf-8")
    templates = tmp_path / "templates"
    (templates / "sections").mkdir(parents=True)
    (templates / "sections" / "contents.j2").symlink_to(secret)
    out = tmp_path / "out"
    code, stdout, err = _generate(run, out, "--profile", str(FIXTURES / "profile.toml"), "--templates", str(templates))
    assert code == 2, err
    assert "outside its template directory" in err
    assert "TOPSECRET" not in stdout + err
    assert not out.exists()


def test_sandboxed_templates_still_render_the_shipped_pages(run: Run, tmp_path: Path) -> None:
    """The sandbox is no excuse for a broken page: the shipped templates use only what it allows."""
    code, _, err = _generate(run, tmp_path / "out", "--profile", str(FIXTURES / "profile.toml"))
    assert code == 0, err
    assert "Fixture collector internals" in (tmp_path / "out" / "md" / "collectors_internals.md").read_text()


MARKUP = [
    "Hi.\n\n.. raw:: html\n\n   <script>alert(1)</script>\n",
    "Hi.\n\n.. literalinclude:: ../../../../etc/hostname\n",
    "Hi <script>alert(1)</script>",
    "Where `click <javascript:alert(document.domain)>`__ items go",
    "See :download:`/etc/passwd`.",
    "See {raw}`<b>x</b>`.",
    "Hi\n\n```{raw} html\n<b>x</b>\n```\n",
    "A [link](javascript:alert(1)).",
    "An image of data:text/html;base64,PHNjcmlwdD4=",
]


@pytest.mark.parametrize("text", MARKUP)
@pytest.mark.parametrize("where", ["prose", "glossary"])
def test_curated_text_cannot_carry_markup_into_the_docs(run: Run, tmp_path: Path, text: str, where: str) -> None:
    profile = _profile(tmp_path, text, where=where)
    code, _, err = _generate(run, tmp_path / "out", "--profile", str(profile))
    assert code == 2, err
    assert "which curated text may not carry" in err
    assert not (tmp_path / "out").exists()


EXHAUSTING = [
    "{% for x in 'x'*1000000 %}{% for y in 'y'*1000000 %}{% endfor %}{% endfor %}",
    "{% set l=[1] %}{% for x in l %}{{ l.append(x) or '' }}{% endfor %}",
    "{% set a=[1]*1000000 %}{% set b=[a]*1000000 %}{{ b|string|length }}",
]  # (widths, which the sandbox refuses before any limit is met: test_a_width_is_bounded_like_a_repeat)


@pytest.mark.parametrize("payload", EXHAUSTING)
def test_templates_cannot_exhaust_time_or_memory(
    run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, payload: str
) -> None:
    """Rendering runs in a child with CPU and memory limits: a runaway template is an error, not a hang."""
    monkeypatch.setenv("RLMAP_RENDER_CPU_SECONDS", "3")
    profile = _profile(tmp_path, payload)
    code, _, err = _generate(run, tmp_path / "out", "--profile", str(profile))
    assert code == 2, err
    assert "rendering the pages stopped" in err or "ran out of memory" in err
    assert "internal error" not in err
    assert ": -" not in err  # (a reason, never an empty one before the hint)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("payload", "says"),
    [
        ("{{ '%*d'|format(200000000, 1) }}", "a %-format field wider than 9999 characters"),
        ("{{ 'x'|center(200000000) }}", "a width above 1000000 characters"),
        ("{{ 'x'.ljust(200000000) }}", "a width above 1000000 characters"),
        ("{{ 'x'.zfill(200000000) }}", "a width above 1000000 characters"),
        ("{{ 'a\\nb'|indent(200000000) }}", "a width above 1000000 characters"),
        ("{{ '%900000000s'|format('x') }}", "a %-format field wider than 9999 characters"),
        ("{{ '%.*d' % (50000000, 0) }}", "a %-format field wider than 9999 characters"),
        ("{{ '{0:{1}}'.format('', 50000000) }}", "a format field wider than 9999 characters"),
    ],
)
def test_a_width_is_bounded_like_a_repeat(run: Run, tmp_path: Path, payload: str, says: str) -> None:
    """A 200-million-character field fits under the render child's 2 GiB: without a bound on
    widths, it wrote two 200 MB pages."""
    code, _, err = _generate(run, tmp_path / "out", "--profile", str(_profile(tmp_path, payload)))
    assert code == 2, err
    assert says in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "payload",
    [
        "{% for i in range(100) %}{{ 'x' * 100000 }}{% endfor %}",
        "{{ (['x' * 1000000] * 20)|join }}",
    ],
)
def test_a_page_is_bounded_whatever_builds_it(run: Run, tmp_path: Path, payload: str) -> None:
    """Loops and joins of bounded pieces made 100 MB pages (a second review): a page over 8 MiB
    is an error, nothing is written."""
    code, _, err = _generate(run, tmp_path / "out", "--profile", str(_profile(tmp_path, payload)))
    assert code == 2, err
    assert "MiB a page may take" in err
    assert not (tmp_path / "out").exists()


def test_a_misspelt_prose_key_is_an_error_naming_file_and_key(run: Run, tmp_path: Path) -> None:
    """A prose entry no section shows would silently vanish from the page: it is an error instead."""
    profile = tmp_path / "profile.toml"
    shutil.copytree(FIXTURES, tmp_path / "copy", ignore=shutil.ignore_patterns("pkg"))
    profile = tmp_path / "copy" / "profile.toml"
    text = profile.read_text(encoding="utf-8") + '\n[prose.helpers]\nintor = "Helpers nobody documented."\n'
    profile.write_text(text, encoding="utf-8")
    code, _, err = _generate(run, tmp_path / "out", "--profile", str(profile))
    assert code == 2
    assert "profile.toml:" in err
    assert "[prose.helpers] intor is shown by no section of the page" in err
    assert "or fix the key (the page shows: no prose)" in err


# A bug in a user's template, one per kind: each is the user's input to fix (exit 2, the
# template's path and line named), never "a bug in rlmap" (exit 70).
BROKEN_TEMPLATES = [
    (b"intro\n{% if x %}\n", "Unexpected end of template"),  # syntax
    (b"intro\n{{ no_such_name }}\n", "'no_such_name' is undefined"),  # undefined name
    (b"intro\n{{ f.__class__ }}\n", "unsafe"),  # sandbox
    (b"intro\n{{ f.sym(1) }}\n", "AttributeError"),  # a formatter given the wrong kind of value
    (b"intro\n{{ f.section('nope') }}\n", "KeyError"),
    (b"intro\n\xff{{ x }}\n", "not UTF-8"),
]


@pytest.mark.parametrize(("template", "said"), BROKEN_TEMPLATES)
def test_a_broken_profile_template_is_bad_input_naming_file_and_line(
    run: Run, tmp_path: Path, template: bytes, said: str
) -> None:
    profile = tmp_path / "profile"
    shutil.copytree(FIXTURES, profile, ignore=shutil.ignore_patterns("pkg"))
    (profile / "templates" / "sections").mkdir(parents=True)
    broken = profile / "templates" / "sections" / "contents.j2"  # the index page's one section
    broken.write_bytes(template)
    out = tmp_path / "out"
    code, stdout, err = _generate(run, out, "--profile", str(profile / "profile.toml"))
    assert code == 2, err
    assert f"rlmap: error: {broken}:2: " in err
    assert said in err
    assert "bug in rlmap" not in err
    assert "Traceback" not in stdout + err
    assert not out.exists()


@pytest.mark.parametrize(
    ("error", "says"),
    [
        (MemoryError(), "MemoryError: it ran out of memory"),
        (ZeroDivisionError("division by zero"), "ZeroDivisionError: division by zero"),
        (KeyError(), "KeyError"),
    ],
)
def test_a_template_error_is_said_with_a_reason(error: BaseException, says: str) -> None:
    """What a template raised, as the error message words it: never ``MemoryError: `` and nothing after."""
    described = _described(error)
    assert described.startswith(says)
    assert not described.endswith(": ")


def test_a_page_template_override_that_leaves_prose_out_is_named(run: Run, tmp_path: Path) -> None:
    """The error blamed the profile (which the user may not have written) and never named the
    user's template that left ``prose.intro`` out."""
    templates = tmp_path / "templates"
    templates.mkdir()
    shipped = (Path(__file__).parent.parent.parent / "templates" / "page.j2").read_text(encoding="utf-8")
    (templates / "page.j2").write_text(shipped.replace("{{ prose.intro }}", ""), encoding="utf-8")
    out = tmp_path / "out"
    code, _, err = _generate(run, out, "--profile", str(FIXTURES / "profile.toml"), "--templates", str(templates))
    assert code == 2, err
    assert f"intro is shown neither by a section nor by the page's template {templates / 'page.j2'}" in err
    assert "{{ prose.intro }}" in err
    assert not out.exists()


@pytest.mark.parametrize("kind", ["directory", "fifo", "broken link"])
def test_a_template_name_that_is_no_file_is_refused(run: Run, tmp_path: Path, kind: str) -> None:
    """A directory, FIFO or broken link named ``page.j2`` in --templates was passed over in
    silence for rlmap's own template: the user's override did not apply, and nothing said so."""
    import os

    templates = tmp_path / "templates"
    templates.mkdir()
    entry = templates / "page.j2"
    if kind == "directory":
        entry.mkdir()
    elif kind == "fifo":
        os.mkfifo(entry)
    else:
        entry.symlink_to(tmp_path / "gone.j2")
    out = tmp_path / "out"
    code, _, err = _generate(run, out, "--profile", str(FIXTURES / "profile.toml"), "--templates", str(templates))
    assert code == 2, err
    assert f"template '{entry}' is " in err
    assert "passed over for rlmap's own" in err
    assert not out.exists()
