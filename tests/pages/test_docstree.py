"""Linking into a docs tree: what it documents, which path a role targets, and glossary terms it defines."""

from __future__ import annotations

import shutil
import textwrap
import zlib
from pathlib import Path

import pytest

from rlmap.cli import main
from rlmap.pages.docstree import load_docs_tree
from rlmap.pages.refs import Refs
from tests.conftest import FIXTURES, model_of

CORPUS = Path(__file__).parents[2].parent / "shared" / "torchrl-docs"
TORCHRL_DOCS = CORPUS / "docs" / "source"


def needs_corpus() -> None:
    if not TORCHRL_DOCS.is_dir():
        pytest.skip(f"TorchRL's docs tree is not here: expected {TORCHRL_DOCS} (../shared beside the repository)")


def write_tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(textwrap.dedent(text).lstrip("\n"))
    return root


# The fixture package defines ``Env`` in ``pkg.envs.base`` and re-exports it as ``pkg.envs.Env``
# and ``pkg.Env`` (the shortest public path); this tree documents it as ``pkg.envs.Env``, and
# defines glossary terms that two of the fixture profile's terms use.
FIXTURE_TREE = {
    "reference/envs.rst": """
        Environments
        ============

        .. currentmodule:: pkg.envs

        .. autosummary::
            :toctree: generated/
            :template: class.rst

            Env
        """,
    "reference/collectors.rst": """
        Collectors
        ==========

        .. autoclass:: pkg.collector.Collector
            :members:
        """,
    "reference/glossary.rst": """
        Glossary
        ========

        .. glossary::

           Carrier
              The hand-written entry.

           replay buffer
              Where the items go, by hand.
        """,
}


def test_a_docs_tree_documents_autosummary_autoclass_and_their_members(tmp_path: Path) -> None:
    tree = load_docs_tree([write_tree(tmp_path / "docs", FIXTURE_TREE)])
    assert tree is not None
    assert tree.documents("pkg.envs.Env")
    assert tree.documents("pkg.envs.Env.step")  # a documented class documents its public members
    assert not tree.documents("pkg.envs.Env._step")
    assert not tree.documents("pkg.Env")  # another re-export is not what the tree documents
    assert tree.documents("pkg.collector.Collector.rollout")
    assert not tree.documents("pkg.buffers.make_buffer")
    assert tree.term("carrier") == "Carrier"
    assert tree.term("Replay Buffer") == "replay buffer"
    assert tree.term("is_init") == ""
    assert tree.term_document == "reference/glossary"


def test_member_options_come_from_the_directive_or_the_autosummary_template(tmp_path: Path) -> None:
    """autoclass options as written; an autosummary entry takes its template's, whichever file is
    read first; without ``:template:``, the tree's ``autosummary/class.rst`` or Sphinx's own
    (no member); a bare autoclass and an autosummary without ``:toctree:`` document no member."""
    template = ".. autoclass:: {{ name }}\n    :members:\n    :inherited-members:\n"
    files = {
        "a_page.rst": (
            ".. currentmodule:: pkg.envs\n\n.. autosummary::\n    :toctree: generated/\n"
            "    :template: zz_template.rst\n\n    Env\n\n"
            ".. autosummary::\n    :toctree: generated/\n\n    TransformedEnv\n\n"
            ".. autoclass:: pkg.collector.Collector\n\n"
            ".. autoclass:: pkg.buffers.Buffer\n    :members:\n    :undoc-members:\n"
        ),
        "table.rst": ".. currentmodule:: pkg\n\n.. autosummary::\n\n    helpers.helper\n",
        "_templates/zz_template.rst": template,
    }
    tree = load_docs_tree([write_tree(tmp_path / "docs", files)])
    assert tree is not None
    assert tree.documents("pkg.envs.Env.step")
    assert "pkg.envs.Env" in tree.inherited
    assert tree.documents("pkg.envs.TransformedEnv")
    assert not tree.documents("pkg.envs.TransformedEnv.reset")  # Sphinx's own class template
    assert tree.documents("pkg.collector.Collector")
    assert not tree.documents("pkg.collector.Collector.rollout")  # no :members:
    assert "pkg.buffers.Buffer" in tree.undocumented
    assert "pkg.buffers.Buffer" not in tree.inherited
    assert not tree.documents("pkg.helpers.helper")  # a table only: documented elsewhere, or not at all
    function = {**files, "_templates/zz_template.rst": ".. autofunction:: {{ name }}\n"}  # (TorchRL's rl_template_fun)
    tree = load_docs_tree([write_tree(tmp_path / "function", function)])
    assert tree is not None
    assert tree.documents("pkg.envs.Env")
    assert not tree.documents("pkg.envs.Env.step")  # autofunction shows no member, of a class too
    default = {**files, "_templates/autosummary/class.rst": ".. autoclass:: {{ name }}\n    :members:\n"}
    tree = load_docs_tree([write_tree(tmp_path / "other", default)])
    assert tree is not None
    assert tree.documents("pkg.envs.TransformedEnv.reset")


