"""``rlmap audit --coverage``: docstring coverage per subsystem and file, --fail-under, --exclude."""

from __future__ import annotations

import json

from tests.conftest import Run


def test_coverage_counts_like_interrogate(run: Run, make_package) -> None:  # type: ignore[no-untyped-def]
    root = make_package(
        {
            "cv/__init__.py": '"""The package."""\n',
            "cv/core.py": '"""Core."""\n\nclass A:\n    """A."""\n\n    def run(self):\n        return 1\n\n'
            "def helper():\n    return 2\n",
            "cv/tests/test_core.py": "def test_it():\n    assert True\n",
        }
    )
    base = ["audit", "--source", str(root / "cv"), "--package", "cv", "--coverage", "--no-cache", "-q"]
    code, out, _ = run(*base, "--format", "json")
    result = json.loads(out)
    assert code == 0
    # documented: the package, core, A; not: A.run, helper, tests module, test_it
    assert result["total"] == {"name": "total", "documented": 3, "total": 7, "percent": 42.86}
    assert {row["name"]: row["total"] for row in result["files"]} == {
        "cv/__init__.py": 1,
        "cv/core.py": 4,
        "cv/tests/test_core.py": 2,
    }
    assert [m["name"] for m in result["missing"]][:2] == ["cv.core.A.run", "cv.core.helper"]
    code, out, _ = run(*base, "--format", "json", "--exclude", "*/tests/*")
    assert json.loads(out)["total"]["percent"] == 60.0
    code, _, err = run(*base, "--exclude", "*/tests/*", "--fail-under", "75")
    assert code == 1
    assert "docstring coverage 60.0% is under --fail-under 75%" in err
    code, out, _ = run(*base, "--exclude", "*/tests/*", "--fail-under", "60")
    assert code == 0
    assert out.rstrip().splitlines()[-1].split() == ["total", "3", "5", "60.0%"]
