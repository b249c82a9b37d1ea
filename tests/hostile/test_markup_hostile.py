"""Text copied from the analysed tree cannot inject markup into the pages, nor inflate them.

A pull request that only edits ``version.txt`` or a docstring must not put a ``raw`` directive,
an ``include`` or a ``<script>`` into TorchRL's built docs.  The pages are parsed with docutils
and markdown-it (what Sphinx and MyST use), not grepped.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from docutils import nodes
from docutils.core import publish_doctree
from docutils.parsers.rst import roles
from markdown_it import MarkdownIt

from tests.conftest import FIXTURES, Run

RAW = ".. raw:: html\n\n   <script>alert(1)</script>\n"
DOCSTRING = ".. include:: /etc/passwd <script>alert(2)</script> `x <javascript:alert(3)>`_ :download:`/etc/passwd`"


@pytest.fixture
def hostile_checkout(tmp_path: Path) -> Path:
    root = tmp_path / "checkout"
    shutil.copytree(FIXTURES / "pkg", root / "pkg")
    (root / "version.txt").write_text("0.1\n\n" + RAW + "x" * 100_000, encoding="utf-8")
    collector = root / "pkg" / "collector.py"
    text = collector.read_text(encoding="utf-8")
    text = text.replace(
        "    def _prepare(self):\n        data = {}",
        f'    def _prepare(self):\n        """{DOCSTRING}\n\n        {RAW}"""\n        data = {{}}',
    )
    text = text.replace('data.get("is_init")', 'data.get("is_init\\n\\n.. raw:: html\\n\\n   <script>k</script>")')
    collector.write_text(text, encoding="utf-8")
    return root


def _generate(run: Run, root: Path, out: Path) -> tuple[int, str, str]:
    profile = FIXTURES / "profile.toml"
    args = ["generate", "--source", str(root), "--package", "pkg", "--profile", str(profile), "--out", str(out)]
    return run(*args, "--no-cache", "-q")


def _rst_tree(text: str) -> nodes.document:
    for name in ("meth", "class", "func", "attr", "mod", "data", "term", "ref", "doc", "obj", "exc", "code"):
        roles.register_generic_role(name, nodes.literal)
    settings = {"report_level": 5, "halt_level": 5, "file_insertion_enabled": True, "raw_enabled": True}
    return publish_doctree(text, settings_overrides=settings)


def test_version_and_docstrings_cannot_inject_markup(run: Run, hostile_checkout: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    code, _, err = _generate(run, hostile_checkout, out)
    assert code == 0, err
    assert "ignored a version that does not look like one" in err
    total = 0
    for page in sorted(out.glob("rst/*.rst")):
        text = page.read_text(encoding="utf-8")
        total += len(text)
        tree = _rst_tree(text.replace(".. graphviz::", ".. note::").replace(".. toctree::", ".. note::"))
        assert not list(tree.findall(nodes.raw)), page.name
        assert "root:" not in text  # /etc/passwd was never included
        for reference in tree.findall(nodes.reference):
            assert not reference.get("refuri", "").startswith("javascript:"), page.name
    for page in sorted(out.glob("md/*.md")):
        text = page.read_text(encoding="utf-8")
        total += len(text)
        tokens = MarkdownIt("commonmark").parse(text)
        found = [t for t in tokens if t.type in ("html_block", "html_inline")]
        found += [c for t in tokens for c in (t.children or []) if c.type in ("html_block", "html_inline")]
        assert not [t for t in found if "script" in t.content], page.name
    assert total < 200_000  # a 100 kB version file does not inflate the pages


def test_the_docstring_still_reads_as_text(run: Run, hostile_checkout: Path, tmp_path: Path) -> None:
    """Escaped, not dropped: the reader sees the first line as written."""
    out = tmp_path / "out"
    assert _generate(run, hostile_checkout, out)[0] == 0
    page = (out / "rst" / "collectors_internals.rst").read_text(encoding="utf-8")
    tree = _rst_tree(page.replace(".. graphviz::", ".. note::"))
    assert ".. include:: /etc/passwd <script>alert(2)</script>" in tree.astext()