@pytest.mark.torchrl
def test_torchrl_members_link_as_its_templates_show_them(torchrl_model) -> None:  # type: ignore[no-untyped-def]
    """TorchRL documents EnvBase with ``rl_template.rst`` (members, inherited too) and
    TransformedEnv (under ``torchrl.envs.transforms``) with ``rl_template_noinherit.rst``: a member without a docstring, or inherited
    under the second, does not link."""
    from rlmap.pages.refs import links, unlinked_because

    needs_corpus()
    tree = load_docs_tree([TORCHRL_DOCS])
    assert tree is not None
    assert "torchrl.envs.EnvBase" in tree.inherited
    assert "torchrl.envs.transforms.TransformedEnv" in tree.with_members
    assert "torchrl.envs.transforms.TransformedEnv" not in tree.inherited
    rollout = "torchrl.envs.common.EnvBase.rollout"
    assert links(tree, "torchrl.envs.EnvBase.rollout", torchrl_model, rollout)
    assert "inherited" in unlinked_because(
        tree, "torchrl.envs.transforms.TransformedEnv.rollout", torchrl_model, rollout
    )
    step_and_reset = "torchrl.envs.common.EnvBase.step_and_maybe_reset"
    assert not torchrl_model.symbol(step_and_reset).has_docstring
    why = unlinked_because(tree, "torchrl.envs.EnvBase.step_and_maybe_reset", torchrl_model, step_and_reset)
    assert why.startswith("without a docstring")


def test_module_members_and_an_objects_inv(tmp_path: Path) -> None:
    docs = write_tree(
        tmp_path / "docs", {"api.rst": ".. module:: pkg.helpers\n\n.. automodule:: pkg.buffers\n   :members:\n"}
    )
    body = "pkg.envs.base.Env py:class 1 api.html#$ -\nenv batch size std:term -1 g.html#term-x -\n"
    header = b"# Sphinx inventory version 2\n# Project: x\n# Version: 1\n# The remainder of this file is compressed.\n"
    inventory = tmp_path / "objects.inv"
    inventory.write_bytes(header + zlib.compress(body.encode()))
    tree = load_docs_tree([docs, inventory])
    assert tree is not None
    assert tree.documents("pkg.helpers")
    assert tree.documents("pkg.buffers.make_buffer")
    assert tree.documents("pkg.buffers.Buffer.add")
    assert not tree.documents("pkg.buffers._hidden")
    assert tree.documents("pkg.envs.base.Env")
    assert tree.term("Env batch size") == "env batch size"


