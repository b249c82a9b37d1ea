"""git history read from a checkout a stranger's branch filled: nothing in the files can make
git run a command, and no folder of the branch stands in for a revision.

The attack (found by a review of this workplace): a pull request adds ``HEAD``, ``refs/``,
``objects/`` and a ``config`` to the package folder.  git, run in that folder, takes it for a
repository and reads its config: a promisor remote makes git fetch the objects it lacks, and the
fetch runs ``core.sshCommand``.  rlmap finds the checkout itself and names it to git.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from rlmap.diff.snapshot import from_git, package_in_repository
from rlmap.gitread import find_checkout
from rlmap.index.history import pin_files
from tests.conftest import Run
from tests.diff.test_diff import V1, V2, check, write


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=root, check=True)


def _commit_all(root: Path, message: str, init: bool = False) -> None:
    if init:
        _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", message)


def _checkout_at_v1(tmp_path: Path) -> Path:
    """A checkout holding ``pk`` as V1, in one commit."""
    root = tmp_path / "checkout"
    root.mkdir()
    write(root, V1)
    _commit_all(root, "v1", init=True)
    return root


def _plant_repository(folder: Path, marker: Path) -> None:
    """Make ``folder`` a repository git would discover, whose config runs a command on a fetch."""
    (folder / "refs" / "heads").mkdir(parents=True)
    (folder / "objects" / "info").mkdir(parents=True)
    (folder / "objects" / "info" / "keep").write_text("")
    (folder / "HEAD").write_text("ref: refs/heads/main\n")
    (folder / "refs" / "heads" / "main").write_text("0123456789012345678901234567890123456789\n")
    (folder / "config").write_text(
        "[core]\n\trepositoryformatversion = 1\n\tbare = false\n\tworktree = .\n"
        f"\tsshCommand = \"sh -c 'touch {marker}; exit 1' --\"\n"
        "[extensions]\n\tpartialclone = origin\n"
        '[remote "origin"]\n\turl = ssh://example.invalid/x\n\tpromisor = true\n'
    )


@pytest.fixture
def planted(tmp_path: Path) -> tuple[Path, Path]:
    """A checkout with two commits of ``pk`` (V1, V2), then a repository planted in ``pk/``."""
    root = _checkout_at_v1(tmp_path)
    (root / "pk" / "collect.py").unlink()
    write(root, V2)
    _commit_all(root, "v2")
    marker = tmp_path / "ran"
    _plant_repository(root / "pk", marker)
    # what git itself would do in that folder: run the planted config's command
    subprocess.run(["git", "-C", str(root / "pk"), "ls-tree", "HEAD~1"], capture_output=True, check=False)
    if not marker.exists():
        pytest.skip("this git does not fetch for a planted promisor remote: nothing to defend here")
    marker.unlink()
    return root, marker


def test_diff_reads_the_checkout_not_a_repository_planted_in_the_package(run: Run, planted: tuple[Path, Path]) -> None:
    root, marker = planted
    code, out, err = run("diff", "HEAD~1", "HEAD", "--repo", str(root / "pk"), "--package", "pk", "--format", "json")
    assert not marker.exists(), "git ran the planted config's command"
    assert code == 0, err
    check(json.loads(out))  # the two real commits, read from the checkout's own .git


def test_audit_since_and_pins_read_the_checkout(planted: tuple[Path, Path]) -> None:
    root, marker = planted
    top, folder = package_in_repository(root / "pk")
    assert (top, folder) == (root.resolve(), "pk")
    assert "pk.collect.OldBuffer" in from_git(top, "HEAD~1", folder).symbols
    pins = pin_files(root, {"pk/__init__.py": b""})
    assert not marker.exists(), "git ran the planted config's command"
    assert set(pins.refs) == {"pk/__init__.py"}, pins.problem


def test_a_folder_named_like_a_revision_does_not_stand_in_for_it(
    run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _checkout_at_v1(tmp_path)
    write(root / "HEAD", V2)  # a branch adds HEAD/pk/...: the "old" side would be the branch's own
    monkeypatch.chdir(root)
    code, _, err = run("diff", "HEAD", str(root / "pk"), "--repo", str(root), "--package", "pk")
    assert code == 2
    assert "'HEAD' is both a directory and a revision" in err
    assert "write ./HEAD for the directory" in err
    code, out, err = run("diff", "./HEAD", str(root / "pk"), "--repo", str(root), "--package", "pk", "--format", "json")
    assert code == 0, err  # written as a path: the folder, as asked (V2 against V1: the changes reversed)
    assert json.loads(out)["old"] == "./HEAD"
    # a file named like a revision is no package: the revision is meant, as before
    _git(root, "tag", "v1")
    (root / "v1").write_text("notes\n")
    code, out, err = run("diff", "v1", str(root / "pk"), "--repo", str(root), "--package", "pk", "--format", "json")
    assert code == 0, err
    assert json.loads(out)["old"] == "v1"


def test_a_folder_outside_any_checkout_is_said(run: Run, tmp_path: Path) -> None:
    (tmp_path / "pk").mkdir()
    if any((folder / ".git").exists() for folder in (tmp_path, *tmp_path.parents)):
        pytest.skip("the temporary folder is inside a git checkout here")
    assert find_checkout(tmp_path / "pk") is None
    code, _, err = run("diff", "HEAD~1", "HEAD", "--repo", str(tmp_path / "pk"), "--package", "pk")
    assert code == 2
    assert f"'{tmp_path / 'pk'}' is not inside a git checkout" in err
    # a mistyped directory is named first: it is what the user meant
    write(tmp_path / "v1", V1)
    code, _, err = run("diff", str(tmp_path / "v1"), "nope2", "--repo", str(tmp_path / "pk"), "--package", "pk")
    assert code == 2
    assert err.startswith(f"rlmap: error: 'nope2' is not a directory, and '{tmp_path / 'pk'}' is not inside a git")
    # audit --since: what it needs, in the audit's own options (it has no --repo)
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.rst").write_text("Nothing.\n")
    args = ("audit", "--source", str(tmp_path / "v1"), "--package", "pk", "--docs", str(docs), "--no-cache", "-q")
    code, _, err = run(*args, "--since", "HEAD~1")
    assert code == 2
    assert "is not inside a git checkout - --since reads the older version from git" in err
    assert "--repo" not in err


def test_a_damaged_repository_is_said_to_be_damaged(run: Run, tmp_path: Path) -> None:
    """A blob deleted from .git/objects: ``ls-tree -l`` gives no size for it (an internal error, exit 70)."""
    root = _checkout_at_v1(tmp_path)
    blob = subprocess.run(
        ["git", "rev-parse", "HEAD:pk/collect.py"], cwd=root, capture_output=True, text=True, check=True
    ).stdout.strip()
    (root / ".git" / "objects" / blob[:2] / blob[2:]).unlink()
    code, _, err = run("diff", "HEAD", str(root / "pk"), "--repo", str(root), "--package", "pk")
    assert code == 2, err
    assert "check the repository with git fsck" in err


def test_a_name_holding_a_newline_never_reaches_a_report(run: Run, tmp_path: Path) -> None:
    """``y\\n::error file=b,line=2::X.py`` in a package (diff printed the module's name, its
    newline starting a GitHub Actions workflow command) or a docs page (``audit --diff``'s headers
    and ``--fix``'s notes printed the path): skipped where it is met."""
    root = _checkout_at_v1(tmp_path)
    (root / "pk" / "y\n::error file=b,line=2::INJECTED.py").write_text("def f():\n    pass\n")
    _commit_all(root, "v2")
    code, out, err = run("diff", "HEAD~1", "HEAD", "--repo", str(root), "--package", "pk")
    code_dir, out_dir, err_dir = run("diff", "HEAD~1", str(root / "pk"), "--repo", str(root), "--package", "pk")
    assert (code, code_dir) == (3, 3), err  # the file skipped is said, escaped, as indexing says it
    for text in (out, err, out_dir, err_dir):
        assert not any(line.startswith("::") for line in text.splitlines())
    assert "name holds a control character; skipped" in err
    assert "name holds a control character; skipped" in err_dir
    docs = root / "docs"
    docs.mkdir()
    (docs / "x\n::error file=a,line=1::INJECTED.rst").write_text(":class:`pk.collect.Gone`\n")
    code, out, err = run("audit", "--source", str(root), "--package", "pk", "--docs", str(docs), "--diff", "--no-cache")
    assert not any(line.startswith("::") for line in (out + err).splitlines())
    assert "name holds a control character; file skipped" in err


def test_a_package_that_is_its_own_checkout_is_read_at_a_revision(tmp_path: Path) -> None:
    """``audit --since`` on a package at the top of its checkout found no rename: the revision's
    modules were named ``collect``, the working tree's ``pk.collect``."""
    from rlmap.diff.compare import compare
    from rlmap.diff.snapshot import from_directory

    write(tmp_path, V1)
    root = tmp_path / "pk"
    _commit_all(root, "v1", init=True)
    (root / "collect.py").unlink()
    write(tmp_path, V2)
    top, folder = package_in_repository(root)
    assert folder == "."
    before = from_git(top, "HEAD", folder, name=root.name)
    assert "pk.collect.OldBuffer" in before.symbols
    renames = compare(before, from_directory(root, "working tree")).renames()
    assert renames["pk.collect.OldBuffer"] == "pk.buffers.ReplayBuffer"
