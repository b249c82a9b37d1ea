"""The recurrent backends and the advantage kernels as control flow, on the committed pages: the
condition that picks each path is the branch the outline shows it under, and the diagram has a
decision for it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).parent.parent.parent
MD = REPO / "generated_docs" / "md"

pytestmark = pytest.mark.torchrl


def _section(page: str, title: str) -> str:
    text = (MD / page).read_text(encoding="utf-8")
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 5)
    return text[start : end if end >= 0 else len(text)]


def _under(section: str, header: str) -> list[str]:
    """The calls listed right under the branch ``header`` (one level deeper)."""
    block = section[section.index(f"- `{header}") :].split("\n")[1:]
    indent = len(block[0]) - len(block[0].lstrip())
    calls = []
    for line in block:
        if len(line) - len(line.lstrip()) < indent or not line.strip():
            break
        found = re.match(r"\s*- \*\*\d+\*\* `([^`]+)`", line)
        if found and len(line) - len(line.lstrip()) == indent:
            calls.append(found.group(1))
    return calls


def test_the_lstm_backend_is_chosen_by_is_init_and_the_backend_name() -> None:
    section = _section("recurrent_state_lifecycle.md", "LSTMModule: which backend runs")
    assert _under(section, 'if is_init is not None and backend == "triton"`:') == ["self._lstm_triton_with_resets"]
    assert _under(section, "if is_init is not None`:") == ["self._lstm_scan_with_resets"]
    # each returns at once: an exit under the same branch
    assert "  - **exit** `return self._lstm_scan_with_resets(" in section
    assert '{"is_init is not None and backend == #quot;triton#quot; ?"}' in section  # the mermaid decision


def test_gae_picks_its_kernel_by_the_vectorized_flag() -> None:
    section = _section("advantages_internals.md", "GAE.forward, branch by branch")
    assert _under(section, "if self.vectorized`") == ["vec_generalized_advantage_estimate"]
    after = section[section.index("- `if self.vectorized`") :]
    assert _under(after, "else`") == ["generalized_advantage_estimate"]  # the same choice's other branch
    dot = (REPO / "generated_docs" / "rst" / "advantages_gae_flow.dot").read_text(encoding="utf-8")
    assert 'label="self.vectorized ?"' in dot
