"""``rlmap diff A B`` on two synthetic versions of a package (two directories, and two git revisions)."""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
from pathlib import Path

import pytest

from tests.conftest import Run

V1 = {
    "pk/__init__.py": "",
    "pk/collect.py": """
        class Collector:
            def reset(self, env):
                self._shuttle = env.reset()

            def rollout(self, env):
                if self._shuttle is None:
                    self.reset(env)
                self._shuttle.update(seen=True)
                return env.step(self._shuttle)

            def _legacy(self):
                return 1


        class OldBuffer:
            def add(self, x):
                return x

            def sample(self):
                return None

            def extend(self, xs):
                return xs
    """,
}
V2 = {
    "pk/__init__.py": "",
    "pk/collect.py": """
        class Collector:
            def reset(self, env):
                self._carrier = env.reset()

            def rollout(self, env):
                if self._carrier is None or env.done:
                    self.reset(env)
                self._sync(env)
                self._carrier.update(seen=True)
                return env.step(self._carrier)

            def _sync(self, env):
                return env
    """,
    "pk/buffers.py": """
        class ReplayBuffer:
            def add(self, x):
                return x

            def sample(self):
                return None

            def extend(self, xs):
                return list(xs)
    """,
}


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(textwrap.dedent(text).lstrip("\n"))


EXPECTED = [
    ("renamed", "pk.collect.OldBuffer", "pk.buffers.ReplayBuffer"),
    ("removed", "pk.collect.Collector._legacy", ""),
    ("attribute renamed", "pk.collect.Collector._shuttle", "pk.collect.Collector._carrier"),
    ("added", "", "pk.buffers"),
    ("added", "", "pk.collect.Collector._sync"),
]


def check(payload: dict[str, object]) -> None:
    changes = payload["changes"]
    assert isinstance(changes, list)
    assert [(c["what"], c["old"], c["new"]) for c in changes if c["what"] not in ("calls", "guards")] == EXPECTED
    rollout = {c["what"]: (c["added"], c["removed"]) for c in changes if c["old"] == "pk.collect.Collector.rollout"}
    # ``self._shuttle.update`` -> ``self._carrier.update`` is the attribute's rename, said once above
    assert rollout["calls"] == (["self._sync"], [])
    assert rollout["guards"] == (["self._carrier is None or env.done"], ["self._shuttle is None"])


def test_two_package_directories(run: Run, tmp_path: Path) -> None:
    write(tmp_path / "v1", V1)
    write(tmp_path / "v2", V2)
    code, out, _ = run(
        "diff", str(tmp_path / "v1" / "pk"), str(tmp_path / "v2" / "pk"), "--package", "pk", "--format", "json"
    )
    assert code == 0
    check(json.loads(out))
    code, text, _ = run("diff", str(tmp_path / "v1"), str(tmp_path / "v2"), "--package", "pk")  # two checkouts
    assert "  renamed           pk.collect.OldBuffer -> pk.buffers.ReplayBuffer" in text
    assert "      + self._sync" in text
    guards = text[text.index("  guards ") :].splitlines()[1:3]  # the removed guard first, as in every diff
    assert guards == ["      - self._shuttle is None", "      + self._carrier is None or env.done"], guards
    # --exit-code: 1 when anything changed (a CI job's gate), 0 when nothing did
    v1, v2 = str(tmp_path / "v1"), str(tmp_path / "v2")
    assert run("diff", v1, v2, "--package", "pk", "--exit-code", "-q")[0] == 1
    assert run("diff", v1, v1, "--package", "pk", "--exit-code", "-q")[0] == 0


