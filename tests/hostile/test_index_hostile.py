"""One bad file never aborts a run: every skipped or broken file is a ``path:line: why``
diagnostic, the run exits 3 and everything else is indexed.

Each test builds a small package holding the hostile entries next to good files, runs the
CLI (``rlmap graph``) or the per-file entry point of the indexer, and asserts the exact
diagnostics.  Nothing here imports the analysed code.
"""

from __future__ import annotations

import faulthandler
import inspect
import json
import multiprocessing
import os
import signal
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

import rlmap.index.decode
import rlmap.index.definitions
from rlmap.index.extract import extract_module
from rlmap.index.indexer import MAX_FILE_BYTES
from tests.conftest import Run

MakePackage = Callable[[dict[str, str | bytes]], Path]

# Enough good files that ``--jobs 2`` goes through the process pool (its threshold is 8).
GOOD = {f"pkg/good{index}.py": f"def good{index}():\n    return {index}\n" for index in range(9)}
GOOD_NODES = {f"pkg.good{index}.good{index}" for index in range(9)}

FORKS = sys.platform == "linux" and multiprocessing.get_start_method(allow_none=True) in (None, "fork")
needs_fork = pytest.mark.skipif(not FORKS, reason="the fault is injected into the parent and inherited by fork")


@pytest.fixture
def forking() -> Iterator[None]:
    """Workers forked from this process, whatever an earlier test set: importing torchrl (as the
    runtime tests do) makes ``spawn`` the default, and a spawned worker inherits no fault."""
    before = multiprocessing.get_start_method(allow_none=True)
    multiprocessing.set_start_method("fork", force=True)
    yield
    multiprocessing.set_start_method(before, force=True)


@contextmanager
def deadline(seconds: int, what: str) -> Iterator[None]:
    """Fail (instead of hanging the suite) when the block takes longer than ``seconds``."""

    def expire(*_: object) -> None:
        raise TimeoutError(f"still running after {seconds} s: {what}")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.fixture
def no_hang() -> Iterator[None]:
    with deadline(60, "something read a FIFO or a device"):
        yield


def graph(run: Run, root: Path, *options: str) -> tuple[int, set[str], list[str]]:
    """``rlmap graph`` over ``root/pkg``: exit code, node names, the ``pkg/...`` warnings."""
    if "--cache-dir" not in options:
        options = (*options, "--no-cache")
    code, out, err = run("graph", "--source", str(root / "pkg"), "--package", "pkg", "-q", *options)
    assert "Traceback" not in err
    assert code != 70, err
    nodes = {node["qualname"] for node in json.loads(out)["nodes"]}
    warnings = [line.removeprefix("rlmap: warning: ") for line in err.splitlines() if "warning: pkg/" in line]
    return code, nodes, warnings


# -- 1. a failure while extracting one file is that file's diagnostic ----------------------------


def test_whitespace_only_docstring_as_in_torch_is_indexed(run: Run, make_package: MakePackage) -> None:
    """torch/ao/ns/_numeric_suite_fx.py has ``\"\"\"\\n        \"\"\"`` docstrings: once exit 70."""
    root = make_package({"pkg/__init__.py": "", "pkg/blank.py": 'def f():\n    """\n        """\n    return 1\n'})
    code, nodes, warnings = graph(run, root)
    assert (code, warnings) == (0, [])
    assert "pkg.blank.f" in nodes
    index = extract_module(b'def f():\n    """\n        """\n', "pkg/blank.py")
    symbol = index.symbols[1]
    assert (symbol.qualname, symbol.has_docstring, symbol.doc_first_line) == ("pkg.blank.f", True, "")


