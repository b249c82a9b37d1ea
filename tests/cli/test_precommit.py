"""The shipped ``rlmap-check`` hook, run for real by pre-commit in a small repository.

The repository is set up like pytorch/rl would be: the package, the profile, ``[tool.rlmap]`` with
``source = "."`` in its pyproject.toml, the committed pages, and the ``.pre-commit-config.yaml`` the
README shows (read from it), pointing at this checkout at HEAD: commit a change to
``.pre-commit-hooks.yaml`` before running these tests. pre-commit installs rlmap from that commit
into a fresh virtualenv from PyPI: rlmap's own dependencies, no torch. Each environment takes about
10-20 s to build (one for the module, one for ``try-repo``); the module takes about 30 s. Without
PyPI the tests are skipped, except under CI (``CI`` set), where they fail.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, write_package
from tests.model.test_packages import APP, NOTED_LIB

REPO = Path(__file__).parent.parent.parent  # the checkout whose hook is tested
PYPROJECT = """\
[tool.rlmap]
source = "."
package = "pkg"
profile = "profile.toml"
out = "docs/internals"
repo-url = "https://github.com/example/pkg"
"""
PAGE = "docs/internals/md/collectors_internals.md"

pytestmark = [
    pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed"),
    pytest.mark.skipif(not (REPO / ".git").exists(), reason="not a git checkout of rlmap: nothing to install from"),
]


def documented_config() -> str:
    """The README's ``.pre-commit-config.yaml``."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^```yaml\n(# \.pre-commit-config\.yaml\n.*?)^```$", readme, re.S | re.M)
    assert len(blocks) == 1, "README.md should show one .pre-commit-config.yaml"
    return blocks[0]


def _env(pre_commit_home: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith(("GIT_", "PRE_COMMIT"))}
    env.update(
        GIT_AUTHOR_NAME="rlmap tests",
        GIT_AUTHOR_EMAIL="tests@rlmap.invalid",
        GIT_COMMITTER_NAME="rlmap tests",
        GIT_COMMITTER_EMAIL="tests@rlmap.invalid",
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=os.devnull,  # no hooksPath or templates from the machine running the tests
        PRE_COMMIT_HOME=str(pre_commit_home),
    )
    return env


def _run(cwd: Path, home: Path, *command: str, extra_env: dict[str, str] | None = None) -> tuple[int, str]:
    done = subprocess.run(
        command,
        cwd=cwd,
        env={**_env(home), **(extra_env or {})},
        capture_output=True,
        text=True,
        encoding="utf-8",
        errors="replace",
        timeout=900,
        check=False,
    )
    output = done.stdout + done.stderr
    if "An unexpected error has occurred" in output and "Installing environment" in output:
        why = next((line.strip() for line in output.splitlines() if "ERROR:" in line), "see pre-commit's log")
        _unavailable(f"pre-commit could not create the hook's environment (it installs rlmap from PyPI): {why}")
    return done.returncode, output


def _git(cwd: Path, home: Path, *args: str) -> str:
    code, output = _run(cwd, home, "git", *args)
    assert code == 0, output
    return output


def _pre_commit() -> str:
    executable = shutil.which("pre-commit")
    if executable is None:
        _unavailable("pre-commit is not installed (it is in the test extras: pip install -e '.[test]')")
    return str(executable)


def _unavailable(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"{reason} - under CI this is a failure, not a skip")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One pre-commit store for the module: the hook's environment is built once."""
    return tmp_path_factory.mktemp("pre-commit-home")


