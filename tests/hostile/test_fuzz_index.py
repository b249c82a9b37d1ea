"""Fuzz the index with mutated copies of real torchrl files.

Each of 30 real files (40 to 400 lines, read from the installed torchrl, never imported) is
mutated 11 ways with a seeded generator: 330 files.  For each, the indexer's per-file entry
point must return (no exception: no traceback, no exit 70), report no internal error, and
give a ``path:line: why`` diagnostic exactly when the file cannot be indexed: whenever
Python's own compiler refuses the bytes, and on the line it names for a syntax error.  A
small tree of mutated files then goes through ``rlmap graph`` end to end, in the process pool.
"""

from __future__ import annotations

import ast
import json
import random
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from rlmap.index.indexer import _extract
from rlmap.index.records import ModuleIndex
from rlmap.index.source import SourceTree
from tests.conftest import Run, write_package

SEED = 20240614
BASES = 30
TENSORDICT = ("tensordict",)  # the fuzzed files go through the key visitor too
_DIAGNOSTIC = re.compile(r"[^:]+\.py:[1-9][0-9]*: \S.*; (?:file|directory)? ?skipped.*")


@dataclass(frozen=True)
class Mutant:
    path: str  # repo-relative, as the indexer names it
    data: bytes
    how: str  # the mutations applied, for failure messages


def _split(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True)


def delete_lines(rng: random.Random, data: bytes) -> bytes:
    lines = _split(data)
    for _ in range(rng.randint(1, 5)):
        if lines:
            del lines[rng.randrange(len(lines))]
    return b"".join(lines)


def duplicate_lines(rng: random.Random, data: bytes) -> bytes:
    lines = _split(data)
    for _ in range(rng.randint(1, 5)):
        index = rng.randrange(len(lines))
        lines.insert(index, lines[index])
    return b"".join(lines)


def flip_bytes(rng: random.Random, data: bytes) -> bytes:
    buffer = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        buffer[rng.randrange(len(buffer))] ^= 1 << rng.randrange(8)
    return bytes(buffer)


def truncate(rng: random.Random, data: bytes) -> bytes:
    return data[: rng.randrange(len(data))]


def insert_nul(rng: random.Random, data: bytes) -> bytes:
    position = rng.randrange(len(data))
    return data[:position] + b"\0" + data[position:]


def cr_only(rng: random.Random, data: bytes) -> bytes:  # noqa: ARG001 - same signature as the others
    return data.replace(b"\r\n", b"\n").replace(b"\n", b"\r")


def crlf(rng: random.Random, data: bytes) -> bytes:  # noqa: ARG001
    return data.replace(b"\n", b"\r\n")


def latin1_cookie(rng: random.Random, data: bytes) -> bytes:
    """Re-encode as latin-1 under a coding cookie (plus a non-ASCII name in a comment)."""
    text = data.decode("utf-8", errors="replace")
    extra = "# caf\u00e9 " + "".join(rng.choice("\u00e0\u00e9\u00fc\u00df") for _ in range(5)) + "\n"
    return ("# -*- coding: latin-1 -*-\n" + extra + text).encode("latin-1", errors="replace")


def insert_junk(rng: random.Random, data: bytes) -> bytes:
    junk = bytes(rng.choice(b"\r\x0c\x0b\t\\\"'([{}])#:\x80\xff\xe9 ab") for _ in range(rng.randint(1, 12)))
    position = rng.randrange(len(data))
    return data[:position] + junk + data[position:]


_DEEP: list[Callable[[int], str]] = [
    lambda n: "x = " + ".".join(["a"] * n),
    lambda n: "x = " + "not " * n + "a",
    lambda n: "x = " + "lambda: " * n + "a",
    lambda n: "x = " + " and ".join(["a"] * n),
    lambda n: "x = a" + "[0]" * n,
    lambda n: "x = a" + "()" * n,
    lambda n: "x = " + "-" * n + "a",
    lambda n: "x = (" + " ".join(['"s"'] * n) + ")",
    lambda n: "import " + ".".join(["a"] * n),
    lambda n: "x = " + "+".join(["a"] * n),
]


