"""Benchmark on the installed torchrl: ``python -m rlmap.bench`` (``nox -s bench``).

Every figure is several samples of a whole ``rlmap`` process (or of a floor loop), reported as
min and median.  Two floors are measured on the same files a cold run indexes (a private copy of
the documented package, and the companion packages indexed with it: tensordict for torchrl): the
stdlib ``ast.parse`` of every file (what any Python tool must pay) and libcst's own
``parse_module`` (what rlmap's parser costs before rlmap does anything).

A shared machine's speed drifts by a third over minutes, so a ratio is only worth something
between figures measured together.  The run goes in rounds, one sample of every case per round:
each round starts with a sample of libcst's floor, and each case's sample comes right after a
sample of the ``ast`` floor of its own.  A ratio is taken within a round (a wall against the
``ast`` floor sampled just before it, a CPU time against the round's libcst floor), and the
median of the rounds' ratios is reported, with their range.

Cases: cold (empty cache), warm ``show``, resolve (every file's records cached, the model not:
what resolution and the model's write cost on top of a warm start), warm ``generate --check``,
one file changed (a function added: its records change), one comment changed (in place: no
record changes), one file's lines moved (a comment line added above a method: its records change
in their lines only, see :mod:`rlmap.model.relabel`), audit cold / warm (when TorchRL's docs are
beside this repository), tensordict cold, and torch cold with ``--torch`` (minutes; first round
only).  The last lines hold each figure against the target issue 15 set for it.
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
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from rlmap.index.source import SourceTree, locate_source

COLD = "cold: show, empty cache"
WARM = "warm: show Collector.rollout"
RESOLVE = "resolve: files cached, model not"
ONE_CHANGED = "one file changed: show"
LINES_MOVED = "lines moved in one file: show"
DOCS = Path(__file__).resolve().parent.parent.parent / "shared" / "torchrl-docs"


@dataclass(frozen=True, slots=True)
class Sample:
    wall: float  # seconds
    cpu: float  # CPU seconds (user + system, children included)
    peak_mib: float = 0.0
    floor_wall: float | None = None  # the ``ast`` floor's wall, sampled just before this one
    libcst_cpu: float | None = None  # the CPU of this round's libcst floor


@dataclass(slots=True)
class Figure:
    name: str
    samples: dict[int, Sample] = field(default_factory=dict)  # by round

    @property
    def walls(self) -> list[float]:
        return [sample.wall for sample in self.samples.values()]

    def over_ast(self) -> float | None:
        """The median, over the samples, of the wall against the ``ast`` floor sampled before it."""
        ratios = [sample.wall / sample.floor_wall for sample in self.samples.values() if sample.floor_wall]
        return statistics.median(ratios) if ratios else None

    def over_libcst(self) -> float | None:
        """The median, over the samples, of the CPU time against the round's libcst floor."""
        ratios = [sample.cpu / sample.libcst_cpu for sample in self.samples.values() if sample.libcst_cpu]
        return statistics.median(ratios) if ratios else None


def _run(command: Sequence[str]) -> Sample:
    """One process: wall seconds, CPU seconds (it and its waited-for children: the parser pool), peak RSS MiB."""
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 3):  # 3: some files could not be indexed (expected on torch)
        assert process.stderr is not None
        sys.stderr.write(process.stderr.read().decode(errors="replace"))
        raise SystemExit(f"benchmark command failed ({code}): {' '.join(command)}")
    return Sample(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024)


def _ignore_round(command: Sequence[str], number: int) -> Sample:
    del number
    return _run(command)


def _parse_loop(data: list[bytes], parse: Callable[[bytes], object]) -> Sample:
    """One sample of a floor: the parse of every file in this process.  Its ratios use CPU time
    (on a loaded machine the wall of a loop also counts the time it waited for a core)."""
    gc.collect()
    start, start_cpu = time.perf_counter(), time.process_time()
    for blob in data:
        try:
            parse(blob)
        except Exception:  # a file the parser rejects costs what it cost
            continue
    return Sample(time.perf_counter() - start, time.process_time() - start_cpu)


def _copy(source: SourceTree, work: Path) -> tuple[Path, list[Path]]:
    tree = work / f"src-{source.package}"
    ignore = shutil.ignore_patterns("__pycache__", "*.so", "*.pyc")
    shutil.copytree(source.package_dir, tree / source.package, ignore=ignore, symlinks=True)
    return tree, sorted((tree / source.package).rglob("*.py"))


def _rlmap(*args: str) -> list[str]:
    return [sys.executable, "-m", "rlmap", *args, "--quiet"]


@dataclass(frozen=True, slots=True)
class Case:
    name: str
    run: Callable[[int], Sample]  # the sample of one round (the round's number)
    first_round_only: bool = False