def test_an_integer_too_long_to_print_in_decimal_is_indexed_and_compared(
    run: Run, make_package: MakePackage, tmp_path: Path
) -> None:
    """``0xfff...`` of 3,600 digits is valid Python, but ``repr`` of it raises: the file was
    skipped as an internal error (a subscript key) and ``diff`` exited 70 (a constant, a condition)."""
    big = "0x" + "f" * 3600
    guarded = (
        f"def h(n):\n    if n == {big}:\n        return 1\n    return 2\n"  # (a condition: ast.unparse raised too)
    )
    body = f"def f(td):\n    return td[{big}]\n\n\ndef g():\n    return {big}\n\n\n{guarded}"
    root = make_package({"pkg/__init__.py": "", "pkg/big.py": body})
    code, nodes, warnings = graph(run, root)
    assert (code, warnings) == (0, [])
    assert {"pkg.big.f", "pkg.big.g"} <= set(nodes)
    other = tmp_path / "other"
    (other / "pkg").mkdir(parents=True)
    (other / "pkg" / "__init__.py").write_text("")
    (other / "pkg" / "big.py").write_text(
        f"def g():\n    return {big}f\n\n\n" + guarded.replace("return 2", "return 3")
    )
    code, out, err = run("diff", str(root), str(other), "--package", "pkg", "--format", "json")
    assert code == 0, err
    assert [(c["what"], c["old"]) for c in json.loads(out)["changes"]] == [("removed", "pkg.big.f")]


@pytest.mark.parametrize("jobs", ["1", pytest.param("2", marks=needs_fork)])
@pytest.mark.usefixtures("forking")
def test_a_bug_met_in_one_file_is_that_files_diagnostic(
    run: Run, make_package: MakePackage, monkeypatch: pytest.MonkeyPatch, jobs: str
) -> None:
    """Any exception raised while indexing a file skips that file only, in or out of the pool."""
    first_line = rlmap.index.definitions.first_line

    def buggy(docstring: str | None) -> str:
        if docstring and "BOOM" in docstring:
            raise ValueError("a bug in rlmap\nover two lines")
        return first_line(docstring)

    monkeypatch.setattr(rlmap.index.definitions, "first_line", buggy)
    root = make_package({"pkg/__init__.py": "", **GOOD, "pkg/bad.py": 'def f():\n    """BOOM"""\n'})
    code, nodes, warnings = graph(run, root, "--jobs", jobs)
    assert code == 3
    assert warnings == [
        "pkg/bad.py:1: internal error while indexing: ValueError: a bug in rlmap over two lines; "
        "file skipped — please report"
    ]
    assert nodes >= GOOD_NODES
    assert "pkg.bad.f" not in nodes


# -- 2. deep expressions ----------------------------------------------------------------------------

DEEP = {
    "pkg/attributes.py": "ok = 1\n\nx = " + ".".join(["a"] * 100_000) + "\n",  # 100,000-long a.a.a...
    "pkg/nots.py": "ok = 1\nx = " + "not " * 3_000 + "a\n",
    "pkg/lambdas.py": "ok = 1\nok = 2\nok = 3\nx = " + "lambda: " * 5_000 + "a\n",
    # flat for Python's parser, 100,000 levels deep for libcst (whose native parser would crash)
    "pkg/ands.py": "x = " + " and ".join(["a"] * 100_000) + "\n",
    "pkg/strings.py": "ok = 1\nx = (" + " ".join(['"a"'] * 5_000) + ")\n",
    "pkg/imports.py": "import " + ".".join(["a"] * 2_000) + "\n",
    "pkg/elifs.py": "x = 1\nif x:\n    pass\n" + "elif x:\n    pass\n" * 2_000,
}
DEEP_WARNINGS = [
    "pkg/ands.py:1: nesting too deep to index (100004 levels, limit 500); file skipped",
    "pkg/attributes.py:3: nesting too deep to index (deeper than Python's own parser allows); file skipped",
    "pkg/elifs.py:4002: nesting too deep to index (2004 levels, limit 500); file skipped",
    "pkg/imports.py:1: nesting too deep to index (1999 dots in a dotted name, limit 500); file skipped",
    "pkg/lambdas.py:4: nesting too deep to index (deeper than Python's own parser allows); file skipped",
    "pkg/nots.py:2: nesting too deep to index (deeper than Python's own parser allows); file skipped",
    "pkg/strings.py:2: nesting too deep to index (5002 levels, limit 500); file skipped",
]


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_deep_expressions_are_diagnosed_and_the_rest_indexed(run: Run, make_package: MakePackage, jobs: str) -> None:
    root = make_package({"pkg/__init__.py": "", **GOOD, **DEEP})
    code, nodes, warnings = graph(run, root, "--jobs", jobs)
    assert code == 3
    assert warnings == DEEP_WARNINGS
    assert nodes >= GOOD_NODES


