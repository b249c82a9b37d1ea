"""A function defined twice in one file is the later ``def``, the one Python binds the name to;
a property's setter never replaces its getter."""

from __future__ import annotations

from tests.conftest import model_of

SOURCE = """
    from pkg.dispatch import implement_for


    @implement_for("torch", None, "2.6.0")
    def scan(*args):
        raise NotImplementedError("needs torch 2.6")


    @implement_for("torch", "2.6.0")
    def scan(*args):
        return len(args)


    class Box:
        @property
        def size(self):
            return 1

        @size.setter
        def size(self, value):
            pass

        def run(self):
            return scan(self.size)
"""


def _package(make_package, source: str):  # type: ignore[no-untyped-def]
    """A package whose ``pkg.m`` is ``source``, with a no-op ``implement_for`` to import."""
    dispatch = "def implement_for(*a, **k):\n    return lambda f: f\n"
    return make_package({"pkg/__init__.py": "", "pkg/dispatch.py": dispatch, "pkg/m.py": source})


def test_later_def_wins_and_setters_do_not(make_package) -> None:  # type: ignore[no-untyped-def]
    root = _package(make_package, SOURCE)
    model = model_of(root, "pkg")
    scan = model.symbol("pkg.m.scan")
    assert scan is not None
    assert scan.line == 10
    size = model.symbol("pkg.m.Box.size")
    assert size is not None
    assert size.kind == "property"
    assert size.line == 16
    assert "pkg.m.scan" in {edge.callee for edge in model.callees("pkg.m.Box.run")}


# Two definitions of one function with different bodies: a version stub that raises, then the
# implementation; the stub's calls, returns, attribute writes, defaults and nested function are
# not the function's.
TWICE = """
    from pkg.dispatch import implement_for


    def helper_a():
        return 1


    def helper_b():
        return 2


    class A:
        def run(self):
            return "a"


    class B:
        def run(self):
            return "b"


    class Holder:
        @implement_for("torch", None, "2.6.0")
        def scan(self, td, pick=helper_a):
            def inner():
                return helper_a()

            self.stub_state = inner
            td.set("stub_key", 1)
            raise NotImplementedError("needs torch 2.6")

        @implement_for("torch", "2.6.0")
        def scan(self, td, pick=helper_b):
            self.state = td.get("real_key")
            return pick()


    if helper_a():
        def branch(x: A):
            return x.run()
    else:
        def branch(x: B):
            return x.run()
"""


def _twice_model(make_package):  # type: ignore[no-untyped-def]
    root = _package(make_package, TWICE)
    return root, model_of(root, "pkg")


def test_only_the_bound_definition_has_edges_and_records(make_package) -> None:  # type: ignore[no-untyped-def]
    _, model = _twice_model(make_package)
    scan = "pkg.m.Holder.scan"
    callees = {edge.callee for edge in model.callees(scan)}
    # the stub's raise, its nested function and the default it binds (helper_a) are gone
    assert "builtins.NotImplementedError" not in callees
    assert "pkg.m.helper_a" not in callees
    assert "pkg.m.helper_b" in callees  # ``pick()``: the chosen def's default, found by the value flow
    assert model.symbol(scan + ".inner") is None
    assert [site.line for site in model.returns(scan)] == [35]
    assert {site.line for site in model.call_sites(scan)} <= {34, 35}
    assert not model.attribute_accesses("pkg.m.Holder.stub_state")
    assert model.attribute_accesses("pkg.m.Holder.state")
    assert not model.key_accesses(("stub_key",))
    assert model.key_accesses(("real_key",))


def test_a_def_under_each_branch_is_the_later_one(make_package) -> None:  # type: ignore[no-untyped-def]
    _, model = _twice_model(make_package)
    callees = {edge.callee for edge in model.callees("pkg.m.branch")}
    assert "pkg.m.B.run" in callees
    assert "pkg.m.A.run" not in callees  # the first def's parameter annotation types nothing