def _cases(source: SourceTree, tree: Path, work: Path, jobs: list[str], torch: bool) -> list[Case]:
    """The cases in the order a round runs them; each leaves what the next one starts from."""
    cache = work / "cache"
    show = _rlmap("show", "Collector.rollout", "--source", str(tree), "--cache-dir", str(cache), *jobs)
    out = work / "pages"
    generate = _rlmap("generate", "--source", str(tree), "--cache-dir", str(cache), "--out", str(out), *jobs)
    changed_file = tree / source.package / "collectors" / "_single.py"
    original = changed_file.read_bytes()
    marker = "\n# rlmap bench: comment "

    def cold(_: int) -> Sample:
        changed_file.write_bytes(original)  # each round starts from the package as installed
        shutil.rmtree(cache, ignore_errors=True)
        return _run(show)

    def resolve_only(_: int) -> Sample:
        shutil.rmtree(cache / "models", ignore_errors=True)
        return _run(show)

    def check(_: int) -> Sample:
        _run(generate)
        return _run([*generate, "--check"])

    def one_changed(number: int) -> Sample:
        # a code edit: a new function, so the file's records (symbols, calls, value flow) change
        with open(changed_file, "a", encoding="utf-8") as handle:
            handle.write(f"\n\ndef _rlmap_bench_edit_{number}():\n    return print({number})\n")
        return _run(show)

    def comment_changed(number: int) -> Sample:
        # an edit that leaves every record as it was: the last line, a comment, changed in place
        with open(changed_file, "a", encoding="utf-8") as handle:
            handle.write(f"{marker}0\n")
        _run(show)
        head = changed_file.read_text(encoding="utf-8").rpartition(marker)[0]
        changed_file.write_text(f"{head}{marker}{number + 1}\n", encoding="utf-8")
        return _run(show)

    def lines_moved(number: int) -> Sample:
        # a comment line added above Collector.rollout's decorators: every line below moves by one
        lines = changed_file.read_text(encoding="utf-8").splitlines(keepends=True)
        at = next(place for place, text in enumerate(lines) if text.lstrip().startswith("def rollout(self)"))
        while lines[at - 1].lstrip().startswith("@"):
            at -= 1
        indent = lines[at][: len(lines[at]) - len(lines[at].lstrip())]
        lines.insert(at, f"{indent}# rlmap bench: a line added above rollout {number}\n")
        changed_file.write_text("".join(lines), encoding="utf-8")
        return _run(show)

    cases = [
        Case(COLD, cold),
        Case(WARM, partial(_ignore_round, show)),
        Case(RESOLVE, resolve_only),
        Case("warm: generate --check", check),
        Case(ONE_CHANGED, one_changed),
        Case("one comment changed: show", comment_changed),
        Case(LINES_MOVED, lines_moved),
    ]
    if DOCS.is_dir():
        audit_cache = work / "audit-cache"
        audit = _rlmap("audit", "--source", str(tree), "--docs", str(DOCS), "--fail-on", "none")
        audit += ["--cache-dir", str(audit_cache), *jobs]

        def audit_cold(_: int) -> Sample:
            shutil.rmtree(audit_cache, ignore_errors=True)
            return _run(audit)

        cases += [Case("audit: cold", audit_cold), Case("audit: warm", partial(_ignore_round, audit))]
    for package, enabled in (("tensordict", True), ("torch", torch)):
        if not enabled:
            continue
        try:
            other = locate_source(None, package=package)
        except Exception:
            continue
        other_tree, _ = _copy(other, work)
        graph = _rlmap("graph", "--package", package, "--source", str(other_tree), "--no-cache", *jobs)
        cases.append(Case(f"{package}: graph, no cache", partial(_ignore_round, graph), package == "torch"))
    return cases


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=3, help="rounds: samples per figure (default 3)")
    parser.add_argument("--jobs", type=int, default=None, help="parser processes (default: one per core)")
    parser.add_argument("--torch", action="store_true", help="also index torch, cold, in round 1 (minutes)")
    parser.add_argument("--no-libcst-floor", action="store_true", help="skip libcst's parse floor (~25 s a round)")
    options = parser.parse_args(argv)
    rounds = max(1, options.samples)
    jobs = ["--jobs", str(options.jobs)] if options.jobs else []

    source = locate_source(None)
    work = Path(tempfile.mkdtemp(prefix="rlmap-bench-"))
    try:
        tree, own = _copy(source, work)
        # the floors parse what a cold run indexes: the package and its companions
        files = locate_source(tree).scan_files()[0]
        data = [path.read_bytes() for path in files]
        lines = sum(blob.count(b"\n") for blob in data)
        cases = _cases(source, tree, work, jobs, options.torch)
        ast_floor = Figure("floor: stdlib ast.parse, 1 process")
        libcst_floor = None if options.no_libcst_floor else Figure("floor: libcst.parse_module, 1 process")
        figures = {case.name: Figure(case.name) for case in cases}
        floor_samples: list[Sample] = []
        for number in range(rounds):
            libcst_cpu = None
            if libcst_floor is not None:
                import libcst

                libcst_floor.samples[number] = _parse_loop(data, libcst.parse_module)
                libcst_cpu = libcst_floor.samples[number].cpu
            for case in cases:
                if case.first_round_only and number:
                    continue
                floor = _parse_loop(data, ast.parse)
                floor_samples.append(floor)
                sample = case.run(number)
                figures[case.name].samples[number] = Sample(
                    sample.wall, sample.cpu, sample.peak_mib, floor.wall, libcst_cpu
                )
        ast_floor.samples = dict(enumerate(floor_samples))
        print(
            f"rlmap bench: {source.stamp()}, {len(files)} files indexed ({len(own)} of {source.package}, "
            f"{len(files) - len(own)} of {', '.join(source.companion_names) or 'no companion'}), {lines:,} lines, "
            f"{os.cpu_count()} cores, {rounds} rounds"
        )
        _table([ast_floor, *([libcst_floor] if libcst_floor else []), *figures.values()])
        _targets(figures, rounds)
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _table(figures: list[Figure]) -> None:
    header = f"{'figure':<40}{'min s':>8}{'median s':>10}{'CPU s':>8}{'x ast':>8}{'x libcst':>10}{'peak MiB':>10}"
    print(header)
    for figure in figures:
        cpu = min(sample.cpu for sample in figure.samples.values())
        over_ast, over_libcst = figure.over_ast(), figure.over_libcst()
        peak = max(sample.peak_mib for sample in figure.samples.values())
        print(
            f"{figure.name:<40}{min(figure.walls):>8.2f}{statistics.median(figure.walls):>10.2f}{cpu:>8.2f}"
            + (f"{over_ast:>8.2f}" if over_ast is not None else f"{'':>8}")
            + (f"{over_libcst:>10.2f}" if over_libcst is not None else f"{'':>10}")
            + (f"{peak:>10.0f}" if peak else f"{'':>10}")
        )
    print(
        "x ast: median of each sample's wall / the ast floor's wall sampled just before it; "
        "x libcst: median of each sample's CPU / its round's libcst floor CPU"
    )