@pytest.mark.parametrize("continued", [False, True], ids=["one-line", "backslashes"])
def test_long_dotted_import_is_refused_before_pythons_quadratic_parser(continued: bool) -> None:
    """CPython's parser takes 30 s on ``import a.a.a...`` 100,000 parts long (quadratic)."""
    separator = ".\\\n" if continued else "."
    code = "ok = 1\n\nfrom " + separator.join(["a"] * 100_000) + " import b\nok = 2\n"
    with deadline(10, "the dotted import reached ast.parse"):
        index = extract_module(code.encode(), "pkg/m.py")
    assert [str(diagnostic) for diagnostic in index.diagnostics] == [
        "pkg/m.py:3: nesting too deep to index (99999 dots in a dotted name, limit 500); file skipped"
    ]


def test_deep_but_indexable_expressions_are_indexed() -> None:
    """Below the limit nothing is lost: 400 chained attributes, 400 ``and``, 400 string parts."""
    code = "\n".join(
        [
            "x = " + ".".join(["a"] * 400),
            "y = " + " and ".join(["a"] * 400),
            "z = (" + " ".join(['"a"'] * 400) + ")",
            "def f():\n    return 1",
        ]
    )
    index = extract_module(code.encode(), "pkg/m.py")
    assert index.diagnostics == ()
    assert [(symbol.qualname, symbol.line) for symbol in index.symbols[1:]] == [
        ("pkg.m.x", 1),
        ("pkg.m.y", 2),
        ("pkg.m.z", 3),
        ("pkg.m.f", 4),
    ]


def test_recursion_error_while_walking_is_a_diagnostic_on_the_deep_line() -> None:
    """Python's recursion limit met below the nesting limit: the deep line is still named."""
    code = b"ok = 1\n\nx = " + b".".join([b"a"] * 300) + b"\n"
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(len(inspect.stack()) + 150)
    try:
        index = extract_module(code, "pkg/m.py")
    finally:
        sys.setrecursionlimit(limit)
    assert [str(diagnostic) for diagnostic in index.diagnostics] == [
        "pkg/m.py:3: nesting too deep to index; file skipped"
    ]


