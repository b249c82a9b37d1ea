"""Index benchmark on the installed torchrl: ``python -m rlmap.bench`` (``nox -s bench``).

Prints, from one run on a private copy of the installed torchrl tree: the stdlib ``ast.parse``
floor over the same files, a cold run (empty cache), a warm run (nothing changed), and a run
after one file changed, each as a whole ``rlmap show Collector.rollout`` process, with ratios
to the floor, peak memory, and the targets of the foundation issue.
"""

from __future__ import annotations

import argparse
import ast
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rlmap.source import locate_source

TARGETS = {"cold": 20.0, "warm": 1.5}
MEMORY_TARGET_MIB = 1024


def _run(command: list[str]) -> tuple[float, float, int]:
    """Wall seconds, peak RSS in MiB (the process or its largest child), exit code."""
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    elapsed = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        assert process.stderr is not None
        sys.stderr.write(process.stderr.read().decode(errors="replace"))
    return elapsed, usage.ru_maxrss / 1024, process.returncode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="warm runs to take the median of")
    parser.add_argument("--jobs", type=int, default=None, help="parser processes (default: one per core)")
    options = parser.parse_args(argv)

    source = locate_source(None)
    work = Path(tempfile.mkdtemp(prefix="rlmap-bench-"))
    try:
        tree = work / "src"
        shutil.copytree(source.package_dir, tree / source.package, ignore=shutil.ignore_patterns("__pycache__", "*.so"))
        files = sorted((tree / source.package).rglob("*.py"))
        lines = 0
        start = time.perf_counter()
        for path in files:
            data = path.read_bytes()
            lines += data.count(b"\n")
            ast.parse(data)
        floor = time.perf_counter() - start

        command = [
            sys.executable,
            "-m",
            "rlmap",
            "show",
            "Collector.rollout",
            "--source",
            str(tree),
            "--cache-dir",
            str(work / "cache"),
            "--quiet",
        ]
        if options.jobs:
            command += ["--jobs", str(options.jobs)]
        cold, cold_mib, code = _run(command)
        if code != 0:
            return code
        warm_runs = [_run(command) for _ in range(max(1, options.repeat))]
        warm = statistics.median(run[0] for run in warm_runs)
        warm_mib = max(run[1] for run in warm_runs)
        changed_file = tree / source.package / "collectors" / "_single.py"
        with open(changed_file, "a", encoding="utf-8") as handle:
            handle.write("\n# rlmap bench: one changed file\n")
        changed, changed_mib, _ = _run(command)

        print(f"rlmap bench: {source.stamp()}, {len(files)} files, {lines:,} lines, {os.cpu_count()} cores")
        print(f"{'measure':<34}{'seconds':>9}{'x ast floor':>13}{'peak MiB':>10}  target")
        rows = [
            ("stdlib ast.parse (floor, 1 core)", floor, None, ""),
            ("cold: empty cache", cold, cold_mib, f"<= {TARGETS['cold']:.1f} s"),
            (f"warm: nothing changed (median {len(warm_runs)})", warm, warm_mib, f"<= {TARGETS['warm']:.1f} s"),
            ("one file changed", changed, changed_mib, ""),
        ]
        for name, seconds, mib, target in rows:
            ratio = f"{seconds / floor:>12.2f}x" if floor else ""
            memory = f"{mib:>10.0f}" if mib is not None else f"{'':>10}"
            print(f"{name:<34}{seconds:>9.2f}{ratio:>13}{memory}  {target}")
        peak = max(cold_mib, warm_mib, changed_mib)
        verdicts = [
            ("cold", cold <= TARGETS["cold"]),
            ("warm", warm <= TARGETS["warm"]),
            ("memory", peak <= MEMORY_TARGET_MIB),
        ]
        print(
            "targets: "
            + ", ".join(f"{name} {'met' if ok else 'MISSED'}" for name, ok in verdicts)
            + f" (peak {peak:.0f} MiB <= {MEMORY_TARGET_MIB} MiB)"
        )
        print(f"cold / warm = {cold / warm:.1f}x; one-file-changed / warm = {changed / warm:.1f}x")
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
