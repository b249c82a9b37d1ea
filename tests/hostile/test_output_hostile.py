"""The output directory: all old or all new after a kill, nothing written through a link,
nothing deleted that rlmap's manifest does not list."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from rlmap.output.write import MANIFEST
from tests.conftest import FIXTURES, Run


def _generate_args(source: Path, out: Path) -> list[str]:
    profile = FIXTURES / "profile.toml"
    return ["generate", "--source", str(source), "--package", "pkg", "--profile", str(profile), "--out", str(out)]


def _snapshot(out: Path) -> dict[str, str]:
    """Every file under ``out`` (links as their target text) -> digest."""
    found = {}
    for path in sorted(out.rglob("*")):
        if path.is_symlink():
            found[path.relative_to(out).as_posix()] = "link:" + os.readlink(path)
        elif path.is_file():
            found[path.relative_to(out).as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


@pytest.fixture
def two_versions(tmp_path: Path, run: Run) -> tuple[Path, Path, dict[str, str], dict[str, str]]:
    """A source whose pages differ before and after an edit, the two page sets, and the output dir."""
    source = tmp_path / "src"
    shutil.copytree(FIXTURES / "pkg", source / "pkg")
    out = tmp_path / "out"
    new_dir = tmp_path / "new"
    assert run(*_generate_args(source, out), "--no-cache", "-q")[0] == 0
    collector = source / "pkg" / "collector.py"
    collector.write_text("\n\n\n" + collector.read_text(encoding="utf-8"), encoding="utf-8")  # every line moves
    assert run(*_generate_args(source, new_dir), "--no-cache", "-q")[0] == 0
    old, new = _snapshot(out), _snapshot(new_dir)
    assert old != new
    assert set(old) == set(new)
    return source, out, old, new


def test_a_kill_at_any_moment_leaves_all_old_or_all_new(
    two_versions: tuple[Path, Path, dict[str, str], dict[str, str]], tmp_path: Path
) -> None:
    source, out, old, new = two_versions
    files = len(old)
    delay = 0.02  # RLMAP_TEST_WRITE_DELAY slows each file write so that kills land inside the write
    seen = set()
    for attempt in range(10):
        environment = dict(os.environ, RLMAP_TEST_WRITE_DELAY=str(delay))
        command = [sys.executable, "-m", "rlmap", *_generate_args(source, out), "--no-cache", "-q", "-j", "1"]
        process = subprocess.Popen(command, env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        # start-up + indexing takes ~1 s here, then `files` writes of `delay` each: spread the kills over both
        time.sleep(0.6 + attempt * (files * delay + 0.8) / 10)
        process.send_signal(signal.SIGKILL)
        process.wait()
        now = _snapshot(out)
        assert now in (old, new), f"attempt {attempt}: a mix of old and new pages"
        seen.add("new" if now == new else "old")
        if now == new:
            shutil.rmtree(out)
            subprocess.run(
                [sys.executable, "-m", "rlmap", *_generate_args(source, out), "--no-cache", "-q"],
                check=True,
                env=dict(os.environ, RLMAP_TEST_WRITE_DELAY="0"),
                cwd=tmp_path,
            )
            # put the old set back for the next attempt by regenerating from the old source
            collector = source / "pkg" / "collector.py"
            text = collector.read_text(encoding="utf-8")
            collector.write_text(text[3:], encoding="utf-8")
            subprocess.run(
                [sys.executable, "-m", "rlmap", *_generate_args(source, out), "--no-cache", "-q"], check=True
            )
            assert _snapshot(out) == old
            collector.write_text(text, encoding="utf-8")
    subprocess.run([sys.executable, "-m", "rlmap", *_generate_args(source, out), "--no-cache", "-q"], check=True)
    assert _snapshot(out) == new
    assert not [p.name for p in out.parent.iterdir() if p.name.startswith(f".{out.name}.rlmap-")]
    assert not list(out.rglob("*.tmp"))
    assert "old" in seen  # the kills did land before the swap at least once


def test_leftovers_of_an_interrupted_run_are_cleaned(
    two_versions: tuple[Path, Path, dict[str, str], dict[str, str]], run: Run
) -> None:
    source, out, _, new = two_versions
    staging = out.parent / f".{out.name}.rlmap-new-abc"
    staging.mkdir()
    (staging / "half.rst").write_text("half", encoding="utf-8")
    (out / "rst" / ".glossary.rst.k3j9x_a2.tmp").write_text("half", encoding="utf-8")  # older rlmap's temporaries
    (out / "rst" / ".notes.v1.tmp").write_text("mine", encoding="utf-8")  # not rlmap's: it stays
    (out / ".draft.2024.tmp").write_text("mine", encoding="utf-8")
    assert run(*_generate_args(source, out), "--no-cache", "-q")[0] == 0
    assert not staging.exists()
    assert not (out / "rst" / ".glossary.rst.k3j9x_a2.tmp").exists()
    (out / "rst" / ".notes.v1.tmp").unlink()
    (out / ".draft.2024.tmp").unlink()
    assert _snapshot(out) == new


def test_moved_away_directory_is_restored(
    two_versions: tuple[Path, Path, dict[str, str], dict[str, str]], run: Run
) -> None:
    """Killed between the two renames of the fallback swap: the next run puts the old set back first."""
    source, out, old, new = two_versions
    out.rename(out.parent / f".{out.name}.rlmap-old-xyz")
    assert run(*_generate_args(source, out), "--no-cache", "-q", "--check")[0] == 1  # check sees nothing yet
    assert run(*_generate_args(source, out), "--no-cache", "-q")[0] == 0
    assert _snapshot(out) == new
    del old


def test_a_link_left_where_a_moved_away_directory_would_be_is_not_taken_for_it(tmp_path: Path) -> None:
    """A link named like a moved-away output directory was renamed into the output's place (then
    refused as a link): recovery takes only a real directory."""
    from rlmap.output.write import recover

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    planted = tmp_path / ".out.rlmap-old-xyz"
    planted.symlink_to(elsewhere)
    recover(tmp_path / "out")
    assert not os.path.lexists(tmp_path / "out")
    assert planted.is_symlink()


def test_hand_written_files_survive_and_only_manifest_files_go(
    two_versions: tuple[Path, Path, dict[str, str], dict[str, str]], run: Run
) -> None:
    source, out, _, _ = two_versions
    (out / "rst" / "my_notes.rst").write_text(".. generated by rlmap - no, by hand\n", encoding="utf-8")
    (out / "rst" / "hand_drawn.dot").write_text("digraph { a -> b }\n", encoding="utf-8")
    (out / "notes").mkdir()
    (out / "notes" / "todo.md").write_text("mine\n", encoding="utf-8")
    (out / "link_to_notes").symlink_to("notes")
    # rlmap's own page that this run no longer produces: listed in the manifest, so it goes
    (out / "rst" / "retired_page.rst").write_text("old page\n", encoding="utf-8")
    manifest = (out / MANIFEST).read_text(encoding="utf-8")
    (out / MANIFEST).write_text(
        manifest.replace('"files": {', '"files": {\n  "rst/retired_page.rst": "0",', 1), encoding="utf-8"
    )
    assert run(*_generate_args(source, out), "--no-cache", "-q", "--format", "rst")[0] == 0
    assert not (out / "rst" / "retired_page.rst").exists()
    assert (out / "rst" / "my_notes.rst").read_text(encoding="utf-8").startswith(".. generated by rlmap")
    assert (out / "rst" / "hand_drawn.dot").is_file()
    assert (out / "notes" / "todo.md").read_text(encoding="utf-8") == "mine\n"
    assert os.readlink(out / "link_to_notes") == "notes"
    # a format not generated this time is left alone, and stays in the manifest
    assert (out / "md" / "glossary.md").is_file()
    manifest = (out / MANIFEST).read_text(encoding="utf-8")
    assert "my_notes.rst" not in manifest
    assert "rst/glossary.rst" in manifest
    assert "md/glossary.md" in manifest
    assert run(*_generate_args(source, out), "--no-cache", "-q", "--check", "--format", "rst")[0] == 0
    # md was written from the source before its edit: a full check sees exactly that
    code, diff, _ = run(*_generate_args(source, out), "--no-cache", "-q", "--check")
    assert code == 1
    assert "b/out/md/collectors_internals.md" in diff
    assert "b/out/rst/" not in diff


def test_no_write_through_a_symlinked_subdirectory(tmp_path: Path, run: Run) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = tmp_path / "out"
    out.mkdir()
    (out / "rst").symlink_to(elsewhere)
    code, _, err = run(*_generate_args(FIXTURES, out), "--no-cache", "-q")
    assert code == 2
    assert "symbolic link" in err
    assert list(elsewhere.iterdir()) == []


def test_an_output_directory_that_is_a_link_is_refused(tmp_path: Path, run: Run) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "out").symlink_to(elsewhere)
    code, _, err = run(*_generate_args(FIXTURES, tmp_path / "out"), "--no-cache", "-q")
    assert code == 2
    assert "symbolic link" in err
    assert list(elsewhere.iterdir()) == []


@pytest.mark.parametrize("name", ["o[ab]", "*", "o?"])
def test_glob_characters_in_the_output_name_touch_no_sibling(tmp_path: Path, run: Run, name: str) -> None:
    siblings = [tmp_path / ".oa.rlmap-new-keep", tmp_path / ".victim.rlmap-old-x", tmp_path / ".other.rlmap-new-y"]
    for sibling in siblings:
        sibling.mkdir()
        (sibling / "file").write_text("keep", encoding="utf-8")
    assert run(*_generate_args(FIXTURES, tmp_path / name), "--no-cache", "-q")[0] == 0
    assert all((sibling / "file").is_file() for sibling in siblings)


def test_no_write_through_a_linked_directory_of_the_repository(
    tmp_path: Path, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A branch that turns ``docs`` into a link cannot send ``--out docs/generated`` elsewhere."""
    victim = tmp_path / "victim"
    victim.mkdir()
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "docs").symlink_to(victim)
    monkeypatch.chdir(repo)
    code, _, err = run(*_generate_args(FIXTURES, Path("docs") / "generated"), "--no-cache", "-q")
    assert code == 2
    assert "is a symbolic link" in err
    assert list(victim.iterdir()) == []


