"""The cache: a warm run parses nothing, a changed file is the only one re-parsed."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec

from rlmap.index.cache import Cache
from rlmap.index.indexer import build_index
from rlmap.index.source import locate_source
from rlmap.model.session import load_model
from rlmap.query.graphdump import graph_json
from tests.conftest import FIXTURES


def copy_fixture(tmp_path: Path) -> Path:
    root = tmp_path / "checkout"
    shutil.copytree(FIXTURES / "pkg", root / "pkg")
    return root


def test_warm_run_loads_the_model_and_parses_nothing(tmp_path: Path) -> None:
    source = locate_source(copy_fixture(tmp_path), package="pkg")
    cache = Cache.at(tmp_path / "cache")
    cold = load_model(source, cache, jobs=1)
    assert cold.stats is not None
    assert (cold.stats.parsed, cold.stats.from_cache) == (cold.stats.files, 0)
    warm = load_model(source, cache, jobs=1)
    assert warm.stats is None  # the resolved model itself came from the cache
    assert graph_json(warm.model) == graph_json(cold.model)


def test_one_changed_file_is_the_only_one_parsed(tmp_path: Path) -> None:
    root = copy_fixture(tmp_path)
    source = locate_source(root, package="pkg")
    cache = Cache.at(tmp_path / "cache")
    first = load_model(source, cache, jobs=1)
    helpers = root / "pkg" / "helpers.py"
    helpers.write_text("\n\n" + helpers.read_text())  # every definition moves down two lines
    second = load_model(source, cache, jobs=1)
    assert second.stats is not None
    assert (second.stats.parsed, second.stats.from_cache) == (1, second.stats.files - 1)
    before, after = first.model.symbol("pkg.helpers.outer"), second.model.symbol("pkg.helpers.outer")
    assert before is not None
    assert after is not None
    assert after.line == before.line + 2


_WHO_PARSED = """
import os, sys
from pathlib import Path
from rlmap.index.cache import Cache
from rlmap.index.indexer import build_index
from rlmap.index.source import locate_source
source = locate_source(Path(sys.argv[1]), package="pkg")
index = build_index(source, Cache.at(Path(sys.argv[2])), jobs=int(sys.argv[3]))
print("PARSED", index.stats.parsed, "FROM_CACHE", index.stats.from_cache)
print("LIBCST_HERE", "libcst" in sys.modules)
"""


def _index_in_a_process(root: Path, cache: Path, jobs: int) -> tuple[int, int, bool]:
    """(parsed, from the cache, whether the process itself imported libcst) of a fresh process's index."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    done = subprocess.run(
        [sys.executable, "-c", _WHO_PARSED, str(root), str(cache), str(jobs)],
        capture_output=True,
        text=True,
        check=True,
        env=env,
        timeout=300,
    )
    words = done.stdout.split()
    return int(words[1]), int(words[3]), words[5] == "True"


def test_a_changed_file_is_parsed_by_a_worker_while_the_cached_records_are_decoded(tmp_path: Path) -> None:
    root = copy_fixture(tmp_path)
    cache = tmp_path / "cache"
    parsed, _, _ = _index_in_a_process(root, cache, 2)
    assert parsed > 5
    helpers = root / "pkg" / "helpers.py"
    helpers.write_text(helpers.read_text() + "\n\ndef added():\n    return 1\n")
    parsed, cached, here = _index_in_a_process(root, cache, 2)
    assert (parsed, cached > 5) == (1, True)
    assert not here  # handed to a worker at once: this process decoded, it never parsed
    helpers.write_text(helpers.read_text() + "\n\ndef again():\n    return 2\n")
    parsed, _, here = _index_in_a_process(root, cache, 1)
    assert (parsed, here) == (1, True)  # one job: parsed here, as before


def test_a_model_of_cached_and_changed_files_is_the_same_with_workers_or_without(tmp_path: Path) -> None:
    root = copy_fixture(tmp_path)
    source = locate_source(root, package="pkg")
    models = []
    for jobs in (1, 2):
        cache = Cache.at(tmp_path / f"cache{jobs}")
        load_model(source, cache, jobs=jobs)
        helpers = root / "pkg" / "helpers.py"
        original = helpers.read_text()
        helpers.write_text(original + "\n\ndef added():\n    return outer()\n")
        for entry in sorted((tmp_path / f"cache{jobs}" / "files").rglob("*.msgpack"))[:2]:
            entry.write_bytes(b"not an entry")  # and two entries to parse again after the others
        changed = load_model(source, cache, jobs=jobs)
        fresh = load_model(source, Cache.disabled(), jobs=1)  # every file parsed, nothing cached
        helpers.write_text(original)
        assert changed.stats is not None
        assert changed.stats.parsed >= 2
        models.append(json.dumps(graph_json(changed.model)))
        assert models[-1] == json.dumps(graph_json(fresh.model))
    assert models[0] == models[1]
    assert '"pkg.helpers.added"' in models[0]


