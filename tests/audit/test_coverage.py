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
    # coverage's options without --coverage, a percentage over 100, --coverage with --fix: usage errors
    plain = [arg for arg in base if arg != "--coverage"]
    for args, says in [
        ((*plain, "--fail-under", "50"), "--fail-under and --exclude apply to --coverage"),
        ((*plain, "--exclude", "*/tests/*"), "--fail-under and --exclude apply to --coverage"),
        ((*base, "--fail-under", "150"), "150.0 is not between 0 and 100"),
        ((*base, "--fail-under", "nan"), "--fail-under 'nan' is not a percentage"),  # (it passed every run)
        ((*base, "--fix"), "--coverage reports and exits: it fixes nothing"),
        # what only the findings read was ignored: no baseline was written, with no word
        ((*base, "--write-baseline", str(root / "b.json")), "--write-baseline apply to the findings"),
        ((*base, "--rule", "orphaned-symbol", "--since", "HEAD"), "--rule, --since apply to the findings"),
        ((*base, "--docs", str(root)), "--coverage reports docstring coverage alone: --docs apply"),
        ((*base, "--fail-on", "none"), "--coverage reports docstring coverage alone: --fail-on apply"),
    ]:
        code, _, err = run(*args)
        assert code == 2, args
        assert says in err
    assert not (root / "b.json").exists()


def test_coverage_excludes_from_the_configuration(run: Run, make_package, tmp_path) -> None:  # type: ignore[no-untyped-def]
    root = make_package(
        {
            "cx/__init__.py": '"""The package."""\n',
            "cx/core.py": "def helper():\n    return 2\n",
            "cx/tests/test_core.py": "def test_it():\n    assert True\n",
        }
    )
    config = tmp_path / "rlmap.toml"
    (tmp_path / "docs").mkdir()  # configured docs with no page yet: coverage does not read them
    config.write_text('[tool.rlmap]\npackage = "cx"\nexclude = ["*/tests/*"]\ndocs = ["docs"]\n')
    base = ["audit", "--source", str(root / "cx"), "--config", str(config), "--coverage", "--no-cache", "-q"]
    code, out, err = run(*base, "--format", "json")
    assert code == 0, err
    assert [row["name"] for row in json.loads(out)["files"]] == ["cx/__init__.py", "cx/core.py"]
    # the command line's patterns add to the file's
    code, out, _ = run(*base, "--format", "json", "--exclude", "*/core.py")
    assert json.loads(out)["total"] == {"name": "total", "documented": 1, "total": 1, "percent": 100.0}
    for report in ("sarif", "github"):  # no findings to annotate: said, not a text table under that name
        code, out, err = run(*base, "--format", report)
        assert (code, out) == (2, "")
        assert err.startswith(f"rlmap: error: --coverage has no {report} report - pass --format text")
    config.write_text('[tool.rlmap]\npackage = "cx"\nexclude = "*/tests/*"\n')
    code, _, err = run(*base)
    assert code == 2
    assert err.startswith(f"rlmap: error: {config}: [tool.rlmap].exclude: expected a list")


def test_the_helpers_page_states_the_coverage_audit_prints(run: Run, make_package, tmp_path) -> None:  # type: ignore[no-untyped-def]
    root = make_package(
        {
            "cp/__init__.py": '"""The package."""\n',
            "cp/core.py": '"""Core."""\n\ndef _helper():\n    return 2\n\n\ndef run():\n    """Run."""\n    return _helper()\n',
            "cp/other.py": "def _alone():\n    return 1\n",
        }
    )
    profile = tmp_path / "profile.toml"
    profile.write_text(
        '[pages.helpers]\ntitle = "Helpers"\nslug = "helpers"\nsummary = "helpers"\n'
        '[[pages.helpers.sections]]\nkind = "helpers"\nscope = ["cp"]\n',
        encoding="utf-8",
    )
    common = ["--source", str(root / "cp"), "--package", "cp", "--profile", str(profile), "--no-cache", "-q"]
    code, out, _ = run("audit", *common, "--coverage", "--format", "json")
    assert code == 0
    total = json.loads(out)["total"]
    assert (total["documented"], total["total"]) == (3, 6)
    code, _, err = run("generate", *common, "--out", str(tmp_path / "out"), "--format", "md")
    assert code == 0, err
    page = (tmp_path / "out" / "md" / "helpers.md").read_text(encoding="utf-8")
    assert "Docstring coverage of `cp`: 50.0 % (3 of the 6 modules, classes, functions and methods" in page
