"""Any Python source: a directory of modules resolves across modules, and the graph comes out in PyCG's format."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from tests.conftest import Run

MakePackage = Callable[[dict[str, str | bytes]], Path]

FILES = {
    "main.py": """
        import helper
        from ns.sub import mod


        class A:
            def __init__(self):
                helper.f()


        class B:
            pass


        def main():
            A()
            B()
            mod.g()
            print("x")


        main()
    """,
    "helper.py": """
        def f():
            pass
    """,
    "ns/sub/mod.py": """
        def g():
            pass
    """,
}


def test_graph_of_a_directory_in_pycg_format(run: Run, make_package: MakePackage) -> None:
    root = make_package(FILES)
    code, out, err = run("graph", "--source", str(root), "--format", "pycg", "--no-cache", "--quiet")
    assert (code, err) == (0, "")
    assert json.loads(out) == {
        "helper": [],
        "helper.f": [],
        "main": ["main.main"],
        "main.A.__init__": ["helper.f"],
        "main.main": ["<builtin>.print", "main.A.__init__", "ns.sub.mod.g"],  # B() runs no __init__ of B's
        "ns.sub.mod": [],
        "ns.sub.mod.g": [],
    }
