"""Renames inferred and fixed: a class renamed and moved in a small git repository, its docs and a
docstring left behind; ``rlmap audit --diff`` shows, ``--fix`` applies the certain replacements,
after which the audit is clean and the source parses with its formatting kept."""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Run

OLD = '''
class OldCollector:
    """Collects."""

    def rollout(self):
        return self._make_carrier()

    def _make_carrier(self):
        return self._setup_devices()

    def _setup_devices(self):
        return 1
'''

# renamed and moved (to rp.new), beside a decoy spelt like the old name that has none of its members
NEW = OLD.replace(
    'OldCollector:\n    """Collects.', 'Collector:\n    """Collects (renamed from OldCollector and moved).'
)
NEW += '''

class OldCollectr:
    """A decoy: spelt like the old name, but none of its members."""

    def close(self):
        return None
'''
# a docstring left behind, in a module with formatting that must survive byte for byte
USER = """\
import rp.new   # keep   this comment


def run( x ):
    '''Run with :class:`rp.old.OldCollector`, see :meth:`rp.old.OldCollector.rollout`.

    And :class:`rp.new.Gone` (no certain replacement).
    '''
    return   x
"""

DOCS = """\
Collectors
==========

.. currentmodule:: rp.old

:class:`OldCollector` runs :meth:`OldCollector.rollout`, which calls
:meth:`OldCollector._make_carrier`; ``rp.old.OldCollector._setup_devices`` picks devices.

.. code-block:: python

    import rp.old

    collector = rp.old.OldCollector()

Also :class:`rp.new.Gone`.
"""


def git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=root, check=True, capture_output=True
    )


def repository(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "rp").mkdir(parents=True)
    (root / "docs").mkdir()
    (root / "pyproject.toml").write_text("[project]\nname = 'rp'\n")
    (root / "rp" / "__init__.py").write_text("")
    (root / "rp" / "old.py").write_text(textwrap.dedent(OLD))
    (root / "rp" / "user.py").write_text(USER)
    (root / "docs" / "collectors.rst").write_text(DOCS)
    git(root, "init", "-q")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "old")
    (root / "rp" / "old.py").unlink()  # renamed and moved; docs and docstring left behind
    (root / "rp" / "new.py").write_text(textwrap.dedent(NEW))
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "rename OldCollector to Collector, move it to rp.new")
    return root


def audit(run: Run, root: Path, *extra: str) -> tuple[int, str, str]:
    return run(
        "audit", "--source", str(root / "rp"), "--package", "rp", "--docs", str(root / "docs"),
        "--rule", "stale-ref", "--rule", "stale-example-ref", "--no-cache", "-q", *extra,
    )  # fmt: skip


