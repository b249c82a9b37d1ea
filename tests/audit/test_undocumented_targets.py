"""``unlinkable-ref`` for roles whose target the docs tree documents under no path the role names."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlmap.cli import main
from tests.audit.test_audit import fixture_audit, write_docs
from tests.conftest import Run

REPO = Path(__file__).parents[2]
TORCHRL_DOCS = REPO.parent / "shared" / "torchrl-docs" / "docs" / "source"

API = """
Environments
============

.. currentmodule:: pkg.envs

.. autosummary::
    :toctree: generated/

    Env
"""


def unlinkable(findings: list[dict[str, object]]) -> dict[tuple[object, object], str]:
    return {(f["line"], f["name"]): str(f["suggestion"]) for f in findings if f["rule"] == "unlinkable-ref"}


def test_a_role_the_tree_does_not_document_is_reported_with_the_documented_path(run: Run, tmp_path: Path) -> None:
    page = (
        "See :class:`pkg.Env`, :class:`pkg.envs.Env`, :meth:`pkg.envs.Env.step` and :meth:`pkg.Env.step`.\n\n"
        ".. currentmodule:: pkg.envs\n\n"
        "And :class:`Env` (relative to the current module), :func:`pkg.buffers.make_buffer`.\n"
    )
    docs = write_docs(tmp_path, {"api.rst": API, "page.rst": page})
    code, findings, _ = fixture_audit(run, docs, "--rule", "unlinkable-ref")
    found = unlinkable(findings)
    assert found == {
        (1, "pkg.Env"): "name the documented path: :class:`~pkg.envs.Env`",
        (1, "pkg.Env.step"): "name the documented path: :meth:`~pkg.envs.Env.step`",
        (5, "pkg.buffers.make_buffer"): found.get((5, "pkg.buffers.make_buffer"), ""),
    }
    assert found[(5, "pkg.buffers.make_buffer")].startswith("the docs tree documents it under no path")
    assert code == 1


def test_without_autodoc_in_the_docs_no_role_is_reported_as_undocumented(run: Run, tmp_path: Path) -> None:
    docs = write_docs(tmp_path, {"page.rst": "See :class:`pkg.Env` and :func:`pkg.buffers.make_buffer`.\n"})
    code, findings, _ = fixture_audit(run, docs, "--rule", "unlinkable-ref")
    assert unlinkable(findings) == {}
    assert code == 0


@pytest.mark.torchrl
def test_rlmaps_pages_against_torchrls_tree(
    torchrl_cache: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Pages generated without the tree link re-exports TorchRL does not document; the audit says
    which, with the documented path; pages generated with ``--docs`` audit clean."""
    if not TORCHRL_DOCS.is_dir():
        pytest.skip(f"TorchRL's docs tree is not here: expected {TORCHRL_DOCS} (../shared beside the repository)")
    import json

    def audit(pages: Path) -> list[dict[str, object]]:
        args = ["audit", "--docs", str(TORCHRL_DOCS), "--docs", str(pages), "--rule", "unlinkable-ref"]
        main([*args, "--format", "json", "--cache-dir", str(torchrl_cache), "-q", "--fail-on", "none"])
        findings = json.loads(capsys.readouterr().out)["findings"]
        return [f for f in findings if str(f["path"]).startswith(pages.name + "/") or "/rst/" in str(f["path"])]

    base = ["generate", "--format", "rst", "--cache-dir", str(torchrl_cache), "-q"]
    assert main([*base, "--out", str(tmp_path / "plain")]) == 0
    plain = audit(tmp_path / "plain" / "rst")
    assert any(
        f["name"] == "torchrl.envs.InitTracker"
        and f["suggestion"] == "name the documented path: :class:`~torchrl.envs.transforms.InitTracker`"
        for f in plain
    )
    assert len(plain) > 100
    assert main([*base, "--out", str(tmp_path / "linked"), "--docs", str(TORCHRL_DOCS)]) == 0
    assert audit(tmp_path / "linked" / "rst") == []
