"""key_use sections: keys named through a key-name attribute resolve to their declared defaults."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from rlmap.pages.profile import Profile
from rlmap.pages.refs import Refs
from rlmap.pages.sections.base import Context
from rlmap.pages.sections.keyuse import MemberKeys, build_key_use
from rlmap.pages.sections.specs import KeyUse
from tests.conftest import model_of


def _member(root: Path, cls: str) -> MemberKeys:
    """The key_use section of ``cls``'s ``forward``, in the package at ``root``."""
    model = model_of(root, "pkg")
    profile = Profile("p", "p.toml", {}, {}, extensions=("tensordict",))
    ctx = Context(model, Refs(model, root), "test")
    (member,) = build_key_use(KeyUse(classes=[cls]), ctx, profile).classes[0].members
    return member


PACKAGE = {
    "pkg/__init__.py": "",
    "pkg/est.py": """
        from dataclasses import dataclass


        class Base:
            @dataclass
            class _AcceptedKeys:
                reward: str = "reward"
                value: str = "state_value"

            def forward(self, td, options):
                reward = td.get(("next", self.tensor_keys.reward))
                td.set(self.tensor_keys.value, reward)
                td["shifted_valid"] = reward
                flag = options.get("value")
                return td.get(self.tensor_keys.unknown)


        class Child(Base):
            pass
        """,
}


def test_keys_through_the_key_names_resolve_to_their_defaults(
    make_package: Callable[[dict[str, str | bytes]], Path],
) -> None:
    member = _member(make_package(PACKAGE), "pkg.est.Child")
    assert member.member.qualname == "pkg.est.Base.forward"  # inherited members are found
    rows = [(use.kind, use.key, use.how, use.anchor.line) for use in member.uses]
    assert rows == [
        ("read", '("next", "reward")', "get via tensor_keys.reward", 11),
        ("write", "state_value", "set via tensor_keys.value", 12),
        ("write", "shifted_valid", "[]", 13),
    ]  # options.get("value") is no key (options is a plain receiver); an unknown field is skipped


HELPERS = {
    "pkg/__init__.py": "",
    "pkg/utils.py": """
        def get_or_select(td, key_or_keys, default=None):
            if isinstance(key_or_keys, str):
                return td.get(key_or_keys, default)
            return td.select(*key_or_keys)


        def write_into(td, key, value):
            td.set(key, value)


        def not_a_key(td, size):
            return td.get("fixed") * size
        """,
    "pkg/est.py": """
        from dataclasses import dataclass

        from pkg.utils import get_or_select, not_a_key, write_into


        class Estimator:
            @dataclass
            class _AcceptedKeys:
                value: str = "state_value"
                log_prob: str | None = None

                def __post_init__(self):
                    if self.log_prob is None:
                        if aggregate():
                            self.log_prob = "sample_log_prob"
                        else:
                            self.log_prob = "action_log_prob"

            def forward(self, td):
                lp = get_or_select(td, self.tensor_keys.log_prob)
                write_into(td, key=self.tensor_keys.value, value=lp)
                not_a_key(td, self.tensor_keys.value)
                return td.get(self.tensor_keys.log_prob)
        """,
}


def test_a_key_a_helper_reads_and_a_default_set_when_the_key_names_are_made(
    make_package: Callable[[dict[str, str | bytes]], Path],
) -> None:
    member = _member(make_package(HELPERS), "pkg.est.Estimator")
    made = " (the default name set when the tensor_keys are made)"
    rows = [(use.kind, use.key, use.how, use.anchor.line) for use in member.uses]
    assert rows == [
        # the helper's parameter is a key of its other parameter: read there, by get or select
        (
            "read",
            "sample_log_prob or action_log_prob",
            "get/select in get_or_select via tensor_keys.log_prob" + made,
            20,
        ),
        # passed by keyword, written by the helper
        ("write", "state_value", "set in write_into via tensor_keys.value", 21),
        # not_a_key uses its second parameter as no key: line 22 has no row
        ("read", "sample_log_prob or action_log_prob", "get via tensor_keys.log_prob" + made, 23),
    ]


CALLS_ON_SELF = {
    "pkg/__init__.py": "",
    "pkg/est.py": """
        from dataclasses import dataclass


        class Estimator:
            @dataclass
            class _AcceptedKeys:
                reward: str = "reward"
                done: str = "done"

            def forward(self, td, flag):
                if td.batch_dims < 1:
                    raise ValueError("no batch")
                if flag:
                    self.value_estimate(td)
                local = td.select(self.tensor_keys.reward)
                local["mark"] = 1
                nested = td.get("next")
                return td.get(("next", self.tensor_keys.done))

            def value_estimate(self, td):
                reward = td.get(("next", self.tensor_keys.reward))
                if self.average:
                    td.set(("next", self.tensor_keys.reward), reward)
                td = td.copy()
                td.set("copied", reward)
                return reward
        """,
}


def test_keys_of_a_method_called_on_self_with_conditions_and_copies(
    make_package: Callable[[dict[str, str | bytes]], Path],
) -> None:
    member = _member(make_package(CALLS_ON_SELF), "pkg.est.Estimator")
    rows = [(use.kind, use.key, use.how, use.anchor.line, use.guard) for use in member.uses]
    assert rows == [
        # value_estimate's accesses, at its lines, in the place of forward's call (under "if flag");
        # the input check every row shares (not (td.batch_dims < 1)) is left out of each
        ("read", '("next", "reward")', "get via tensor_keys.reward, in value_estimate", 21, "if flag"),
        (
            "write",
            '("next", "reward")',
            "set via tensor_keys.reward, in value_estimate",
            23,
            "if flag / if self.average",
        ),
        ("write", "copied", "set on a copy, in value_estimate", 25, "if flag"),  # after td = td.copy()
        ("read", "reward", "select via tensor_keys.reward", 15, ""),
        ("write", "mark", "[] on a copy", 16, ""),  # local is made by select
        # td.get("next") (line 17) is the nested data, no entry
        ("read", '("next", "done")', "get via tensor_keys.done", 18, ""),
    ]


def test_a_loop_over_key_names_gives_each_of_them(make_package: Callable[[dict[str, str | bytes]], Path]) -> None:
    """``for key in (self.tensor_keys.advantage, self.tensor_keys.value_target): td.set(key, ...)``
    (torchrl's ``_mask_shifted_output``) writes both keys; the table named neither."""
    package = {
        "pkg/__init__.py": "",
        "pkg/est.py": """
            from dataclasses import dataclass


            class Estimator:
                @dataclass
                class _AcceptedKeys:
                    advantage: str = "advantage"
                    value_target: str = "value_target"

                def forward(self, td):
                    for key in (self.tensor_keys.advantage, self.tensor_keys.value_target):
                        td.set(key, td.get(key) * 0)
                    for key in ("other",):
                        pass
                    td.get(key)
            """,
    }
    member = _member(make_package(package), "pkg.est.Estimator")
    rows = [(use.kind, use.key, use.how, use.anchor.line) for use in member.uses]
    assert rows == [
        ("read", "advantage", "get via tensor_keys.advantage", 12),
        ("read", "value_target", "get via tensor_keys.value_target", 12),
        ("write", "advantage", "set via tensor_keys.advantage", 12),
        ("write", "value_target", "set via tensor_keys.value_target", 12),
    ]  # the name after the loops is none of their keys