def test_member_coverage_names_the_renamed_class_and_fix_applies_it(run: Run, tmp_path: Path) -> None:
    root = repository(tmp_path)
    code, out, _ = audit(run, root, "--format", "json")
    findings = json.loads(out)["findings"]
    stale = {(f["path"], f["line"], f["name"]): f for f in findings}
    assert code == 1
    # every occurrence in the page, the example and the docstring
    assert sorted(stale) == [
        ("docs/collectors.rst", 6, "OldCollector"),
        ("docs/collectors.rst", 6, "OldCollector.rollout"),
        ("docs/collectors.rst", 7, "OldCollector._make_carrier"),
        ("docs/collectors.rst", 7, "rp.old.OldCollector._setup_devices"),
        ("docs/collectors.rst", 11, "rp.old"),
        ("docs/collectors.rst", 13, "rp.old.OldCollector"),
        ("docs/collectors.rst", 15, "rp.new.Gone"),
        ("rp/user.py", 5, "rp.old.OldCollector"),
        ("rp/user.py", 5, "rp.old.OldCollector.rollout"),
        ("rp/user.py", 7, "rp.new.Gone"),
    ]
    renamed = stale[("docs/collectors.rst", 6, "OldCollector")]
    assert renamed["certain"]
    assert "cover the members the docs use (3/3" in renamed["suggestion"]
    assert renamed["suggestion"].endswith(": rp.new.Collector")  # not the decoy spelt like it
    assert not stale[("docs/collectors.rst", 15, "rp.new.Gone")]["certain"]

    # --diff shows the edits and writes nothing
    before = {path: path.read_bytes() for path in root.rglob("*") if path.is_file() and ".git" not in path.parts}
    code, diff, _ = audit(run, root, "--diff")
    assert "-:class:`OldCollector` runs :meth:`OldCollector.rollout`, which calls" in diff
    assert "+:class:`rp.new.Collector` runs :meth:`rp.new.Collector.rollout`, which calls" in diff
    assert "+    collector = rp.new.Collector()" in diff
    assert all(path.read_bytes() == data for path, data in before.items())

    # --fix applies the certain ones, says so, and leaves the uncertain ones
    code, out, err = audit(run, root, "--fix")
    assert "fixed 7 reference(s) in 2 file(s)" in err
    page = (root / "docs" / "collectors.rst").read_text()
    assert "``rp.new.Collector._setup_devices``" in page
    assert ":class:`rp.new.Gone`" in page  # uncertain: never edited
    user = (root / "rp" / "user.py").read_text()
    ast.parse(user)
    assert user == USER.replace("rp.old.OldCollector", "rp.new.Collector")  # byte-identical elsewhere
    code, out, _ = audit(run, root, "--format", "json")
    left = [(f["path"], f["name"]) for f in json.loads(out)["findings"]]
    # the example's ``import rp.old`` has no replacement; the rest is clean
    assert left == [
        ("docs/collectors.rst", "rp.old"),
        ("docs/collectors.rst", "rp.new.Gone"),
        ("rp/user.py", "rp.new.Gone"),
    ]


def test_fix_and_diff_together_are_refused_and_write_nothing(run: Run, tmp_path: Path) -> None:
    root = repository(tmp_path)
    before = {path: path.read_bytes() for path in root.rglob("*") if path.is_file() and ".git" not in path.parts}
    code, out, err = audit(run, root, "--fix", "--diff")
    assert code == 2
    assert out == ""
    assert err.startswith("rlmap: error: --fix and --diff cannot be used together")
    assert all(path.read_bytes() == data for path, data in before.items())