def test_show_lists_only_the_bound_definition(make_package, run) -> None:  # type: ignore[no-untyped-def]
    root, _ = _twice_model(make_package)
    code, out, err = run("show", "Holder.scan", "--source", str(root), "--package", "pkg", "--no-cache", "-q")
    assert code == 0, err
    assert "helper_b" in out
    assert "NotImplementedError" not in out
    assert "helper_a" not in out
    code, out, err = run("graph", "--source", str(root), "--package", "pkg", "--no-cache", "-q")
    assert code == 0, err
    assert "NotImplementedError" not in out


def test_torchrl_scan_keeps_only_its_implementation(torchrl_model, torchrl_source) -> None:  # type: ignore[no-untyped-def]
    """``rnn._scan``: an ``implement_for`` stub that raises NotImplementedError, then the
    implementation; the call graph and the call sites are the implementation's alone."""
    scan = "torchrl.modules.tensordict_module.rnn._scan"
    symbol = torchrl_model.symbol(scan)
    assert symbol is not None
    lines = torchrl_source.absolute(symbol.path).read_text(encoding="utf-8").splitlines()
    defs = [number for number, text in enumerate(lines, 1) if text.startswith("def _scan(")]
    assert len(defs) == 2
    assert symbol.line == defs[1]
    stub = range(defs[0], symbol.line)
    assert any("NotImplementedError" in lines[number - 1] for number in stub)
    assert "builtins.NotImplementedError" not in {edge.callee for edge in torchrl_model.callees(scan)}
    sites = torchrl_model.call_sites(scan)
    assert sites
    assert all(symbol.line <= site.line <= symbol.end_line for site in sites)


# ``implement_for`` binds the variant whose range holds the installed version, whatever the
# order: the pages take the one open above (no ``to_version``), even when a stub follows it.
OPEN_FIRST = """
    from pkg.dispatch import implement_for


    @implement_for("torch", "1.0")
    def single():
        return 0


    def helper():
        return 1


    @implement_for("torch", "2.7")
    def vmap(*args):
        return helper()


    @implement_for("torch", None, "2.7")
    def vmap(*args):
        raise NotImplementedError("needs torch 2.7")


    @implement_for("torch", to_version="2.1")
    def keyworded():
        return helper()


    @implement_for("torch", from_version="2.1")
    def keyworded():
        raise NotImplementedError("keyword versions are not read: the later def")


    def run():
        return vmap(), keyworded()
"""


def test_the_implement_for_variant_open_above_is_chosen_whatever_its_place(make_package) -> None:  # type: ignore[no-untyped-def]
    root = _package(make_package, OPEN_FIRST)
    model = model_of(root, "pkg")
    vmap = model.symbol("pkg.m.vmap")
    assert vmap is not None
    assert vmap.line == 14  # the implement_for call nearest above each def is its own
    callees = {edge.callee for edge in model.callees("pkg.m.vmap")}
    assert "pkg.m.helper" in callees
    assert "builtins.NotImplementedError" not in callees
    keyworded = model.symbol("pkg.m.keyworded")  # versions by keyword carry no text: the later def
    assert keyworded is not None
    assert keyworded.line == 29


def test_torchrl_pseudo_vmap_is_the_variant_for_newer_torch(torchrl_model, torchrl_source) -> None:  # type: ignore[no-untyped-def]
    """``objectives.utils._pseudo_vmap``: the ``torch >= 2.7`` implementation, then a stub for
    older torch that raises; the name is the implementation (torch 2.13 is pinned)."""
    qualname = "torchrl.objectives.utils._pseudo_vmap"
    symbol = torchrl_model.symbol(qualname)
    assert symbol is not None
    lines = torchrl_source.absolute(symbol.path).read_text(encoding="utf-8").splitlines()
    defs = [number for number, text in enumerate(lines, 1) if text.startswith("def _pseudo_vmap(")]
    assert len(defs) == 2
    assert symbol.line == defs[0]
    assert lines[symbol.line - 2].startswith('@implement_for("torch", "2.7")')
    assert "builtins.NotImplementedError" not in {edge.callee for edge in torchrl_model.callees(qualname)}
