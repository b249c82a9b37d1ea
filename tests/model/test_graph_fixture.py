"""Call resolution on the synthetic package in tests/fixtures/pkg: one case per rule."""

from __future__ import annotations

import pytest

from rlmap.model.codemodel import CodeModel
from tests.conftest import FIXTURES, model_of


@pytest.fixture(scope="module")
def model() -> CodeModel:
    return model_of(FIXTURES, "pkg")


def edges_of(model: CodeModel) -> dict[str, tuple[str, ...]]:
    return {f"{edge.caller} -> {edge.callee}": edge.how for edge in model.edges()}


@pytest.mark.parametrize(
    ("edge", "how"),
    [
        # imports: absolute, aliased, relative, module alias, re-export through __init__ + star
        ("pkg.collector.Collector.rollout -> pkg.helpers.g", "direct"),  # from pkg.helpers import g as gee
        ("pkg.collector.Collector.rollout -> pkg.helpers.outer", "direct"),  # from .helpers import outer
        ("pkg.collector.Collector.rollout -> pkg.buffers.make_buffer", "direct"),
        ("pkg.collector.run -> pkg.collector.Collector.__init__", "constructor"),
        # Buffer comes through pkg/__init__.py's star import of pkg.buffers
        ("pkg.collector.BaseCollector.__init__ -> pkg.buffers.Buffer.__init__", "constructor"),
        # self.m() to the defining base, and to overrides in subclasses (virtual dispatch)
        ("pkg.collector.BaseCollector.collect -> pkg.collector.BaseCollector._prepare", "self"),
        ("pkg.collector.BaseCollector.collect -> pkg.collector.Collector._prepare", "override"),
        ("pkg.collector.BaseCollector.collect -> pkg.collector.LLMCollector.rollout", "override"),
        ("pkg.envs.base.Env.step_and_maybe_reset -> pkg.envs.base.Env.step", "self"),
        ("pkg.envs.base.Env.step -> pkg.envs.base.TransformedEnv._step", "override"),
        # super().m()
        ("pkg.collector.Collector.__init__ -> pkg.collector.BaseCollector.__init__", "super"),
        # property read -> getter
        ("pkg.collector.Collector.rollout -> pkg.collector.BaseCollector.mode", "property"),
        # nested and decorated functions
        ("pkg.helpers.outer -> pkg.helpers.outer.inner", "direct"),
        ("pkg.collector.Collector.rollout -> pkg.helpers.decorated_helper", "direct"),
        # receivers typed by annotation (attribute, parameter), assignment, return annotation
        ("pkg.collector.Collector.rollout -> pkg.envs.base.Env.step_and_maybe_reset", "annotation"),
        ("pkg.collector.run -> pkg.envs.base.Env.reset", "annotation"),
        ("pkg.collector.run -> pkg.collector.BaseCollector.collect", "assignment"),
        # a callable held in an attribute, and the only method of its name in the package
        ("pkg.collector.Collector.rollout -> pkg.collector.BaseCollector._sync", "attribute"),
        ("pkg.collector.Collector.rollout -> pkg.buffers.Buffer.only_here_method", "unique-name"),
        # outside the package, followed through imports
        ("pkg.helpers.g -> os.path.join", "external"),
        ("pkg.collector.Collector.rollout -> builtins.range", "external"),
        # never silently dropped
        ("pkg.collector.Collector.rollout -> ?:self.unknown_attribute.mystery_call", "unresolved"),
    ],
)
def test_edge_is_resolved(model: CodeModel, edge: str, how: str) -> None:
    edges = edges_of(model)
    assert edge in edges, f"missing edge {edge}"
    assert how in edges[edge], f"{edge} resolved as {edges[edge]}, expected {how}"


def test_typed_receivers_cover_every_call_site(model: CodeModel) -> None:
    edge = model.edge("pkg.collector.Collector.rollout", "pkg.buffers.Buffer.add")
    assert edge is not None
    # self.buffer.add (assignment in __init__), local.add (local Buffer()), made.add (return annotation)
    assert edge.lines == (54, 57, 59)
    assert set(edge.how) == {"assignment", "annotation"}