def test_an_unchanged_set_is_not_rewritten(tmp_path: Path, run: Run) -> None:
    out = tmp_path / "out"
    assert run(*_generate_args(FIXTURES, out), "--no-cache", "-q")[0] == 0
    inode = out.stat().st_ino
    code, _, err = run(*_generate_args(FIXTURES, out), "--no-cache")
    assert code == 0
    assert "wrote 0 of" in err
    assert out.stat().st_ino == inode


@pytest.mark.parametrize("entry", ["../victim.txt", "/tmp/victim.txt", "rst/../../victim.txt", "rst\\..\\x"])
def test_a_tampered_manifest_cannot_reach_outside(tmp_path: Path, run: Run, entry: str) -> None:
    """A manifest from a hostile branch naming paths outside the output directory is not ours."""
    out = tmp_path / "out"
    assert run(*_generate_args(FIXTURES, out), "--no-cache", "-q")[0] == 0
    victim = tmp_path / "victim.txt"
    victim.write_text("keep\n", encoding="utf-8")
    manifest = (out / MANIFEST).read_text(encoding="utf-8")
    tampered = manifest.replace('"files": {', '"files": {\n  ' + json.dumps(entry) + ': "0",', 1)
    (out / MANIFEST).write_text(tampered, encoding="utf-8")
    code, diff, _ = run(*_generate_args(FIXTURES, out), "--no-cache", "-q", "--check")
    # the manifest's own diff drops the entry; no hunk creates, changes or deletes that path
    targets = [line for line in diff.splitlines() if line.startswith(("diff --git", "--- ", "+++ "))]
    assert not [line for line in targets if "victim" in line]
    assert run(*_generate_args(FIXTURES, out), "--no-cache", "-q")[0] == 0
    assert victim.read_text(encoding="utf-8") == "keep\n"
    assert (out / MANIFEST).read_text(encoding="utf-8") == manifest  # rewritten as rlmap's own
    del code