@pytest.fixture(scope="module")
def committed_repo(tmp_path_factory: pytest.TempPathFactory, home: Path) -> Path:
    """The repository with its pages committed. The pages come from the hook's own diff, so they
    are what the rlmap at HEAD writes, even when this checkout has uncommitted changes."""
    root = tmp_path_factory.mktemp("precommit") / "repo"
    shutil.copytree(FIXTURES / "pkg", root / "pkg")
    for name in ("profile.toml", "glossary.toml", "symptoms.toml"):
        shutil.copy(FIXTURES / name, root / name)
    (root / "pyproject.toml").write_text(PYPROJECT, encoding="utf-8")
    head = _git(REPO, home, "rev-parse", "HEAD").strip()
    config = documented_config().replace("<this repository>", str(REPO)).replace("<a tag>", head)
    (root / ".pre-commit-config.yaml").write_text(config, encoding="utf-8")
    _git(root, home, "init", "-q", "-b", "main")
    _git(root, home, "add", ".")
    _git(root, home, "commit", "-q", "-m", "the package")
    code, output = _run(root, home, _pre_commit(), "run", "rlmap-check", "--all-files")
    assert code == 1, output  # no pages yet
    for relative, text in _created_files(output).items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text, encoding="utf-8")
    assert (root / PAGE).is_file()
    _git(root, home, "add", ".")
    _git(root, home, "commit", "-q", "-m", "its pages")
    return root


def _created_files(output: str) -> dict[str, str]:
    """The files a ``--check`` diff creates (every one, when nothing was generated yet)."""
    files: dict[str, str] = {}
    diff = output[output.index("diff --git ") : output.index("rlmap: error:")]
    for block in diff.split("diff --git ")[1:]:
        lines = block.splitlines(keepends=True)
        assert lines[1] == "new file mode 100644\n", block[:200]
        assert lines[2] == "--- /dev/null\n", block[:200]
        name = lines[3].removeprefix("+++ b/").rstrip("\n")
        text = "".join(line[1:] for line in lines[5:] if line.startswith("+"))
        files[name] = text.removesuffix("\n") if "\\ No newline at end of file" in block else text
    return files


@pytest.fixture
def repo(committed_repo: Path, tmp_path: Path, home: Path) -> Path:
    """A copy of the repository with pre-commit's git hook installed."""
    root = Path(shutil.copytree(committed_repo, tmp_path / "repo", symlinks=True))
    code, output = _run(root, home, _pre_commit(), "install")
    assert code == 0, output
    return root


def _move_a_documented_line(repo: Path, home: Path) -> None:
    collector = repo / "pkg" / "collector.py"
    collector.write_text("# a new first line\n" + collector.read_text(encoding="utf-8"), encoding="utf-8")
    _git(repo, home, "add", "pkg/collector.py")


def test_try_repo_passes_when_the_pages_are_current(committed_repo: Path, home: Path) -> None:
    code, output = _run(committed_repo, home, _pre_commit(), "try-repo", str(REPO), "rlmap-check", "--all-files")
    assert code == 0, output
    assert "rlmap internals pages match the code" in output
    assert "Passed" in output


def test_hook_fails_with_the_diff_when_a_documented_line_moved(repo: Path, home: Path) -> None:
    _move_a_documented_line(repo, home)
    _git(repo, home, "commit", "-q", "--no-verify", "-m", "move every line of the collector")
    code, output = _run(repo, home, _pre_commit(), "run", "rlmap-check", "--all-files")
    assert code == 1, output
    assert f"diff --git a/{PAGE} b/{PAGE}" in output
    assert "-The fixture's `Collector.rollout` ([pkg/collector.py:47](" in output
    assert "+The fixture's `Collector.rollout` ([pkg/collector.py:48](" in output
    assert "are stale - run 'rlmap generate' and commit the result" in output