def test_no_edge_for_the_super_call_itself(model: CodeModel) -> None:
    assert "pkg.collector.Collector.__init__ -> builtins.super" not in edges_of(model)


def test_unresolved_and_external_nodes_are_marked(model: CodeModel) -> None:
    assert model.node_kind("?:self.unknown_attribute.mystery_call") == "unresolved"
    assert model.node_kind("os.path.join") == "external"
    assert model.node_kind("pkg.collector.Collector.rollout") == "method"


def test_graph_is_networkx_and_sorted(model: CodeModel) -> None:
    graph = model.graph()
    assert graph.has_edge("pkg.helpers.outer", "pkg.helpers.outer.inner")
    assert graph.edges["pkg.helpers.outer", "pkg.helpers.outer.inner"]["lines"] == (26,)
    listed = [(edge.caller, edge.callee) for edge in model.edges()]
    assert listed == sorted(listed)


def test_symbols_have_def_lines_not_decorator_lines(model: CodeModel) -> None:
    helper = model.symbol("pkg.helpers.decorated_helper")
    assert helper is not None
    assert (helper.line, helper.decorators) == (14, ("traced",))  # line 13 is "@traced"
    mode = model.symbol("pkg.collector.BaseCollector.mode")
    assert mode is not None
    assert mode.kind == "property"
    assert mode.line == 26


def test_attribute_accesses_with_guards_and_values(model: CodeModel) -> None:
    accesses = model.attribute_accesses("pkg.collector.Collector._carrier")
    writes = [(a.function.rsplit(".", 1)[-1], a.line, a.guards, a.value) for a in accesses if a.kind == "write"]
    assert writes == [
        ("__init__", 44, (), "None"),
        ("rollout", 49, ('if self.mode == "recurrent"',), "self.env.reset()"),
        ("rollout", 51, ("for t in range(3)",), ""),
    ]
    cast = model.attribute_accesses("pkg.collector.Collector._cast")
    assert [(a.kind, a.value) for a in cast if a.kind == "write"] == [("write", "env.batch_size != 1")]
    # an attribute written in a base and read in a subclass is grouped under the base
    env_reads = [a.function for a in model.attribute_accesses("pkg.collector.BaseCollector.env") if a.kind == "read"]
    assert "pkg.collector.LLMCollector.rollout" in env_reads


def test_key_accesses(model: CodeModel) -> None:
    in_collector = [a for a in model.key_accesses(("is_init",)) if a.function.startswith("pkg.collector.")]
    assert [(a.kind, a.how, a.line) for a in in_collector] == [
        ("read", "get", 70),
        ("check", "in keys()", 72),
    ]
    assert [(a.kind, a.how) for a in model.key_accesses(("collector", "traj_ids"))] == [("write", "set")]
    assert [(a.kind, a.how) for a in model.key_accesses(("next",))] == [("write", "[]")]


def test_keys_held_by_names_resolve_to_their_constants(make_package) -> None:  # type: ignore[no-untyped-def]
    root = make_package(
        {
            "kp/__init__.py": "",
            "kp/tracker.py": """
                class Tracker:
                    done_key = "done"

                    def __init__(self, init_key: str = "is_init"):
                        self.init_key = init_key

                    @property
                    def init_keys(self):
                        return [self.init_key]

                    def call(self, td):
                        for init_key in self.init_keys:
                            td.set(init_key, 1)
                        td.get(self.done_key)
                        alias = self.init_key
                        td[alias] = 0
                        td.set(unknown_name, 2)
            """,
        }
    )
    model = model_of(root, "kp")
    writes = [(a.how, a.line, a.expression) for a in model.key_accesses(("is_init",))]
    assert writes == [("set", 13, "init_key"), ("[]", 16, "alias")]
    assert [(a.how, a.expression) for a in model.key_accesses(("done",))] == [("get", "self.done_key")]