@pytest.mark.parametrize("link_at", ["md", "rst/inner"])
def test_check_reads_nothing_through_a_link_in_the_output_directory(tmp_path: Path, run: Run, link_at: str) -> None:
    """A branch commits ``out/md`` as a link to a folder of secrets and lists ``md/secret`` in the
    manifest: ``--check`` must not print the secret in its diff (it read ``/proc/self/environ``
    that way), nor call it current."""
    out = tmp_path / "out"
    assert run(*_generate_args(FIXTURES, out), "--no-cache", "-q")[0] == 0
    secrets = tmp_path / "secrets"
    secrets.mkdir()
    (secrets / "secret").write_text("TOKEN=s3cr3t-value\n", encoding="utf-8")
    linked = out / link_at
    if linked.exists():
        shutil.rmtree(linked)
    linked.parent.mkdir(parents=True, exist_ok=True)
    linked.symlink_to(secrets)
    manifest = (out / MANIFEST).read_text(encoding="utf-8")
    entry = json.dumps(f"{link_at}/secret")
    (out / MANIFEST).write_text(manifest.replace('"files": {', f'"files": {{\n  {entry}: "0",', 1), encoding="utf-8")
    code, diff, err = run(*_generate_args(FIXTURES, out), "--no-cache", "-q", "--check")
    assert code == 1, err
    assert "s3cr3t" not in diff + err
    assert (secrets / "secret").read_text(encoding="utf-8") == "TOKEN=s3cr3t-value\n"


