"""helpers sections: each private helper with what it does, from its docstring or its code."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from rlmap.pages.refs import Refs
from rlmap.pages.sections.base import Context
from rlmap.pages.sections.helpers import build_helpers
from rlmap.pages.sections.specs import Helpers
from tests.conftest import model_of

PACKAGE = {
    "pkg/__init__.py": "",
    "pkg/c.py": """
        class Collector:
            def rollout(self, n):
                if self._count(n):
                    return None
                return self._documented()

            def _count(self, n):
                self.frames += n
                self.done = n > 10
                if self.done:
                    self.env.close()
                return self.done

            def _documented(self):
                '''Build the output batch.'''
                return []

            def __iter__(self):
                yield self.rollout(1)

            def _run(self):
                for _ in self:
                    if self.done:
                        return
        """,
}


def test_a_helper_says_what_its_code_does_or_its_docstring_says(
    make_package: Callable[[dict[str, str | bytes]], Path],
) -> None:
    root = make_package(PACKAGE)
    model = model_of(root, "pkg")
    body = build_helpers(Helpers(class_="pkg.c.Collector"), Context(model, Refs(model, root), "test"))
    summaries = {row.helper.ref.display: (row.summary, row.from_docstring) for row in body.helpers}
    assert summaries == {
        "Collector._count": (
            "assigns self.done, self.frames; calls self.env.close() (under if self.done); returns self.done",
            False,
        ),
        "Collector._documented": ("Build the output batch.", True),
        # iterating self runs __iter__, a call no site writes; a bare return gives back None
        "Collector._run": ("calls Collector.__iter__() (implicit); returns None", False),
    }
