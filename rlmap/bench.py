"""Benchmark on the installed torchrl: ``python -m rlmap.bench`` (``nox -s bench``).

Every figure is several samples of a whole ``rlmap`` process (or of the floor loop), reported as
min and median, next to two floors measured in the same run on the same files a cold run indexes (a private copy
of the documented package, and the companion packages indexed with it: tensordict for torchrl):
the stdlib ``ast.parse`` of every file (what any Python tool must pay) and libcst's own
``parse_module`` (what rlmap's parser costs before rlmap does anything).  On a shared machine
the min is the figure to compare; the median says how noisy the run was.

Cases: cold (empty cache), warm ``show``, warm ``generate --check``, one file changed (a function
added: its records change), one comment changed (in place: no record changes), resolve
(every file's records cached, the model not: what resolution and the model's write cost on top
of a warm start), audit cold / warm (when TorchRL's docs are beside this repository), tensordict
cold, and torch cold with ``--torch`` (minutes).  The last lines hold each figure against the
target issue 15 set for it.
"""

from __future__ import annotations

import argparse
import ast
import gc
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from rlmap.index.source import SourceTree, locate_source

WARM = "warm: show Collector.rollout"
DOCS = Path(__file__).resolve().parent.parent.parent / "shared" / "torchrl-docs"


@dataclass(frozen=True, slots=True)
class Figure:
    name: str
    seconds: tuple[float, ...]  # wall seconds per sample
    cpu: tuple[float, ...] = ()  # CPU seconds (user + system, children included) per sample
    peak_mib: float = 0.0

    @property
    def best(self) -> float:
        return min(self.seconds)

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)