def test_fix_leaves_an_installed_package_as_it_is(run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # no --source: the package is the one installed in a site-packages directory on the path
    root = repository(tmp_path)
    installed = tmp_path / "venv" / "lib" / "site-packages"
    shutil.copytree(root / "rp", installed / "rp")
    monkeypatch.syspath_prepend(str(installed))
    docs = shutil.copytree(root / "docs", tmp_path / "site" / "docs")  # a docs tree with no rp/ beside it
    user = (installed / "rp" / "user.py").read_bytes()
    args = ["audit", "--package", "rp", "--docs", str(docs), "--rule", "stale-ref", "--no-cache", "-q"]
    _, diff, err = run(*args, "--diff")
    assert "+:class:`rp.new.Collector` runs" in diff  # the docs page's edits are shown
    assert "collector = rp.new.Collector()" not in diff  # the installed package's docstring's are not
    assert "user.py: a file of an installed package (pass --source a checkout" in err
    assert err.rstrip().endswith("; not shown")  # (--diff edits nothing)
    _, _, err = run(*args, "--fix")
    assert "user.py: a file of an installed package (pass --source a checkout" in err
    assert "; not edited" in err
    assert "fixed 4 reference(s) in 1 file(s)" in err
    assert ":class:`rp.new.Collector` runs" in (docs / "collectors.rst").read_text()
    assert (installed / "rp" / "user.py").read_bytes() == user


def test_fix_never_writes_through_a_symlink(run: Run, tmp_path: Path) -> None:
    root = repository(tmp_path)
    outside = tmp_path / "outside.rst"
    outside.write_text(DOCS)
    page = root / "docs" / "collectors.rst"
    page.unlink()
    page.symlink_to(outside)
    _code, _, _err = audit(run, root, "--fix")
    assert outside.read_text() == DOCS
    assert page.is_symlink()


def test_since_takes_renames_from_git_history_first(run: Run, tmp_path: Path) -> None:
    root = repository(tmp_path)
    code, out, _ = audit(run, root, "--since", "HEAD~1", "--format", "json")
    findings = {(f["line"], f["name"]): f for f in json.loads(out)["findings"] if f["path"] == "docs/collectors.rst"}
    renamed = findings[(6, "OldCollector.rollout")]
    assert renamed["suggestion"] == "git history since HEAD~1: rp.old.OldCollector is now rp.new.Collector"
    assert renamed["certain"]
    _, diff, _ = audit(run, root, "--since", "HEAD~1", "--diff")
    assert "+    collector = rp.new.Collector()" in diff
    code, _, err = run("audit", "--source", str(root / "rp"), "--package", "rp", "--docs", str(root / "docs"),
                       "--since", "no-such-rev", "--no-cache", "-q")  # fmt: skip
    assert code == 2
    assert err.startswith("rlmap: error: git ")


def test_since_renames_attributes_too(run: Run, tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / "ar").mkdir(parents=True)
    (root / "docs").mkdir()
    (root / "ar" / "__init__.py").write_text("")
    code = "class Collector:\n    def reset(self):\n        self._shuttle = 1\n\n    def step(self):\n        return self._shuttle\n"
    (root / "ar" / "core.py").write_text(code)
    page = "Collectors\n==========\n\nThe step reads :attr:`ar.core.Collector._shuttle`.\n"
    (root / "docs" / "page.rst").write_text(page)
    git(root, "init", "-q")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "old")
    (root / "ar" / "core.py").write_text(code.replace("_shuttle", "_carrier"))
    git(root, "commit", "-q", "-am", "rename the attribute")
    args = ["audit", "--source", str(root / "ar"), "--package", "ar", "--docs", str(root / "docs")]
    args += ["--rule", "stale-ref", "--no-cache", "-q", "--since", "HEAD~1"]
    code, out, _ = run(*args, "--format", "json")
    (finding,) = json.loads(out)["findings"]
    assert (
        finding["suggestion"]
        == "git history since HEAD~1: ar.core.Collector._shuttle is now ar.core.Collector._carrier"
    )
    assert finding["certain"]
    code, _, err = run(*args, "--fix")
    assert code == 0, err
    assert (root / "docs" / "page.rst").read_text() == page.replace("_shuttle", "_carrier")


MOVED_USER = '''\
def use():
    """Use it.

    >>> from mv.a import Thing
    >>> Thing().run()
    """
    return   1
'''
MOVED_DOCS = """\
Things
======

.. code-block:: python

    from mv.a import Thing
    from mv.a import (Thing as T)
    from rp_gone.x import Thing as Other

    Thing().run()
"""


