"""Committed pages in a real git repository: links pinned per file, --check through unrelated commits.

A temporary repository holds the fixture package, its profile and the generated pages; commits
then touch it the way a project's history does.  Runs git (read-only inside rlmap; the test
itself commits).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, Run

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

_ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
}


def _git(repo: Path, *args: str, stdin: str | None = None) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *args], env=_ENV, input=stdin, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _commit(repo: Path, message: str) -> str:
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", message)
    return _git(repo, "rev-parse", "HEAD").strip()


@pytest.fixture
def repo(tmp_path: Path, run: Run) -> Path:
    """A repository with the fixture package, its profile and the committed pages."""
    root = tmp_path / "repo"
    shutil.copytree(FIXTURES / "pkg", root / "pkg")
    for name in ("profile.toml", "glossary.toml", "symptoms.toml"):
        shutil.copy(FIXTURES / name, root / name)
    (root / "pyproject.toml").write_text(
        '[tool.rlmap]\npackage = "pkg"\nsource = "."\nprofile = "profile.toml"\nout = "docs/gen"\n'
        'repo-url = "https://github.com/example/pkg"\n',
        encoding="utf-8",
    )
    _git(root, "init", "-q", "-b", "main")
    _commit(root, "code")
    code, _, err = run("generate", "--config", str(root / "pyproject.toml"), "--no-cache", "-q")
    assert code == 0, err
    _commit(root, "pages")
    return root


def _check(run: Run, repo: Path) -> tuple[int, str, str]:
    return run("generate", "--config", str(repo / "pyproject.toml"), "--check", "--no-cache", "-q")


def test_links_are_pinned_to_each_files_last_commit_not_head(repo: Path) -> None:
    page = (repo / "docs" / "gen" / "md" / "collectors_internals.md").read_text()
    commits = set(re.findall(r"/blob/([0-9a-f]{40})/pkg/", page))
    code_commit = _git(repo, "rev-list", "-1", "HEAD", "--", "pkg/collector.py").strip()
    assert commits == {code_commit}  # the commit that last changed the code, not the pages' own commit
    assert code_commit != _git(repo, "rev-parse", "HEAD").strip()
    assert "pkg @" not in page  # no commit in the header either


def test_a_commit_that_touches_no_documented_file_leaves_the_pages_current(repo: Path, run: Run) -> None:
    (repo / "README.txt").write_text("unrelated\n", encoding="utf-8")
    with (repo / "pkg" / "empty.py").open("a", encoding="utf-8") as handle:
        handle.write("# a comment in a file no page links to\n")
    assert "pkg/empty.py" not in "".join(p.read_text() for p in (repo / "docs" / "gen").rglob("*.md"))
    _commit(repo, "unrelated")
    code, out, err = _check(run, repo)
    assert (code, out) == (0, ""), err


def test_moving_documented_lines_fails_with_a_diff_git_applies(repo: Path, run: Run) -> None:
    collector = repo / "pkg" / "collector.py"
    collector.write_text('"""Collectors."""\n\n' + collector.read_text(encoding="utf-8"), encoding="utf-8")
    _commit(repo, "move lines")
    code, diff, err = _check(run, repo)
    assert code == 1
    assert "are stale - run" in err
    assert "only because links" not in err  # lines moved: the content changed
    assert "diff --git a/docs/gen/md/collectors_internals.md b/docs/gen/md/collectors_internals.md" in diff
    assert re.search(r"^-.*pkg/collector\.py:47", diff, flags=re.MULTILINE)
    assert re.search(r"^\+.*pkg/collector\.py:49", diff, flags=re.MULTILINE)
    _git(repo, "apply", "--check", "-", stdin=diff)
    _git(repo, "apply", "-", stdin=diff)
    assert _check(run, repo)[0] == 0  # the diff was the whole fix


def test_a_change_that_keeps_every_line_only_moves_link_targets(repo: Path, run: Run) -> None:
    """The pages still say what the code says: --check passes, and says their links are not the newest."""
    collector = repo / "pkg" / "collector.py"
    collector.write_text(collector.read_text(encoding="utf-8") + "# trailing comment\n", encoding="utf-8")
    _commit(repo, "comment")
    code, diff, err = _check(run, repo)
    assert (code, diff) == (0, "")
    assert "say what the code says but link other commits" in err
    run("generate", "--config", str(repo / "pyproject.toml"), "--no-cache", "-q")
    page = (repo / "docs" / "gen" / "md" / "collectors_internals.md").read_text()
    assert _git(repo, "rev-parse", "HEAD").strip() in page  # regenerating moves the links to the new commit


def test_pages_committed_with_the_code_they_document_pass_check(repo: Path, run: Run) -> None:
    """The usual workflow: change the code, regenerate (the changed file has no commit yet, so no
    link), commit both; CI's --check on that commit passes."""
    collector = repo / "pkg" / "collector.py"
    collector.write_text('"""Collectors."""\n\n' + collector.read_text(encoding="utf-8"), encoding="utf-8")
    code, _, err = run("generate", "--config", str(repo / "pyproject.toml"), "--no-cache", "-q")
    assert code == 0, err
    _commit(repo, "code and pages together")
    code, diff, err = _check(run, repo)
    assert (code, diff) == (0, ""), err
    assert "link other commits (or none" in err


def test_an_uncommitted_edit_gets_no_link_and_a_warning(repo: Path, run: Run, tmp_path: Path) -> None:
    collector = repo / "pkg" / "collector.py"
    collector.write_text("\n" + collector.read_text(encoding="utf-8"), encoding="utf-8")
    out = tmp_path / "dirty"
    code, _, err = run("generate", "--config", str(repo / "pyproject.toml"), "--out", str(out), "--no-cache", "-q")
    assert code == 0, err
    assert "1 file(s) differ from their last commit (pkg/collector.py)" in err
    page = (out / "md" / "collectors_internals.md").read_text()
    assert "blob/" in page  # other files keep their links
    assert "/pkg/collector.py#" not in page
    assert "`pkg/collector.py:48`" in page  # the worktree's line, shown without a link


def test_a_missing_page_comes_back_through_git_apply(repo: Path, run: Run) -> None:
    """The diff creates a file that is missing (``new file mode``), so git apply takes it too."""
    (repo / "docs" / "gen" / "md" / "glossary.md").unlink()
    _commit(repo, "lose a page")
    code, diff, _ = _check(run, repo)
    assert code == 1
    assert "diff --git a/docs/gen/md/glossary.md b/docs/gen/md/glossary.md\nnew file mode 100644\n" in diff
    _git(repo, "apply", "-", stdin=diff)
    assert _check(run, repo)[0] == 0