def test_two_revisions_of_one_checkout(run: Run, tmp_path: Path) -> None:
    def git(*args: str) -> None:
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=tmp_path, check=True)

    write(tmp_path, V1)
    git("init", "-q")
    git("add", ".")
    git("commit", "-q", "-m", "v1")
    (tmp_path / "pk" / "collect.py").unlink()
    write(tmp_path, V2)
    (tmp_path / "pk" / "elsewhere.py").symlink_to("../outside.py")  # a link is not followed at a revision: said
    (tmp_path / "outside.py").write_text("class Outside:\n    pass\n")
    (tmp_path / "pk" / "notes.txt").write_text("not python")
    # a name that is not UTF-8 is skipped as in a working tree (it was a module named with a surrogate)
    (tmp_path / "pk" / os.fsdecode(b"caf\xe9.py")).write_text("class Cafe:\n    pass\n")
    git("add", "-A")
    git("commit", "-q", "-m", "v2")
    (tmp_path / "pk" / "collect.py").write_text("garbage (the working tree is not read)")
    code, out, err = run("diff", "HEAD~1", "HEAD", "--repo", str(tmp_path), "--package", "pk", "--format", "json")
    assert code == 3
    assert "pk/elsewhere.py:1: symbolic link; not followed at a revision, skipped" in err
    assert "pk/caf\\xe9.py:1: name is not valid UTF-8; skipped" in err
    assert "Cafe" not in out
    check(json.loads(out))  # every file of each revision read whole (one git process for them all)
    code, _, err = run("diff", "HEAD~1", "nope", "--repo", str(tmp_path), "--package", "pk")
    assert code == 2
    assert err.startswith(f"rlmap: error: 'nope' is neither a directory nor a revision of the checkout at {tmp_path}")
    # a path that is no directory, and a directory without Python, are said to be so
    (tmp_path / "empty").mkdir()
    for given, says in [
        (str(tmp_path / "outside.py"), "is not a directory"),
        (str(tmp_path / "missing"), f"'{tmp_path / 'missing'}' does not exist"),  # a path: not a revision
        (str(tmp_path / "empty"), "no Python file under"),
        ("", "an empty version to compare"),  # (it was read as the working directory)
    ]:
        code, _, err = run("diff", "HEAD", given, "--repo", str(tmp_path), "--package", "pk")
        assert code == 2, err
        assert says in err


def test_a_scope_under_which_neither_version_defines_anything_is_an_error(run: Run, tmp_path: Path) -> None:
    write(tmp_path / "v1", V1)
    write(tmp_path / "v2", V2)
    versions = (str(tmp_path / "v1" / "pk"), str(tmp_path / "v2" / "pk"), "--package", "pk")
    code, out, err = run("diff", *versions, "--scope", "pk.colect")
    assert (code, out) == (2, "")
    says = "names no package, module, class or function of either version"
    assert err.startswith(f"rlmap: error: --scope 'pk.colect' {says}")
    assert err.rstrip().endswith("- did you mean 'pk.collect'?")  # (as graph --scope offers it)
    code, _, err = run("diff", *versions, "--scope", "Collector")  # the last part of a name: its full name
    assert code == 2
    assert err.rstrip().endswith("- did you mean 'pk.collect.Collector'?")
    # a dotted prefix, as graph's: the start of a name is not one
    code, out, err = run("diff", *versions, "--scope", "pk.coll")
    assert (code, out) == (2, "")
    assert err.startswith(f"rlmap: error: --scope 'pk.coll' {says}")
    code, out, _ = run("diff", *versions, "--scope", "pk.collect", "--quiet")
    assert code == 0
    assert "pk.collect.Collector.rollout" in out
    code, out, err = run("diff", *versions, "--scope", "")  # a prefix of every name: it keeps everything
    assert (code, out) == (2, "")
    assert err.startswith("rlmap: error: --scope is empty")


def test_diff_format_is_a_closed_choice(run: Run, tmp_path: Path) -> None:
    code, _, err = run("diff", str(tmp_path), str(tmp_path), "--format", "yaml")
    assert code == 2
    assert "'--format': 'yaml' is not one of 'text', 'json'" in err


def test_a_profile_limits_calls_and_guards_to_its_documented_flows(run: Run, tmp_path: Path) -> None:
    write(tmp_path / "v1", V1)
    write(tmp_path / "v2", V2)
    profile = tmp_path / "profile.toml"
    page = '[pages.flows]\ntitle = "Flows"\nslug = "flows"\nsummary = "flows"\n'

    def changed(flow: str, *more: str) -> dict[str, list[str]]:
        profile.write_text(page + f'[[pages.flows.sections]]\nkind = "flow"\nfunction = "{flow}"\n')
        args = ("diff", str(tmp_path / "v1"), str(tmp_path / "v2"), "--package", "pk", "--profile", str(profile))
        code, out, err = run(*args, "--format", "json", *more)
        assert code == 0, err
        payload = json.loads(out)
        check_renames = [
            (c["what"], c["old"], c["new"]) for c in payload["changes"] if c["what"] not in ("calls", "guards")
        ]
        assert check_renames == EXPECTED  # symbols and attributes are compared whatever the flows
        found: dict[str, list[str]] = {}
        for c in payload["changes"]:
            if c["what"] in ("calls", "guards"):
                found.setdefault(c["old"], []).append(c["what"])
        return found

    assert changed("Collector.rollout") == {"pk.collect.Collector.rollout": ["calls", "guards"]}
    assert changed("pk.collect.Collector.reset") == {}
    assert changed("pk.collect.Collector.reset", "--all-functions") == {
        "pk.buffers.ReplayBuffer.extend": ["calls"],  # list(xs): a call no flow documents
        "pk.collect.Collector.rollout": ["calls", "guards"],
    }
    code, text, _ = run(
        "diff", str(tmp_path / "v1"), str(tmp_path / "v2"), "--package", "pk", "--profile", str(profile)
    )
    assert code == 0
    assert "(calls and guards compared in the 1 documented flow(s) only)" in text
    # a profile written for other code (TorchRL's, on a project's): its flows are in neither
    # version, and the report says nothing was compared rather than "compared in 1 flow"
    assert changed("Trainer.train") == {}
    code, text, _ = run(
        "diff", str(tmp_path / "v1"), str(tmp_path / "v2"), "--package", "pk", "--profile", str(profile)
    )
    assert code == 0
    assert "documented flow(s) only" not in text
    assert "(calls and guards not compared: none of the profile's 1 documented flow(s) is a function" in text
    code, out, _ = run(
        "diff",
        str(tmp_path / "v1"),
        str(tmp_path / "v2"),
        "--package",
        "pk",
        "--profile",
        str(profile),
        "--format",
        "json",
    )
    assert (json.loads(out)["flows"], json.loads(out)["missing_flows"]) == ([], ["Trainer.train"])


