"""What an ``isinstance`` guard says, read once per guard text (:mod:`rlmap.model.admission`)."""

from __future__ import annotations

import pytest

from rlmap.model import admission
from rlmap.model.admission import guard_facts


def test_a_guard_says_the_same_each_time_and_is_parsed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    guards = ("if isinstance(self.env, (EnvBase, nn.Module)) and ready", "not (isinstance(x, Tensor))", "if ready")
    first = guard_facts(guards)
    assert first == [
        ("self.env", frozenset({"EnvBase", "nn.Module"}), True),
        ("x", frozenset({"Tensor"}), False),
    ]
    parsed = []
    real = admission._test

    def counting(guard: str):  # type: ignore[no-untyped-def]
        parsed.append(guard)
        return real(guard)

    monkeypatch.setattr(admission, "_test", counting)
    assert guard_facts(guards) == first
    assert guard_facts(guards[:1]) == first[:1]
    assert parsed == []  # each text was read by the first call
