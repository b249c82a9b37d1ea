"""Methods no call of the package reaches (entry points, ``collector.start()``) still run on an
instance of their class: what they do with ``self`` is seen, such as handing a bound method to a
thread, a timer or ``atexit``."""

from __future__ import annotations

import pytest

from rlmap.model.codemodel import CodeModel
from tests.conftest import model_of, write_package

SOURCE = {
    "ep/__init__.py": "",
    "ep/service.py": """
        import atexit
        import threading


        class Service:
            def start(self):
                self._thread = threading.Thread(target=self._run_iterator, daemon=True)
                self._thread.start()
                self._timer = threading.Timer(5.0, self._tick)
                atexit.register(self._shutdown)

            def _run_iterator(self):
                pass

            def _tick(self):
                pass

            def _shutdown(self):
                pass

            def _never_handed_out(self):
                pass


        class Other:
            def _run_iterator(self):
                pass
    """,
}


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> CodeModel:
    return model_of(write_package(tmp_path_factory.mktemp("ep"), SOURCE), "ep")


@pytest.mark.parametrize(
    "callee",
    ["ep.service.Service._run_iterator", "ep.service.Service._tick", "ep.service.Service._shutdown"],
)
def test_a_bound_method_handed_to_a_library_is_called_by_the_method_that_hands_it(
    model: CodeModel, callee: str
) -> None:
    """Nothing in the package constructs ``Service`` or calls ``start``: the edge comes from
    ``start``'s own ``self``, labelled as a callback (a function a library calls), never certain."""
    edge = model.edge("ep.service.Service.start", callee)
    assert edge is not None, f"missing ep.service.Service.start -> {callee}"
    assert edge.how == ("callback",)


def test_the_receiver_is_the_methods_class_only(model: CodeModel) -> None:
    assert model.edge("ep.service.Service.start", "ep.service.Other._run_iterator") is None
    assert model.callers("ep.service.Service._never_handed_out") == []
    assert [edge.caller for edge in model.callers("ep.service.Service._run_iterator")] == ["ep.service.Service.start"]


def test_an_attribute_holding_an_outside_class_instance_is_typed_by_it(model: CodeModel) -> None:
    """``self._thread = threading.Thread(...)``: ``self._thread.start()`` is ``threading.Thread.start``,
    not the package's only ``start`` (``Service.start`` itself, by name alone)."""
    callees = {edge.callee: edge.how for edge in model.callees("ep.service.Service.start")}
    assert callees["threading.Thread.start"] == ("assignment",)
    assert "ep.service.Service.start" not in callees


def test_torchrl_collector_thread_target(torchrl_model: CodeModel) -> None:
    """``Collector.start`` runs ``self._run_iterator`` in a thread (nothing in torchrl calls start)."""
    start = "torchrl.collectors._single.Collector.start"
    edge = torchrl_model.edge(start, "torchrl.collectors._single.Collector._run_iterator")
    assert edge is not None
    assert edge.how == ("callback",)
    assert torchrl_model.edge(start, "threading.Thread.start") is not None