def deep_nesting(rng: random.Random, data: bytes) -> bytes:
    """A deeply nested statement at a top-level line (between statements, or not)."""
    lines = _split(data)
    top = [index for index, line in enumerate(lines) if line[:1].isalpha()] or [0]
    # (100,000-long chains are in test_index_hostile: Python's own compiler, the oracle
    # here, takes 30 s on a 100,000-part ``import a.a...``)
    depth = rng.choice([50, 300, 499, 600, 2_000, 3_500, 20_000])
    statement = rng.choice(_DEEP)(depth).encode() + b"\n"
    lines.insert(rng.choice(top), statement)
    return b"".join(lines)


MUTATIONS: list[Callable[[random.Random, bytes], bytes]] = [
    delete_lines,
    duplicate_lines,
    flip_bytes,
    truncate,
    insert_nul,
    cr_only,
    crlf,
    latin1_cookie,
    insert_junk,
    deep_nesting,
]


def mutants(source: SourceTree) -> list[Mutant]:
    rng = random.Random(SEED)
    candidates = []
    for path in source.python_files():
        data = path.read_bytes()
        if 40 <= data.count(b"\n") <= 400:
            candidates.append((source.relpath(path), data))
    found = []
    for base, data in rng.sample(candidates, BASES):
        stem = base[: -len(".py")]
        for number, mutation in enumerate(MUTATIONS):
            found.append(Mutant(f"{stem}_m{number}.py", mutation(rng, data), mutation.__name__))
        first, second = rng.sample(MUTATIONS, 2)  # and one pair of mutations
        found.append(
            Mutant(f"{stem}_m{len(MUTATIONS)}.py", second(rng, first(rng, data)), f"{first.__name__}+{second.__name__}")
        )
    return found


