"""Value-flow precision: what a merged, flow-insensitive solve would wrongly add, one rule per case.

Each case has a generic path that merges two callers (a wrapper returning its argument, a
parameter two callers feed, a ``**kwargs`` splat) and asserts both halves: the edge the code
makes is found, the one the merge would invent is not.
"""

from __future__ import annotations

import textwrap

import pytest

from rlmap.model.codemodel import CodeModel
from tests.conftest import model_of, write_package

SOURCE = {
    "pr/__init__.py": "",
    "pr/kinds.py": """
        from typing import Optional


        class Data:
            def run(self):
                return 1

            def get(self, key):
                return key


        class Env:
            def run(self):
                return 2

            def step(self):
                return 3


        class Proxy:
            def __call__(self, *args):
                return args


        class Remote:
            def __getattr__(self, name):
                return Proxy()


        class Base:
            def clone(self):
                return self


        class Left(Base):
            def left(self):
                return 4


        class Right(Base):
            def left(self):
                return 5
    """,
    "pr/rules.py": """
        import threading
        from typing import Optional

        from pr.kinds import Data, Env, Left, Remote, Right


        def identity(value):
            return value


        def returned_argument():
            identity(Data()).run()
            identity(Env()).step()


        def returned_self():
            Left().clone().left()
            Right().clone()


        def annotated(data: Data):
            data.run()


        def optional(data: Optional["Data"] = None, *, env: Env | None = None):
            data.run()
            env.run()


        def containers_only(table: dict):
            table.run()


        def feeds_annotated():
            annotated(Data())
            annotated(Env())  # wrong by its annotation: not followed
            optional(Env(), env=Data())
            containers_only(Env())


        def keyed(first=None, second=None):
            first.run()
            second.step()


        def splat():
            options = {"first": Data(), "second": Env()}
            keyed(**options)


        def positional(first, second):
            first.run()


        def star():
            keyed(*(Data(), Env()))
            positional(*[Data(), Env()])


        def worker(first=None):
            first.get(0)


        def threaded():
            threading.Thread(target=worker, kwargs={"first": Data()}).start()


        def mixed(flag):
            value = identity(Data()) if flag else Remote()
            return value.get("key")


        def remote_only():
            return Remote().anything()


        def comprehensions():
            first = [item for item in [Data()]]
            second = [item for item in [Env()]]
            return [item.run() for item in second], first


        class Spread:
            def __init__(self, factory, count):
                if not isinstance(factory, list):
                    factory = [factory for _ in range(count)]
                self.factories = factory


        def self_containing():
            factories = Spread(Data(), 2).factories
            first = factories[0]
            first[len(first) - 1] = Env()
            return factories[1].run()
    """,
    "pr/guards.py": """
        from pr.kinds import Data, Env


        class Holder:
            def __init__(self, inner):
                self.inner = inner

            def dispatch(self):
                if isinstance(self.inner, Data):
                    self.inner.run()
                else:
                    self.inner.run()


        def build():
            Holder(Data()).dispatch()
            Holder(Env()).dispatch()
    """,
}


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> CodeModel:
    root = write_package(tmp_path_factory.mktemp("pr"), SOURCE)
    return model_of(root, "pr")


def _callees(model: CodeModel, caller: str, line_text: str = "") -> set[str]:
    """The callees of ``caller`` (a function of ``pr.rules``), on the line holding ``line_text``."""
    lines: set[int] = set()
    if line_text:
        source = textwrap.dedent(SOURCE["pr/rules.py"]).lstrip("\n").splitlines()
        lines = {number for number, line in enumerate(source, 1) if line_text in line}
        assert lines, line_text
    return {edge.callee for edge in model.callees(caller) if not lines or lines & set(edge.lines)}


def test_a_returned_argument_is_the_callers_own(model: CodeModel) -> None:
    callees = _callees(model, "pr.rules.returned_argument")
    assert "pr.kinds.Data.run" in callees
    assert "pr.kinds.Env.step" in callees
    assert "pr.kinds.Env.run" not in callees  # identity(Data()) is a Data, not an Env


