"""Regression tests for resolution defects found against torchrl: each builds the shape that broke."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from rlmap.model.mro import mro
from tests.conftest import model_of

MakePackage = Callable[[dict[str, str | bytes]], Path]

SOURCE = {
    "bp/__init__.py": "",
    "bp/losses.py": """
        class _AcceptedKeys:
            value = "value"

            def default(self):
                return self.value


        class LossModule:
            @property
            def tensor_keys(self) -> _AcceptedKeys:
                return _AcceptedKeys()

            def set_keys(self):
                return self.tensor_keys.default()


        class PPOLoss(LossModule):
            tensor_keys: _AcceptedKeys

            def forward(self):
                keys = self.tensor_keys
                return keys
    """,
    "bp/hooks.py": """
        class Base:
            hook = None

            def __init__(self):
                self.callback = None

            def run(self):
                self.hook()
                self.callback()


        class Child(Base):
            def hook(self):
                return 1

            def callback(self):
                return 2
    """,
    "bp/build.py": """
        class Base:
            def __init__(self):
                self.size = 1


        class Leaf(Base):
            def only_on_leaf(self):
                return 0


        def make():
            leaf = Leaf()
            return leaf.only_on_leaf()
    """,
    "bp/diamond.py": """
        class Root:
            def m(self):
                return 0


        class Left(Root):
            pass


        class Right(Root):
            def m(self):
                return 1


        class Bottom(Left, Right):
            def go(self):
                return self.m()
    """,
}


def _edges(make_package: MakePackage) -> dict[str, tuple[str, ...]]:
    model = model_of(make_package(SOURCE), "bp")
    return {f"{edge.caller} -> {edge.callee}": edge.how for edge in model.edges()}


def test_an_annotation_alone_does_not_hide_the_inherited_property(make_package: MakePackage) -> None:
    edges = _edges(make_package)
    assert "bp.losses.PPOLoss.forward -> bp.losses.LossModule.tensor_keys" in edges
    assert "bp.losses.LossModule.set_keys -> bp.losses._AcceptedKeys.default" in edges


def test_a_subclass_method_over_a_base_attribute_is_an_override(make_package: MakePackage) -> None:
    edges = _edges(make_package)
    assert edges.get("bp.hooks.Base.run -> bp.hooks.Child.hook") == ("override",)  # class attribute
    assert edges.get("bp.hooks.Base.run -> bp.hooks.Child.callback") == ("override",)  # self.callback = None


def test_a_constructed_object_has_the_class_called_not_the_one_defining_init(make_package: MakePackage) -> None:
    edges = _edges(make_package)
    assert "bp.build.make -> bp.build.Base.__init__" in edges
    assert edges.get("bp.build.make -> bp.build.Leaf.only_on_leaf") == ("assignment",)


def test_the_method_resolution_order_is_c3(make_package: MakePackage) -> None:
    edges = _edges(make_package)
    assert "bp.diamond.Bottom.go -> bp.diamond.Right.m" in edges  # C3: Bottom, Left, Right, Root
    assert "bp.diamond.Bottom.go -> bp.diamond.Root.m" not in edges
    bases = {"D": ("B", "C"), "B": ("A",), "C": ("A",), "A": ()}
    assert mro(bases, "D") == ("D", "B", "C", "A")
    inconsistent = {"Z": ("Y", "X"), "X": ("Y",), "Y": ()}  # no C3 order: depth-first, first occurrence
    assert mro(inconsistent, "Z") == ("Z", "Y", "X")


TYPES = {
    "tp/__init__.py": "",
    "tp/specs.py": """
        class TensorSpec:
            def zero(self):
                return 0


        class Composite(TensorSpec):
            def get(self, key):
                return key


        class Env:
            input_spec: TensorSpec

            def read(self):
                return self.input_spec.get("x")


        def narrow(spec):
            if isinstance(spec, Composite):
                spec.get("y")
            if not isinstance(spec, Composite):
                spec.zero()
    """,
}


def test_a_type_lacking_the_method_dispatches_to_subclasses_that_define_it(make_package: MakePackage) -> None:
    model = model_of(make_package(TYPES), "tp")
    edge = model.edge("tp.specs.Env.read", "tp.specs.Composite.get")
    assert edge is not None
    assert edge.how == ("subclass",)


def test_isinstance_narrows_the_receiver_inside_the_guarded_block(make_package: MakePackage) -> None:
    model = model_of(make_package(TYPES), "tp")
    edge = model.edge("tp.specs.narrow", "tp.specs.Composite.get")
    assert edge is not None
    assert edge.how == ("narrowed",)
    assert model.edge("tp.specs.narrow", "tp.specs.TensorSpec.zero") is None  # ``not isinstance`` narrows nothing


def test_star_imports_in_a_cycle_end_the_lookup(make_package: MakePackage) -> None:
    """A module that star-imports itself, two that star-import each other, and a package whose
    ``__all__`` names what no module defines made every command exit 70 (a RecursionError): each
    module of a chain of ``*`` imports is now asked once, and what the chain defines still resolves."""
    root = make_package(
        {
            "sp/__init__.py": '__all__ = ["nowhere"]\nfrom sp import *\n',
            "sp/odd.py": "from .odd import *\n\n\ndef run():\n    missing()\n",
            "sp/x.py": "from sp.y import *\n\n\ndef run():\n    helper()\n    nowhere()\n",
            "sp/y.py": "from sp.x import *\n\n\ndef helper():\n    return 1\n",
        }
    )
    model = model_of(root, "sp")
    assert model.edge("sp.x.run", "sp.y.helper") is not None
    assert [edge.callee for edge in model.callees("sp.odd.run")] == ["?:missing"]  # unresolved, named as written


def test_a_star_import_chain_past_the_depth_limit_does_not_hide_a_shorter_one(make_package: MakePackage) -> None:
    """``a`` star-imports a chain of 31 modules ending in ``d``, and ``d`` itself: the chain meets
    ``d`` past the depth limit first, and ``x`` of ``d`` must still resolve by the direct import."""
    files = {"lp/__init__.py": "", "lp/d.py": "def x():\n    return 1\n"}
    for number in range(1, 31):
        files[f"lp/b{number}.py"] = f"from lp.{'b' + str(number + 1) if number < 30 else 'd'} import *\n"
    files["lp/a.py"] = "from lp.b1 import *\nfrom lp.d import *\n\n\ndef run():\n    x()\n"
    model = model_of(make_package(files), "lp")
    assert model.edge("lp.a.run", "lp.d.x") is not None


def test_a_name_alone_is_not_a_guess_when_any_value_may_have_it(make_package: MakePackage) -> None:
    """``self._policy.parameters()`` went to ``LossModule.parameters`` (the package's only method
    of that name, which overrides ``torch.nn.Module``'s: any module has it), ``self._fmt.format()``
    to a logging formatter's ``format`` (every ``str`` has one).  A name a builtin type or a
    class from outside the package may define is not guessed; a distinctive or private one is."""
    root = make_package(
        {
            "gp/__init__.py": "",
            "gp/defs.py": """
                import torch


                class LossModule(torch.nn.Module):
                    def parameters(self):
                        return []


                class Formatter:
                    def format(self, record):
                        return record


                class Pool:
                    def get_and_increment(self):
                        return 0

                    def _private_step(self):
                        return 1
            """,
            "gp/user.py": """
                class User:
                    def run(self, policy, pool):
                        self.policy.parameters()
                        self.fmt.format("x")
                        self.pool.get_and_increment()
                        pool._private_step()
            """,
        }
    )
    model = model_of(root, "gp")
    callees = {edge.callee: edge.how for edge in model.callees("gp.user.User.run")}
    assert "gp.defs.LossModule.parameters" not in callees
    assert "gp.defs.Formatter.format" not in callees
    assert callees["gp.defs.Pool.get_and_increment"] == ("unique-name",)
    assert callees["gp.defs.Pool._private_step"] == ("unique-name",)


def test_torchrl_names_guessed_across_packages_only_where_they_can_be(torchrl_model) -> None:  # type: ignore[no-untyped-def]
    """tensordict's code was said to call torchrl's ``TensorDictPrimer._batch_size`` (tensordict
    never imports torchrl), and torchrl's tensors tensordict's ``TensorDictBase.exp``."""
    primer = "torchrl.envs.transforms._env.TensorDictPrimer._batch_size"
    assert [edge.caller for edge in torchrl_model.callers(primer) if not edge.caller.startswith("torchrl.")] == []
    guessed = [
        (caller, target)
        for caller, rows in torchrl_model.all_call_sites()
        if caller.startswith("torchrl.")
        for row in rows
        for target, how in zip(row.targets, row.how, strict=True)
        if how == "unique-name" and target.startswith("tensordict.") and not target.rpartition(".")[2].startswith("_")
    ]
    assert guessed == []
    final = "torchrl.collectors._single.Collector._maybe_make_final_rollout"
    assert torchrl_model.edge(final, "torchrl.objectives.common.LossModule.parameters") is None


def test_calling_an_object_of_a_declared_type_runs_its_forward(make_package: MakePackage) -> None:
    """``self.loss_module(batch)`` with ``loss_module: LossModule`` had one callee, the attribute:
    ``LossModule.forward`` and its overrides had no caller there.  What calling the object runs
    (its ``__call__`` in the package, else ``forward``) is found from its declared type, unless
    the annotation admits a callable, a guard tests its type, or the value flow knows better."""
    root = make_package(
        {
            "ip/__init__.py": "",
            "ip/losses.py": """
                from typing import Callable, Protocol

                import torch


                class LossModule(torch.nn.Module):
                    def forward(self, batch):
                        raise NotImplementedError


                class PPOLoss(LossModule):
                    def forward(self, batch):
                        return batch


                class Predicate:
                    def __call__(self, item):
                        return True


                class Parser(Protocol):
                    def __call__(self, text): ...


                class Forwarder:
                    def __init__(self, loss_module: LossModule, factory: LossModule | Callable[[], LossModule]):
                        self.loss_module = loss_module
                        self.factory = factory
                        self.known = PPOLoss()

                    def run(self, batch, check: Predicate):
                        self.loss_module(batch)
                        self.factory()
                        check(batch)
                        self.known(batch)

                    def guarded(self, loss: LossModule, batch, parse: Parser):
                        if not isinstance(loss, LossModule):
                            loss(batch)
                        parse(batch)  # a protocol's stub is not what runs
            """,
        }
    )
    model = model_of(root, "ip")
    run = "ip.losses.Forwarder.run"
    by_line = {
        (target, site.line): how
        for site in model.call_sites(run)
        for target, how in zip(site.targets, site.how, strict=True)
    }
    first = model.symbol(run).line + 1  # self.loss_module(batch)
    assert by_line[("ip.losses.LossModule.forward", first)] == "instance"
    assert by_line[("ip.losses.PPOLoss.forward", first)] == "override"
    assert not [key for key in by_line if key[1] == first + 1 and key[0].endswith(".forward")]  # a factory
    assert by_line[("ip.losses.Predicate.__call__", first + 2)] == "instance"
    known = {callee for callee, line in by_line if line == first + 3}
    assert "ip.losses.PPOLoss.forward" in known
    assert "ip.losses.LossModule.forward" not in known  # the flow knows what self.known holds
    guarded = {edge.callee for edge in model.callees("ip.losses.Forwarder.guarded")}
    assert not {callee for callee in guarded if callee.endswith((".forward", ".__call__"))}