def test_each_module_carries_the_digest_of_its_records_parsed_or_cached(tmp_path: Path) -> None:
    """The records key of a model (session._records_key) is made of these digests: each must be
    the SHA-256 of its own module's MessagePack, whether a worker made it or the cache held it."""
    root = copy_fixture(tmp_path)
    (root / "pkg" / "unreadable.py").write_bytes(b"\xff\xfe not utf-8")
    source = locate_source(root, package="pkg")
    cache = Cache.at(tmp_path / "cache")
    for parsed in (True, False):
        index = build_index(source, cache, jobs=2)
        assert (index.stats.parsed > 0) is parsed
        assert len(index.digests) == len(index.modules) > 5
        for module, digest in zip(index.modules, index.digests, strict=True):
            assert digest == hashlib.sha256(msgspec.msgpack.encode(module)).digest(), module.path


def test_corrupt_entries_are_misses(tmp_path: Path) -> None:
    source = locate_source(copy_fixture(tmp_path), package="pkg")
    cache_dir = tmp_path / "cache"
    load_model(source, Cache.at(cache_dir), jobs=1)
    for entry in cache_dir.rglob("*.msgpack"):
        entry.write_bytes(b"not an entry")
    again = load_model(source, Cache.at(cache_dir), jobs=1)
    assert again.stats is not None
    assert again.stats.parsed == again.stats.files


def test_parallel_and_serial_indexing_agree(tmp_path: Path) -> None:
    source = locate_source(copy_fixture(tmp_path), package="pkg")
    serial = load_model(source, Cache.disabled(), jobs=1).model
    parallel = load_model(source, Cache.disabled(), jobs=2).model
    assert json.dumps(graph_json(serial)) == json.dumps(graph_json(parallel))