def test_diff_of_another_project_is_not_given_torchrls_flows(run: Run, tmp_path: Path) -> None:
    """Two versions of a project that is not torchrl, read as directories: TorchRL's built-in
    profile was applied ("none of the profile's 16 documented flows...")."""
    write(tmp_path / "v1", V1)
    write(tmp_path / "v2", V2)
    code, text, err = run("diff", str(tmp_path / "v1" / "pk"), str(tmp_path / "v2" / "pk"), "-q")
    assert code == 0, err
    assert "documented flow" not in text
    assert "calls" in text  # every function compared, as without a profile


def test_diff_reads_the_profile_and_package_of_tool_rlmap(
    run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As every command: ``[tool.rlmap]`` gives the package and the profile (its help said so)."""
    write(tmp_path / "v1", V1)
    write(tmp_path / "v2", V2)
    profile = tmp_path / "flows.toml"
    page = '[pages.flows]\ntitle = "Flows"\nslug = "flows"\nsummary = "flows"\n'
    profile.write_text(page + '[[pages.flows.sections]]\nkind = "flow"\nfunction = "Collector.rollout"\n')
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text('[tool.rlmap]\npackage = "pk"\nprofile = "flows.toml"\n')
    code, text, err = run("diff", "v1", "v2")
    assert code == 0, err
    assert "(calls and guards compared in the 1 documented flow(s) only)" in text
    (tmp_path / "pyproject.toml").write_text('[tool.rlmap]\npackage = "pk"\nprofile = "nope/"\n')
    code, _, err = run("diff", "v1", "v2")
    assert code == 2
    assert "nope" in err


def test_entries_a_directory_cannot_give_are_diagnostics(run: Run, tmp_path: Path) -> None:
    """A package directory is walked as indexing walks it: a FIFO, a link out of the package and
    a link around a loop are each a diagnostic (exit 3), never a silent gap in the comparison nor a
    hang; a link to a file inside the package is read."""
    write(tmp_path / "v1", V1)
    write(tmp_path / "v2", V2)
    package = tmp_path / "v2" / "pk"
    os.mkfifo(package / "pipe.py")
    (package / "outside.py").symlink_to(tmp_path / "v1" / "pk" / "collect.py")
    (package / "loop").symlink_to(package)
    (package / "same.py").symlink_to(package / "buffers.py")
    code, out, err = run("diff", str(tmp_path / "v1" / "pk"), str(package), "--package", "pk", "--format", "json")
    assert code == 3, err
    assert "pk/pipe.py:1: not a regular file (a FIFO); file skipped" in err
    assert "pk/outside.py:1: symbolic link to outside the package; not followed, skipped" in err
    assert "pk/loop:1: symbolic link loop; directory skipped" in err
    changes = json.loads(out)["changes"]
    added = {c["new"] for c in changes if c["what"] == "added"}
    assert all(c["old"] == "" for c in changes if c["what"] == "added")  # an added name has no old one
    assert "pk.same" in added  # (read through the link, as indexing reads it)


def test_a_file_that_does_not_parse_is_said_as_indexing_says_it(run: Run, tmp_path: Path) -> None:
    """diff said 'does not parse' where show, graph and generate say 'syntax error: ...'."""
    write(tmp_path / "v1", V1)
    write(tmp_path / "v2", V2)
    (tmp_path / "v2" / "pk" / "broken.py").write_text("def f(:\n")
    code, _, err = run("diff", str(tmp_path / "v1"), str(tmp_path / "v2"), "--package", "pk", "-q")
    assert code == 3
    said = [line for line in err.splitlines() if "broken.py" in line]
    _, _, indexed = run("graph", "--source", str(tmp_path / "v2"), "--package", "pk", "--no-cache", "-q")
    assert said
    # the same words, and which version the file is in (both may hold it)
    assert said == [f"{line} (in {tmp_path / 'v2'})" for line in indexed.splitlines() if "broken.py" in line]
    assert "syntax error: invalid syntax; file skipped" in said[0]


def test_folders_of_modules_are_named_as_source_names_them(run: Run, tmp_path: Path) -> None:
    """Two folders each holding the package (no --package given) were named by the folders'
    own names: 'moved a.pk -> b.pk' and every symbol under 'a.' or 'b.'.  A folder that is no
    package names its modules by their path under it, in a directory and at a revision alike."""
    write(tmp_path / "a", V1)
    write(tmp_path / "b", V2)
    code, out, err = run("diff", str(tmp_path / "a"), str(tmp_path / "b"), "--format", "json")
    assert code == 0, err
    changes = json.loads(out)["changes"]
    names = {c["old"] or c["new"] for c in changes}
    assert "pk.collect.Collector" in names or "pk.collect.OldBuffer" in names
    assert not any(name.startswith(("a.", "b.")) for name in names)
    # the same folder committed at the top of a checkout, read at a revision
    repository = tmp_path / "a"

    def git(*args: str) -> None:
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repository, check=True)

    git("init", "-q")
    git("add", ".")
    git("commit", "-q", "-m", "v1")
    code, out, err = run(
        "diff", "HEAD", str(tmp_path / "b"), "--repo", str(repository), "--package", ".", "--format", "json"
    )
    assert code == 0, err
    assert json.loads(out)["changes"] == changes


def test_a_namespace_package_named_as_the_package_keeps_its_name(run: Run, tmp_path: Path) -> None:
    """A package folder without __init__.py given as --package's own folder is that package
    (nspkg.collect), not a folder of modules (collect)."""
    for version, body in (
        ("v1", "return env.step(1)"),
        ("v2", "if env.done:\n            return None\n        return env.step(1)"),
    ):
        folder = tmp_path / version / "nspkg"
        folder.mkdir(parents=True)
        (folder / "collect.py").write_text(f"class Collector:\n    def rollout(self, env):\n        {body}\n")
    versions = (str(tmp_path / "v1" / "nspkg"), str(tmp_path / "v2" / "nspkg"), "--package", "nspkg")
    code, out, err = run("diff", *versions, "--scope", "nspkg.collect", "--format", "json")
    assert code == 0, err
    assert [(c["what"], c["old"]) for c in json.loads(out)["changes"]] == [
        ("guards", "nspkg.collect.Collector.rollout")
    ]


def test_scope_keeps_the_functions_under_a_dotted_prefix_only(run: Run, tmp_path: Path) -> None:
    """``--scope pk.collect`` compared pk.collector's functions too (the start of a name)."""
    for version, callee in (("v1", "step"), ("v2", "step2")):
        for module in ("collect", "collector"):
            write(
                tmp_path / version,
                {"pk/__init__.py": "", f"pk/{module}.py": f"def run(env):\n    return env.{callee}()\n"},
            )
    versions = (str(tmp_path / "v1" / "pk"), str(tmp_path / "v2" / "pk"), "--package", "pk", "--all-functions")
    code, out, err = run("diff", *versions, "--scope", "pk.collect", "--format", "json")
    assert code == 0, err
    assert [(c["what"], c["old"]) for c in json.loads(out)["changes"]] == [("calls", "pk.collect.run")]
    code, out, _ = run("diff", *versions, "--format", "json")
    assert [c["old"] for c in json.loads(out)["changes"]] == ["pk.collect.run", "pk.collector.run"]


def test_both_versions_are_checked_before_either_is_read(run: Run, tmp_path: Path) -> None:
    # a missing B was reported only once A was read whole (13 s on torchrl): here reading A would
    # fail first (it holds no Python), so the error about B shows B was checked before
    old = tmp_path / "pk"
    old.mkdir()
    code, _, err = run("diff", str(old), str(tmp_path / "missing"), "--package", "pk")
    assert code == 2
    assert (
        err
        == f"rlmap: error: '{tmp_path / 'missing'}' does not exist - pass an existing package directory or checkout\n"
    )
