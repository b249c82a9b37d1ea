"""What the pages read of the code is read once, and what is read the short way is what the long
way reads: a definition parsed from its own lines is the node the file's parse has, a suffix
lookup through the table of last parts finds what a scan finds, a function's call sites and an
attribute's accesses made once are handed out as they were, an edge found by bisection is the
edge a scan finds."""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path

from rlmap.index.records import CLASS, FUNCTION, METHOD, PROPERTY
from rlmap.index.source import SourceTree
from rlmap.model.codemodel import CodeModel
from rlmap.pages.refs import _UNPARSED, Refs
from tests.conftest import model_of

_DEFINED = (CLASS, FUNCTION, METHOD, PROPERTY)


def _full_parse(refs: Refs, path: str, line: int) -> ast.AST | None:
    tree = ast.parse("\n".join(refs.source_lines(path)))
    return next(
        (
            node
            for node in ast.walk(tree)
            if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.lineno == line
        ),
        None,
    )


def test_a_definition_read_from_its_own_lines_is_the_one_the_file_parse_has(
    torchrl_model: CodeModel, torchrl_source: SourceTree
) -> None:
    """Every class and function of three of torchrl's central files, decorated or not, nested or
    not: the same node, to its last line and column."""
    refs = Refs(torchrl_model, torchrl_source)
    files = (
        "torchrl/collectors/_single.py",
        "torchrl/envs/transforms/_env.py",
        "torchrl/modules/tensordict_module/rnn.py",
    )
    symbols = [s for s in torchrl_model.symbols() if s.path in files and s.kind in _DEFINED]
    assert len(symbols) > 250
    for symbol in symbols:
        found = refs.definition(symbol)
        expected = _full_parse(refs, symbol.path, symbol.line)
        assert expected is not None, symbol.qualname
        assert found is not None, symbol.qualname
        assert ast.dump(found, include_attributes=True) == ast.dump(expected, include_attributes=True), symbol.qualname
        if not symbol.decorators:  # (once its file is parsed, the file's index answers: ask directly)
            alone = refs._own_definition(symbol)
            assert alone is not _UNPARSED, symbol.qualname
            assert ast.dump(alone, include_attributes=True) == ast.dump(expected, include_attributes=True)
    read_alone = [node for node in refs._own.values() if node is not _UNPARSED]
    assert len(read_alone) > 200  # read from their own lines, not their file's parse
    assert set(refs._trees) <= set(files)  # the decorated ones needed their files, no other file


def test_a_definition_whose_lines_do_not_parse_alone_comes_from_its_file(
    make_package: Callable[[dict[str, str | bytes]], Path],
) -> None:
    root = make_package({"pkg/__init__.py": "", "pkg/m.py": "def f():\n    return 1\n\n\nclass C:\n    x = 1\n"})
    model = model_of(root, "pkg")
    refs = Refs(model, root)
    symbol = model.symbol("pkg.m.f")
    assert symbol is not None
    (root / "pkg" / "m.py").write_text("def f(\n    a=1):\n    return a\n", encoding="utf-8")  # the file moved on
    refs = Refs(model, root)
    found = refs.definition(symbol)  # lines 1-2 hold only part of the def now: the file is parsed
    assert isinstance(found, ast.FunctionDef)
    assert found.name == "f"
    assert "pkg/m.py" in refs._trees


def test_a_suffix_lookup_finds_what_a_scan_finds(torchrl_model: CodeModel) -> None:
    names = sorted(torchrl_model.qualnames())
    for query in ("rollout", "Collector.rollout", "_step", "forward", "InitTracker", "nothing_is_named_so", "a.b."):
        expected = sorted(name for name in names if name.endswith("." + query))
        assert torchrl_model.qualnames_ending("." + query) == expected, query  # scan, then table
    assert torchrl_model._by_last is not None  # the table was made


