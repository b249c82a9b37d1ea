"""``rlmap audit --coverage`` as text or JSON; the figures come from :mod:`rlmap.query.coverage`
(the undocumented-helpers page states the same total)."""

from __future__ import annotations

from typing import Any

from rlmap.query.coverage import Coverage, Tally


def render_coverage(coverage: Coverage) -> str:
    width = max([len(t.name) for t in (*coverage.subsystems, *coverage.files)] + [5])
    lines = [f"{'':<{width}}  documented  total  coverage"]
    for section in (coverage.subsystems, coverage.files):
        lines.extend(f"{t.name:<{width}}  {t.documented:>10}  {t.total:>5}  {t.percent:7.1f}%" for t in section)
        lines.append("")
    total = coverage.total
    lines.append(f"{'total':<{width}}  {total.documented:>10}  {total.total:>5}  {total.percent:7.1f}%")
    return "\n".join(lines) + "\n"


def coverage_json(coverage: Coverage) -> dict[str, Any]:
    def row(t: Tally) -> dict[str, Any]:
        return {"name": t.name, "documented": t.documented, "total": t.total, "percent": round(t.percent, 2)}

    return {
        "subsystems": [row(t) for t in coverage.subsystems],
        "files": [row(t) for t in coverage.files],
        "total": row(coverage.total),
        "missing": [{"path": p, "line": line, "name": name} for p, line, name in coverage.missing],
    }