def test_fix_rewrites_from_imports_of_moved_names(run: Run, tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / "mv").mkdir(parents=True)
    (root / "docs").mkdir()
    (root / "pyproject.toml").write_text("[project]\nname = 'mv'\n")
    (root / "mv" / "__init__.py").write_text("")
    (root / "mv" / "b.py").write_text(
        'class Thing:\n    """A thing (it was in mv.a)."""\n\n    def run(self):\n        return 1\n'
    )
    (root / "mv" / "user.py").write_text(MOVED_USER)
    (root / "docs" / "things.rst").write_text(MOVED_DOCS)
    args = ["audit", "--source", str(root / "mv"), "--package", "mv", "--docs", str(root / "docs")]
    args += ["--rule", "stale-example-ref", "--no-cache", "-q"]
    code, out, _ = run(*args, "--format", "json")
    fixable = {(f["path"], f["line"], f["name"]): f["fixable"] for f in json.loads(out)["findings"]}
    assert code == 1
    assert fixable == {
        ("docs/things.rst", 6, "mv.a.Thing"): True,
        ("docs/things.rst", 7, "mv.a.Thing"): True,
        ("mv/user.py", 4, "mv.a.Thing"): True,
    }
    code, _, err = run(*args, "--fix")
    assert "fixed 3 reference(s) in 2 file(s)" in err
    assert (root / "docs" / "things.rst").read_text() == MOVED_DOCS.replace("mv.a import", "mv.b import")
    user = (root / "mv" / "user.py").read_text()
    assert user == MOVED_USER.replace("mv.a import", "mv.b import")  # byte-identical elsewhere
    code, out, _ = run(*args, "--format", "json")
    assert code == 0
    assert json.loads(out)["findings"] == []


def test_fix_leaves_a_renamed_from_import_the_example_uses(run: Run, tmp_path: Path) -> None:
    root = repository(tmp_path)
    example = (
        ".. code-block:: python\n\n    from rp.old import OldCollector\n    from rp.old import OldCollector as C\n"
    )
    (root / "docs" / "collectors.rst").write_text(DOCS + "\n" + example + "\n    OldCollector().rollout()\n")
    code, out, _ = audit(run, root, "--since", "HEAD~1", "--format", "json")
    imports = {f["line"]: f["fixable"] for f in json.loads(out)["findings"] if f["name"] == "rp.old.OldCollector"}
    assert code == 1
    assert imports[19] is False  # renamed, and the example goes on using OldCollector
    assert imports[20] is True  # bound to C: the new name can be imported under it
    _, diff, _ = audit(run, root, "--since", "HEAD~1", "--diff")
    assert "+    from rp.new import Collector as C\n" in diff
    assert "-    from rp.old import OldCollector\n" not in diff


def test_since_reports_code_that_still_uses_a_renamed_attribute(run: Run, tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / "sa").mkdir(parents=True)
    (root / "sa" / "__init__.py").write_text("")
    base = "class Collector:\n    def reset(self):\n        self._shuttle = 1\n"
    (root / "sa" / "base.py").write_text(base)
    (root / "sa" / "llm.py").write_text(
        "from sa.base import Collector\n\n\nclass LLMCollector(Collector):\n"
        "    def step(self):\n        return self._shuttle\n"
    )
    git(root, "init", "-q")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "old")
    (root / "sa" / "base.py").write_text(base.replace("_shuttle", "_carrier"))  # the subclass is left behind
    git(root, "commit", "-q", "-am", "rename the attribute")
    args = ["audit", "--source", str(root / "sa"), "--package", "sa", "--rule", "stale-alias", "--no-cache", "-q"]
    code, out, _ = run(*args, "--format", "json")
    assert code == 0
    assert json.loads(out)["findings"] == []  # without history nothing says _shuttle is an old name
    code, out, _ = run(*args, "--format", "json", "--since", "HEAD~1")
    (finding,) = json.loads(out)["findings"]
    assert code == 1
    assert (finding["path"], finding["line"], finding["name"]) == ("sa/llm.py", 6, "sa.llm.LLMCollector._shuttle")
    assert "git history since HEAD~1 renamed sa.base.Collector._shuttle to sa.base.Collector._carrier" in str(
        finding["message"]
    )


def _with_a_companion(make_package: Any, tmp_path: Path, private: str, reference: str) -> tuple[Path, list[str]]:
    """A package ``ap`` indexed with a companion ``lib`` whose private module ``lib/_impl.py``
    holds ``private``, and a docs page with ``reference``: the checkout and the audit's arguments."""
    files = {"ap/__init__.py": "", "ap/core.py": "def run():\n    return 1\n", "lib/__init__.py": ""}
    root = make_package({**files, "lib/_impl.py": private})
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.rst").write_text(f"Title\n=====\n\n{reference}\n")
    config = root / "pyproject.toml"
    config.write_text('[tool.rlmap]\nsource = "."\npackage = "ap"\npackages = ["ap", "lib"]\n')
    return root, ["audit", "--config", str(config), "--docs", str(docs), "--rule", "stale-ref", "--no-cache", "-q"]


