"""Bad configuration, profiles, glossaries and symptoms: exit 2 naming the file and the key, never 70."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, Run

CONFIG_CASES = {
    "formats-int": ("formats = 3", "[tool.rlmap].formats: expected a list, got an integer"),
    "docs-str": ('docs = "docs"', 'expected a list, got a string - write a list: docs = ["...", "..."]'),
    "misspelt-key": ('fromats = ["rst"]', "unknown key 'fromats' - did you mean 'formats'?"),
    "docs-mixed": ('docs = ["a", 1]', "[tool.rlmap].docs[1]: expected a string, got an integer"),
    "negative-threshold": ("audit-min-callers = -1", "audit-min-callers: expected an integer >= 0"),
    "script-url": ('repo-url = "javascript:alert(1)"', "repo-url: expected an https:// URL - give the"),
    "bad-package": ('package = "a b"', "package: expected a dotted Python package name - write it as"),
    "unknown-format": (
        'formats = ["pdf"]',
        "[tool.rlmap].formats: unknown format(s) pdf - use one or more of rst, md (e.g. formats = ",
    ),
    "table-not-table": (None, "tool.rlmap must be a table"),
    "not-utf8": (b"[tool.rlmap]\nout = '\xff'\n", "not valid UTF-8"),
    "bad-toml": ("formats = [", "invalid TOML"),
    # what tomllib raises beside its own error (exit 70 before): in any table of the file
    "nested-deeply": ("[x]\ny = " + "[" * 3000 + "]" * 3000, "invalid TOML: nested too deeply"),
    "huge-integer": ("audit-min-callers = 1" + "0" * 4400, "invalid TOML: Exceeds the limit"),
    # a key's parts cost their square to parse: 40 kB of them took 2.4 GB (refused before parsing,
    # in a table rlmap never reads too), while a string's dots cost nothing
    "dotted-key-bomb": (
        'x = "' + "." * 30000 + '"\n[tool.other]\n' + "a." * 20000 + "b = 1",
        "dotted keys of too many",
    ),
}


@pytest.mark.parametrize("case", sorted(CONFIG_CASES))
def test_bad_config_is_exit_2_naming_the_key(run: Run, tmp_path: Path, case: str) -> None:
    body, expected = CONFIG_CASES[case]
    config = tmp_path / "rlmap.toml"
    if body is None:
        config.write_text("[tool]\nrlmap = 3\n", encoding="utf-8")
    elif isinstance(body, bytes):
        config.write_bytes(body)
    else:
        config.write_text(f"[tool.rlmap]\n{body}\n", encoding="utf-8")
    code, _, err = run("generate", "--config", str(config), "--check", "-q")
    assert code == 2, err
    assert err.startswith(f"rlmap: error: {config}")  # the file as --config named it
    assert expected in err
    assert "internal error" not in err


def test_a_config_that_is_a_directory_says_so(run: Run, tmp_path: Path) -> None:
    code, _, err = run("generate", "--config", str(tmp_path), "--check", "-q")
    assert code == 2
    assert err.startswith(f"rlmap: error: config file '{tmp_path}' is a directory - pass --config a TOML file")


PAGE = '[pages.helpers]\ntitle = "x"\nslug = "h"\nsummary = "s"\n'
HELPERS = PAGE + '[[pages.helpers.sections]]\nkind = "inventory"\n'
PROFILE_CASES = {
    "pages-int": ("pages = 3\n", "'pages' must be a table"),
    "page-int": ("[pages]\nhelpers = 3\n", "pages.helpers must be a table"),
    "title-int": ("[pages.helpers]\ntitle = 3\n", "[pages.helpers].title: expected a string, got an integer"),
    "scope-int": (HELPERS + "scope = 3\n", "section 1 (inventory).scope: expected a list, got an integer"),
    "scope-ints": (HELPERS + "scope = [1]\n", "section 1 (inventory).scope[0]: expected a string"),
    "phases-str": (
        PAGE + '[[pages.helpers.sections]]\nkind = "flow"\nfunction = "f"\nphases = "x"\n',
        "(flow).phases: expected a list, got a string - write one [[...phases]] table per entry",
    ),
    "prose-int": ("[prose]\nhelpers = 3\n", "prose.helpers must be a table"),
    "glossary-int": ("[profile]\nglossary = 3\n", "[profile].glossary: expected a string"),
    "glossary-missing": ('[profile]\nglossary = "nope.toml"\n', "/nope.toml': No such file or directory"),
    "glossary-terms-int": ('[profile]\nglossary = "g.toml"\n', "g.toml: 'term' must be an array of tables"),
    "misspelt-section-key": (HELPERS + 'scopes = ["a"]\n', "unknown key 'scopes' - did you mean 'scope'?"),
    "misspelt-page-key": (PAGE + 'titel = "x"\n', "unknown key 'titel' - did you mean 'title'?"),
    "script-link": (
        PAGE
        + '[[pages.helpers.sections]]\nkind = "contents"\nrelated = [{ title = "t", url = "javascript:alert(1)" }]\n',
        "p.toml:5: [pages.helpers] section 1 (contents).related[0].url: expected a string matching",
    ),
    "unknown-kind": (PAGE + '[[pages.helpers.sections]]\nkind = "flw"\n', "'kind' is 'flw', not a section kind"),
    "no-slug": (
        '[pages.helpers]\ntitle = "x"\nsummary = "s"\n',
        "[pages.helpers]: object missing required field `slug`",
    ),
    "unknown-extension": ('[profile]\nextensions = ["tensordct"]\n', "extensions: tensordct is not an extension"),
    # a cap that would make the solve keep nothing, or run without end on a large package
    "tiny-cap": ("[profile]\nvalue_cap = 1\n", "p.toml: [profile].value_cap: expected an integer >= 8"),
    "huge-cap": ("[profile]\nvalue_cap = 10000000\n", "p.toml: [profile].value_cap: expected an integer <= 4096"),
    "text-cap": ('[profile]\nvalue_cap = "lots"\n', "p.toml: [profile].value_cap: expected an integer, got a string"),
    "prose-of-no-page": ('[prose.nonsense]\nintro = "x"\n', "[prose.nonsense] is not a page"),
    "unshown-prose": (
        PAGE + '[prose.helpers]\nintor = "x"\n',
        "p.toml:6: [prose.helpers] intor is shown by no section",
    ),
    "not-utf8": (b"[pages.helpers]\ntitle = '\xfe'\n", "not valid UTF-8"),
    "same-slug": (
        '[pages.a]\nslug = "same"\ntitle = "A"\nsummary = "s"\n[pages.b]\nslug = "same"\ntitle = "B"\nsummary = "s"\n',
        "p.toml: [pages.b] has the slug 'same' of [pages.a]",
    ),
    "bad-jinja": (PAGE + '[prose.helpers]\nintro = "{{ sym( }}"\n', "prose 'intro'"),
    # words shown as written: one line and no markup (a title's newline started a raw directive)
    "title-directive": (
        '[pages.helpers]\ntitle = "Main\\n\\n.. raw:: html\\n\\n   <script>x</script>"\nslug = "h"\nsummary = "s"\n',
        "[pages.helpers].title: expected one line of words - remove the line break",
    ),
    "title-nul": (
        '[pages.helpers]\ntitle = "Ma\\u0000in"\nslug = "h"\nsummary = "s"\n',
        "title: expected one line of words",
    ),
    "summary-link": (
        '[pages.helpers]\ntitle = "t"\nslug = "h"\nsummary = "see [x](javascript:y)"\n',
        "'summary': holds",
    ),
    "section-title-role": (HELPERS + 'id = "i"\ntitle = "A :func:`x` b"\n', "(inventory): 'title': holds"),
    "section-title-newline": (HELPERS + 'id = "i"\ntitle = "A\\nb"\n', "(inventory).title: expected one line of words"),
    # U+0085 (NEL) is a line break to the page writer: it let a directive through a title and a lead
    "title-nel": (
        '[pages.helpers]\ntitle = "Main\\u0085\\u0085.. include:: /etc/hostname"\nslug = "h"\nsummary = "s"\n',
        "title: expected one line of words",
    ),
    "lead-nel": (HELPERS + 'lead = "Words\\u0085\\u0085.. raw:: html"\n', "lead: holds an rst directive"),
}


@pytest.mark.parametrize("case", sorted(PROFILE_CASES))
def test_bad_profile_is_exit_2_naming_the_entry(run: Run, tmp_path: Path, case: str) -> None:
    body, expected = PROFILE_CASES[case]
    profile = tmp_path / "p.toml"
    if isinstance(body, bytes):
        profile.write_bytes(body)
    else:
        profile.write_text(body, encoding="utf-8")
    (tmp_path / "g.toml").write_text("term = [1, 2]\n", encoding="utf-8")
    args = ["generate", "--source", str(FIXTURES), "--package", "pkg", "--profile", str(profile)]
    code, _, err = run(*args, "--out", str(tmp_path / "out"), "--no-cache", "-q")
    assert code == 2, err
    assert expected in err
    assert "internal error" not in err
    assert not (tmp_path / "out").exists()


def test_a_syntax_error_behind_a_profile_name_is_reported_first(run: Run, tmp_path: Path) -> None:
    """The cause (the file that could not be parsed) comes before its effect (a name the profile misses)."""
    root = tmp_path / "checkout"
    shutil.copytree(FIXTURES / "pkg", root / "pkg")
    with (root / "pkg" / "collector.py").open("a", encoding="utf-8") as handle:
        handle.write("def broken(:\n")
    args = ["generate", "--source", str(root), "--package", "pkg", "--profile", str(FIXTURES / "profile.toml")]
    code, _, err = run(*args, "--out", str(tmp_path / "out"), "--no-cache", "-q")
    assert code == 2
    lines = err.splitlines()
    syntax = next(i for i, line in enumerate(lines) if "pkg/collector.py:" in line and "syntax error" in line)
    profile = next(i for i, line in enumerate(lines) if "names no symbol" in line)
    assert syntax < profile


def test_jobs_are_capped_at_the_cores(run: Run) -> None:
    code, _, err = run("graph", "--source", str(FIXTURES), "--package", "pkg", "--no-cache", "-q", "-j", "256")
    assert code == 0
    assert "rlmap: note: --jobs 256 is more than the" in err


@pytest.mark.parametrize("out", ["/tmp/elsewhere", "../elsewhere", ".", "sub/../.."])
def test_a_config_file_cannot_send_output_out_of_its_directory(
    run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, out: str
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "pyproject.toml").write_text(f'[tool.rlmap]\nout = "{out}"\n', encoding="utf-8")
    monkeypatch.chdir(repo)
    code, _, err = run("generate", "--no-cache", "-q")
    assert code == 2, err
    assert "is not a subdirectory of the directory of the file that sets it" in err


@pytest.mark.parametrize("out", [".git", ".git/hooks", "docs/../.git/x", ".GIT", ".git."])
def test_a_config_file_cannot_send_output_into_the_git_folder(
    run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, out: str
) -> None:
    """``out = ".git"`` was inside the file's directory: generate replaced the repository's .git
    folder with one holding the pages."""
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / ".git" / "HEAD").write_text("ref: refs/heads/main\n", encoding="utf-8")
    (repo / "pyproject.toml").write_text(f'[tool.rlmap]\nout = "{out}"\n', encoding="utf-8")
    monkeypatch.chdir(repo)
    code, _, err = run("generate", "--no-cache", "-q")
    assert code == 2, err
    assert "is inside the repository's .git folder" in err
    assert sorted(path.name for path in (repo / ".git").iterdir()) == ["HEAD"]


@pytest.mark.parametrize("key", ["source", "templates", "profile", "docs"])
@pytest.mark.parametrize("where", ["/", "../elsewhere", "sub/../..", "link"])
def test_a_config_file_cannot_make_rlmap_read_out_of_its_directory(
    run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, key: str, where: str
) -> None:
    """``templates = "/"`` let a template include ``/proc/self/environ`` into the pages (and the
    ``--check`` diff); ``docs = ["../victim"]`` let ``audit --fix`` rewrite files outside the repository."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (tmp_path / "elsewhere").mkdir()
    if where == "link":
        (repo / "link").symlink_to(tmp_path / "elsewhere")
    value = f'["{where}"]' if key == "docs" else f'"{where}"'
    (repo / "pyproject.toml").write_text(f"[tool.rlmap]\n{key} = {value}\n", encoding="utf-8")
    monkeypatch.chdir(repo)
    command = ["audit", "--fix"] if key == "docs" else ["generate", "--check"]
    code, _, err = run(*command, "--no-cache", "-q")
    assert code == 2, err
    assert f"[tool.rlmap] {key} = '{where}' is outside the repository of the file that sets it" in err


