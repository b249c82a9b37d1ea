"""A metaclass's ``__call__``: ``C(...)`` runs it first (``implicit``), and its
``super().__call__(...)`` runs ``C.__init__`` (``implicit``), as ``EnvBase``'s ``_EnvPostInit`` does."""

from __future__ import annotations

import textwrap

import pytest

from rlmap.model.codemodel import CodeModel
from tests.conftest import model_of, write_package

SOURCE = {
    "meta/__init__.py": "",
    "meta/envs.py": """
        import abc


        class _PostInit(abc.ABCMeta):
            def __call__(cls, *args, **kwargs):
                instance = super().__call__(*args, **kwargs)
                instance._finish()
                return instance


        class Base(metaclass=_PostInit):
            def __init__(self, x):
                self.x = x

            def _finish(self):
                pass


        class Child(Base):
            def __init__(self, x, y):
                super().__init__(x)


        class Unbuilt(Base):
            def __init__(self):
                pass


        class Plain:
            def __init__(self):
                pass


        def make():
            child = Child(1, 2)
            plain = Plain()
            return child, plain
    """,
}


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> CodeModel:
    return model_of(write_package(tmp_path_factory.mktemp("meta"), SOURCE), "meta")


def _how(model: CodeModel, caller: str, callee: str) -> tuple[str, ...] | None:
    edge = model.edge(caller, callee)
    return edge.how if edge is not None else None


def test_constructing_a_class_runs_its_metaclass_call(model: CodeModel) -> None:
    assert _how(model, "meta.envs.make", "meta.envs._PostInit.__call__") == ("implicit",)
    assert _how(model, "meta.envs.make", "meta.envs.Child.__init__") == ("constructor",)  # still certain


def test_the_metaclass_call_runs_init_of_the_classes_it_makes(model: CodeModel) -> None:
    assert _how(model, "meta.envs._PostInit.__call__", "meta.envs.Child.__init__") == ("implicit",)
    # only what is made: Unbuilt is never constructed, Plain has no such metaclass
    assert _how(model, "meta.envs._PostInit.__call__", "meta.envs.Unbuilt.__init__") is None
    assert _how(model, "meta.envs._PostInit.__call__", "meta.envs.Plain.__init__") is None
    lines = textwrap.dedent(SOURCE["meta/envs.py"]).lstrip("\n").splitlines()
    line = lines.index("    child = Child(1, 2)") + 1
    assert model.edge("meta.envs.make", "meta.envs._PostInit.__call__").lines == (line,)  # type: ignore[union-attr]


def test_torchrl_env_construction_goes_through_env_post_init(torchrl_model: CodeModel) -> None:
    post_init = "torchrl.envs.common._EnvPostInit.__call__"
    callees = {edge.callee: edge.how for edge in torchrl_model.callees(post_init)}
    assert callees.get("torchrl.envs.libs.gym.GymEnv.__init__") == ("implicit",)
    callers = {edge.caller: edge.how for edge in torchrl_model.callers(post_init)}
    assert callers.get("torchrl.envs.llm.envs.LLMEnv.from_dataloader") == ("implicit",)
    # MLGymWrapper is a GymWrapper: the nearest metaclass in its MRO, _GymAsyncMeta, runs first
    gym_meta = "torchrl.envs.libs.gym._GymAsyncMeta.__call__"
    assert _how(torchrl_model, "torchrl.envs.llm.libs.mlgym.make_mlgym", gym_meta) == ("implicit",)
    assert post_init not in {edge.callee for edge in torchrl_model.callees("torchrl.envs.llm.libs.mlgym.make_mlgym")}
    # a metaclass deriving from it reaches it through super().__call__
    assert "super" in callers.get("torchrl.envs.libs.gym._GymAsyncMeta.__call__", ())
