"""Static means static: no command imports the analysed package, not even a parent of a dotted name."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.conftest import write_package

# Runs one rlmap command in a fresh interpreter, then reports which analysed modules got imported.
PROBE = textwrap.dedent(
    """
    import json, sys
    from rlmap.cli import main
    code = main(sys.argv[1:])
    names = ("a", "torchrl", "torch", "tensordict")
    leaked = sorted(m for m in sys.modules if m.split(".")[0] in names)
    print(json.dumps({"code": code, "leaked": leaked}), file=sys.stderr)
    """
)


def _run(args: list[str], pythonpath: Path | None, cwd: Path) -> tuple[int, list[str], str]:
    env = dict(os.environ)
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args], check=False, capture_output=True, text=True, env=env, cwd=cwd, timeout=300
    )
    report = json.loads(done.stderr.strip().splitlines()[-1])
    return report["code"], report["leaked"], done.stderr


@pytest.fixture
def trap(tmp_path: Path) -> tuple[Path, Path]:
    """``a.b`` on a path entry; importing ``a`` or ``a.b`` writes a marker file."""
    marker = tmp_path / "imported"
    site = write_package(
        tmp_path / "site",
        {
            "a/__init__.py": f"open({str(marker)!r}, 'a').write('a')\n",
            "a/b/__init__.py": f"open({str(marker)!r}, 'a').write('b')\n"
            'def f():\n    """Doc."""\n    return g()\n\n\ndef g():\n    return 1\n',
        },
    )
    profile = '[pages.helpers]\ntitle = "Helpers"\nslug = "helpers"\nsummary = "helpers"\n'
    profile += '[[pages.helpers.sections]]\nkind = "inventory"\nscope = ["a.b"]\n'
    (tmp_path / "profile.toml").write_text(profile, encoding="utf-8")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "page.rst").write_text("See :func:`a.b.f` and :func:`a.b.gone`.\n", encoding="utf-8")
    return site, marker


COMMANDS = [
    ["show", "f"],
    ["graph"],
    ["generate", "--profile", "profile.toml", "--out", "out"],
    ["generate", "--profile", "profile.toml", "--out", "out", "--check"],
    ["audit", "--docs", "docs"],
]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c[:2]))
def test_no_command_imports_a_dotted_package_or_its_parent(trap: tuple[Path, Path], command: list[str]) -> None:
    site, marker = trap
    code, leaked, err = _run([*command, "--package", "a.b", "--no-cache", "-q"], site, site.parent)
    assert not marker.exists(), "the analysed package was imported"
    assert leaked == []
    assert code in (0, 1), err  # audit finds a.b.gone; --check after generate may be stale-free


def test_no_command_imports_torchrl(torchrl_model: object, torchrl_cache: Path, tmp_path: Path) -> None:
    """On the installed torchrl (cache warmed by the session fixture): torch and torchrl stay unimported."""
    del torchrl_model
    for command in (["show", "Collector.rollout"], ["graph", "--format", "dot"], ["generate", "--out", "out"]):
        code, leaked, err = _run([*command, "--cache-dir", str(torchrl_cache), "-q"], None, tmp_path)
        assert leaked == [], command
        assert code == 0, err