def python_refuses(data: bytes) -> tuple[bool, int | None]:
    """Whether CPython's compiler refuses the bytes; the line of a syntax error."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(data, "<mutant>", "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as error:
        return True, error.lineno
    except (ValueError, RecursionError, MemoryError, UnicodeDecodeError):
        return True, None
    return False, None


def problems_of(mutant: Mutant, index: ModuleIndex) -> list[str]:
    """What is wrong with the index of one mutant (empty: all good)."""
    found: list[str] = []
    refused, syntax_line = python_refuses(mutant.data)
    texts = [str(diagnostic) for diagnostic in index.diagnostics]
    line_count = mutant.data.count(b"\n") + mutant.data.count(b"\r") - mutant.data.count(b"\r\n") + 1
    for text, diagnostic in zip(texts, index.diagnostics, strict=True):
        if "internal error" in text or "died" in text:
            found.append(f"a bug, not bad input: {text}")
        if not _DIAGNOSTIC.fullmatch(text) or diagnostic.path != mutant.path:
            found.append(f"not a 'path:line: why; skipped' diagnostic: {text!r}")
        if not 1 <= diagnostic.line <= line_count:
            found.append(f"line {diagnostic.line} outside the file's {line_count} lines: {text}")
    if refused and not texts:
        found.append("Python refuses this file but the index has no diagnostic")
    if (
        texts
        and ": syntax error: " in texts[0]
        and syntax_line is not None
        and index.diagnostics[0].line != syntax_line
    ):
        found.append(f"syntax error reported on line {index.diagnostics[0].line}, Python says {syntax_line}")
    if not texts:
        if not index.symbols or index.symbols[0].kind != "module":
            found.append("indexed without a module symbol")
        found.extend(
            f"{symbol.qualname} on line {symbol.line} of {line_count}"
            for symbol in index.symbols
            if not 1 <= symbol.line <= symbol.end_line <= line_count
        )
    return [f"{mutant.path} ({mutant.how}): {problem}" for problem in found]


@pytest.fixture(scope="module")
def mutated(torchrl_source: SourceTree) -> list[Mutant]:
    return mutants(torchrl_source)


@pytest.mark.torchrl
def test_every_mutant_is_indexed_or_diagnosed(mutated: list[Mutant]) -> None:
    assert len(mutated) >= 300
    problems: list[str] = []
    outcomes = {"indexed": 0, "diagnosed": 0, "too deep": 0}
    for mutant in mutated:
        index = _extract((mutant.data, mutant.path, TENSORDICT, False))  # what the indexer runs for each file
        problems.extend(problems_of(mutant, index))
        outcomes["indexed" if not index.diagnostics else "diagnosed"] += 1
        outcomes["too deep"] += any("nesting too deep" in d.message for d in index.diagnostics)
    assert problems == [], f"seed {SEED}:\n" + "\n".join(problems)
    # the mutations reach every path: valid files (CR-only, CRLF, cookies), broken ones, deep ones
    assert outcomes["indexed"] >= 100
    assert outcomes["diagnosed"] >= 100
    assert outcomes["too deep"] >= 10


RECORDS = ("symbols", "calls", "attributes", "keys", "imports", "locals", "returns")


def _lines(index: ModuleIndex, offset: int) -> dict[str, list[tuple[int, ...]]]:
    found: dict[str, list[tuple[int, ...]]] = {
        name: [(record.line - offset,) for record in getattr(index, name) if hasattr(record, "line")]
        for name in RECORDS
    }
    found["symbols"] = [(s.line - offset if s.kind != "module" else 1, s.end_line - offset) for s in index.symbols]
    return found


@pytest.mark.torchrl
def test_valid_mutants_index_the_same_records_as_their_base(mutated: list[Mutant], torchrl_source: SourceTree) -> None:
    """CR-only and CRLF newlines change bytes, not code: the very same records.  A latin-1
    cookie (two lines more) moves every line by two."""
    compared = 0
    for mutant in mutated:
        if mutant.how not in ("cr_only", "crlf", "latin1_cookie"):
            continue
        base_path = mutant.path.rpartition("_m")[0] + ".py"
        base = _extract(((torchrl_source.root / base_path).read_bytes(), mutant.path, TENSORDICT, False))
        index = _extract((mutant.data, mutant.path, TENSORDICT, False))
        assert index.diagnostics == base.diagnostics == (), mutant.path
        if mutant.how == "latin1_cookie":  # non-latin-1 characters became "?": compare lines
            assert _lines(index, 2) == _lines(base, 0), mutant.path
            assert [s.qualname for s in index.symbols] == [s.qualname for s in base.symbols]
        else:
            for records in RECORDS:
                assert getattr(index, records) == getattr(base, records), (mutant.path, mutant.how, records)
        compared += 1
    assert compared == 3 * BASES


@pytest.mark.torchrl
def test_cli_over_a_tree_of_mutants(run: Run, mutated: list[Mutant], tmp_path: Path) -> None:
    """``rlmap graph`` over 24 mutants in the process pool: exit 0 or 3, no traceback, and
    exactly the per-file diagnostics as warnings."""
    rng = random.Random(SEED)
    chosen = rng.sample(mutated, 24)
    files: dict[str, str | bytes] = {"torchrl/__init__.py": ""}
    files.update({mutant.path: mutant.data for mutant in chosen})
    root = write_package(tmp_path / "checkout", files)
    expected = sorted(
        str(diagnostic)
        for mutant in chosen
        for diagnostic in _extract((mutant.data, mutant.path, TENSORDICT, False)).diagnostics
    )
    assert expected  # the sample holds broken files
    code, out, err = run("graph", "--no-cache", "-q", "--jobs", "2", "--source", str(root))
    assert "Traceback" not in err
    assert code == 3, err
    warnings_seen = sorted(
        line.removeprefix("rlmap: warning: ") for line in err.splitlines() if "warning: torchrl/" in line
    )
    assert warnings_seen == expected
    paths = {node["path"] for node in json.loads(out)["nodes"]}
    indexed = {
        mutant.path for mutant in chosen if not _extract((mutant.data, mutant.path, TENSORDICT, False)).diagnostics
    }
    assert indexed <= paths
