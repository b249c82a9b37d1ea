"""Ctrl-C while files are parsed in worker processes: the command exits 130, prints no
traceback and leaves no worker behind, however many times it is pressed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(
    not hasattr(os, "fork") or not Path("/proc/self/cmdline").exists(), reason="forked workers, found in /proc"
)


def _package(root: Path, files: int = 24, functions: int = 1500) -> Path:
    """A package whose files each take libcst a good part of a second."""
    package = root / "slowpkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text('"""A package slow to parse."""\n')
    body = "".join(f"def f{n}(x):\n    return [x + {n} for _ in range(3)]\n\n\n" for n in range(functions))
    for number in range(files):
        (package / f"m{number}.py").write_text(body)
    return root


def _running(marker: str) -> list[int]:
    """The processes whose command line holds ``marker`` (the workers are forked: they share it)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            command = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if marker.encode() in command and state != "Z":  # (a zombie is gone, only not yet reaped)
            found.append(int(entry.name))
    return found


@pytest.mark.parametrize("presses", [1, 2])
def test_an_interrupt_while_workers_parse_stops_them(tmp_path: Path, presses: int) -> None:
    source = _package(tmp_path / "src")
    marker = str(tmp_path / f"cache-{presses}")
    command = [sys.executable, "-m", "rlmap", "graph", "--source", str(source), "--package", "slowpkg"]
    command += ["--cache-dir", marker, "--jobs", "2", "--quiet"]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while len(_running(marker)) < 3 and time.monotonic() < deadline:  # rlmap and its two workers
            time.sleep(0.05)
        assert len(_running(marker)) >= 3, "the workers never started"
        time.sleep(0.3)
        for _ in range(presses):  # Ctrl-C reaches every process of the terminal's group
            os.killpg(process.pid, signal.SIGINT)
            time.sleep(0.05)
        _, errors = process.communicate(timeout=60)
        assert process.returncode == 130
        assert b"Traceback" not in errors
        deadline = time.monotonic() + 10
        while _running(marker) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _running(marker) == [], "a worker was left behind"
    finally:
        for pid in _running(marker):
            os.kill(pid, signal.SIGKILL)
        if process.poll() is None:
            process.kill()
