"""What a call row says beyond its targets: a property or attribute is not the code that runs, and a
list of methods the value flow found is not every method that may run."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from rlmap.index.records import FUNCTION, PROPERTY
from rlmap.pages.refs import Ref
from rlmap.pages.sections.base import method_family
from rlmap.render.formatters import MarkdownFormatter, RstFormatter
from tests.conftest import model_of

FAMILY = {
    "fam/__init__.py": "",
    "fam/t.py": """
        class Transform:
            def step(self, td):
                return td


        class A(Transform):
            def step(self, td):
                return td


        class B(Transform):
            def step(self, td):
                return td


        class C(Transform):
            def step(self, td):
                return td


        class Compose(Transform):
            def __init__(self, transforms):
                self.transforms = list(transforms)

            def step(self, td):
                for t in self.transforms:
                    td = t.step(td)
                return td


        def build():
            return Compose([A(), B()])
        """,
}


def test_flow_found_methods_name_every_class_that_may_run(
    make_package: Callable[[dict[str, str | bytes]], Path],
) -> None:
    model = model_of(make_package(FAMILY), "fam")
    (site,) = [s for s in model.call_sites("fam.t.Compose.step") if s.callee_text == "t.step"]
    assert set(site.targets) == {"fam.t.A.step", "fam.t.B.step"}
    # Transform, A, B, C and Compose define step: five classes, of which the flow saw two
    assert method_family(model, site.targets, site.how) == ("fam.t.Transform.step", 5)
    assert method_family(model, site.targets[:1], site.how[:1]) is None  # one target: nothing to add


def test_a_property_target_says_its_value_is_called() -> None:
    prop = Ref("p.C.hook", "C.hook", PROPERTY, "", "", None, False, "")
    func = Ref("p.f", "f", FUNCTION, "", "", None, False, "")
    for formatter in (MarkdownFormatter(), RstFormatter()):
        assert formatter.target(prop).endswith("(a property: what it returns is called)")
        assert "is called" not in formatter.target(func)
