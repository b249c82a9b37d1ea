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
    :template: rl_template.rst

    Env
"""
# an autosummary template as TorchRL's are written, showing members without a docstring too
TEMPLATE = """
.. currentmodule:: {{ module }}

{{ name | underline}}

.. autoclass:: {{ name }}
    :members:
    :undoc-members:
"""


def unlinkable(findings: list[dict[str, object]]) -> dict[tuple[object, object], str]:
    return {(f["line"], f["name"]): str(f["suggestion"]) for f in findings if f["rule"] == "unlinkable-ref"}


def test_a_role_the_tree_does_not_document_is_reported_with_the_documented_path(run: Run, tmp_path: Path) -> None:
    page = (
        "See :class:`pkg.Env`, :class:`pkg.envs.Env`, :meth:`pkg.envs.Env.step` and :meth:`pkg.Env.step`.\n\n"
        ".. currentmodule:: pkg.envs\n\n"
        "And :class:`Env` (relative to the current module), :func:`pkg.buffers.make_buffer`.\n"
    )
    docs = write_docs(tmp_path, {"api.rst": API, "page.rst": page, "_templates/rl_template.rst": TEMPLATE})
    code, findings, _ = fixture_audit(run, docs, "--rule", "unlinkable-ref")
    found = unlinkable(findings)
    assert found == {
        (1, "pkg.Env"): "name the documented path: :class:`~pkg.envs.Env`",
        (1, "pkg.Env.step"): "name the documented path: :meth:`~pkg.envs.Env.step`",
        (5, "pkg.buffers.make_buffer"): found.get((5, "pkg.buffers.make_buffer"), ""),
    }
    assert found[(5, "pkg.buffers.make_buffer")].startswith("the docs tree documents it under no path")
    assert code == 1


@pytest.mark.parametrize(
    ("options", "reported"),
    [
        (":members:\n    :undoc-members:\n", {}),  # every member the class defines is shown
        (":members:\n", {"Env.step": "without a docstring", "Env.reset": "without a docstring"}),  # neither has one
        ("", {"Env.step": "documents it under no path", "Env.reset": "documents it under no path"}),
        (None, {"Env.step": "documents it under no path", "Env.reset": "documents it under no path"}),
    ],
)
def test_roles_to_members_link_only_where_autodoc_shows_them(
    run: Run, tmp_path: Path, options: str | None, reported: dict[str, str]
) -> None:
    """A member links when its class's autodoc shows it: ``:members:`` shows those with a
    docstring (all of them with ``:undoc-members:``), no option none; an autosummary entry takes
    the options of its template (``None``: no ``:template:``, Sphinx's own, which shows none)."""
    api = API if options is not None else API.replace("    :template: rl_template.rst\n", "")
    template = TEMPLATE.replace("    :members:\n    :undoc-members:\n", f"    {options}" if options else "")
    page = ".. currentmodule:: pkg.envs\n\nSee :meth:`Env.step` and :meth:`Env.reset`.\n"
    docs = write_docs(tmp_path, {"api.rst": api, "page.rst": page, "_templates/rl_template.rst": template})
    _, findings, _ = fixture_audit(run, docs, "--rule", "unlinkable-ref")
    found = {name: hint for (_, name), hint in unlinkable(findings).items()}
    messages = {str(f["name"]): str(f["message"]) for f in findings if f["rule"] == "unlinkable-ref"}
    assert set(found) == set(reported)
    for name, why in reported.items():
        assert why in messages[name] or why in found[name]


def test_an_inherited_member_links_only_under_inherited_members(run: Run, tmp_path: Path) -> None:
    """``TransformedEnv.reset`` is ``Env.reset``: autodoc shows it on TransformedEnv only with
    ``:inherited-members:``."""
    api = ".. currentmodule:: pkg.envs\n\n.. autoclass:: TransformedEnv\n    :members:\n    :undoc-members:\n"
    page = "See :meth:`pkg.envs.TransformedEnv.reset`.\n"
    docs = write_docs(tmp_path, {"api.rst": api, "page.rst": page})
    _, findings, _ = fixture_audit(run, docs, "--rule", "unlinkable-ref")
    messages = [str(f["message"]) for f in findings if f["rule"] == "unlinkable-ref"]
    assert len(messages) == 1
    assert "inherited, and its class is documented without :inherited-members:" in messages[0]
    docs = write_docs(tmp_path, {"api.rst": api + "    :inherited-members:\n", "page.rst": page})
    _, findings, _ = fixture_audit(run, docs, "--rule", "unlinkable-ref")
    assert not [f for f in findings if f["rule"] == "unlinkable-ref"]


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


def test_automodule_makes_later_names_relative_to_its_module(run: Run, tmp_path: Path) -> None:
    """``.. automodule:: pkg.envs`` is autodoc's ``py:module``: ``:class:`TransformedEnv``` after
    it names ``pkg.envs.TransformedEnv`` (before it, in ``pkg.collector``, nothing)."""
    page = (
        ".. currentmodule:: pkg.collector\n\n"
        "Before: :class:`TransformedEnv`.\n\n"
        ".. automodule:: pkg.envs\n    :members:\n\n"
        "After: :class:`TransformedEnv`.\n"
    )
    docs = write_docs(tmp_path, {"page.rst": page})
    _, findings, _ = fixture_audit(run, docs, "--rule", "unlinkable-ref")
    found = [(f["line"], f["name"], f["message"]) for f in findings if f["rule"] == "unlinkable-ref"]
    assert found == [(3, "TransformedEnv", found[0][2] if found else "")]
    assert "not found from the current module pkg.collector" in found[0][2]


def test_the_docs_scan_reports_its_progress_page_by_page(tmp_path: Path) -> None:
    """The audit read and checked the docs with no progress at all (seconds, silent, in a log)."""
    from rlmap.audit.docscan import scan_docs

    docs = write_docs(tmp_path, {"a.rst": "A\n=\n", "b/c.md": "# C\n", "b/d.rst": "D\n=\n", "e.txt": "no page"})
    seen: list[tuple[str, int, int]] = []
    scan_docs([docs], docs, None, lambda phase, done, total: seen.append((phase, done, total)))
    assert seen == [("read", 1, 3), ("read", 2, 3), ("read", 3, 3)]


def test_a_path_a_package_serves_lazily_is_a_documented_path(run: Run, tmp_path: Path) -> None:
    """TorchRL documents transforms under ``torchrl.envs.transforms``, whose ``__getattr__``
    serves them lazily: a role naming another path was told the tree documents them under none."""
    import json

    root = tmp_path / "src"
    (root / "lazypkg" / "sub").mkdir(parents=True)
    (root / "lazypkg" / "_impl.py").write_text('class Thing:\n    """A thing."""\n')
    (root / "lazypkg" / "__init__.py").write_text("from lazypkg._impl import Thing\n")
    (root / "lazypkg" / "sub" / "__init__.py").write_text(
        '__all__ = ["Thing"]\n\n\ndef __getattr__(name):\n    from lazypkg import _impl\n\n'
        "    return getattr(_impl, name)\n"
    )
    api = ".. currentmodule:: lazypkg.sub\n\n.. autosummary::\n    :toctree: generated/\n\n    Thing\n"
    docs = write_docs(tmp_path, {"api.rst": api, "page.rst": "See :class:`lazypkg.Thing`.\n"})
    args = ["audit", "--source", str(root), "--package", "lazypkg", "--docs", str(docs), "--no-cache", "-q"]
    _, out, _ = run(*args, "--format", "json", "--rule", "unlinkable-ref", "--fail-on", "none")
    found = [f for f in json.loads(out)["findings"] if f["rule"] == "unlinkable-ref"]
    assert [(f["name"], f["suggestion"]) for f in found] == [
        ("lazypkg.Thing", "name the documented path: :class:`~lazypkg.sub.Thing`")
    ]


def test_an_attribute_documented_by_a_doc_comment_is_shown_by_members(run: Run, make_package, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """``#: Whether this writer stamps ...`` above ``tracks_generations: bool = False`` documents it
    for autodoc, which ``:members:`` then shows: the role links (it was reported as "without a
    docstring")."""
    import json

    root = make_package(
        {
            "ap/__init__.py": "",
            "ap/writers.py": """
                class Writer:
                    #: Whether this writer stamps storage slots.
                    #: Always ``False`` here.
                    tracks_generations: bool = False
                    limit = 3  #: The most it writes.
                    other = 1
                    mark = "x #: y"
            """,
        }
    )
    api = ".. currentmodule:: ap.writers\n\n.. autoclass:: Writer\n    :members:\n"
    page = (
        ".. currentmodule:: ap.writers\n\n"
        "See :attr:`Writer.tracks_generations`, :attr:`Writer.limit`, :attr:`Writer.other`, :attr:`Writer.mark`.\n"
    )
    docs = write_docs(tmp_path, {"api.rst": api, "page.rst": page})
    args = ("audit", "--source", str(root / "ap"), "--package", "ap", "--docs", str(docs), "--no-cache", "-q")
    _, out, _ = run(*args, "--rule", "unlinkable-ref", "--format", "json")
    found = {f["name"]: f["message"] for f in json.loads(out)["findings"]}
    assert sorted(found) == ["Writer.mark", "Writer.other"]  # (a "#:" inside a string is no comment)
    assert "without a docstring" in found["Writer.other"]