def test_a_suggestion_is_never_a_private_name_of_another_package(run: Run, make_package: Any, tmp_path: Path) -> None:
    """A reference to the documented package is pointed at its own names, or another package's
    public ones, never at a companion's private internals."""
    root, args = _with_a_companion(make_package, tmp_path, "class Nopes:\n    pass\n", ":class:`ap.Nope`")
    _, out, _ = run(*args, "--format", "json")
    (finding,) = json.loads(out)["findings"]
    assert "_impl" not in finding["suggestion"]
    (root / "lib" / "__init__.py").write_text("from lib._impl import Nopes\n")  # now public as lib.Nopes
    _, out, _ = run(*args, "--format", "json")
    (finding,) = json.loads(out)["findings"]
    assert finding["suggestion"] == "did you mean lib.Nopes? (spelling)"


def test_since_follows_the_path_a_package_exports_and_the_current_module(run: Run, tmp_path: Path) -> None:
    """History knows ``rq._impl.Collector._make_carrier``; the docs write it through the package
    (``rq.Collector``) or under ``.. currentmodule:: rq``: both are the renamed method."""
    root = tmp_path / "repo"
    (root / "rq").mkdir(parents=True)
    (root / "docs").mkdir()
    (root / "rq" / "__init__.py").write_text("from rq._impl import Collector\n")
    code = (
        "class Collector:\n    def _make_carrier(self):\n        return 1\n\n    def rollout(self):\n        return 2\n"
    )
    (root / "rq" / "_impl.py").write_text(code)
    page = (
        "Collectors\n==========\n\n:meth:`rq.Collector._make_carrier` makes it.\n\n"
        ".. currentmodule:: rq\n\n:meth:`Collector._make_carrier` again.\n"
    )
    (root / "docs" / "page.rst").write_text(page)
    git(root, "init", "-q")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "old")
    (root / "rq" / "_impl.py").write_text(code.replace("_make_carrier", "_build_carrier"))
    git(root, "commit", "-q", "-am", "rename the method")
    args = ["audit", "--source", str(root / "rq"), "--package", "rq", "--docs", str(root / "docs")]
    _, out, _ = run(*args, "--rule", "stale-ref", "--no-cache", "-q", "--since", "HEAD~1", "--format", "json")
    findings = {f["line"]: f for f in json.loads(out)["findings"]}
    assert sorted(findings) == [4, 8]
    for finding in findings.values():
        assert finding["certain"], finding
        assert finding["suggestion"].startswith("git history since HEAD~1: "), finding
        assert finding["suggestion"].endswith("._build_carrier"), finding


def test_since_keeps_the_path_the_docs_wrote_through_an_export(run: Run, tmp_path: Path) -> None:
    """``rq.helpers`` is ``rq._helpers`` exported under another name: the renamed function is
    ``rq.helpers.new_func`` to the docs, never the private ``rq._helpers.new_func``."""
    root = tmp_path / "repo"
    (root / "rq").mkdir(parents=True)
    (root / "docs").mkdir()
    (root / "rq" / "__init__.py").write_text("from rq import _helpers as helpers\n")
    (root / "rq" / "_helpers.py").write_text("def old_func():\n    return 1\n")
    (root / "docs" / "page.rst").write_text("Helpers\n=======\n\n:func:`rq.helpers.old_func` helps.\n")
    git(root, "init", "-q")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "old")
    (root / "rq" / "_helpers.py").write_text("def new_func():\n    return 1\n")
    git(root, "commit", "-q", "-am", "rename")
    args = ["audit", "--source", str(root / "rq"), "--package", "rq", "--docs", str(root / "docs")]
    _, out, _ = run(*args, "--rule", "stale-ref", "--no-cache", "-q", "--since", "HEAD~1", "--format", "json")
    (finding,) = json.loads(out)["findings"]
    assert finding["certain"]
    assert finding["suggestion"].endswith("is now rq.helpers.new_func"), finding
    _, diff, _ = run(*args, "--rule", "stale-ref", "--no-cache", "-q", "--since", "HEAD~1", "--diff")
    assert "+:func:`rq.helpers.new_func` helps." in diff


