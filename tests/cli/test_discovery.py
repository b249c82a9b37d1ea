"""Configuration found from anywhere inside the repository, and an audit with nothing to read."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, Run


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    shutil.copytree(FIXTURES / "pkg", root / "pkg")
    for name in ("profile.toml", "glossary.toml", "symptoms.toml"):
        shutil.copy(FIXTURES / name, root / name)
    (root / "docs" / "source").mkdir(parents=True)
    (root / "docs" / "source" / "page.rst").write_text("See :func:`pkg.helpers.gone`.\n", encoding="utf-8")
    (root / ".git").mkdir()  # the repository's root: discovery stops here
    (root / "pyproject.toml").write_text(
        '[tool.rlmap]\npackage = "pkg"\nsource = "."\nprofile = "profile.toml"\nout = "docs/generated"\n'
        'docs = ["docs/source"]\n',
        encoding="utf-8",
    )
    return root


def test_generate_and_check_from_a_subdirectory_use_the_repositorys_config(
    project: Path, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(project / "docs" / "source")
    code, _, err = run("generate", "--no-cache", "-q")
    assert code == 0, err
    assert (project / "docs" / "generated" / "md" / "collectors_internals.md").is_file()  # not ./docs/generated
    assert not (project / "docs" / "source" / "docs").exists()
    code, out, err = run("generate", "--check", "--no-cache", "-q")
    assert (code, out) == (0, ""), err


def test_audit_from_a_subdirectory_reads_the_configured_docs(
    project: Path, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(project / "pkg")
    code, out, _ = run("audit", "--no-cache", "-q")
    assert code == 1
    assert "pkg.helpers.gone" in out


def test_a_config_above_the_repository_does_not_apply(project: Path, run: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    inner = project / "vendored"
    (inner / ".git").mkdir(parents=True)
    monkeypatch.chdir(inner)
    code, _, err = run("audit", "--source", str(FIXTURES), "--package", "pkg", "--no-cache", "-q")
    assert code == 2
    assert "nothing to audit: no docs given - pass --docs DIR" in err


def test_audit_with_nothing_to_scan_says_so(tmp_path: Path, run: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "pyproject.toml").write_text('[tool.rlmap]\npackage = "pkg"\n', encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    code, _, err = run("audit", "--source", str(FIXTURES), "--no-cache", "-q")
    assert code == 2
    assert "nothing to audit: no docs given in pyproject.toml" in err


def test_a_configured_profile_that_does_not_exist_is_said_where_it_is_set(
    project: Path, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``profile = "nope/"`` in [tool.rlmap] was reported as "pass --profile ...", a flag no one
    passed; a --profile on the command line still replaces it."""
    config = project / "pyproject.toml"
    config.write_text(config.read_text(encoding="utf-8").replace('profile = "profile.toml"', 'profile = "nope/"'))
    monkeypatch.chdir(project)
    for command in (["generate", "--check"], ["show", "Collector"], ["audit"]):
        code, _, err = run(*command, "--no-cache", "-q")
        assert code == 2, command
        assert err.startswith(f"rlmap: error: pyproject.toml: [tool.rlmap] profile '{project / 'nope'}' does not exist")
    code, _, err = run("show", "Collector", "--profile", str(project / "profile.toml"), "--no-cache", "-q")
    assert code == 0, err