def test_check_refuses_a_hand_written_copy_that_differs_in_its_links_alone(tmp_path: Path, run: Run) -> None:
    """A page written by hand whose text is the generated page's with other link targets passed
    --check as current, and its manifest hunk adopted the file, which generate then replaced."""
    config = tmp_path / "rlmap.toml"
    config.write_text('[tool.rlmap]\nrepo-url = "https://github.com/x/y"\n', encoding="utf-8")
    args = ("--config", str(config), "--no-cache", "-q")
    assert run(*_generate_args(FIXTURES, tmp_path / "first"), *args)[0] == 0
    page = next(
        path.relative_to(tmp_path / "first")
        for path in sorted((tmp_path / "first").rglob("*.rst"))
        if "/blob/" in path.read_text(encoding="utf-8")
    )
    out = tmp_path / "out"
    (out / page).parent.mkdir(parents=True)
    linked = (tmp_path / "first" / page).read_text(encoding="utf-8").replace("/blob/main/", "/blob/v0.1/")
    (out / page).write_text(linked, encoding="utf-8")
    code, diff, err = run(*_generate_args(FIXTURES, out), *args, "--check")
    assert code == 2, err
    assert f"'{out / page}' exists and rlmap's manifest does not list it" in err
    assert diff == ""
    assert run(*_generate_args(FIXTURES, out), *args)[0] == 2  # as generate says it
    assert (out / page).read_text(encoding="utf-8") == linked


def test_a_hand_written_file_at_a_generated_path_is_not_overwritten(tmp_path: Path, run: Run) -> None:
    """Only files rlmap's manifest lists are replaced: a page written by hand where rlmap would
    write one (before the first run, or one a new profile adds) is an error naming it."""
    out = tmp_path / "out"
    assert run(*_generate_args(FIXTURES, tmp_path / "first"), "--no-cache", "-q")[0] == 0
    page = next(path.relative_to(tmp_path / "first") for path in sorted((tmp_path / "first").rglob("*.md")))
    (out / page).parent.mkdir(parents=True)
    (out / page).write_text("written by hand\n", encoding="utf-8")
    code, _, err = run(*_generate_args(FIXTURES, out), "--no-cache", "-q")
    assert code == 2
    assert f"'{out / page}' exists and rlmap's manifest does not list it" in err
    assert (out / page).read_text(encoding="utf-8") == "written by hand\n"
    # --check says the same: its diff, for git apply, used to overwrite the file generate refuses to
    code, diff, err = run(*_generate_args(FIXTURES, out), "--no-cache", "-q", "--check")
    assert code == 2
    assert f"'{out / page}' exists and rlmap's manifest does not list it" in err
    assert diff == ""
    # the same bytes rlmap would write are taken as they are; once listed, the file is rlmap's
    shutil.copyfile(tmp_path / "first" / page, out / page)
    assert run(*_generate_args(FIXTURES, out), "--no-cache", "-q")[0] == 0
    (out / page).write_text("edited\n", encoding="utf-8")
    assert run(*_generate_args(FIXTURES, out), "--no-cache", "-q")[0] == 0
    assert (out / page).read_bytes() == (tmp_path / "first" / page).read_bytes()
    # a manifest that is there but unreadable still says the directory is rlmap's
    (out / MANIFEST).write_text("{not json", encoding="utf-8")
    (out / page).write_text("edited\n", encoding="utf-8")
    assert run(*_generate_args(FIXTURES, out), "--no-cache", "-q")[0] == 0
    assert (out / page).read_bytes() == (tmp_path / "first" / page).read_bytes()


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None, reason="runs rlmap as another user")
def test_a_folder_of_the_output_that_cannot_be_listed_stops_the_write() -> None:
    """Run by a user who cannot list a hand-made folder of the output directory (``chmod 311``),
    a write recreated it empty and left its files in a staging folder the next run deleted; a
    read-only one (``chmod 555``) made every write fail, blaming the output directory."""
    import tempfile

    with tempfile.TemporaryDirectory() as folder:  # (pytest's own folders are the test user's alone)
        Path(folder).chmod(0o777)
        _run_as_nobody(Path(folder) / "out")


