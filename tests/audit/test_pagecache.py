"""Parsed pages and docstrings cached by content: the same parts as a fresh parse, a bad entry rebuilt,
and keys that cover every parser module."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from rlmap.audit.pagecache import NAMESPACE, PARSER_MODULES, parse_page
from rlmap.index.cache import Cache
from tests.conftest import Run

REPO = Path(__file__).parent.parent.parent
CORPUS = REPO.parent / "shared" / "torchrl-docs"
PAGES = [
    CORPUS / "docs" / "source" / "reference" / "collectors_internals.rst",
    CORPUS / "knowledge_base" / "ISAACLAB.md",
]


def _audit_imports(module: str) -> set[str]:
    tree = ast.parse((REPO / "rlmap" / f"{module.replace('.', '/')}.py").read_text(encoding="utf-8"))
    found = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
    return {name.removeprefix("rlmap.") for name in found if name.startswith("rlmap.audit.")}


def test_the_key_covers_every_audit_module_a_parse_runs() -> None:
    for module in PARSER_MODULES:
        assert _audit_imports(module) <= set(PARSER_MODULES), module


@pytest.mark.parametrize("page", PAGES, ids=lambda path: path.name)
def test_a_cached_parse_is_the_fresh_one_and_a_bad_entry_is_rebuilt(page: Path, tmp_path: Path) -> None:
    text = page.read_text(encoding="utf-8")
    markdown = page.suffix == ".md"
    fresh = parse_page(text, markdown, None)
    assert fresh.refs  # a page with references, so the comparison means something
    cache = Cache.at(tmp_path)
    assert parse_page(text, markdown, cache) == fresh
    (entry,) = (tmp_path / NAMESPACE).rglob("*.msgpack")
    assert parse_page(text, markdown, cache) == fresh  # read back from the entry
    assert cache.rejected == 0
    entry.write_bytes(entry.read_bytes()[:-5])  # truncated
    assert parse_page(text, markdown, cache) == fresh
    assert cache.rejected == 1
    assert parse_page(text, markdown, Cache.at(tmp_path)) == fresh  # rewritten whole


def test_a_warm_audit_reads_docstrings_and_pages_from_the_cache(run: Run, make_package, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    root = make_package(
        {
            "dc/__init__.py": '"""See :class:`dc.core.Gone`."""\n',
            "dc/core.py": 'class Thing:\n    """A thing; not :meth:`dc.core.Thing.gone`.\n\n    >>> from dc.core import Lost\n    """\n',
        }
    )
    docs = root / "docs"
    docs.mkdir()
    (docs / "page.rst").write_text("Uses :class:`dc.core.Thing` and :func:`dc.core.nothing`.\n")
    args = ["audit", "--source", str(root / "dc"), "--package", "dc", "--docs", str(docs), "--format", "json", "-q"]
    code, cold, _ = run(*args, "--cache-dir", str(tmp_path / "cache"))
    assert code == 1
    assert {f["name"] for f in json.loads(cold)["findings"]} >= {"dc.core.Gone", "dc.core.Thing.gone", "dc.core.Lost"}
    assert list((tmp_path / "cache" / "docstrings").rglob("*.msgpack"))
    assert list((tmp_path / "cache" / NAMESPACE).rglob("*.msgpack"))
    _, warm, _ = run(*args, "--cache-dir", str(tmp_path / "cache"))
    _, uncached, _ = run(*args, "--no-cache")
    assert warm == cold == uncached


def test_a_page_parsed_by_another_release_of_its_libraries_is_parsed_again(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The key names docutils', markdown-it's and its plugins' releases: an upgrade may read a
    page otherwise, so what an older release parsed is not served."""
    import importlib

    from rlmap.audit import pagecache
    from rlmap.index.cache import package_identity

    for name in pagecache.PARSER_LIBRARIES:  # the releases installed, each named
        installed = package_identity(Path(importlib.import_module(name).__file__ or "").parent)
        assert f"{name} {installed}" in pagecache._PARSERS
    text = PAGES[0].read_text(encoding="utf-8")
    cache = Cache.at(tmp_path)
    parse_page(text, False, cache)
    parsed: list[str] = []
    original = pagecache._parse
    monkeypatch.setattr(pagecache, "_parse", lambda *args: (parsed.append("parsed"), original(*args))[1])
    parse_page(text, False, cache)
    assert parsed == []  # the same releases: read from the cache
    monkeypatch.setattr(pagecache, "_PARSERS", pagecache._PARSERS.replace("docutils ", "docutils another-"))
    parse_page(text, False, cache)
    assert parsed == ["parsed"]
