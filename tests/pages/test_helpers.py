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

            def _tick(self, worker):
                self.counts[worker] += 1
                return self.counts[worker] > 3

            def start(self):
                import threading

                threading.Thread(target=self._run).start()
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
        # an item set in an attribute is a change no call shows
        "Collector._tick": ("sets items of self.counts; returns self.counts[worker] > 3", False),
    }
    callers = {row.helper.ref.display: [c.display for c in row.helper.callers] for row in body.helpers}
    assert callers["Collector._count"] == ["Collector.rollout"]
    assert callers["Collector._run"] == ["Collector.start (hands it on to be called)"]  # a thread's target


RANKED = {
    "rk/__init__.py": "",
    "rk/m.py": """
        import functools

        try:
            from outside_lib import fast as _fast
        except ImportError:

            def _fast(x):
                return x


        def _named(x):
            return x


        def _passed(x):
            return x


        def _abstract(self):
            raise NotImplementedError


        def _checked(x):
            if x:
                return x
            raise ValueError("no x")


        def one():
            _named(1)
            _fast(1)


        def two():
            _named(2)


        def three():
            fn = functools.partial(_passed)
            fn(3)
            fn(4)


        def _wrap(function):
            return function


        @_wrap
        def four():
            pass


        @_wrap
        def five():
            pass


        class Pool:
            @property
            def _size(self):
                return 3

            def first(self):
                return self._size

            def second(self):
                return self._size + 1
        """,
}


def test_helpers_are_ranked_by_callers_that_name_them(make_package: Callable[[dict[str, str | bytes]], Path]) -> None:
    """A call through a value (a ``partial``) is not counted; an import fallback is no helper; a
    ``raise`` that is the body's first or last statement is said."""
    root = make_package(RANKED)
    model = model_of(root, "rk")
    assert model.edge("rk.m.three", "rk.m._passed") is not None  # the value flow does see it
    body = build_helpers(Helpers(scope=["rk"]), Context(model, Refs(model, root), "test"))
    rows = {row.helper.ref.qualname: row for row in body.helpers}
    assert "rk.m._fast" not in rows  # defined only when the import fails
    assert rows["rk.m._named"].helper.count == 2
    assert rows["rk.m._passed"].helper.count == 0
    assert list(rows)[:3] == ["rk.m.Pool._size", "rk.m._named", "rk.m._wrap"]  # two callers each, then by name
    assert rows["rk.m._abstract"].summary == "always raises NotImplementedError"
    assert rows["rk.m._checked"].summary.endswith("ends raising ValueError")
    assert rows["rk.m.Pool._size"].helper.count == 2  # a private property: read by name in two methods
    assert rows["rk.m._wrap"].helper.count == 2  # a decorator: each definition it decorates names it
