"""Several packages indexed together: one documented, the others (tensordict beside torchrl)
resolved into, inherited from, and never documented."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

import rlmap.index.source as source_module
from rlmap.errors import SourceError
from rlmap.index.cache import Cache
from rlmap.index.source import locate_source
from rlmap.model.codemodel import CodeModel
from rlmap.model.session import load_model
from tests.conftest import Run, write_package

MakePackage = Callable[[dict[str, str | bytes]], Path]

APP = {
    "app/__init__.py": "",
    "app/agent.py": """
        from lib import Base, make


        class Agent(Base):
            def act(self, data):
                self.prepare(data)
                out = make()
                out.finish()
                data.set("action", 1)
                return out
    """,
}
LIB = {
    "lib/__init__.py": "from lib.core import Base, Result, make\n",
    "lib/core.py": """
        class Base:
            def prepare(self, data):
                data.set("prepared", True)


        class Result:
            def finish(self):
                pass


        def make() -> Result:
            return Result()
    """,
}


def _model(root: Path, package: str, packages: tuple[str, ...] | None) -> CodeModel:
    tree = locate_source(root, package=package, packages=packages)
    return load_model(tree, Cache.disabled(), jobs=1, extensions=("tensordict",)).model


def _callees(model: CodeModel, function: str) -> dict[str, tuple[str, ...]]:
    return {edge.callee: edge.how for edge in model.callees(function)}


def test_a_class_inherits_and_calls_resolve_into_the_second_package(make_package: MakePackage) -> None:
    root = make_package({**APP, **LIB})
    model = _model(root, "app", ("app", "lib"))
    assert model.bases["app.agent.Agent"] == ("lib.core.Base",)
    assert model.find_member("app.agent.Agent", "prepare") == "lib.core.Base.prepare"
    callees = _callees(model, "app.agent.Agent.act")
    assert callees["lib.core.Base.prepare"] == ("self",)  # inherited across packages, certain
    assert callees["lib.core.make"] == ("direct",)  # through lib's re-export
    assert "annotation" in callees["lib.core.Result.finish"]  # make() -> Result, annotated in lib
    # Pages and the audit go through the documented package only; show and graph reach lib by name.
    assert {symbol.qualname.split(".")[0] for symbol in model.symbols()} == {"app"}
    assert model.has_symbol("lib.core.Base.prepare")
    assert model.symbol("lib.core.Base.prepare").path == "lib/core.py"  # type: ignore[union-attr]
    # lib's own key accesses are not the package's key flow; app's are
    assert [access.function for access in model.key_accesses(("action",))] == ["app.agent.Agent.act"]
    assert model.key_accesses(("prepared",)) == ()


def test_without_the_second_package_its_names_stay_outside(make_package: MakePackage) -> None:
    root = make_package({**APP, **LIB})
    model = _model(root, "app", ("app",))
    assert not (model.find_member("app.agent.Agent", "prepare") or "").startswith("lib.")
    assert not model.has_symbol("lib.core.Base.prepare")
    assert "lib.core.Base.prepare" not in _callees(model, "app.agent.Agent.act")


def test_a_companion_installed_elsewhere_is_found_without_import_and_gets_no_link(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    checkout = write_package(tmp_path / "checkout", APP)
    site = write_package(
        tmp_path / "site", {**LIB, "lib/__init__.py": LIB["lib/__init__.py"] + "raise SystemExit(1)\n"}
    )
    monkeypatch.syspath_prepend(str(site))
    tree = locate_source(checkout, package="app", packages=("app", "lib"), repo_url="https://example.org/app")
    assert tree.companions == (("lib", site.resolve()),)
    files = {tree.relpath(path) for path in tree.scan_files()[0]}
    assert files == {"app/__init__.py", "app/agent.py", "lib/__init__.py", "lib/core.py"}
    assert {tree.relpath(path) for path in tree.python_files()} == {"app/__init__.py", "app/agent.py"}
    assert tree.absolute("lib/core.py") == site.resolve() / "lib" / "core.py"
    assert tree.absolute("app/agent.py") == checkout.resolve() / "app" / "agent.py"
    model = load_model(tree, Cache.disabled(), jobs=1).model
    assert model.find_member("app.agent.Agent", "prepare") == "lib.core.Base.prepare"
    # no link into a file the repository does not hold (lib has no known repository of its own)
    assert model.source.permalink("lib/core.py", 1) == ""
    assert model.source.permalink("app/agent.py", 1).startswith("https://example.org/app/blob/")


def test_a_listed_package_that_is_missing_or_misnamed_is_a_clear_error(make_package: MakePackage, run: Run) -> None:
    root = make_package(APP)
    with pytest.raises(SourceError, match=r"package 'nosuchlib_rlmap' .* was not found"):
        locate_source(root, package="app", packages=("app", "nosuchlib_rlmap"))
    config = root / "pyproject.toml"
    config.write_text(
        textwrap.dedent(f"""
            [tool.rlmap]
            source = "{root}"
            package = "app"
            packages = ["app", "nosuchlib_rlmap"]
        """),
        encoding="utf-8",
    )
    code, out, err = run("graph", "--config", str(config), "--no-cache", "--quiet")
    assert (code, out) == (2, "")
    assert err.startswith("rlmap: error: package 'nosuchlib_rlmap' (listed in packages) was not found")
    assert "remove it from [tool.rlmap] packages" in err
    config.write_text('[tool.rlmap]\npackage = "app"\npackages = ["app", "not a name"]\n', encoding="utf-8")
    code, out, err = run("graph", "--config", str(config), "--no-cache", "--quiet")
    assert (code, out) == (2, "")
    assert err.startswith(f"rlmap: error: {config}: [tool.rlmap].packages[1]:")  # the file as --config named it
    assert "Traceback" not in err


def test_a_default_companion_that_is_missing_is_a_warning(
    make_package: MakePackage, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_package(APP)
    monkeypatch.setitem(source_module.DEFAULT_COMPANIONS, "app", ("nosuchlib_rlmap",))
    tree = locate_source(root, package="app")
    assert tree.companions == ()
    assert any("nosuchlib_rlmap is not installed" in warning for warning in tree.warnings)
    # and a default companion that is there is indexed
    write_package(root, LIB)
    monkeypatch.setitem(source_module.DEFAULT_COMPANIONS, "app", ("lib",))
    assert locate_source(root, package="app").companions == (("lib", root.resolve()),)


def test_torchrl_resolves_into_tensordict(torchrl_model: CodeModel) -> None:
    """The installed tensordict is indexed with torchrl: its classes are torchrl's bases, their
    members torchrl's inherited members, and torchrl's calls land on its definitions."""
    model = torchrl_model
    assert model.source.companions == ("tensordict",)
    safe_module = "torchrl.modules.tensordict_module.common.SafeModule"
    assert model.bases[safe_module] == ("tensordict.nn.common.TensorDictModule",)
    assert model.find_member(safe_module, "forward") == "tensordict.nn.common.TensorDictModule.forward"
    safe_sequential = "torchrl.modules.tensordict_module.sequence.SafeSequential"
    assert model.find_member(safe_sequential, "forward") == "tensordict.nn.sequence.TensorDictSequential.forward"
    lstm = "torchrl.modules.tensordict_module.rnn.LSTMModule"
    assert model.bases[lstm] == ("tensordict.nn.common.TensorDictModuleBase",)
    assert safe_module in model.subclasses_of("tensordict.nn.common.TensorDictModuleBase")
    # the carrier is a TensorDictBase: its methods are tensordict's definitions
    rollout = {edge.callee: edge.how for edge in model.callees("torchrl.collectors._single.Collector.rollout")}
    assert "annotation" in rollout["tensordict.base.TensorDictBase.update"]
    # the policy is called: TensorDictModule.forward, through __call__
    assert "implicit" in rollout["tensordict.nn.common.TensorDictModule.forward"]
    sequential_init = "tensordict.nn.sequence.TensorDictSequential.__init__"
    assert "torchrl.modules.tensordict_module.sequence.SafeSequential.__init__" in {
        edge.caller for edge in model.callers(sequential_init)
    }
    # never documented: not among the symbols pages go through; linked in its own repository
    assert not any(symbol.path.startswith("tensordict/") for symbol in model.symbols())
    assert model.symbol("tensordict.base.TensorDictBase").path == "tensordict/base.py"  # type: ignore[union-attr]
    name, version, url = model.source.companion_links[0]
    assert (name, url) == ("tensordict", "https://github.com/pytorch/tensordict")
    assert version[:1].isdigit()
    link = model.source.permalink("tensordict/base.py", 10)
    assert link == f"https://github.com/pytorch/tensordict/blob/v{version}/tensordict/base.py#L10"
    assert model.source.permalink("torchrl/envs/common.py", 10).startswith("https://github.com/pytorch/rl/blob/")


NOTED_LIB = {
    **LIB,
    "lib/core.py": '''
        class Base:
            def prepare(self, data):
                """Mark the data.

                .. note:: prepare marks the data in place, never a copy.
                """
                data.set("prepared", True)


        class Result:
            def finish(self):
                pass


        def make() -> Result:
            return Result()
    ''',
}


def test_pages_read_a_companion_installed_outside_the_checkout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run: Run
) -> None:
    """A page that quotes a companion's source (a docstring's caveat) reads it from the directory
    the companion is installed in, not from the checkout, which has no ``lib/``."""
    checkout = write_package(tmp_path / "checkout", APP)
    site = write_package(tmp_path / "site", NOTED_LIB)
    monkeypatch.syspath_prepend(str(site))
    config = tmp_path / "rlmap.toml"
    config.write_text('[tool.rlmap]\npackage = "app"\npackages = ["app", "lib"]\n', encoding="utf-8")
    profile = tmp_path / "profile.toml"
    profile.write_text(
        '[pages.notes]\ntitle = "Notes"\nslug = "notes"\nsummary = "caveats"\n'
        '[[pages.notes.sections]]\nkind = "caveats"\nid = "caveats"\ntitle = "Caveats"\n'
        'symbols = ["lib.core.Base.prepare"]\n',
        encoding="utf-8",
    )
    common = ["--source", str(checkout), "--config", str(config), "--profile", str(profile), "--no-cache", "-q"]
    code, _, err = run("generate", *common, "--out", str(tmp_path / "out"), "--format", "md")
    assert code == 0, err
    page = (tmp_path / "out" / "md" / "notes.md").read_text(encoding="utf-8")
    assert "prepare marks the data in place, never a copy." in page
    assert not (checkout / "lib").exists()


def test_a_companion_file_is_indexed_without_its_value_flow_and_keys(make_package: MakePackage, tmp_path: Path) -> None:
    """The model reads a companion's definitions, calls, attributes, imports, locals and returns,
    never its value-flow summary nor its key accesses: those are not extracted.  The same file
    indexed as the documented package (one cache for both) has them."""
    from rlmap.index.indexer import build_index

    root = make_package({**APP, **LIB})
    cache = Cache.at(tmp_path / "cache")
    beside = build_index(
        locate_source(root, package="app", packages=("app", "lib")), cache, jobs=1, extensions=("tensordict",)
    )
    alone = build_index(
        locate_source(root, package="lib", packages=("lib",)), cache, jobs=1, extensions=("tensordict",)
    )
    agent = next(module for module in beside.modules if module.path == "app/agent.py")
    companion = next(module for module in beside.modules if module.path == "lib/core.py")
    documented = next(module for module in alone.modules if module.path == "lib/core.py")
    assert agent.flow
    assert agent.keys
    assert (companion.flow, companion.keys) == ((), ())
    assert documented.flow  # not the companion's records, from the shared cache
    assert documented.keys
    for table in ("symbols", "calls", "attributes", "imports", "locals", "returns"):
        assert getattr(companion, table) == getattr(documented, table), table