def _targets(figures: dict[str, Figure], rounds: int) -> None:
    """Issue 15's targets, one ratio per round, as the median of the rounds and their range.
    Indexing CPU is the cold run's CPU less the resolve case's (which starts, loads cached
    records, resolves and answers like the cold run); resolution is the resolve case's CPU less
    the warm ``show``'s; both against the round's libcst floor.  A wall is against the ``ast``
    floor sampled just before it."""

    def per_round(ratio: Callable[[int], float | None]) -> list[float]:
        found = [ratio(number) for number in range(rounds)]
        return [value for value in found if value is not None]

    def sample(name: str, number: int) -> Sample | None:
        figure = figures.get(name)
        return figure.samples.get(number) if figure is not None else None

    def cpu_between(larger: str, smaller: str) -> Callable[[int], float | None]:
        def ratio(number: int) -> float | None:
            high, low = sample(larger, number), sample(smaller, number)
            if high is None or low is None or not high.libcst_cpu:
                return None
            return (high.cpu - low.cpu) / high.libcst_cpu

        return ratio

    def wall(name: str) -> Callable[[int], float | None]:
        def ratio(number: int) -> float | None:
            found = sample(name, number)
            return found.wall / found.floor_wall if found is not None and found.floor_wall else None

        return ratio

    rows = [
        ("indexing CPU / libcst parse CPU", per_round(cpu_between(COLD, RESOLVE)), 1.15),
        ("resolution CPU / libcst parse CPU", per_round(cpu_between(RESOLVE, WARM)), 0.25),
        ("cold wall / ast floor", per_round(wall(COLD)), 7.0),
        ("warm show wall / ast floor", per_round(wall(WARM)), 0.3),
        ("one file changed wall / ast floor", per_round(wall(ONE_CHANGED)), 1.0),
        ("  (one file's lines moved, same target)", per_round(wall(LINES_MOVED)), 1.0),
    ]
    print("targets (issue 15), the median of the rounds' ratios [their range]:")
    for what, ratios, limit in rows:
        if ratios:
            middle = statistics.median(ratios)
            spread = f"[{min(ratios):.2f}-{max(ratios):.2f}]"
            verdict = "met" if middle <= limit else "NOT met"
            print(f"  {what:<38}{middle:>7.2f} {spread:<12} (target <= {limit}: {verdict})")


if __name__ == "__main__":
    sys.exit(main())