def test_the_cache_key_covers_every_module_extraction_imports() -> None:
    """A new ``rlmap.index`` module that extraction imports must change the key when it changes."""
    import ast

    from rlmap.index.cache import EXTRACTION_MODULES

    package = Path(__file__).resolve().parent.parent.parent / "rlmap"
    not_extraction = {"index.cache", "index.source"}  # where records are stored, which files are read
    missing = set()
    for module in EXTRACTION_MODULES:
        tree = ast.parse((package / f"{module.replace('.', '/')}.py").read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == "rlmap.index":
                imported = {f"index.{alias.name}" for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("rlmap.index."):
                imported = {node.module.removeprefix("rlmap.")}  # type: ignore[union-attr]
            else:
                continue
            missing |= imported - set(EXTRACTION_MODULES) - not_extraction
    assert missing == set()
    # the tree, the cache, the links; and one function's control flow, read when a page asks for
    # it (and kept under a key of its own code: rlmap.pages.flows)
    not_extracting = {"__init__", "cache", "source", "history", "controlflow", "flowreader"}
    assert {path.stem for path in (package / "index").glob("*.py")} - not_extracting == {
        module.removeprefix("index.") for module in EXTRACTION_MODULES
    }


def test_a_cached_model_reads_rows_lazily_and_answers_like_the_built_one(tmp_path: Path) -> None:
    from rlmap.model import assemble, codemodel

    source = locate_source(copy_fixture(tmp_path), package="pkg")
    cache = Cache.at(tmp_path / "cache")
    built = load_model(source, cache, jobs=1).model
    warm = load_model(source, cache, jobs=1).model
    assert isinstance(warm._symbols, codemodel.LazyRows)  # from the cache: rows decode on demand
    assert warm.symbol("pkg.collector.Collector.rollout") == built.symbol("pkg.collector.Collector.rollout")
    decoded = [shard for shard in warm._symbols._shards if shard is not None]
    assert len(decoded) == 1 < len(warm._symbols._shards)  # one shard of the table read, no more
    assert (codemodel.EXTERNAL, codemodel.UNRESOLVED) == (assemble.EXTERNAL, assemble.UNRESOLVED)
    for name in built.qualnames():
        assert warm.symbol(name) == built.symbol(name)
        assert warm.callers(name) == built.callers(name)
        assert warm.callees(name) == built.callees(name)
        assert warm.call_sites(name) == built.call_sites(name)
        assert warm.attribute_accesses(name) == built.attribute_accesses(name)
        assert warm.returns(name) == built.returns(name)
    assert warm.edges() == built.edges()
    assert list(warm.qualnames()) == list(built.qualnames())


def test_a_warm_key_comes_from_file_stats_and_any_edit_is_seen(tmp_path: Path, monkeypatch: Any) -> None:
    """A tree whose files kept their stats is not read again to find its model; an edit that
    keeps a file's size and mtime still changes its ctime, and is parsed."""
    import os

    from rlmap.model import session

    monkeypatch.setattr(session, "_SETTLED_NS", 0)  # the files were just copied: trust them at once
    root = copy_fixture(tmp_path)
    source = locate_source(root, package="pkg")
    cache = Cache.at(tmp_path / "cache")
    load_model(source, cache, jobs=1)
    assert list((tmp_path / "cache" / session.STATS).rglob("*.msgpack"))  # the stats were remembered
    read: list[str] = []
    original = session.read_file
    monkeypatch.setattr(
        session, "read_file", lambda relative, path: (read.append(relative), original(relative, path))[1]
    )
    warm = load_model(source, cache, jobs=1)
    assert (warm.stats, read) == (None, [])  # the model, found without reading a file
    cap = session.CAP
    assert session._project_key(source, (), cap)[0] == session._project_key(source, (), cap, cache)[0]
    helpers = root / "pkg" / "helpers.py"
    before = os.stat(helpers)
    text = helpers.read_text()
    helpers.write_text(text.replace("outer", "OUTER", 1))  # same size
    os.utime(helpers, ns=(before.st_atime_ns, before.st_mtime_ns))  # same mtime
    edited = load_model(source, cache, jobs=1)
    assert edited.stats is not None
    assert edited.stats.parsed == 1
    assert edited.model.has_symbol("pkg.helpers.OUTER")


def test_records_of_another_python_or_libcst_are_not_used(tmp_path: Path, monkeypatch: Any) -> None:
    """Records depend on the parsers too (``ast`` gives their lines and value flow: a file one
    Python rejects, another parses): a cache filled under other parsers serves nothing, not
    even the model found from the files' stats."""
    from rlmap.index import cache as cache_module
    from rlmap.model import session

    monkeypatch.setattr(session, "_SETTLED_NS", 0)  # the files were just copied: trust their stats at once
    source = locate_source(copy_fixture(tmp_path), package="pkg")
    cache = Cache.at(tmp_path / "cache")
    first = load_model(source, cache, jobs=1)
    assert load_model(source, cache, jobs=1).stats is None  # same parsers: the model is found
    monkeypatch.setattr(cache_module, "PARSERS", cache_module.PARSERS + " (another libcst)")
    other = load_model(source, cache, jobs=1)
    assert other.stats is not None
    assert (other.stats.parsed, other.stats.from_cache) == (other.stats.files, 0)
    assert graph_json(other.model) == graph_json(first.model)


def test_the_parsers_identity_follows_the_python_and_the_libcst_release(tmp_path: Path) -> None:
    from rlmap.index.cache import package_identity

    def package(name: str, version: str, native: bytes) -> Path:
        directory = tmp_path / name / "libcst"
        directory.mkdir(parents=True)
        (directory / "__init__.py").write_text("raise SystemExit('never imported')\n")
        (directory / "_version.py").write_text(f"__version__ = version = {version!r}\n")
        (directory / "native.cpython-311-x86_64-linux-gnu.so").write_bytes(native)
        return directory

    one = package_identity(package("a", "1.9.0", b"x" * 10))
    assert one == package_identity(package("b", "1.9.0", b"y" * 10))  # the same release, installed twice
    assert one != package_identity(package("c", "1.8.6", b"x" * 10))  # another release
    assert one != package_identity(package("d", "1.9.0", b"x" * 11))  # another build of its parser
    linked = package("e", "1.9.0", b"")
    native = linked / "native.cpython-311-x86_64-linux-gnu.so"
    native.unlink()
    (tmp_path / "elsewhere.so").write_bytes(b"x" * 11)
    native.symlink_to(tmp_path / "elsewhere.so")  # installed as a link: the file it links to counts
    assert package_identity(linked) == package_identity(tmp_path / "d" / "libcst")
    # the running interpreter and the installed libcst, found without importing libcst
    probe = "import sys; from rlmap.index.cache import PARSERS; print(PARSERS); assert 'libcst' not in sys.modules"
    found = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    import libcst

    installed = package_identity(Path(libcst.__file__).parent)
    assert found.strip() == f"{sys.implementation.name} {sys.version.split()[0]}, libcst {installed}"


def test_the_version_names_a_digest_of_everything_keys_depend_on(monkeypatch: Any) -> None:
    """``rlmap --version``'s cache digest (a CI cache's key) changes with the parsers of the
    sources and of the docs pages: a job under another docutils must not restore, on an exact key,
    a cache whose pages it parses again and never saves."""
    from rlmap.index import cache as cache_module

    before = cache_module.cache_identity()
    original = cache_module.installed_identity
    monkeypatch.setattr(
        cache_module, "installed_identity", lambda name: original(name) + ("x" if name == "docutils" else "")
    )
    assert cache_module.cache_identity() != before
    monkeypatch.setattr(cache_module, "installed_identity", original)
    monkeypatch.setattr(cache_module, "PARSERS", cache_module.PARSERS + " (another libcst)")
    assert cache_module.cache_identity() != before


def test_a_single_module_is_identified_by_its_file(tmp_path: Path, monkeypatch: Any) -> None:
    import importlib

    from rlmap.index.cache import installed_identity

    (tmp_path / "rlmap_probe_module.py").write_text("RELEASE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    first = installed_identity("rlmap_probe_module")
    (tmp_path / "elsewhere.so").write_bytes(b"x")  # another file beside it changes nothing
    assert installed_identity("rlmap_probe_module") == first != "missing"
    (tmp_path / "rlmap_probe_module.py").write_text("RELEASE = 2\n")
    assert installed_identity("rlmap_probe_module") != first
    assert installed_identity("rlmap_no_such_module") == "missing"