def test_a_role_targets_the_documented_path_and_an_undocumented_symbol_gets_none(tmp_path: Path) -> None:
    model = model_of(FIXTURES, "pkg")
    plain = Refs(model, FIXTURES)
    assert plain.ref("pkg.envs.base.Env").target == "pkg.Env"  # without a tree: the shortest public path
    assert plain.ref("pkg.buffers.make_buffer").role == "func"
    linked = Refs(model, FIXTURES, load_docs_tree([write_tree(tmp_path / "docs", FIXTURE_TREE)]))
    env = linked.ref("pkg.envs.base.Env")
    assert (env.role, env.target) == ("class", "pkg.envs.Env")
    # ``Env.step`` has no docstring: autoclass :members: (TorchRL's class template) does not show it
    assert linked.ref("pkg.envs.base.Env.step").role == ""
    helper = linked.ref("pkg.buffers.make_buffer")
    assert (helper.role, helper.target) == ("", "")  # the literal name and its source link only
    assert helper.anchor is not None


def generate_fixture(out: Path, *extra: str) -> None:
    args = ["generate", "--source", str(FIXTURES), "--package", "pkg", "--profile", str(FIXTURES / "profile.toml")]
    assert main([*args, "--out", str(out), "--no-cache", "-q", *extra]) == 0


def test_terms_the_docs_tree_defines_are_linked_not_redefined(tmp_path: Path) -> None:
    docs = write_tree(tmp_path / "docs", FIXTURE_TREE)
    generate_fixture(tmp_path / "out", "--docs", str(docs))
    rst = (tmp_path / "out" / "rst" / "glossary.rst").read_text()
    glossary = rst.split(".. glossary::", 1)[1].split("The docs' own glossary", 1)[0]
    assert "\n   is_init\n" in glossary  # the tree does not define it: rlmap does
    for defined in ("carrier", "shuttle", "Buffer", "replay buffer"):
        assert f"\n   {defined}\n" not in glossary
    assert ":term:`Carrier`\n" in rst
    assert "Former name" not in rst  # a former name feeds the audit; no sentence states it
    assert ":term:`replay buffer`\n" in rst
    assert "The state a collector keeps between steps." not in rst  # the tree's definition stands alone
    assert "read or written as an attribute on" in rst.split(":term:`Carrier`", 1)[1]  # with rlmap's live facts
    # links into the glossary from other pages name the tree's term
    assert ":term:`shuttle`" not in (tmp_path / "out" / "rst" / "collectors_internals.rst").read_text()
    md = (tmp_path / "out" / "md" / "glossary.md").read_text()
    assert "## carrier\n\nDefined in the docs' glossary (`reference/glossary`) as `Carrier`." in md
    assert "The state a collector keeps between steps." not in md
    assert "## is_init\n" in md


def test_pages_generated_inside_the_docs_tree_are_not_read_back_as_the_tree(tmp_path: Path) -> None:
    # the README's TorchRL setup: out inside docs. rlmap's own glossary is not TorchRL's: read
    # back, its terms were left out of the next run, and generate --check never passed
    docs = write_tree(tmp_path / "docs", FIXTURE_TREE)
    out = docs / "reference" / "rlmap"
    generate_fixture(out, "--docs", str(docs), "--format", "rst")
    first = {path: path.read_bytes() for path in sorted(out.rglob("*")) if path.is_file()}
    assert "\n   is_init\n" in (out / "rst" / "glossary.rst").read_text()
    generate_fixture(out, "--docs", str(docs), "--format", "rst")
    assert {path: path.read_bytes() for path in sorted(out.rglob("*")) if path.is_file()} == first
    generate_fixture(out, "--docs", str(docs), "--format", "rst", "--check")
    assert "is_init" not in load_docs_tree([docs]).terms  # type: ignore[union-attr]
    # a page written by hand beside them stays the tree's; so does a tree that is out itself
    (out / "rst" / "extra.rst").write_text("Extra\n=====\n\n.. glossary::\n\n   handmade\n      A term.\n")
    assert "handmade" in load_docs_tree([docs]).terms  # type: ignore[union-attr]
    generate_fixture(docs, "--docs", str(docs), "--format", "rst")
    generate_fixture(docs, "--docs", str(docs), "--format", "rst")
    tree = load_docs_tree([docs])
    assert tree is not None
    assert "carrier" in tree.terms  # the hand glossary, still read with out == docs
    assert ":term:`Carrier`" in (docs / "rst" / "glossary.rst").read_text()