@needs_fork
@pytest.mark.usefixtures("forking")
def test_a_crashed_worker_is_the_diagnostic_of_the_file_that_killed_it(
    run: Run, make_package: MakePackage, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    """Without the nesting limit, libcst's native parser overflows its stack on 50,000 ``and``
    and the worker process dies: the pool breaks, the unfinished files are parsed again one
    process each, the one that dies again is the diagnostic."""
    monkeypatch.setattr(rlmap.index.decode, "MAX_NESTING", 10**9)  # inherited by the forked workers
    if faulthandler.is_enabled():  # pytest's: the dying workers would print their stacks
        faulthandler.disable()
        request.addfinalizer(lambda: faulthandler.enable(file=sys.__stderr__))
    crash = "x = " + " and ".join(["a"] * 50_000) + "\n"
    root = make_package({"pkg/__init__.py": "", **GOOD, "pkg/crash.py": crash})
    code, nodes, warnings = graph(run, root, "--jobs", "2")
    assert code == 3
    assert warnings == [
        "pkg/crash.py:1: the indexing process died on this file (a crash in the parser); file skipped — please report"
    ]
    assert nodes >= GOOD_NODES


# -- 3. entries that are not regular files, bad names, links out of the tree ------------------------


@pytest.mark.usefixtures("no_hang")
def test_special_entries_are_skipped_with_a_diagnostic_never_read(
    run: Run, make_package: MakePackage, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    (outside / "sub").mkdir(parents=True)
    (outside / "secret.py").write_text("def secret():\n    pass\n")
    (outside / "sub" / "leak.py").write_text("def leak():\n    pass\n")
    root = make_package({"pkg/__init__.py": "", **GOOD, "pkg/inner/__init__.py": "def inner():\n    pass\n"})
    package = root / "pkg"
    os.mkfifo(package / "fifo.py")
    (package / "zero.py").symlink_to("/dev/zero")
    (package / "stdin.py").symlink_to("/dev/stdin")
    (package / "secret.py").symlink_to(outside / "secret.py")
    (package / "outdir").symlink_to(outside / "sub")
    (package / "gone").symlink_to(tmp_path / "nowhere")
    (package / "inner" / "loop").symlink_to("..")
    (package / "alias.py").symlink_to("good0.py")  # inside the tree: read, as Python would
    (package / "notes.txt").symlink_to("/dev/zero")  # not code: ignored silently
    (Path(os.fsdecode(bytes(package) + b"/caf\xe9.py"))).write_text("def cafe():\n    pass\n")
    (Path(os.fsdecode(bytes(package) + b"/d\xe9j\xe0"))).mkdir()
    expected = [
        "pkg/caf\\xe9.py:1: name is not valid UTF-8; skipped",
        "pkg/d\\xe9j\\xe0:1: name is not valid UTF-8; skipped",
        "pkg/fifo.py:1: not a regular file (a FIFO); file skipped",
        "pkg/gone:1: broken symbolic link; skipped",
        "pkg/inner/loop:1: symbolic link loop; directory skipped",
        "pkg/outdir:1: symbolic link to outside the package; not followed, skipped",
        "pkg/secret.py:1: symbolic link to outside the package; not followed, skipped",
        "pkg/stdin.py:1: symbolic link to outside the package; not followed, skipped",
        "pkg/zero.py:1: symbolic link to outside the package; not followed, skipped",
    ]
    cache = tmp_path / "cache"  # the cache keys of a tree with a non-UTF-8 name
    for _ in range(2):  # cold, then from the cache: the same report
        code, nodes, warnings = graph(run, root, "--cache-dir", str(cache))
        assert code == 3
        assert warnings == expected
        assert nodes >= {*GOOD_NODES, "pkg.inner.inner", "pkg.alias.good0"}
        assert not {"pkg.secret.secret", "pkg.outdir.leak.leak", "pkg.caf\udce9.cafe"} & nodes


@pytest.mark.usefixtures("no_hang")
def test_an_entry_skipped_after_a_cached_run_is_still_reported(
    run: Run, make_package: MakePackage, tmp_path: Path
) -> None:
    root = make_package({"pkg/__init__.py": "", **GOOD})
    cache = str(tmp_path / "cache")
    assert graph(run, root, "--cache-dir", cache)[0] == 0
    os.mkfifo(root / "pkg" / "fifo.py")
    code, _, warnings = graph(run, root, "--cache-dir", cache)
    assert (code, warnings) == (3, ["pkg/fifo.py:1: not a regular file (a FIFO); file skipped"])


def test_unlistable_directory_is_a_diagnostic_even_for_root(run: Run, make_package: MakePackage) -> None:
    """A directory whose path is longer than PATH_MAX cannot be listed, whoever runs."""
    root = make_package({"pkg/__init__.py": "", **GOOD})
    descriptor = os.open(root / "pkg", os.O_RDONLY)
    names = [f"d{level:02d}" + "x" * 200 for level in range(22)]
    for name in names:
        os.mkdir(name, dir_fd=descriptor)
        inner = os.open(name, os.O_RDONLY, dir_fd=descriptor)
        os.close(descriptor)
        descriptor = inner
    file = os.open("lost.py", os.O_WRONLY | os.O_CREAT, dir_fd=descriptor)
    os.write(file, b"def lost():\n    pass\n")
    os.close(file)
    os.close(descriptor)
    code, nodes, warnings = graph(run, root)
    assert code == 3
    [warning] = warnings
    shown, _, why = warning.partition(":1: ")
    assert why == "cannot list directory: File name too long; directory skipped"
    # the first directory of the chain whose absolute path is longer than PATH_MAX
    assert "/".join(["pkg", *names]).startswith(shown + "/")
    assert len(f"{root}/{shown}") >= 4096 > len(f"{root}/{shown.rpartition('/')[0]}")
    assert nodes >= GOOD_NODES


@pytest.mark.skipif(os.geteuid() == 0, reason="root lists a chmod 000 directory; see the PATH_MAX test")
def test_unreadable_directory_is_a_diagnostic(run: Run, make_package: MakePackage) -> None:
    root = make_package({"pkg/__init__.py": "", **GOOD, "pkg/locked/hidden.py": "x = 1\n"})
    (root / "pkg" / "locked").chmod(0)
    try:
        code, nodes, warnings = graph(run, root)
    finally:
        (root / "pkg" / "locked").chmod(0o755)
    assert code == 3
    assert warnings == ["pkg/locked:1: cannot list directory: Permission denied; directory skipped"]
    assert nodes >= GOOD_NODES


def test_a_file_of_too_many_tokens_is_skipped_before_libcst(run: Run, make_package: MakePackage) -> None:
    """700 KB of ``1,``: libcst would hold ~2 GB for it (16 MB of such text, under the size
    limit, ~40 GB): skipped with a diagnostic, the rest indexed."""
    root = make_package({"pkg/__init__.py": "", **GOOD})
    (root / "pkg" / "wide.py").write_bytes(b"x = [" + b"1," * 350_000 + b"]\n")
    code, nodes, warnings = graph(run, root)
    assert code == 3
    assert warnings == ["pkg/wide.py:1: too many tokens to index (700,005, limit 600,000); file skipped"]
    assert nodes >= GOOD_NODES
    (root / "pkg" / "wide.py").write_bytes(b"\n" * 700_000 + b"x = 1\n")  # blank lines are nodes too
    code, nodes, warnings = graph(run, root)
    assert warnings == ["pkg/wide.py:1: too many tokens to index (700,004, limit 600,000); file skipped"]


def test_a_file_name_holding_a_newline_stays_on_its_line(run: Run, make_package: MakePackage) -> None:
    """``x\n::error file=pwn::injected.py``: a line of its own in a CI log would be a GitHub Actions
    workflow command."""
    root = make_package({"pkg/__init__.py": "", **GOOD})
    (root / "pkg" / "x\n::error file=pwn::injected.py").write_bytes(b"def f():\n    pass\n")
    code, nodes, warnings = graph(run, root)
    assert code == 3
    # skipped by name (a module named so would carry the newline into pages and reports), said on one line
    assert warnings == ["pkg/x\\x0a::error file=pwn::injected.py:1: name holds a control character; skipped"]
    assert nodes >= GOOD_NODES


def test_oversized_file_is_skipped_unread(run: Run, make_package: MakePackage) -> None:
    root = make_package({"pkg/__init__.py": "", **GOOD})
    with open(root / "pkg" / "huge.py", "wb") as handle:  # sparse: nothing is written
        handle.truncate(MAX_FILE_BYTES + 1)
    code, nodes, warnings = graph(run, root)
    assert code == 3
    assert warnings == ["pkg/huge.py:1: file too large (16 MB, limit 16 MB); file skipped"]
    assert nodes >= GOOD_NODES


# -- 4. valid but unusual source -----------------------------------------------------------------


@pytest.mark.parametrize("newline", [b"\r", b"\r\n"], ids=["cr", "crlf"])
def test_cr_and_crlf_line_endings_are_indexed_with_their_lines(
    run: Run, make_package: MakePackage, newline: bytes
) -> None:
    lines = [b"import os", b"", b"def f(a):", b"    if a:", b"        return os.path.join(a)", b"    return g()", b""]
    lines += [b"def g():", b'    return """x', b'y"""', b"", b"class C:", b"    def m(self):", b"        f(1)"]
    root = make_package({"pkg/__init__.py": "", "pkg/mac.py": newline.join(lines) + newline})
    code, out, err = run("graph", "--source", str(root / "pkg"), "--package", "pkg", "-q", "--no-cache")
    assert code == 0, err
    graph_data = json.loads(out)
    lines_of = {node["qualname"]: (node["line"], node["end_line"]) for node in graph_data["nodes"] if node["path"]}
    assert lines_of == {
        "pkg": (1, 1),
        "pkg.mac": (1, 14),
        "pkg.mac.f": (3, 6),
        "pkg.mac.g": (8, 10),
        "pkg.mac.C": (12, 14),
        "pkg.mac.C.m": (13, 14),
    }
    edges = {(edge["caller"], edge["callee"]) for edge in graph_data["edges"]}
    assert ("pkg.mac.f", "pkg.mac.g") in edges
    assert ("pkg.mac.C.m", "pkg.mac.f") in edges


@pytest.mark.parametrize(
    ("data", "line"),
    [(b"x = 1\ny\0 = 2\n", 2), (b"x = 1\r\ry = 2\r\0\r", 4), (b'"""doc\n\n"""\nx = "\0"\n', 4)],
    ids=["lf", "cr", "in-a-string"],
)
def test_nul_byte_is_reported_on_its_line(data: bytes, line: int) -> None:
    index = extract_module(data, "pkg/nul.py")
    assert [str(diagnostic) for diagnostic in index.diagnostics] == [
        f"pkg/nul.py:{line}: NUL byte in the source (Python refuses it); file skipped"
    ]


def test_nul_byte_through_the_cli(run: Run, make_package: MakePackage) -> None:
    root = make_package({"pkg/__init__.py": "", **GOOD, "pkg/nul.py": b"x = 1\ny\0 = 2\n"})
    code, nodes, warnings = graph(run, root)
    assert code == 3
    assert warnings == ["pkg/nul.py:2: NUL byte in the source (Python refuses it); file skipped"]
    assert nodes >= GOOD_NODES


# -- 5. source encodings --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "value"),
    [
        (b'# -*- coding: latin-1 -*-\nname = "caf\xe9"\n', '"café"'),
        (b'#!/usr/bin/env python\n# vim: set fileencoding=cp1252 :\nname = "\x80"\n', '"€"'),
        (b'\xef\xbb\xbfname = "caf\xc3\xa9"\n', '"café"'),  # a UTF-8 BOM
        (b'# coding: utf-8\nname = "caf\xc3\xa9"\n', '"café"'),
    ],
    ids=["latin-1", "cp1252-line-2", "bom", "utf-8-cookie"],
)
def test_source_is_decoded_as_python_decodes_it(data: bytes, value: str) -> None:
    index = extract_module(data, "pkg/enc.py")
    assert index.diagnostics == ()
    name = next(symbol for symbol in index.symbols if symbol.qualname == "pkg.enc.name")
    assert (name.value, name.line) == (value, data.count(b"\n"))


@pytest.mark.parametrize(
    ("data", "diagnostic"),
    [
        (b"# coding: klingon\nx = 1\n", "1: bad encoding declaration (unknown encoding: klingon)"),
        (b"#!/bin/python\n# coding: rot13\n", "2: bad encoding declaration ('rot13' is not a text encoding"),
        (b'# coding: utf-8\nx = 1\ny = "\xe9"\n', "3: not valid UTF-8 (invalid continuation byte)"),
        (b'x = 1\r\ry = "\xe9"\r', "3: not valid UTF-8 (invalid continuation byte)"),
        (b"\xef\xbb\xbf# coding: latin-1\nx = 1\n", "1: bad encoding declaration (encoding problem: utf-8)"),
        (b"# coding: punycode\nx = 1\n", "1: cannot be decoded as punycode ("),
        (b"# coding: undefined\nx = 1\n", "1: cannot be decoded as undefined ("),
        (b"# coding: " + b"a" * 100_000 + b"\nx = 1\n", "1: bad encoding declaration (unknown encoding: aaa"),
    ],
    ids=["unknown", "not-text", "bad-utf-8", "bad-utf-8-cr", "bom-disagrees", "punycode", "undefined", "huge-name"],
)
def test_undecodable_source_is_a_diagnostic_on_its_line(data: bytes, diagnostic: str) -> None:
    index = extract_module(data, "pkg/enc.py")
    [found] = index.diagnostics
    assert str(found).startswith(f"pkg/enc.py:{diagnostic}")
    assert str(found).endswith("; file skipped")
    assert len(str(found)) < 400  # the file's words quoted, bounded
    assert index.symbols == ()


def test_coding_cookie_through_the_cli(run: Run, make_package: MakePackage) -> None:
    root = make_package(
        {
            "pkg/__init__.py": "",
            "pkg/latin.py": b'# -*- coding: latin-1 -*-\ndef caf\xe9():\n    return "\xe9"\n',
            "pkg/broken.py": b"# coding: klingon\nx = 1\n",
        }
    )
    code, nodes, warnings = graph(run, root)
    assert code == 3
    assert warnings == ["pkg/broken.py:1: bad encoding declaration (unknown encoding: klingon); file skipped"]
    assert "pkg.latin.café" in nodes