def test_a_method_returning_self_returns_its_receiver(model: CodeModel) -> None:
    callees = _callees(model, "pr.rules.returned_self", "Left().clone().left()")
    assert "pr.kinds.Left.left" in callees
    assert "pr.kinds.Right.left" not in callees


def test_an_annotated_parameter_keeps_only_instances_of_its_classes(model: CodeModel) -> None:
    assert "pr.kinds.Data.run" in _callees(model, "pr.rules.annotated")
    assert "pr.kinds.Env.run" not in _callees(model, "pr.rules.annotated")
    data_line = _callees(model, "pr.rules.optional", "data.run()")
    env_line = _callees(model, "pr.rules.optional", "env.run()")
    assert "pr.kinds.Env.run" not in data_line  # Optional["Data"]: a forward reference, read
    assert "pr.kinds.Data.run" not in env_line  # Env | None
    assert "pr.kinds.Env.run" not in _callees(model, "pr.rules.containers_only")  # dict holds no Env


def test_a_mapping_splat_binds_each_parameter_its_own_entry(model: CodeModel) -> None:
    first = _callees(model, "pr.rules.keyed", "first.run()")
    second = _callees(model, "pr.rules.keyed", "second.step()")
    assert "pr.kinds.Data.run" in first
    assert "pr.kinds.Env.run" not in first
    assert "pr.kinds.Env.step" in second


def test_a_sequence_splat_binds_by_position(model: CodeModel) -> None:
    callees = _callees(model, "pr.rules.positional")
    assert "pr.kinds.Data.run" in callees
    assert "pr.kinds.Env.run" not in callees


def test_a_thread_target_receives_its_keyword_arguments(model: CodeModel) -> None:
    assert "pr.kinds.Data.get" in _callees(model, "pr.rules.worker")


def test_getattr_answers_only_where_no_receiver_has_the_attribute(model: CodeModel) -> None:
    mixed = _callees(model, "pr.rules.mixed", 'value.get("key")')
    assert "pr.kinds.Data.get" in mixed
    assert "pr.kinds.Proxy.__call__" not in mixed
    assert "pr.kinds.Remote.__getattr__" not in mixed
    alone = _callees(model, "pr.rules.remote_only")
    assert {"pr.kinds.Remote.__getattr__", "pr.kinds.Proxy.__call__"} <= alone
    edge = model.edge("pr.rules.remote_only", "pr.kinds.Proxy.__call__")
    assert edge is not None
    assert "implicit" in edge.how


def test_an_isinstance_guard_narrows_the_receiver(model: CodeModel) -> None:
    sites = model.call_sites("pr.guards.Holder.dispatch")
    calls = {site.line: set(site.targets) for site in sites if site.callee_text == "self.inner.run"}
    lines = sorted(calls)
    assert len(lines) == 2
    assert "pr.kinds.Data.run" in calls[lines[0]]
    assert "pr.kinds.Env.run" not in calls[lines[0]]
    assert "pr.kinds.Env.run" in calls[lines[1]]
    assert "pr.kinds.Data.run" not in calls[lines[1]]


def test_each_comprehension_binds_its_own_variables(model: CodeModel) -> None:
    """``item`` of one comprehension is not ``item`` of another (Python 3 scopes them)."""
    callees = _callees(model, "pr.rules.comprehensions", "item.run()")
    assert "pr.kinds.Env.run" in callees
    assert "pr.kinds.Data.run" not in callees


def test_a_container_is_not_its_own_element(model: CodeModel) -> None:
    """``factory = [factory for _ in ...]``: merged flow-insensitively, ``factory`` holds the list and
    the list's elements hold ``factory``, so the list would be its own element and a store into an
    element (``first[len(first) - 1] = Env()``) a store into the list."""
    callees = _callees(model, "pr.rules.self_containing", "factories[1].run()")
    assert "pr.kinds.Data.run" in callees
    assert "pr.kinds.Env.run" not in callees
