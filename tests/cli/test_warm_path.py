"""The warm path stays light: a ``show`` answered from the cache imports no parser, no resolver,
no graph library, no pydantic (typer 0.29 builds an adapter per parameter on every command), and
none of a profile's page schemas (it reads the profile's header and glossary only): what it imports
is what it costs (issue 15's warm figures)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import FIXTURES

REPO = Path(__file__).resolve().parents[2]
_PROBE = """
import sys
from rlmap.cli import main
code = main(sys.argv[1:])
heavy = sorted(name for name in sys.modules if name.split(".")[0] in ("libcst", "networkx", "jinja2", "pydantic")
               or name in ("rlmap.model.resolve", "rlmap.index.extract", "concurrent.futures.process",
                           "rlmap.pages.profile", "rlmap.pages.claims", "rlmap.pages.sections.specs"))
print("HEAVY:" + ",".join(heavy))
sys.exit(code)
"""


def _show(root: Path, cache: Path, *more: str) -> tuple[int, list[str], str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    args = ["show", "pkg.collector.Collector.rollout", "--source", str(root), "--package", "pkg"]
    args += ["--cache-dir", str(cache), "-q", *more]
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, *args],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        cwd=root,
        timeout=300,
    )
    line = next(line for line in done.stdout.splitlines() if line.startswith("HEAVY:"))
    return done.returncode, [name for name in line[len("HEAVY:") :].split(",") if name], done.stderr


def test_a_warm_show_imports_no_parser_resolver_or_graph_library(tmp_path: Path) -> None:
    import shutil

    root = tmp_path / "checkout"
    shutil.copytree(FIXTURES / "pkg", root / "pkg")
    cache = tmp_path / "cache"
    code, cold, err = _show(root, cache)
    assert code == 0, err
    assert "libcst" in cold  # the cold run parses: the probe sees what it imports
    code, warm, err = _show(root, cache)
    assert code == 0, err
    assert warm == [], f"a warm show imported {warm}"


def test_shell_completion_of_names_comes_from_the_cached_model(tmp_path: Path) -> None:
    import shutil

    root = tmp_path / "checkout"
    shutil.copytree(FIXTURES / "pkg", root / "pkg")
    cache = tmp_path / "cache"
    words = f"rlmap show --source {root} --package pkg --cache-dir {cache} Collector.ro"

    def complete() -> list[str]:
        env = {**os.environ, "PYTHONPATH": str(REPO), "_RLMAP_COMPLETE": "complete_bash"}
        env |= {"COMP_WORDS": words, "COMP_CWORD": str(len(words.split()) - 1)}
        done = subprocess.run(
            [sys.executable, "-m", "rlmap"], check=False, capture_output=True, text=True, env=env, timeout=300
        )
        assert done.returncode == 0, done.stderr
        return done.stdout.split()

    assert complete() == []  # nothing cached: completion parses nothing, offers nothing
    assert not (cache / "files").exists()
    code, _, err = _show(root, cache)
    assert code == 0, err
    assert complete() == ["Collector.rollout"]
    words = f"rlmap show --source {root} --package pkg --cache-dir {cache} pkg.envs.Tr"
    assert complete() == ["pkg.envs.TransformedEnv"]  # the path pkg/envs/__init__.py's import makes
    # under a profile with keys and a glossary: keys and terms complete too, --key keys only
    profile = FIXTURES / "profile.toml"
    code, _, err = _show(root, cache, "--profile", str(profile))
    assert code == 0, err
    words = f"rlmap show --source {root} --package pkg --cache-dir {cache} --profile {profile} collector.tr"
    assert complete() == ["collector.traj_ids"]
    words = f"rlmap show --source {root} --package pkg --cache-dir {cache} --profile {profile} car"
    assert complete() == ["carrier"]
    words = f"rlmap show --source {root} --package pkg --cache-dir {cache} --profile {profile} --key is"
    assert complete() == ["is_init"]  # not the symbols is_... nor the term
    words = f"rlmap show --source {root} --package pkg --cache-dir {cache} --profile {profile} replay"
    assert complete() == []  # a term of two words would be two arguments to the shell: not offered
    words = f"rlmap show --source {root} --package pkg --cache-dir {cache} pkg.Env.st"
    assert complete() == ["pkg.Env.step", "pkg.Env.step_and_maybe_reset"]  # members through the import path
    # options typed after the word (a line edited back): bash hands them, click reads only those before
    env = {**os.environ, "PYTHONPATH": str(REPO), "_RLMAP_COMPLETE": "complete_bash"}
    words = f"rlmap show Collector.ro --source {root} --package=pkg --cache-dir {cache} --profile {profile} --key"
    env |= {"COMP_WORDS": words, "COMP_CWORD": "2"}
    done = subprocess.run([sys.executable, "-m", "rlmap"], check=False, capture_output=True, text=True, env=env)
    assert (done.returncode, done.stdout.split()) == (0, [])  # --key: keys only, and no key is spelled so
    env |= {"COMP_WORDS": words.removesuffix(" --key").replace("Collector.ro", "pkg.envs.Tr", 1)}
    done = subprocess.run([sys.executable, "-m", "rlmap"], check=False, capture_output=True, text=True, env=env)
    assert (done.returncode, done.stdout.split()) == (0, ["pkg.envs.TransformedEnv"])  # (the fixture's, not torchrl's)


_CHECK = "import sys\nfrom rlmap.cli import main\nsys.exit(main(sys.argv[1:]))\n"
_CHECK_WITHOUT_LIBCST = """
import sys
sys.modules["libcst"] = None  # any import of it fails, here and in the forked render
from rlmap.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_a_warm_generate_check_reads_the_flows_from_the_cache_without_libcst(tmp_path: Path) -> None:
    """The pages' control flows (a libcst parse each, and libcst's import) are kept in the cache:
    a warm ``generate --check`` runs with libcst unimportable; without the cache it cannot."""
    import shutil

    root = tmp_path / "checkout"
    shutil.copytree(FIXTURES / "pkg", root / "pkg")
    cache, out = tmp_path / "cache", tmp_path / "out"
    args = ["--source", str(root), "--package", "pkg", "--profile", str(FIXTURES / "profile.toml"), "-q"]
    args += ["--out", str(out), "--cache-dir", str(cache)]
    env = {**os.environ, "PYTHONPATH": str(REPO)}

    def generate(*more: str, probe: str = _CHECK) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-c", probe, "generate", *args, *more]
        return subprocess.run(command, check=False, capture_output=True, text=True, env=env, cwd=root, timeout=300)

    done = generate()
    assert done.returncode == 0, done.stderr
    assert any((cache / "flows").rglob("*.msgpack"))
    done = generate("--check", probe=_CHECK_WITHOUT_LIBCST)
    assert done.returncode == 0, done.stderr
    shutil.rmtree(cache / "flows")
    done = generate("--check", probe=_CHECK_WITHOUT_LIBCST)
    assert done.returncode != 0  # the flows read again: libcst is needed
    assert "libcst" in done.stderr
