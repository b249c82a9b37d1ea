"""key_use sections: keys named through a key-name attribute resolve to their declared defaults."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from rlmap.pages.profile import Profile
from rlmap.pages.refs import Refs
from rlmap.pages.sections.base import Context
from rlmap.pages.sections.keyuse import build_key_use
from rlmap.pages.sections.specs import KeyUse
from tests.conftest import model_of

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
    root = make_package(PACKAGE)
    model = model_of(root, "pkg")
    profile = Profile("p", "p.toml", {}, {}, extensions=("tensordict",))
    ctx = Context(model, Refs(model, root), "test")
    body = build_key_use(KeyUse(classes=["pkg.est.Child"]), ctx, profile)
    (member,) = body.classes[0].members
    assert member.member.qualname == "pkg.est.Base.forward"  # inherited members are found
    rows = [(use.kind, use.key, use.how, use.anchor.line) for use in member.uses]
    assert rows == [
        ("read", '("next", "reward")', "get via tensor_keys.reward", 11),
        ("write", "state_value", "set via tensor_keys.value", 12),
        ("write", "shifted_valid", "[]", 13),
    ]  # options.get("value") is no key (options is a plain receiver); an unknown field is skipped
