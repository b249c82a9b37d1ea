"""The glossary's usage figures count what they say: resolved call lines, call lines that name a
function without resolving to it, and the method calls of a module-level instance."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from rlmap.pages.refs import Refs
from rlmap.pages.sections.curated import CallsByName, usage
from tests.conftest import model_of

PACKAGE = {
    "pkg/__init__.py": "",
    "pkg/m.py": """
        class Manager:
            def get_mode(self):
                return None


        manager = Manager()


        def step(td):
            return td


        def user(td, thing):
            step(td).select("a")
            thing.step(td)
            return manager.get_mode()
        """,
}


def test_counts_separate_resolved_unresolved_and_instance_calls(
    make_package: Callable[[dict[str, str | bytes]], Path],
) -> None:
    root = make_package(PACKAGE)
    model = model_of(root, "pkg")
    refs = Refs(model, root)
    named = CallsByName(model)
    step = usage(model, refs.ref("pkg.m.step"), named)
    # step(td) resolves; step(td).select(...) calls select, not step; thing.step(td) names it unresolved
    assert (step.calls, step.by_name) == (1, 1)
    manager = usage(model, refs.ref("pkg.m.manager"), named)
    assert manager.is_instance
    assert manager.by_name == 1  # manager.get_mode()


def test_a_class_without_an_init_counts_its_constructions(
    make_package: Callable[[dict[str, str | bytes]], Path],
) -> None:
    """A dataclass's ``__init__`` is generated: its constructions resolve to the class itself."""
    root = make_package(
        {
            "dc/__init__.py": "",
            "dc/m.py": """
                from dataclasses import dataclass


                class Loss:
                    @dataclass
                    class _AcceptedKeys:
                        value: str = "value"

                    def __init__(self):
                        self._keys = self._AcceptedKeys()
                """,
        }
    )
    model = model_of(root, "dc")
    keys = usage(model, Refs(model, root).ref("dc.m.Loss._AcceptedKeys"))
    assert keys.is_class
    assert keys.calls == 1