@pytest.mark.parametrize(
    ("glossary", "expected"),
    [
        ("/etc/passwd", "glossary: expected a string matching"),
        ("../glossary.toml", "glossary: expected a string matching"),
        ("out.toml", "'out.toml' leads out of the profile's directory"),
    ],
)
def test_a_profile_reads_only_its_own_files(run: Run, tmp_path: Path, glossary: str, expected: str) -> None:
    profile = tmp_path / "p"
    profile.mkdir()
    (tmp_path / "glossary.toml").write_text("", encoding="utf-8")
    (profile / "out.toml").symlink_to(tmp_path / "glossary.toml")
    (profile / "profile.toml").write_text(f'[profile]\nglossary = "{glossary}"\n', encoding="utf-8")
    args = ["generate", "--source", str(FIXTURES), "--package", "pkg", "--profile", str(profile)]
    code, _, err = run(*args, "--out", str(tmp_path / "out"), "--no-cache", "-q")
    assert code == 2
    assert expected in err


def test_a_profile_folder_whose_profile_is_a_link_out_is_refused(
    run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``profile = "prof"`` passes the repository check; ``prof/profile.toml`` must not lead out either."""
    repo = tmp_path / "repo"
    (repo / "prof").mkdir(parents=True)
    secret = tmp_path / "credentials.toml"
    secret.write_text("[registry]\ntoken = 'x'\n", encoding="utf-8")
    (repo / "prof" / "profile.toml").symlink_to(secret)
    shutil.copytree(FIXTURES / "pkg", repo / "pkg")
    (repo / "pyproject.toml").write_text('[tool.rlmap]\nsource = "."\npackage = "pkg"\nprofile = "prof"\n')
    monkeypatch.chdir(repo)
    code, _, err = run("generate", "--no-cache", "-q")
    assert code == 2
    assert "'profile.toml' leads out of the profile's directory" in err
    assert "registry" not in err


def test_a_package_folder_that_is_a_link_out_is_refused(run: Run, tmp_path: Path) -> None:
    """``source = "."`` with ``pkg`` committed as a link to a folder elsewhere indexed that folder."""
    shutil.copytree(FIXTURES / "pkg", tmp_path / "elsewhere" / "pkg")
    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "pkg").symlink_to(tmp_path / "elsewhere" / "pkg")
    code, _, err = run("graph", "--source", str(tmp_path / "repo"), "--package", "pkg", "--no-cache", "-q")
    assert code == 2
    assert "is a link to a folder outside" in err


def test_the_output_directory_cannot_hold_the_working_directory(
    run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    args = ["generate", "--source", str(FIXTURES), "--package", "pkg", "--profile", str(FIXTURES / "profile.toml")]
    code, _, err = run(*args, "--out", ".", "--no-cache", "-q")
    assert code == 2
    assert "holds the current directory" in err


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
@pytest.mark.parametrize("which", ["profile", "glossary"])
def test_a_profile_or_glossary_that_is_no_regular_file_is_refused(
    run: Run, tmp_path: Path, kind: str, which: str
) -> None:
    special = tmp_path / "special.toml"
    if kind == "fifo":
        os.mkfifo(special)
    else:
        special.symlink_to("/dev/zero")
    profile = special
    if which == "glossary":
        profile = tmp_path / "p.toml"
        profile.write_text('[profile]\nglossary = "special.toml"\n', encoding="utf-8")
    args = ["generate", "--source", str(FIXTURES), "--package", "pkg", "--profile", str(profile)]
    code, _, err = run(*args, "--out", str(tmp_path / "out"), "--no-cache", "-q")  # a hang here is the failure
    assert code == 2
    if which == "glossary" and kind == "dev-zero":  # a link out of the profile's directory
        assert "'special.toml' leads out of the profile's directory" in err
    else:
        assert "/special.toml' is not a regular file" in err


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ('profile = "p\\u0000x"', "[tool.rlmap].profile: expected a path or pattern: not empty, and no control"),
        ('out = "o\\u0000x"', "[tool.rlmap].out: expected a path or pattern: not empty, and no control"),
        ('package = "' + "a." * 3000 + 'a"', "[tool.rlmap].package: expected a dotted Python package name"),
    ],
)
def test_control_characters_and_huge_names_are_config_errors(
    run: Run, tmp_path: Path, body: str, expected: str
) -> None:
    config = tmp_path / "rlmap.toml"
    config.write_text(f"[tool.rlmap]\n{body}\n", encoding="utf-8")
    code, _, err = run("generate", "--config", str(config), "--check", "-q")
    assert code == 2
    assert expected in err


def test_a_huge_package_name_on_the_command_line_is_a_usage_error(run: Run) -> None:
    code, _, err = run("graph", "--package", "a." * 3000 + "a", "-q")
    assert code == 2
    assert "internal error" not in err


def test_a_config_that_starts_with_a_byte_order_mark_is_read(run: Run, tmp_path: Path) -> None:
    """Some editors write a byte-order mark; TOML has none, and tomllib said 'Invalid statement
    (line 1, column 1)' of a file that is otherwise right."""
    config = tmp_path / "rlmap.toml"
    config.write_bytes('\ufeff[tool.rlmap]\nfromats = ["rst"]\n'.encode())
    code, _, err = run("generate", "--config", str(config), "--check", "-q")
    assert code == 2
    assert "unknown key 'fromats'" in err  # read past the mark, to the key it holds


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="gives a file to another user")
def test_another_users_pyproject_above_the_working_directory_is_not_read(tmp_path: Path) -> None:
    """Outside a checkout the search for ``[tool.rlmap]`` went up to ``/``: another user's
    ``/tmp/pyproject.toml`` could set the output directory, the profile and the source."""
    from rlmap.config import load_config

    (tmp_path / "work").mkdir()
    planted = tmp_path / "pyproject.toml"
    planted.write_text('[tool.rlmap]\nout = "elsewhere"\n', encoding="utf-8")
    os.chown(planted, 65534, 65534)  # nobody's, in a folder of ours
    assert load_config(cwd=tmp_path / "work").out != tmp_path / "elsewhere"
    os.chown(planted, os.geteuid(), os.getegid())  # ours: read
    assert load_config(cwd=tmp_path / "work").out == tmp_path / "elsewhere"


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="gives a file to another user")
def test_a_run_says_which_pyproject_it_passed_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Another user's ``pyproject.toml`` with a ``[tool.rlmap]`` table was passed over without a
    word: its owner saw settings ignored and no reason.  The run says so, and how to use it; a
    passed-over file with no such table, or one that is no valid TOML, is not mentioned."""
    from rlmap.cli.common import read_config

    work = tmp_path / "work"
    work.mkdir()
    planted = tmp_path / "pyproject.toml"
    planted.write_text('[tool.rlmap]\nout = "elsewhere"\n', encoding="utf-8")
    os.chown(planted, 65534, 65534)
    monkeypatch.chdir(work)
    assert read_config(None).out != tmp_path / "elsewhere"
    err = capsys.readouterr().err
    assert f"rlmap: note: {planted}: owned by another user" in err
    assert f"pass --config {planted} to use it" in err
    read_config(None, quiet=True)  # (a shell's completion: its stderr is the prompt)
    assert capsys.readouterr().err == ""
    for text in ('[tool.other]\nout = "x"\n', "[tool.rlmap\n"):
        planted.write_text(text, encoding="utf-8")
        read_config(None)
        assert capsys.readouterr().err == ""


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="gives a file to another user")
def test_a_passed_over_pyproject_at_a_checkouts_root_still_ends_the_search(tmp_path: Path) -> None:
    """Another user's ``pyproject.toml`` at the root of the checkout was passed over before the
    root was seen: the search went on above the repository and read a ``[tool.rlmap]`` there."""
    from rlmap.config import load_config

    above = tmp_path / "pyproject.toml"
    above.write_text('[tool.rlmap]\nout = "ABOVE_REPO"\n', encoding="utf-8")
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "sub").mkdir()
    planted = repo / "pyproject.toml"
    planted.write_text('[tool.rlmap]\nout = "elsewhere"\n', encoding="utf-8")
    os.chown(planted, 65534, 65534)
    found = load_config(cwd=repo / "sub")
    assert found.out == Path("generated_docs")  # rlmap's default: nothing above the checkout is read
    assert found.passed_over == (str(planted),)


@pytest.mark.parametrize(
    "body",
    [
        "cal = [" + ", ".join(f"{number}.5" for number in range(300)) + "]",  # floats: no key
        "x = {" + ", ".join(f"k{number}.v = 1" for number in range(300)) + "}",  # many keys of one dot
        'x = """a \\""" ' + "." * 300 + '"""',  # dots in a string, past an escaped quote
    ],
)
def test_a_valid_pyproject_of_many_dots_in_values_is_read(tmp_path: Path, body: str) -> None:
    """The dotted-key bound counted every dot of a line: a pyproject.toml with an array of 260
    floats in another tool's table stopped every command run beside it."""
    (tmp_path / "pyproject.toml").write_text(f"[project]\nname = 'x'\n\n[tool.other]\n{body}\n", encoding="utf-8")
    from rlmap.config import load_config

    assert load_config(cwd=tmp_path).out is not None  # read: no error, rlmap's defaults
