"""PyCG's call-graph micro-benchmark, scored on rlmap: ``python -m rlmap.pycgbench``.

The benchmark (119 small programs with hand-written call graphs) and its scorer live beside this
repository in ``../shared/benchmarks/pycg-micro`` and stay there: this module only runs the
scorer with rlmap as the tool, ``rlmap graph --source CASE --format pycg`` on each case (a plain
directory of modules, read statically like any source), and prints its precision and recall.
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
from pathlib import Path

BENCHMARK = Path(__file__).resolve().parent.parent.parent / "shared" / "benchmarks" / "pycg-micro"


def command() -> str:
    """The scorer's ``--cmd`` template: rlmap on one case copy, PyCG's JSON to ``{out_json}``."""
    python = shlex.quote(sys.executable)
    return f"{python} -m rlmap graph --source {{case_dir}} --format pycg --no-cache --quiet > {{out_json}}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--benchmark", type=Path, default=BENCHMARK, help="the pycg-micro directory (score.py)")
    parser.add_argument("--json", type=Path, default=None, help="write the scorer's per-case results here")
    parser.add_argument("--cases", type=Path, default=None, help="a subset of the cases (default: all snippets)")
    args = parser.parse_args(argv)
    score = args.benchmark / "score.py"
    if not score.is_file():
        print(f"rlmap.pycgbench: error: no {score}", file=sys.stderr)
        return 2
    cases = args.cases or args.benchmark / "micro-benchmark" / "snippets"
    cmd = [sys.executable, str(score), "--cases", str(cases), "--tool", "cmd", "--name", "rlmap", "--cmd", command()]
    if args.json is not None:
        cmd += ["--json", str(args.json)]
    return subprocess.run(cmd, check=False).returncode


if __name__ == "__main__":
    raise SystemExit(main())
