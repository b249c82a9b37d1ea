"""Profiles and generic sections on a package that is not torchrl (tests/fixtures/shop).

The shop profile declares its pages in TOML only; these tests check that the generic sections
say what the code does (anchors on the right lines, conditions, order), that profile mistakes
are errors naming the file and line, and that a profile's own templates override the shipped ones.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

import rlmap
from tests.conftest import FIXTURES, Run, write_package

SHOP = FIXTURES / "shop"
PROFILE = SHOP / "profile"


def _generate(run: Run, out: Path, *, source: Path = SHOP, profile: Path = PROFILE) -> tuple[int, str, str]:
    return run(
        "generate", "--source", str(source), "--package", "shop", "--profile", str(profile), "--out", str(out),
        "--no-cache", "-q",
    )  # fmt: skip


@pytest.fixture(scope="module")
def shop_pages(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from rlmap.cli import main

    out = tmp_path_factory.mktemp("shop-pages")
    args = ["generate", "--source", str(SHOP), "--package", "shop", "--profile", str(PROFILE)]
    assert main([*args, "--out", str(out), "--no-cache", "-q"]) == 0
    return out


def test_the_profile_alone_decides_the_pages(shop_pages: Path) -> None:
    files = sorted(p.relative_to(shop_pages).as_posix() for p in shop_pages.rglob("*") if p.is_file())
    assert files == [
        ".rlmap-manifest.json",
        "md/checkout_internals.md",
        "md/checkout_run_flow.dot",
        "md/index.md",
        "rst/checkout_internals.rst",
        "rst/checkout_run_flow.dot",
        "rst/index.rst",
    ]
    index = (shop_pages / "md" / "index.md").read_text()
    assert "- [Checkout internals](checkout_internals.md): what a checkout does with an order" in index
    assert "See also" not in index  # the index lists pages; it has no footer of its own
    rst = (shop_pages / "rst" / "index.rst").read_text()
    assert ".. toctree::\n   :maxdepth: 1\n   :hidden:\n\n   checkout_internals\n" in rst


_ANCHORED = re.compile(r"`([^`]+)` (?:at |\()`(shop/[\w/]+\.py):(\d+)`")


def test_every_anchor_lands_on_a_line_holding_its_name(shop_pages: Path) -> None:
    page = (shop_pages / "md" / "checkout_internals.md").read_text()
    anchors = _ANCHORED.findall(page)
    assert len(anchors) >= 20
    for name, path, line in anchors:
        text = (SHOP / path).read_text().splitlines()[int(line) - 1]
        assert name.rsplit(".", 1)[-1] in text, (name, path, line, text)


def _source_line(path: str, needle: str) -> int:
    lines = (SHOP / path).read_text().splitlines()
    return next(n for n, text in enumerate(lines, start=1) if needle in text)


def test_flow_outlines_the_calls_with_branches_and_exits(shop_pages: Path) -> None:
    page = (shop_pages / "md" / "checkout_internals.md").read_text()
    outline = page[page.index("What `Checkout.run`") : page.index("### Every call, in the order it is made")]
    steps = re.findall(r"^( *)- \*\*(\d+)\*\* `([^`]+)`.* at `L(\d+)`(.*)$", outline, flags=re.MULTILINE)
    # order.total is a method of a parameter: plumbing, left to the list of every call
    assert [call for _, _, call, _, _ in steps] == [
        "apply_discount",
        "tax_for",
        "self._record",
        "self._ship_express",
        "self._ship",
    ]
    assert [int(number) for _, number, _, _, _ in steps] == [1, 2, 3, 4, 5]
    lines = [int(line) for _, _, _, line, _ in steps]
    assert lines == sorted(lines)
    assert lines[0] == _source_line("shop/orders.py", "amount = apply_discount(")
    conditions = {call: rest for _, _, call, _, rest in steps}
    assert conditions["apply_discount"].endswith("- only if `coupon is not None`")
    assert "only if" not in conditions["tax_for"]
    indents = {call: indent for indent, _, call, _, _ in steps}
    assert indents["self._ship_express"] == "  "  # inside the branch, which also exits
    assert "- `if self._express`:" in outline
    express = _source_line("shop/orders.py", "return self._ship_express(order)")
    assert f"  - **exit** `return self._ship_express(order)` at `L{express}`" in outline
    assert "(lines `L` are lines of `shop/orders.py`)" in outline
    assert "Before the loop" not in page  # no loop declared: the whole body is the outline
    every = page[page.index("### Every call, in the order it is made") :]
    assert f"1. `order.total` at `L{_source_line('shop/orders.py', 'order.total()')}`\n" in every
    assert (
        f"6. `self._ship` at `L{_source_line('shop/orders.py', 'return self._ship(order)')}` - in `not self._express`"
        in every
    )


def test_returns_callers_and_inventory_come_from_the_code(shop_pages: Path) -> None:
    page = (shop_pages / "md" / "checkout_internals.md").read_text()
    ship = _source_line("shop/orders.py", "return self._ship(order)")
    assert f"| `self._ship(order)` | `not self._express` | `return` (`shop/orders.py:{ship}`) |" in page
    tax = _source_line("shop/orders.py", "tax_for(amount)")
    assert f"- `tax_for` (`shop/pricing.py:{_source_line('shop/pricing.py', 'def tax_for')}`) is called:" in page
    assert f"  - in `Checkout.run` at `tax_for` (`shop/orders.py:{tax}`)" in page
    assert "Calls of the pricing functions (defined in `shop.pricing`):" in page
    assert (
        "| `Checkout._ship` | `_ship` (`shop/orders.py:40`) | no | 2 | Checkout._ship_express, Checkout.run |" in page
    )
    assert "Express orders are shipped by `Checkout._ship_express` (`shop/orders.py:44`)." in page


def test_dispatch_shows_which_implementation_runs_when(shop_pages: Path) -> None:
    page = (shop_pages / "md" / "checkout_internals.md").read_text()
    express = _source_line("shop/orders.py", "return self._ship_express(order)")
    plain = _source_line("shop/orders.py", "return self._ship(order)")
    rows = [line for line in page.splitlines() if line.startswith("| ") and "shop/orders.py" in line]
    assert (
        f"| `Checkout.run` (`shop/orders.py:25`) | `Checkout._ship_express` (`shop/orders.py:44`) | `if self._express` | `shop/orders.py:{express}` |"
        in rows
    )
    assert f"|   | `Checkout._ship` (`shop/orders.py:40`) | `not self._express` | `shop/orders.py:{plain}` |" in rows
    assert (
        "| `Checkout._ship_express` (`shop/orders.py:44`) | `Checkout._ship` (`shop/orders.py:40`) | always |" in page
    )
    # a text section: a heading and words, the name in them checked
    assert "## Refunds\n\nThe shop has no refunds yet: nothing in `shop.orders` gives money back." in page


def test_a_misspelt_section_parameter_names_file_line_and_key(run: Run, tmp_path: Path) -> None:
    profile = tmp_path / "profile"
    shutil.copytree(PROFILE, profile)
    text = (profile / "profile.toml").read_text().replace('attributes = ["_state"]', 'atributes = ["_state"]')
    (profile / "profile.toml").write_text(text)
    code, _, err = _generate(run, tmp_path / "out", profile=profile)
    assert code == 2
    header = [n for n, line in enumerate(text.splitlines(), 1) if line == "[[pages.checkout.sections]]"][2]
    expected = f"profile/profile.toml:{header}: [pages.checkout] section 3 (accesses): unknown key 'atributes'"
    assert expected in err
    assert "did you mean 'attributes'?" in err
    assert not (tmp_path / "out").exists()


def test_a_renamed_function_fails_naming_the_users_profile(run: Run, tmp_path: Path) -> None:
    source = tmp_path / "src"
    shutil.copytree(SHOP / "shop", source / "shop")
    for name in ("orders.py", "pricing.py"):
        path = source / "shop" / name
        path.write_text(path.read_text().replace("tax_for", "tax_due"))
    code, _, err = _generate(run, tmp_path / "out", source=source)
    assert code == 2
    assert "[pages.checkout] section 4 (callers) targets: 'tax_for' names no symbol of shop" in err
    assert "update the name in that file" in err
    assert "rlmap/profiles" not in err
    assert not (tmp_path / "out").exists()


def test_the_profiles_own_templates_override_the_shipped_ones(run: Run, tmp_path: Path) -> None:
    profile = tmp_path / "profile"
    shutil.copytree(PROFILE, profile)
    (profile / "templates" / "sections").mkdir(parents=True)
    (profile / "templates" / "sections" / "returns.j2").write_text(
        "{% for r in b.returns %}\n* returns {{ f.code(r.value) }} when {{ f.code(r.guard) }}\n{% endfor %}\n"
    )
    code, _, err = _generate(run, tmp_path / "out", profile=profile)
    assert code == 0, err
    page = (tmp_path / "out" / "md" / "checkout_internals.md").read_text()
    assert "* returns `self._ship(order)` when `not self._express`" in page
    assert "branch by branch" not in page


def test_the_builtin_profile_tells_the_user_to_copy_it_never_to_edit_rlmap(run: Run, tmp_path: Path) -> None:
    """A torchrl that lacks what the built-in profile names: the fix is a copy of the profile."""
    source = write_package(tmp_path / "src", {"torchrl/__init__.py": '__version__ = "9.9.9"\n'})
    code, _, err = run("generate", "--source", str(source), "--out", str(tmp_path / "out"), "--no-cache", "-q")
    assert code == 2
    assert "rlmap/profiles/torchrl/profile.toml:" in err
    installed = Path(rlmap.__file__).parent / "profiles" / "torchrl"
    # (where it is installed: rlmap/profiles/ alone is a path in site-packages nobody is told of)
    assert f"copy rlmap/profiles/torchrl/ ({installed}) into your repository, point [tool.rlmap] profile" in err
    assert not (tmp_path / "out").exists()


def test_names_may_be_public_paths(run: Run, tmp_path: Path, shop_pages: Path) -> None:
    """``shop.Checkout`` is how users import it (a re-export): the profile may say it that way."""
    profile = tmp_path / "profile"
    shutil.copytree(PROFILE, profile)
    text = (profile / "profile.toml").read_text().replace('class = "shop.orders.Checkout"', 'class = "shop.Checkout"')
    assert 'class = "shop.Checkout"' in text
    (profile / "profile.toml").write_text(text)
    code, _, err = _generate(run, tmp_path / "out", profile=profile)
    assert code == 0, err
    for name in ("md/checkout_internals.md", "rst/checkout_internals.rst"):
        assert (tmp_path / "out" / name).read_bytes() == (shop_pages / name).read_bytes()