def _run(command: Sequence[str], env: dict[str, str] | None = None) -> tuple[float, float, float]:
    """One process: wall seconds, CPU seconds (it and its waited-for children: the parser pool), peak RSS MiB."""
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 3):  # 3: some files could not be indexed (expected on torch)
        assert process.stderr is not None
        sys.stderr.write(process.stderr.read().decode(errors="replace"))
        raise SystemExit(f"benchmark command failed ({code}): {' '.join(command)}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def _ignore_index(command: Sequence[str], index: int) -> tuple[float, float, float]:
    del index
    return _run(command)


def _samples(name: str, count: int, once: Callable[[int], tuple[float, float, float]]) -> Figure:
    walls, cpus, peak = [], [], 0.0
    for index in range(count):
        wall, cpu, mib = once(index)
        walls.append(wall)
        cpus.append(cpu)
        peak = max(peak, mib)
    return Figure(name, tuple(walls), tuple(cpus), peak)


def _floor(name: str, files: list[Path], parse: Callable[[bytes], object], count: int) -> Figure:
    """The parse loop in this process: wall seconds, and CPU seconds (what the ratios use: on a
    loaded machine the wall of a loop also counts the time it waited for a core)."""
    data = [path.read_bytes() for path in files]
    walls, cpus = [], []
    for _ in range(count):
        gc.collect()
        start, start_cpu = time.perf_counter(), time.process_time()
        for blob in data:
            try:
                parse(blob)
            except Exception:  # a file the parser rejects costs what it cost
                continue
        walls.append(time.perf_counter() - start)
        cpus.append(time.process_time() - start_cpu)
    return Figure(name, tuple(walls), tuple(cpus))


def _copy(source: SourceTree, work: Path) -> tuple[Path, list[Path]]:
    tree = work / f"src-{source.package}"
    ignore = shutil.ignore_patterns("__pycache__", "*.so", "*.pyc")
    shutil.copytree(source.package_dir, tree / source.package, ignore=ignore, symlinks=True)
    return tree, sorted((tree / source.package).rglob("*.py"))


def _rlmap(*args: str) -> list[str]:
    return [sys.executable, "-m", "rlmap", *args, "--quiet"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=3, help="samples per figure (default 3)")
    parser.add_argument("--jobs", type=int, default=None, help="parser processes (default: one per core)")
    parser.add_argument("--torch", action="store_true", help="also index torch itself, cold (minutes)")
    parser.add_argument("--no-libcst-floor", action="store_true", help="skip libcst's parse floor (~10 s a sample)")
    options = parser.parse_args(argv)
    count = max(1, options.samples)
    jobs = ["--jobs", str(options.jobs)] if options.jobs else []

    source = locate_source(None)
    work = Path(tempfile.mkdtemp(prefix="rlmap-bench-"))
    figures: list[Figure] = []
    try:
        tree, own = _copy(source, work)
        # the floors parse what a cold run indexes: the package and its companions
        files = locate_source(tree).scan_files()[0]
        lines = sum(path.read_bytes().count(b"\n") for path in files)
        floor = _floor("floor: stdlib ast.parse, 1 process", files, ast.parse, count)
        figures.append(floor)
        libcst_floor = None
        if not options.no_libcst_floor:
            import libcst

            libcst_floor = _floor("floor: libcst.parse_module, 1 process", files, libcst.parse_module, count)
            figures.append(libcst_floor)

        cache = work / "cache"
        show = _rlmap("show", "Collector.rollout", "--source", str(tree), "--cache-dir", str(cache), *jobs)

        def cold(_: int) -> tuple[float, float, float]:
            shutil.rmtree(cache, ignore_errors=True)
            return _run(show)

        figures.append(_samples("cold: show, empty cache", count, cold))
        figures.append(_samples(WARM, count, lambda _: _run(show)))

        out = work / "pages"
        generate = _rlmap("generate", "--source", str(tree), "--cache-dir", str(cache), "--out", str(out), *jobs)
        _run(generate)
        figures.append(_samples("warm: generate --check", count, lambda _: _run([*generate, "--check"])))

        changed_file = tree / source.package / "collectors" / "_single.py"

        def one_changed(index: int) -> tuple[float, float, float]:
            # a code edit: a new function, so the file's records (symbols, calls, value flow) change
            with open(changed_file, "a", encoding="utf-8") as handle:
                handle.write(f"\n\ndef _rlmap_bench_edit_{index}():\n    return print({index})\n")
            return _run(show)

        marker = "\n# rlmap bench: comment "

        def comment_changed(index: int) -> tuple[float, float, float]:
            # an edit that leaves every record as it was: the last line, a comment, changed in place
            head = changed_file.read_text(encoding="utf-8").rpartition(marker)[0]
            changed_file.write_text(f"{head}{marker}{index + 1}\n", encoding="utf-8")
            return _run(show)

        figures.append(_samples("one file changed: show", count, one_changed))
        with open(changed_file, "a", encoding="utf-8") as handle:
            handle.write(f"{marker}0\n")
        _run(show)
        figures.append(_samples("one comment changed: show", count, comment_changed))

        def resolve_only(_: int) -> tuple[float, float, float]:
            shutil.rmtree(cache / "models", ignore_errors=True)
            return _run(show)

        figures.append(_samples("resolve: files cached, model not", count, resolve_only))

        if DOCS.is_dir():
            audit_cache = work / "audit-cache"
            audit = _rlmap("audit", "--source", str(tree), "--docs", str(DOCS), "--fail-on", "none")
            audit += ["--cache-dir", str(audit_cache), *jobs]

            def audit_cold(_: int) -> tuple[float, float, float]:
                shutil.rmtree(audit_cache, ignore_errors=True)
                return _run(audit)

            figures.append(_samples("audit: cold", count, audit_cold))
            figures.append(_samples("audit: warm", count, lambda _: _run(audit)))

        for package, enabled in (("tensordict", True), ("torch", options.torch)):
            if not enabled:
                continue
            try:
                other = locate_source(None, package=package)
            except Exception:
                continue
            other_tree, _ = _copy(other, work)
            graph = _rlmap("graph", "--package", package, "--source", str(other_tree), "--no-cache", *jobs)
            samples = 1 if package == "torch" else count
            figures.append(_samples(f"{package}: graph, no cache", samples, partial(_ignore_index, graph)))

        print(
            f"rlmap bench: {source.stamp()}, {len(files)} files indexed ({len(own)} of {source.package}, "
            f"{len(files) - len(own)} of {', '.join(source.companion_names) or 'no companion'}), {lines:,} lines, "
            f"{os.cpu_count()} cores, {count} samples"
        )
        header = f"{'figure':<40}{'min s':>8}{'median s':>10}{'CPU s':>8}{'x ast':>8}{'x libcst':>10}{'peak MiB':>10}"
        print(header)
        for figure in figures:
            cpu = min(figure.cpu) if figure.cpu else 0.0
            over_ast = f"{figure.best / floor.best:>8.2f}"
            libcst_cpu = min(libcst_floor.cpu) if libcst_floor else 0.0
            over_libcst = f"{cpu / libcst_cpu:>10.2f}" if libcst_floor and figure is not floor else f"{'':>10}"
            peak = f"{figure.peak_mib:>10.0f}" if figure.peak_mib else f"{'':>10}"
            print(f"{figure.name:<40}{figure.best:>8.2f}{figure.median:>10.2f}{cpu:>8.2f}{over_ast}{over_libcst}{peak}")
        print("x ast: min wall / the ast floor's min wall; x libcst: min CPU / libcst's parse floor's min CPU")
        _targets(figures, floor, libcst_floor)
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _targets(figures: list[Figure], floor: Figure, libcst_floor: Figure | None) -> None:
    """Issue 15's targets, from the mins above.  Indexing CPU is the cold run's CPU less the
    resolve case's (which starts, loads cached records, resolves and answers like the cold run);
    resolution is the resolve case's CPU less the warm ``show``'s."""
    by_name = {figure.name: figure for figure in figures}

    def cpu(name: str) -> float | None:
        figure = by_name.get(name)
        return min(figure.cpu) if figure is not None and figure.cpu else None

    def wall(name: str) -> float | None:
        figure = by_name.get(name)
        return figure.best / floor.best if figure is not None else None

    cold, resolve, warm = cpu("cold: show, empty cache"), cpu("resolve: files cached, model not"), cpu(WARM)
    rows: list[tuple[str, float | None, float]] = []
    if libcst_floor is not None and cold is not None and resolve is not None and warm is not None:
        libcst_cpu = min(libcst_floor.cpu)
        rows.append(("indexing CPU / libcst parse CPU", (cold - resolve) / libcst_cpu, 1.15))
        rows.append(("resolution CPU / libcst parse CPU", (resolve - warm) / libcst_cpu, 0.25))
    rows.append(("cold wall / ast floor", wall("cold: show, empty cache"), 7.0))
    rows.append(("warm show wall / ast floor", wall(WARM), 0.3))
    rows.append(("one file changed wall / ast floor", wall("one file changed: show"), 1.0))
    print("targets (issue 15):")
    for what, ratio, limit in rows:
        if ratio is not None:
            print(f"  {what:<38}{ratio:>7.2f}  (target <= {limit}: {'met' if ratio <= limit else 'NOT met'})")


if __name__ == "__main__":
    sys.exit(main())