def _run_as_nobody(out: Path) -> None:
    notes = out / "notes"
    notes.mkdir(parents=True)
    (notes / "keep.txt").write_text("mine\n", encoding="utf-8")
    nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    command = [*nobody, sys.executable, "-m", "rlmap", "generate", "--source", str(FIXTURES), "--package", "pkg"]
    command += ["--profile", str(FIXTURES / "profile.toml"), "--out", str(out), "--no-cache", "-q"]
    subprocess.run(["chown", "-R", "65534:65534", str(out)], check=True)
    notes.chmod(0o311)
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    notes.chmod(0o755)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"rlmap: error: cannot list '{notes}' in the output directory: Permission denied")
    assert (notes / "keep.txt").read_text(encoding="utf-8") == "mine\n"
    assert not (out / "md").exists()  # nothing written
    notes.chmod(0o555)  # read-only: its files are carried over, the folder keeps its mode
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert (notes / "keep.txt").read_text(encoding="utf-8") == "mine\n"
    assert (notes.stat().st_mode & 0o777) == 0o555
    assert (out / "md").is_dir()
    notes.chmod(0o755)


@pytest.fixture
def mount_point(tmp_path: Path) -> Iterator[Path]:
    """A directory that is a mount point (a container's volume), where the system lets this
    process mount one (root, as CI runs); skipped elsewhere."""
    point = tmp_path / "volume"
    point.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(point)], capture_output=True, check=False
    )
    if done.returncode != 0 or not os.path.ismount(point):
        pytest.skip("mounting a tmpfs is not permitted here")
    try:
        yield point
    finally:
        subprocess.run(["umount", str(point)], check=False)


def test_an_output_directory_that_is_a_mount_point_is_written_in_place(
    mount_point: Path, tmp_path: Path, run: Run
) -> None:
    """No rename replaces a mount point: rlmap said "Device or resource busy - pass --out a
    writable directory" of a writable volume.  Its files are replaced one by one, the retired
    ones removed, a hand-written one kept, the manifest written last; nothing is left beside."""
    source = tmp_path / "src"
    shutil.copytree(FIXTURES / "pkg", source / "pkg")
    reference = tmp_path / "reference"
    assert run(*_generate_args(source, reference), "--no-cache", "-q")[0] == 0
    (mount_point / "notes.md").write_text("mine\n", encoding="utf-8")
    code, _, err = run(*_generate_args(source, mount_point), "--no-cache", "-q")
    assert (code, err) == (0, "")
    assert os.path.ismount(mount_point)
    assert {**_snapshot(reference), "notes.md": _snapshot(mount_point)["notes.md"]} == _snapshot(mount_point)
    assert run(*_generate_args(source, mount_point), "--no-cache", "-q", "--check")[0] == 0
    # an edit, and a page of rlmap's that this run no longer writes
    (mount_point / "rst" / "retired_page.rst").write_text("old page\n", encoding="utf-8")
    manifest = (mount_point / MANIFEST).read_text(encoding="utf-8")
    (mount_point / MANIFEST).write_text(
        manifest.replace('"files": {', '"files": {\n  "rst/retired_page.rst": "0",', 1), encoding="utf-8"
    )
    collector = source / "pkg" / "collector.py"
    collector.write_text("\n\n\n" + collector.read_text(encoding="utf-8"), encoding="utf-8")
    assert run(*_generate_args(source, mount_point), "--no-cache", "-q")[0] == 0
    assert not (mount_point / "rst" / "retired_page.rst").exists()
    assert (mount_point / "notes.md").read_text(encoding="utf-8") == "mine\n"
    assert run(*_generate_args(source, mount_point), "--no-cache", "-q", "--check")[0] == 0
    assert not [path.name for path in mount_point.rglob(".*") if path.name != MANIFEST]  # no temporary file left
    assert not list(tmp_path.glob(".volume*"))  # nor a staging directory beside
