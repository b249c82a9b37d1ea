"""Docstring coverage, as interrogate counts it: of the modules, classes, functions and methods of the
focus subsystems, the share that has a docstring, per subsystem and per file.

Read from the model (the code is never imported).  ``exclude`` patterns (``fnmatch`` over the
file's path in the package, e.g. ``*/tests/*``) leave files out.  ``rlmap audit --coverage`` prints
it, and the undocumented-helpers page states its figure, both from :func:`docstring_coverage`.
"""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatch
from typing import Any

from rlmap.index.records import CLASS, FUNCTION, METHOD, MODULE

_COUNTED = (MODULE, CLASS, FUNCTION, METHOD)


@dataclass(frozen=True, slots=True)
class Tally:
    name: str  # a subsystem (dotted prefix), a file path, or "total"
    documented: int
    total: int

    @property
    def percent(self) -> float:
        return 100.0 * self.documented / self.total if self.total else 100.0


@dataclass(frozen=True, slots=True)
class Coverage:
    subsystems: tuple[Tally, ...]
    files: tuple[Tally, ...]
    total: Tally
    missing: tuple[tuple[str, int, str], ...]  # (path, line, qualified name) of what has no docstring


def docstring_coverage(model: Any, focus: tuple[str, ...], exclude: tuple[str, ...] = ()) -> Coverage:
    by_focus: dict[str, list[int]] = {prefix: [0, 0] for prefix in focus}
    by_file: dict[str, list[int]] = {}
    missing = []
    for symbol in model.symbols():
        if symbol.kind not in _COUNTED or any(fnmatch(symbol.path, pattern) for pattern in exclude):
            continue
        prefixes = [p for p in focus if symbol.qualname == p or symbol.qualname.startswith(p + ".")]
        if not prefixes:
            continue
        documented = int(bool(symbol.has_docstring))
        for prefix in prefixes:
            by_focus[prefix][0] += documented
            by_focus[prefix][1] += 1
        counts = by_file.setdefault(symbol.path, [0, 0])
        counts[0] += documented
        counts[1] += 1
        if not documented:
            missing.append((symbol.path, symbol.line, symbol.qualname))
    files = tuple(Tally(path, *counts) for path, counts in sorted(by_file.items()))
    total = Tally("total", sum(t.documented for t in files), sum(t.total for t in files))
    subsystems = tuple(Tally(prefix, *counts) for prefix, counts in sorted(by_focus.items()))
    return Coverage(subsystems, files, total, tuple(sorted(missing)))