def test_call_sites_and_accesses_made_once_are_handed_out_as_they_were(torchrl_model: CodeModel) -> None:
    function = "torchrl.collectors._single.Collector.rollout"
    first = torchrl_model.call_sites(function)
    assert first
    first.clear()  # a caller may change its list: the next one is whole
    assert torchrl_model.call_sites(function) == torchrl_model.call_sites(function) != []
    name = next(name for name in torchrl_model.attribute_names() if torchrl_model.attribute_accesses(name))
    assert torchrl_model.attribute_accesses(name) is torchrl_model.attribute_accesses(name)  # a tuple, shared


def test_an_edge_found_by_bisection_is_the_one_a_scan_finds(torchrl_model: CodeModel) -> None:
    caller = "torchrl.collectors._single.Collector.rollout"
    callees = [edge.callee for edge in torchrl_model.callees(caller)]
    assert len(callees) > 20
    for callee in callees:
        edge = torchrl_model.edge(caller, callee)
        assert edge is not None
        assert (edge.caller, edge.callee) == (caller, callee)
    assert torchrl_model.edge(caller, "torchrl.no.such.function") is None
    assert torchrl_model.edge(caller, "") is None
    assert torchrl_model.edge(caller, "\U0010ffff") is None  # after every callee


def test_a_file_with_a_byte_order_mark_is_read_as_the_index_reads_it(
    make_package: Callable[[dict[str, str | bytes]], Path],
) -> None:
    """The index decodes a file without its byte-order mark: so do the pages, and a decorated
    definition (its file's parse) and an undecorated one (its own lines) are both found."""
    source = '"""Module."""\n\nimport functools\n\n\n@functools.cache\ndef g():\n    raise KeyError("k")\n\n\ndef f():\n    """F doc."""\n    return 1\n'
    root = make_package({"pkg/__init__.py": "", "pkg/m.py": b"\xef\xbb\xbf" + source.encode()})
    model = model_of(root, "pkg")
    refs = Refs(model, root)
    f, g = model.symbol("pkg.m.f"), model.symbol("pkg.m.g")
    assert f is not None
    assert g is not None
    assert refs.docstring(f) == "F doc."
    assert isinstance(refs.definition(g), ast.FunctionDef)
    assert refs.line_text("pkg/m.py", 1) == '"""Module."""'


def test_a_method_with_an_unindented_line_inside_is_summarized_from_its_definition(
    make_package: Callable[[dict[str, str | bytes]], Path],
) -> None:
    """A column-0 comment or string line inside a method is no reason to miss what it raises."""
    from rlmap.pages.sections.base import Context
    from rlmap.pages.sections.helpers import summarize

    source = "class C:\n    def f(self):\n        x = '''\nunindented'''\n# a comment at column 0\n        raise ValueError(x)\n"
    root = make_package({"pkg/__init__.py": "", "pkg/m.py": source})
    model = model_of(root, "pkg")
    context = Context(model, Refs(model, root), "test")
    assert summarize(context, "pkg.m.C.f", [], []).endswith("ends raising ValueError")


def test_a_file_is_read_as_the_index_read_it_whatever_its_encoding_and_newlines(make_package) -> None:  # type: ignore[no-untyped-def]
    """A PEP 263 cookie (Latin-1 here), a byte-order mark, ``\\r\\n`` and lone ``\\r`` newlines: the
    pages' line N is the index's line N, each definition's line holds it, and its docstring reads."""
    latin = "# -*- coding: latin-1 -*-\r\n\r\ndef caf\u00e9():\r\n    '''Cr\u00e8me.'''\r\n    return 1\r\n"
    marked = "\ufeff\rdef marked():\r    '''Marked.'''\r    return 2\r"
    root = make_package(
        {"enc/__init__.py": "", "enc/latin.py": latin.encode("latin-1"), "enc/marked.py": marked.encode()}
    )
    model = model_of(root, "enc")
    refs = Refs(model, root)
    for qualname, text, doc in (
        ("enc.latin.caf\u00e9", "def caf\u00e9():", "Cr\u00e8me."),
        ("enc.marked.marked", "def marked():", "Marked."),
    ):
        symbol = model.symbol(qualname)
        assert symbol is not None, qualname
        assert refs.line_text(symbol.path, symbol.line) == text
        assert refs.docstring(symbol) == doc
