"""Source discovery: checkout, package directory, installed package; version, commit, links."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from rlmap.errors import SourceError
from rlmap.index.source import locate_source


def make_checkout(root: Path, commit: str = "0123456789abcdef0123456789abcdef01234567") -> Path:
    (root / "torchrl").mkdir(parents=True)
    (root / "torchrl" / "__init__.py").write_text("")
    (root / "torchrl" / "version.py").write_text("__version__ = '0.15.0a0'\ngit_version = 'x'\n")
    git = root / ".git"
    (git / "refs" / "heads").mkdir(parents=True)
    (git / "HEAD").write_text("ref: refs/heads/main\n")
    (git / "refs" / "heads" / "main").write_text(commit + "\n")
    return root


def test_checkout_gives_commit_version_and_permalinks(tmp_path: Path) -> None:
    source = locate_source(make_checkout(tmp_path / "rl"))
    assert (source.package, source.version) == ("torchrl", "0.15.0a0")
    assert source.commit == "0123456789abcdef0123456789abcdef01234567"
    assert source.permalink("torchrl/envs/common.py", 12) == (
        "https://github.com/pytorch/rl/blob/0123456789abcdef0123456789abcdef01234567/torchrl/envs/common.py#L12"
    )
    assert source.stamp() == "torchrl 0.15.0a0"  # never the commit: pages must not change with HEAD


def test_packed_refs_and_package_directory(tmp_path: Path) -> None:
    root = make_checkout(tmp_path / "rl")
    (root / ".git" / "refs" / "heads" / "main").unlink()
    (root / ".git" / "packed-refs").write_text("# pack-refs\n" + "f" * 40 + " refs/heads/main\n")
    source = locate_source(root / "torchrl")  # the package directory itself
    assert source.root == root.resolve()
    assert source.commit == "f" * 40
    assert [source.relpath(path) for path in source.python_files()] == ["torchrl/__init__.py", "torchrl/version.py"]


def test_a_package_directory_names_its_package_and_links_only_torchrl_to_torchrl(tmp_path: Path) -> None:
    """``--source shop/`` (no --package) documents shop, linked nowhere (it was linked at
    pytorch/rl, where its files are not); ``--package foo`` with it is an error, not ignored."""
    make_checkout(tmp_path / "rl")
    (tmp_path / "shop").mkdir()
    (tmp_path / "shop" / "__init__.py").write_text("")
    source = locate_source(tmp_path / "shop")
    assert (source.package, source.repo_url) == ("shop", "")
    assert source.permalink("shop/__init__.py", 1) == ""
    with pytest.raises(SourceError, match="is the package 'shop', not 'foo'"):
        locate_source(tmp_path / "shop", package="foo")
    assert locate_source(tmp_path / "rl" / "torchrl").repo_url == "https://github.com/pytorch/rl"
    assert locate_source(tmp_path / "shop", repo_url="https://example.org/shop").repo_url == "https://example.org/shop"


@pytest.mark.torchrl
def test_indexing_the_installed_torchrl_never_imports_it() -> None:
    """Static means static: locating, parsing and resolving torchrl imports neither it nor torch."""
    script = (
        "import sys\n"
        "from rlmap.index.cache import Cache\n"
        "from rlmap.model.session import load_model\n"
        "from rlmap.index.source import locate_source\n"
        "source = locate_source(None)\n"
        "model = load_model(source, Cache.disabled()).model\n"
        "assert model.symbol('torchrl.collectors._single.Collector.rollout') is not None\n"
        "print(source.version, source.ref, sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'torchrl')))\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["0.14.1", "v0.14.1", "[]"]


def test_missing_source_names_what_was_looked_for(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="does not exist"):
        locate_source(tmp_path / "nowhere")
    with pytest.raises(SourceError, match=r"neither a checkout holding 'torchrl/__init__\.py'"):
        locate_source(tmp_path)


@pytest.mark.parametrize(
    ("package", "hint"),
    [
        ("surely_not_a_package_name", "install it (pip install surely_not_a_package_name)"),
        ("os.path", "'os' is a module, not a package directory"),  # (not: pip install os)
        ("torchrl.surely_not_a_subpackage", "'torchrl' is installed, but holds no package 'torchrl.surely_not_a"),
    ],
)
def test_not_installed_package(package: str, hint: str) -> None:
    with pytest.raises(SourceError, match=f"no installed package '{package}'") as raised:
        locate_source(None, package=package)
    assert raised.value.hint.startswith(hint)


def test_a_directory_of_modules_is_a_source(tmp_path: Path) -> None:
    """No package needed: top-level modules, a package and a namespace package, named by their path."""
    (tmp_path / "proj" / "pkg").mkdir(parents=True)
    (tmp_path / "proj" / "ns" / "sub").mkdir(parents=True)
    (tmp_path / "proj" / "main.py").write_text("import pkg\n")
    (tmp_path / "proj" / "pkg" / "__init__.py").write_text("")
    (tmp_path / "proj" / "ns" / "sub" / "mod.py").write_text("")
    source = locate_source(tmp_path / "proj")
    assert (source.root, source.package, source.tops, source.version) == (tmp_path / "proj", "proj", (".",), "")
    assert [source.relpath(path) for path in source.python_files()] == ["main.py", "ns/sub/mod.py", "pkg/__init__.py"]
    assert source.repo_url == ""  # no permalinks into an unknown repository


def test_a_package_asked_for_by_name_that_a_directory_of_modules_lacks_is_an_error(tmp_path: Path) -> None:
    """``--source proj --package nosuch`` read ``proj`` as a folder of modules, named ``proj``:
    the misspelt package was dropped without a word."""
    (tmp_path / "proj" / "mypkg").mkdir(parents=True)
    (tmp_path / "proj" / "mypkg" / "__init__.py").write_text("")
    (tmp_path / "proj" / "main.py").write_text("")
    with pytest.raises(SourceError, match="holds no package 'nosuch' \\(it holds mypkg\\)") as raised:
        locate_source(tmp_path / "proj", package="nosuch")
    assert raised.value.hint == "pass --package mypkg, or leave --package out to read 'proj' as a folder of modules"
    assert locate_source(tmp_path / "proj", package="mypkg").package == "mypkg"


def test_relpath_names_a_file_from_the_directory_holding_its_package() -> None:
    from rlmap.index.source import SourceTree

    tree = SourceTree(
        root=Path("/work/checkout"),
        package="torchrl",
        version="",
        commit="",
        repo_url="",
        companions=(("tensordict", Path("/site")), ("tensordict_extra", Path("/work/checkout"))),
    )
    assert tree.relpath(Path("/work/checkout/torchrl/envs/common.py")) == "torchrl/envs/common.py"
    assert tree.relpath(Path("/site/tensordict/base.py")) == "tensordict/base.py"  # the companion's own root
    assert tree.relpath(Path("/work/checkout/tensordict_extra/a.py")) == "tensordict_extra/a.py"
    assert tree.relpath(Path("/work/checkout")) == "."
    for outside in (Path("/site/tensordictx/a.py"), Path("/work/checkoutx/torchrl/a.py"), Path("/elsewhere/a.py")):
        with pytest.raises(ValueError, match="is not in the subpath"):
            tree.relpath(outside)