def test_a_covering_class_is_never_a_private_class_of_another_package(
    run: Run, make_package: Any, tmp_path: Path
) -> None:
    hidden = "class Hidden:\n    def rollout(self):\n        pass\n\n    def step(self):\n        pass\n"
    _, args = _with_a_companion(make_package, tmp_path, hidden, ":meth:`ap.Old.rollout` then :meth:`ap.Old.step`.")
    _, out, _ = run(*args, "--format", "json")
    findings = json.loads(out)["findings"]
    assert findings
    assert all("_impl" not in finding["suggestion"] and not finding["certain"] for finding in findings), findings


def test_fix_names_the_certain_findings_it_leaves_to_be_fixed_by_hand(run: Run, tmp_path: Path) -> None:
    """A certain rename in an import of several names is not rewritten; ``--fix`` said only how
    many uncertain findings it left, as if nothing certain were left."""
    root = repository(tmp_path)
    (root / "docs" / "notes.md").write_text(
        "# Notes\n\n```python\nfrom rp.old import OldCollector, OldCollector\n```\n"
    )
    code, _, err = audit(run, root, "--fix")
    assert code == 1
    assert "stale finding(s) with a certain suggestion left to fix by hand" in err
    assert "docs/notes.md:4: rp.old.OldCollector -> " in err


def test_a_rename_keeps_the_module_a_name_is_defined_in(run: Run, tmp_path: Path) -> None:
    """``shop.pricing.apply_discount`` renamed in place was said to be "now
    ``shop.zmod.apply_rebate`` (certain)", and rewritten so, because ``zmod`` imports it for its own
    use and its path is shorter: a module's imports are no path to a name, a package's are."""
    root = tmp_path / "repo"
    (root / "shop").mkdir(parents=True)
    (root / "docs").mkdir()
    (root / "pyproject.toml").write_text("[project]\nname = 'shop'\n")
    (root / "shop" / "__init__.py").write_text('"""S."""\n')
    (root / "shop" / "pricing.py").write_text('"""P."""\n\n\ndef apply_discount(a):\n    """D."""\n    return a\n')
    zmod = '"""Z."""\nfrom shop.pricing import apply_discount\n\n\ndef use():\n    """U."""\n    return apply_discount(1)\n'
    (root / "shop" / "zmod.py").write_text(zmod)
    (root / "docs" / "index.rst").write_text("T\n=\n\nSee :func:`shop.pricing.apply_discount`.\n")
    git(root, "init", "-q")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "one")
    for name in ("pricing.py", "zmod.py"):
        path = root / "shop" / name
        path.write_text(path.read_text().replace("apply_discount", "apply_rebate"))
    git(root, "commit", "-q", "-am", "two")
    code, out, err = run(
        "audit", "--source", str(root / "shop"), "--package", "shop", "--docs", str(root / "docs"),
        "--rule", "stale-ref", "--since", "HEAD~1", "--no-cache", "-q", "--format", "json",
    )  # fmt: skip
    assert code == 1, err
    (finding,) = json.loads(out)["findings"]
    assert (
        finding["suggestion"]
        == "git history since HEAD~1: shop.pricing.apply_discount is now shop.pricing.apply_rebate"
    )
    assert finding["certain"]