def test_without_a_docs_tree_the_glossary_defines_every_term(tmp_path: Path) -> None:
    generate_fixture(tmp_path / "out")
    rst = (tmp_path / "out" / "rst" / "glossary.rst").read_text()
    assert "\n   carrier\n   shuttle\n" in rst
    assert "The docs' own glossary" not in rst


def test_a_missing_docs_tree_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["generate", "--source", str(FIXTURES), "--package", "pkg", "--profile", str(FIXTURES / "profile.toml")]
    code = main([*args, "--out", str(tmp_path / "out"), "--no-cache", "-q", "--docs", str(tmp_path / "nowhere")])
    assert code == 2
    assert "docs tree" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_sphinx_builds_a_hand_glossary_beside_the_generated_one_without_duplicate_terms(tmp_path: Path) -> None:
    from sphinx.cmd.build import build_main

    docs = write_tree(tmp_path / "docs", FIXTURE_TREE)
    generate_fixture(tmp_path / "out", "--docs", str(docs), "--format", "rst")
    source = tmp_path / "source"
    shutil.copytree(docs, source)
    shutil.copytree(tmp_path / "out" / "rst", source / "reference" / "internals")
    (source / "conf.py").write_text('extensions = ["sphinx.ext.graphviz", "sphinx.ext.autosummary"]\n')
    index = "Root\n====\n\n.. toctree::\n\n   reference/glossary\n   reference/internals/internals_index\n"
    (source / "index.rst").write_text(index)
    for page in ("envs", "collectors"):  # autodoc would import the code: these pages stay out of the build
        (source / "reference" / f"{page}.rst").unlink()
    warnings = tmp_path / "warnings.txt"
    code = build_main(["-W", "--keep-going", "-q", "-b", "text", "-w", str(warnings), str(source), str(tmp_path / "b")])
    assert "duplicate term" not in warnings.read_text()
    assert code == 0, warnings.read_text()
    built = (tmp_path / "b" / "reference" / "internals" / "glossary.txt").read_text()
    assert "Carrier" in built
    assert "is_init" in built


@pytest.mark.torchrl
def test_torchrl_docs_tree_targets() -> None:
    needs_corpus()
    tree = load_docs_tree([TORCHRL_DOCS])
    assert tree is not None
    assert tree.documents("torchrl.envs.transforms.InitTracker")
    assert not tree.documents("torchrl.envs.InitTracker")
    assert tree.documents("torchrl.collectors.Collector.rollout")
    assert not tree.documents("torchrl.objectives.dreamer_v3.td_lambda_return_estimate")
    assert {"carrier", "in_keys", "out_keys", "is_init", "trajectory id"} <= set(tree.terms)


@pytest.mark.torchrl
def test_torchrl_pages_link_what_torchrl_documents(tmp_path: Path) -> None:
    """Every role on the pages generated against TorchRL's tree names an object that tree documents."""
    needs_corpus()
    import re

    assert main(["generate", "--out", str(tmp_path / "out"), "--format", "rst", "-q", "--docs", str(TORCHRL_DOCS)]) == 0
    tree = load_docs_tree([TORCHRL_DOCS])
    assert tree is not None
    roles = [
        match.group(1)
        for page in sorted((tmp_path / "out" / "rst").glob("*.rst"))
        for match in re.finditer(r":(?:class|meth|func|attr|mod|data|obj|exc):`[^`<]*<([^>`]+)>`", page.read_text())
    ]
    assert len(roles) > 100
    assert [target for target in roles if not tree.documents(target)] == []
    text = "\n".join(page.read_text() for page in (tmp_path / "out" / "rst").glob("*.rst"))
    assert "<torchrl.envs.transforms.InitTracker>" in text
    assert "<torchrl.envs.InitTracker>" not in text
    assert "``td_lambda_return_estimate``" in text
    assert "td_lambda_return_estimate <" not in text
    glossary = (tmp_path / "out" / "rst" / "glossary.rst").read_text().split("The docs' own glossary", 1)[0]
    defined = {
        line.strip().lower() for line in glossary.split("\n") if line.startswith("   ") and not line.startswith("    ")
    }
    assert defined.isdisjoint(tree.terms), "a term TorchRL's glossary defines is defined again"


