"""One profile over several releases: version-marked sections, and every dead name in one error.

Two synthetic releases of the shop package (tests/fixtures/shop): 2.0 renames ``tax_for`` to
``tax_due`` and drops ``Checkout._ship_express``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from rlmap.pages.versions import matches
from tests.conftest import FIXTURES, Run

SHOP = FIXTURES / "shop"


@pytest.mark.parametrize(
    ("version", "condition", "expected"),
    [
        ("0.14.1", ">=0.14", True),
        ("0.13.3", ">=0.14", False),
        ("0.14.1+cpu", ">=0.14, <0.15", True),
        ("0.15.0a0", "<0.15", False),  # a pre-release counts as its release
        ("0.13.0", "==0.13", True),
        ("0.13.3", "!=0.13.3", False),
        ("", "<0.1", True),  # unknown version: the section is kept
    ],
)
def test_version_conditions(version: str, condition: str, expected: bool) -> None:
    assert matches(version, condition) is expected


def _release(tmp_path: Path, version: str) -> Path:
    root = tmp_path / f"shop-{version}"
    shutil.copytree(SHOP / "shop", root / "shop")
    (root / "shop" / "version.py").write_text(f'__version__ = "{version}"\n', encoding="utf-8")
    if version.startswith("2"):
        for name in ("orders.py", "pricing.py"):
            path = root / "shop" / name
            path.write_text(path.read_text().replace("tax_for", "tax_due"), encoding="utf-8")
        orders = root / "shop" / "orders.py"
        text = orders.read_text().replace("return self._ship_express(order)", "return self._ship(order)")
        orders.write_text(text[: text.index("    def _ship_express(self, order):")].rstrip() + "\n", encoding="utf-8")
    return root


def _profile(tmp_path: Path) -> Path:
    """The shop profile with its 1.x-only names moved to sections marked for their releases."""
    folder = tmp_path / "marked"
    shutil.copytree(SHOP / "profile", folder)
    text = (folder / "profile.toml").read_text()
    text = text.replace('targets = ["apply_discount", "tax_for"]', 'targets = ["apply_discount"]')
    text = text.replace('functions = ["run", "_ship_express"]', 'functions = ["run"]')
    text += (
        '\n[[pages.checkout.sections]]\nkind = "callers"\nid = "tax_v1"\ntitle = "Tax (1.x)"\ntargets = ["tax_for"]\n'
        + 'versions = "<2"\n'
        + '\n[[pages.checkout.sections]]\nkind = "callers"\nid = "tax_v2"\ntitle = "Tax (2.x)"\ntargets = ["tax_due"]\n'
        + 'versions = ">=2"\n'
    )
    text = text.replace(
        "run = \"Express orders are shipped by {{ sym('Checkout._ship_express') }}.\"",
        "run = \"How {{ sym('Checkout.run') }} ships.\"",
    )
    (folder / "profile.toml").write_text(text, encoding="utf-8")
    return folder


def _generate(run: Run, source: Path, profile: Path, out: Path) -> tuple[int, str, str]:
    return run(
        "generate", "--source", str(source), "--package", "shop", "--profile", str(profile), "--out", str(out),
        "--no-cache", "-q",
    )  # fmt: skip


@pytest.mark.parametrize("version", ["1.4.0", "2.0.0"])
def test_a_marked_profile_generates_on_both_releases(run: Run, tmp_path: Path, version: str) -> None:
    code, _, err = _generate(run, _release(tmp_path, version), _profile(tmp_path), tmp_path / "out")
    assert code == 0, err
    page = (tmp_path / "out" / "md" / "checkout_internals.md").read_text()
    assert ("## Tax (1.x)" in page) is version.startswith("1")
    assert ("## Tax (2.x)" in page) is version.startswith("2")


def test_every_dead_name_is_reported_at_once(run: Run, tmp_path: Path) -> None:
    """The 1.x profile on 2.0: both sections that name removed code are listed, not just the first."""
    code, _, err = _generate(run, _release(tmp_path, "2.0.0"), SHOP / "profile", tmp_path / "out")
    assert code == 2
    assert "the profile no longer matches the code in 2 places:" in err
    assert "section 4 (callers) targets: 'tax_for' names no symbol of shop 2.0.0" in err
    assert "section 5 (dispatch) functions: 'shop.orders.Checkout._ship_express' names no symbol" in err
    assert err.count("\n  - ") == 2
    assert not (tmp_path / "out").exists()
