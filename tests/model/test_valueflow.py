"""Value flow: one synthetic case per rule, each with the edge it must find (and how)."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from rlmap.index.records import Flow
from rlmap.model.codemodel import CodeModel
from tests.conftest import model_of, write_package

SOURCE = {
    "vf/__init__.py": "",
    "vf/state.py": """
        class Manager:
            def get_mode(self):
                return "recurrent"

            def reset(self):
                return None


        manager = Manager()
    """,
    "vf/rules.py": """
        import threading
        from vf.state import manager


        def f1():
            pass


        def f2():
            pass


        def f3():
            pass


        def key_fn(x):
            return x


        def worker():
            pass


        def make():
            return f3


        def call_param(callback, *rest, option=f2, **extra):
            callback()
            option()
            for item in rest:
                item()
            extra["named"]()


        def locals_and_tuples():
            a = f1
            a()
            b, c = f1, f2
            c()
            first, *others = [f1, f2, f3]
            first()
            make()()


        def parameters():
            call_param(f1)
            call_param(f1, f3, named=worker)


        def containers():
            table = {"x": f1, "y": f2}
            table["y"]()
            table.get("x")()
            for _, fn in table.items():
                fn()
            handlers = []
            handlers.append(worker)
            for handler in handlers:
                handler()
            [g() for g in (f3,)]
            for _, h in enumerate([key_fn]):
                h()
            for _, k in zip([1], [make]):
                k()


        def closures():
            def inner():
                return f2

            def outer_call():
                return inner()

            outer_call()()


        def decorator(fn):
            def wrapper(*args, **kwargs):
                return fn(*args, **kwargs)

            return wrapper


        @decorator
        def decorated():
            pass


        def use_decorated():
            decorated()


        def builtins_call_back():
            sorted([3, 1], key=key_fn)
            list(map(f1, [1]))
            threading.Thread(target=worker).start()


        def module_instance():
            return manager.get_mode()


        class Policy:
            factory = f3

            def __init__(self, sync):
                self._sync_policy = sync

            def run(self):
                self._sync_policy()
                self.factory()


        def attributes():
            Policy(f1).run()


        class Error(Exception):
            def __init__(self, message):
                self.message = message


        def raises():
            raise Error


        class Resource:
            def __enter__(self):
                return self

            def __exit__(self, *args):
                return False

            def __iter__(self):
                return self

            def __next__(self):
                raise StopIteration


        def protocol():
            with Resource() as resource:
                for _ in resource:
                    pass


        class Holder:
            def __init__(self):
                self._value = 0

            @property
            def value(self):
                return self._value

            @value.setter
            def value(self, new):
                self._value = new


        def setter():
            holder = Holder()
            holder.value = 3
            getattr(holder, "value")
            setattr(holder, "value", 4)


        class Lazy:
            def __init__(self):
                self.__dict__["_run"] = f1

            def __getattr__(self, name):
                return f2

            def __setattr__(self, name, value):
                object.__setattr__(self, name, value)

            def go(self):
                self._run()
                self.missing()


        def lazy():
            item = Lazy()
            item.other = 1
            item.go()
    """,
    "vf/modules.py": """
        import torch
        import torch.nn as nn


        class Net(nn.Module):
            def forward(self, x):
                return x


        def apply():
            net = Net()
            return net(1)


        class Square(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * x


        class Plain:
            @staticmethod
            def forward(x):
                return x

            @classmethod
            def apply(cls, x):
                return x


        def autograd(x):
            return Square.apply(x), Plain.apply(x)
    """,
}


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> CodeModel:
    root = write_package(tmp_path_factory.mktemp("vf"), SOURCE)
    return model_of(root, "vf")


def _how(model: CodeModel, edge: str) -> tuple[str, ...] | None:
    caller, callee = edge.split(" -> ")
    found = model.edge(caller, callee)
    return found.how if found is not None else None


@pytest.mark.parametrize(
    ("edge", "how"),
    [
        # locals, tuples, starred unpacking, a returned function called
        ("vf.rules.locals_and_tuples -> vf.rules.f1", "flow"),
        ("vf.rules.locals_and_tuples -> vf.rules.f2", "flow"),
        ("vf.rules.locals_and_tuples -> vf.rules.f3", "flow"),
        # arguments to parameters: positional, default, *args, **kwargs
        ("vf.rules.call_param -> vf.rules.f1", "flow"),
        ("vf.rules.call_param -> vf.rules.f2", "flow"),
        ("vf.rules.call_param -> vf.rules.worker", "flow"),
        # containers: dict by key, .get, .items(), list.append + iteration, comprehension
        ("vf.rules.containers -> vf.rules.f2", "flow"),
        ("vf.rules.containers -> vf.rules.f1", "flow"),
        ("vf.rules.containers -> vf.rules.worker", "flow"),
        ("vf.rules.containers -> vf.rules.f3", "flow"),
        ("vf.rules.containers -> vf.rules.key_fn", "flow"),  # enumerate
        ("vf.rules.containers -> vf.rules.make", "flow"),  # zip
        # closures and a decorator that returns its wrapper
        ("vf.rules.closures -> vf.rules.f2", "flow"),
        ("vf.rules.use_decorated -> vf.rules.decorator.wrapper", "flow"),
        ("vf.rules.decorator.wrapper -> vf.rules.decorated", "flow"),
        ("vf.rules -> vf.rules.decorator", "decorator"),
        # functions passed to builtins and libraries
        ("vf.rules.builtins_call_back -> vf.rules.key_fn", "callback"),
        ("vf.rules.builtins_call_back -> vf.rules.f1", "callback"),
        ("vf.rules.builtins_call_back -> vf.rules.worker", "callback"),
        # a module-level instance imported from another module
        ("vf.rules.module_instance -> vf.state.Manager.get_mode", "flow"),
        # a callable stored in an attribute, a class attribute holding a function
        ("vf.rules.Policy.run -> vf.rules.f1", "flow"),
        ("vf.rules.Policy.run -> vf.rules.f3", "flow"),
        # Python's protocol: raise C, with, for over an object, property setter, getattr/setattr
        ("vf.rules.raises -> vf.rules.Error.__init__", "flow"),
        ("vf.rules.protocol -> vf.rules.Resource.__enter__", "implicit"),
        ("vf.rules.protocol -> vf.rules.Resource.__exit__", "implicit"),
        ("vf.rules.protocol -> vf.rules.Resource.__iter__", "implicit"),
        ("vf.rules.protocol -> vf.rules.Resource.__next__", "implicit"),
        ("vf.rules.setter -> vf.rules.Holder.value", "setter"),
        # self.__dict__[...], __getattr__ for a name nothing defines, __setattr__ on a store
        ("vf.rules.Lazy.go -> vf.rules.f1", "flow"),
        ("vf.rules.Lazy.go -> vf.rules.Lazy.__getattr__", "implicit"),
        ("vf.rules.Lazy.go -> vf.rules.f2", "flow"),
        ("vf.rules.lazy -> vf.rules.Lazy.__setattr__", "implicit"),
        # calling an nn.Module runs its forward
        ("vf.modules.apply -> vf.modules.Net.forward", "implicit"),
        # ``apply`` of a torch.autograd.Function runs its forward
        ("vf.modules.autograd -> vf.modules.Square.forward", "implicit"),
        ("vf.modules.autograd -> vf.modules.Plain.apply", "direct"),
    ],
)
def test_value_flow_finds_the_edge(model: CodeModel, edge: str, how: str) -> None:
    found = _how(model, edge)
    assert found is not None, f"missing edge {edge}"
    assert how in found, f"{edge} found as {found}, expected {how}"


def test_value_flow_does_not_invent_edges(model: CodeModel) -> None:
    """A dict read by a constant key calls only what is stored under it; a variable is no callee."""
    callees = {edge.callee for edge in model.callees("vf.rules.containers")}
    assert "vf.rules.f3" in callees  # from the comprehension
    line = textwrap.dedent(SOURCE["vf/rules.py"]).lstrip("\n").splitlines().index('    table["y"]()') + 1
    at_line = {edge.callee for edge in model.callees("vf.rules.containers") if line in edge.lines}
    assert "vf.rules.f2" in at_line
    assert at_line <= {"vf.rules.f2", "?:table[...]"}  # not f1, stored under "x"
    # a computed callee keeps its flow edges out of the site's row (the function is not written there)
    rows = [site for site in model.call_sites("vf.rules.containers") if site.line == line]
    assert [site.targets for site in rows] == [("?:table[...]",)]
    assert _how(model, "vf.rules.locals_and_tuples -> vf.rules.locals_and_tuples.a") is None
    assert _how(model, "vf.rules.use_decorated -> vf.rules.decorated") in (None, ("direct",))
    assert _how(model, "vf.modules.autograd -> vf.modules.Plain.forward") is None  # its own ``apply``


def test_the_summary_is_cached_with_the_index(make_package: Callable[[dict[str, str | bytes]], Path]) -> None:
    from rlmap.index.cache import Cache
    from rlmap.index.source import locate_source
    from rlmap.model.session import cached_module, load_model

    root = make_package({"cp/__init__.py": "", "cp/m.py": "def f():\n    pass\n\ng = f\ng()\n"})
    cache = Cache.at(root / ".cache")
    load_model(locate_source(root, package="cp"), cache, jobs=1)
    cached = cached_module(cache, "cp/m.py", (root / "cp" / "m.py").read_bytes(), ())
    assert cached is not None
    assert any(Flow(*row).op == "call" and Flow(*row).name == "g" for row in cached.flow)


def test_an_outside_function_reached_through_a_value_is_a_callee_of_the_site(
    make_package: Callable[[dict[str, str | bytes]], Path],
) -> None:
    """``sync = _get_sync(device); sync()`` listed only ``_do_nothing``, the one function of the
    package it may hold, not ``torch.cuda.synchronize``: the flow carried outside functions as
    values and dropped them at the call.  A call that names the outside function resolves by
    name, as before (no second edge)."""
    root = make_package(
        {
            "ext/__init__.py": "",
            "ext/sync.py": """
                import torch
                from functools import partial
                from torch import cat


                def _do_nothing():
                    return


                def _get_sync(device):
                    if device == "cuda":
                        return torch.cuda.synchronize
                    if device == "cuda:1":
                        return partial(torch.cuda.synchronize, device=device)
                    if device == "mps":
                        return torch.mps.synchronize
                    return _do_nothing


                class Runner:
                    def __init__(self, device):
                        self._sync = _get_sync(device)

                    def run(self, x):
                        sync = _get_sync(x)
                        sync()
                        self._sync()
                        torch.stack(x)
                        return cat(x)
            """,
        }
    )
    model = model_of(root, "ext")
    sites = {site.callee_text: site for site in model.call_sites("ext.sync.Runner.run")}
    local = dict(zip(sites["sync"].targets, sites["sync"].how, strict=True))
    assert local == {
        "ext.sync._do_nothing": "flow",
        "torch.cuda.synchronize": "flow",
        "torch.mps.synchronize": "flow",
    }
    attribute = dict(zip(sites["self._sync"].targets, sites["self._sync"].how, strict=True))
    assert {"ext.sync._do_nothing", "torch.cuda.synchronize", "torch.mps.synchronize"} <= set(attribute)
    assert model.node_kind("torch.cuda.synchronize") == "external"
    # named at the site: one target, by name
    assert list(zip(sites["torch.stack"].targets, sites["torch.stack"].how, strict=True)) == [
        ("torch.stack", "external")
    ]
    assert list(zip(sites["cat"].targets, sites["cat"].how, strict=True)) == [("torch.cat", "external")]
    callers = {edge.caller for edge in model.callers("torch.cuda.synchronize")}
    assert callers == {"ext.sync.Runner.run"}