def test_autodoc_members_without_a_docstring_get_no_role(tmp_path: Path, make_package) -> None:  # type: ignore[no-untyped-def]
    """``autoclass :members:`` shows members that have a docstring; the others would not link."""
    root = make_package(
        {
            "lib/__init__.py": "from lib.core import Engine\n",
            "lib/core.py": '''
                class Engine:
                    """Runs things."""

                    def __init__(self):
                        self.speed = 1

                    def start(self):
                        """Start it."""

                    def stop(self):
                        pass

                    @property
                    def busy(self):
                        return False
            ''',
        }
    )
    model = model_of(root, "lib")
    tree = load_docs_tree([write_tree(tmp_path / "docs", {"api.rst": ".. autoclass:: lib.Engine\n   :members:\n"})])
    refs = Refs(model, root, tree)
    assert refs.ref("lib.core.Engine").target == "lib.Engine"
    assert refs.ref("lib.core.Engine.start").target == "lib.Engine.start"
    for undocumented in ("lib.core.Engine.stop", "lib.core.Engine.busy", "lib.core.Engine.__init__"):
        assert refs.ref(undocumented).role == "", undocumented  # a literal and its source link, no dead role
    assert refs.ref("lib.core.Engine.speed").role == ""  # assigned in __init__: autodoc does not see it


def test_a_folder_named_like_a_page_is_a_folder(tmp_path: Path) -> None:
    """``docs/old.rst/`` (a folder) crashed generate with an internal error (exit 70)."""
    docs = write_tree(tmp_path / "docs", FIXTURE_TREE)
    (docs / "old.rst").mkdir()
    (docs / "old.rst" / "inner.rst").write_text(".. glossary::\n\n   nested term\n      Found inside.\n")
    tree = load_docs_tree([docs])
    assert tree is not None
    assert "nested term" in tree.terms
    assert not tree.diagnostics
    generate_fixture(tmp_path / "out", "--docs", str(docs))


def test_a_page_that_is_not_utf8_is_skipped_with_a_diagnostic(tmp_path: Path) -> None:
    """generate read it with replacement characters and said nothing; the audit skips it, saying so."""
    docs = write_tree(tmp_path / "docs", FIXTURE_TREE)
    (docs / "latin.rst").write_bytes(b"Title\n=====\n\n.. glossary::\n\n   caf\xe9\n      A term.\n")
    tree = load_docs_tree([docs])
    assert tree is not None
    assert [str(d) for d in tree.diagnostics] == [
        "latin.rst:6: not valid UTF-8 (invalid continuation byte); file skipped"
    ]
    assert not any(term.startswith("caf") for term in tree.terms)


def test_a_broken_link_is_named_by_its_own_name(tmp_path: Path) -> None:
    """A page that is a link to nothing is said as the audit says it: by the page's name, not
    by the name of the file it points to."""
    docs = write_tree(tmp_path / "docs", FIXTURE_TREE)
    (docs / "moved.rst").symlink_to("gone.rst")
    tree = load_docs_tree([docs])
    assert tree is not None
    assert [str(d) for d in tree.diagnostics] == [
        "moved.rst:1: cannot read file: No such file or directory; file skipped"
    ]