def test_a_commit_that_moves_a_documented_line_is_refused_until_the_pages_come_with_it(repo: Path, home: Path) -> None:
    """Refused with the diff (which ``git apply`` takes from the repository root); committed with
    the pages it passes, and the pages stay current once the commit exists (only links differ)."""
    _move_a_documented_line(repo, home)
    code, output = _run(repo, home, "git", "commit", "-m", "move every line of the collector")
    assert code != 0, output
    assert "Failed" in output
    # the staged file is in no commit yet: its lines are shown without a link
    assert "+The fixture's `Collector.rollout` (`pkg/collector.py:48`)" in output
    diff = output[output.index("diff --git ") : output.index("rlmap: error:")]
    (repo.parent / "pages.diff").write_text(diff, encoding="utf-8")
    _git(repo, home, "apply", "--index", str(repo.parent / "pages.diff"))
    code, output = _run(repo, home, "git", "commit", "-m", "move every line of the collector")
    assert code == 0, output
    assert "Passed" in output
    code, output = _run(repo, home, _pre_commit(), "run", "rlmap-check", "--all-files")
    assert code == 0, output


def test_a_commit_that_changes_a_documented_file_but_no_documented_line_passes(repo: Path, home: Path) -> None:
    collector = repo / "pkg" / "collector.py"
    collector.write_text(collector.read_text(encoding="utf-8") + "# a last line\n", encoding="utf-8")
    _git(repo, home, "add", "pkg/collector.py")
    code, output = _run(repo, home, "git", "commit", "-m", "a comment")
    assert code == 0, output
    assert "Passed" in output


def test_a_commit_of_nothing_the_pages_are_made_of_skips_the_hook(repo: Path, home: Path) -> None:
    (repo / "notes.txt").write_text("not code\n", encoding="utf-8")
    _git(repo, home, "add", "notes.txt")
    code, output = _run(repo, home, "git", "commit", "-m", "notes")
    assert code == 0, output
    assert "(no files to check)Skipped" in output


COMPANION_PYPROJECT = """\
[tool.rlmap]
source = "."
package = "app"
packages = ["app", "lib"]
profile = "profile.toml"
out = "docs/internals"
"""
CAVEATS_PROFILE = """\
[pages.notes]
title = "Notes"
slug = "notes"
summary = "caveats"

[[pages.notes.sections]]
kind = "caveats"
id = "caveats"
title = "Caveats"
symbols = ["lib.core.Base.prepare"]
"""


def test_pages_indexing_a_companion_pass_the_system_hook_where_it_is_installed(tmp_path: Path, home: Path) -> None:
    """A page quoting a companion package (``lib``, installed outside the repository, as
    tensordict is beside torchrl) is checked by ``rlmap-check-system`` in the environment the
    commit runs in; ``rlmap-check``'s own environment holds no ``lib`` and says so."""
    root = write_package(tmp_path / "repo", APP)
    site = write_package(tmp_path / "site", NOTED_LIB)
    (root / "pyproject.toml").write_text(COMPANION_PYPROJECT, encoding="utf-8")
    (root / "profile.toml").write_text(CAVEATS_PROFILE, encoding="utf-8")
    bin_dir = tmp_path / "bin"  # ``rlmap`` where the commit runs: this checkout's, with lib importable
    bin_dir.mkdir()
    (bin_dir / "rlmap").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m rlmap "$@"\n', encoding="utf-8")
    (bin_dir / "rlmap").chmod(0o755)
    here = {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "PYTHONPATH": f"{REPO}{os.pathsep}{site}"}
    code, output = _run(root, home, "rlmap", "generate", "-q", extra_env=here)
    assert code == 0, output
    page = (root / "docs/internals/md/notes.md").read_text(encoding="utf-8")
    assert "prepare marks the data in place, never a copy." in page
    _git(root, home, "init", "-q", "-b", "main")
    _git(root, home, "add", ".")
    _git(root, home, "commit", "-q", "-m", "the package and its pages")
    code, output = _run(
        root, home, _pre_commit(), "try-repo", str(REPO), "rlmap-check-system", "--all-files", extra_env=here
    )
    assert code == 0, output
    assert "rlmap internals pages match the code (your environment)" in output
    assert "Passed" in output
    code, output = _run(root, home, _pre_commit(), "try-repo", str(REPO), "rlmap-check", "--all-files")
    assert code == 1, output
    assert "package 'lib' (listed in packages) was not found" in output
