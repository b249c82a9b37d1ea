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


def test_later_def_wins_and_setters_do_not(make_package) -> None:  # type: ignore[no-untyped-def]
    root = make_package(
        {
            "pkg/__init__.py": "",
            "pkg/dispatch.py": "def implement_for(*a):\n    return lambda f: f\n",
            "pkg/m.py": SOURCE,
        }
    )
    model = model_of(root, "pkg")
    scan = model.symbol("pkg.m.scan")
    assert scan is not None
    assert scan.line == 10
    size = model.symbol("pkg.m.Box.size")
    assert size is not None
    assert size.kind == "property"
    assert size.line == 16
    assert "pkg.m.scan" in {edge.callee for edge in model.callees("pkg.m.Box.run")}
