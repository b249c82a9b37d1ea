"""Types read from annotations: what an annotation says a value is, and what it does not."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tests.conftest import model_of

SOURCE = {
    "app/__init__.py": "",
    "app/core.py": """
        from collections.abc import Callable
        from typing import Optional


        class Table:
            def keys(self):
                return []


        class Holder:
            @property
            def factory(self) -> Callable[[int], Table]:
                return make

            @property
            def maybe(self) -> Optional[Callable[..., Table]]:
                return None

            @property
            def table(self) -> Table:
                return Table()

            def use(self):
                self.factory.keys()
                self.maybe.keys()
                self.table.keys()


        def make(size: int) -> Table:
            return Table()
    """,
}


def test_a_callable_annotation_types_nothing(make_package: Callable[[dict[str, str | bytes]], Path]) -> None:
    """``-> Callable[[int], Table]`` is a function: ``.keys()`` on it is neither Callable's nor Table's."""
    model = model_of(make_package(SOURCE), "app")
    callees = {edge.callee for edge in model.callees("app.core.Holder.use")}
    assert "app.core.Table.keys" in callees  # through ``-> Table``
    assert not any(callee.startswith("collections.abc.Callable") for callee in callees)
    sites = [site for site in model.call_sites("app.core.Holder.use") if site.callee_text.endswith(".keys")]
    assert [site.targets for site in sites if site.callee_text.startswith("self.table")] == [("app.core.Table.keys",)]
    untyped = [site for site in sites if not site.callee_text.startswith("self.table")]
    assert len(untyped) == 2
    assert all("annotation" not in site.how for site in untyped)  # at most a by-name guess, marked as one
