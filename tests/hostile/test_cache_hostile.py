"""A cache directory from a stranger: nothing in it runs, nothing wrong in it reaches the output."""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from rlmap.index.cache import Cache, decode_entry, decode_sections, encode_entry, encode_sections
from rlmap.index.indexer import build_index, file_key
from rlmap.index.source import locate_source
from rlmap.model.codemodel import ModelHead
from rlmap.model.session import LATEST, MODEL_FILES, load_model
from rlmap.query.graphdump import graph_json
from tests.conftest import FIXTURES, Run


def _checkout(tmp_path: Path) -> Path:
    root = tmp_path / "checkout"
    shutil.copytree(FIXTURES / "pkg", root / "pkg")
    return root


def _expected(root: Path) -> str:
    model = load_model(locate_source(root, package="pkg"), Cache.disabled(), jobs=1).model
    return json.dumps(graph_json(model), sort_keys=True)


class _Bomb:
    """Unpickling this runs ``touch <marker>``: what a crafted pickle entry would do."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str, ...]]:
        return (os.system, (f"touch {self.marker}",))


def _flip_every_section(data: bytes) -> bytes:
    """A sectioned entry (a model) with one bit flipped in the middle of each of its sections."""
    start = len(b"rlmap-sections 1\n") + 32 + 8
    length = int.from_bytes(data[start - 8 : start], "little")
    _, toc = msgspec.msgpack.decode(data[start : start + length])
    flipped = bytearray(data)
    for offset, size, _ in toc.values():
        if size:
            flipped[start + length + offset + size // 2] ^= 0x04
    return bytes(flipped)


def _entries(cache_dir: Path) -> list[Path]:
    return sorted(path for path in cache_dir.rglob("*") if path.is_file())


@pytest.mark.parametrize("kind", ["pickle", "pickle-behind-valid-header", "wrong-type", "flipped-bit", "truncated"])
def test_a_crafted_or_damaged_entry_is_ignored_and_rebuilt(tmp_path: Path, run: Run, kind: str) -> None:
    root = _checkout(tmp_path)
    cache_dir = tmp_path / "cache"
    marker = tmp_path / "marker"
    code, expected, _ = run("graph", "--source", str(root), "--package", "pkg", "--cache-dir", str(cache_dir), "-q")
    assert code == 0
    entries = _entries(cache_dir)
    assert entries
    assert all(path.suffix == ".msgpack" for path in entries)
    for entry in entries:
        data = entry.read_bytes()
        if kind == "pickle":
            entry.write_bytes(pickle.dumps(_Bomb(marker)))
        elif kind == "pickle-behind-valid-header":  # a correct checksum over a pickle payload
            entry.write_bytes(encode_entry(None)[:14] + hashlib.sha256(p := pickle.dumps(_Bomb(marker))).digest() + p)
        elif kind == "wrong-type":  # an intact entry, but not the record type it must hold
            entry.write_bytes(encode_entry({"symbols": "not a model", "module": 3}))
        elif kind == "flipped-bit" and entry.parent.parent.name == "models":
            entry.write_bytes(_flip_every_section(data))  # each is checked when a query reads it
        elif kind == "flipped-bit":
            middle = len(data) // 2
            entry.write_bytes(data[:middle] + bytes([data[middle] ^ 0x04]) + data[middle + 1 :])
        else:
            entry.write_bytes(data[: len(data) * 2 // 3])
    code, again, err = run("graph", "--source", str(root), "--package", "pkg", "--cache-dir", str(cache_dir), "-q")
    assert not marker.exists()
    assert code == 0, err
    assert again == expected
    assert err.count("rlmap: note: ignored") == 1, err
    assert "rebuilt them" in err
    if kind == "flipped-bit":  # found when the command read it: removed, and the command ran again
        assert "rlmap: note: removed a damaged cache entry" in err
    # the rebuilt entries are good: a third run takes them without a note
    code, third, err = run("graph", "--source", str(root), "--package", "pkg", "--cache-dir", str(cache_dir), "-q")
    assert (code, third, err) == (0, expected, "")


@pytest.mark.parametrize("kind", ["symlink-dev-zero", "fifo", "directory", "symlink-elsewhere"])
def test_an_entry_that_is_no_regular_file_is_never_read(tmp_path: Path, kind: str) -> None:
    root = _checkout(tmp_path)
    cache_dir = tmp_path / "cache"
    load_model(locate_source(root, package="pkg"), Cache.at(cache_dir), jobs=1)
    secret = tmp_path / "secret"
    secret.write_bytes(b"x" * 100)
    for entry in _entries(cache_dir):
        entry.unlink()
        if kind == "symlink-dev-zero":
            entry.symlink_to("/dev/zero")
        elif kind == "fifo":
            os.mkfifo(entry)
        elif kind == "directory":
            entry.mkdir()
        else:
            entry.symlink_to(secret)
    cache = Cache.at(cache_dir)
    loaded = load_model(locate_source(root, package="pkg"), cache, jobs=1)  # a hang here is the failure
    assert json.dumps(graph_json(loaded.model), sort_keys=True) == _expected(root)
    assert cache.rejected > 0


@pytest.mark.parametrize("jobs", [1, 2])  # (with a second core the entries are looked at before they are read)
def test_every_file_entry_that_is_no_regular_file_is_counted_once(tmp_path: Path, jobs: int) -> None:
    root = _checkout(tmp_path)
    cache_dir = tmp_path / "cache"
    build_index(locate_source(root, package="pkg"), Cache.at(cache_dir), jobs=jobs)
    entries = sorted((cache_dir / "files").rglob("*.msgpack"))
    for number, entry in enumerate(entries):
        entry.unlink()
        entry.mkdir() if number % 2 else entry.symlink_to(tmp_path)
    cache = Cache.at(cache_dir)
    index = build_index(locate_source(root, package="pkg"), cache, jobs=jobs)
    assert cache.rejected == len(entries) > 5  # each one (the CLI notes them)
    assert index.stats.parsed == len(entries)


def test_no_write_through_a_symlinked_cache_subdirectory(tmp_path: Path) -> None:
    root = _checkout(tmp_path)
    cache_dir = tmp_path / "cache"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    cache_dir.mkdir()
    (cache_dir / "files").symlink_to(elsewhere)
    cache = Cache.at(cache_dir)
    load_model(locate_source(root, package="pkg"), cache, jobs=1)
    assert list(elsewhere.iterdir()) == []
    assert cache.write_failed


def test_entries_hold_no_pickle_and_no_code(tmp_path: Path) -> None:
    """Every entry is magic + SHA-256 + MessagePack that decodes as plain data; a model is a
    head and sections, each behind its own SHA-256, each plain MessagePack."""
    root = _checkout(tmp_path)
    cache_dir = tmp_path / "cache"
    load_model(locate_source(root, package="pkg"), Cache.at(cache_dir), jobs=1)
    models = 0
    for entry in _entries(cache_dir):
        data = entry.read_bytes()
        assert b"\x80\x04" not in data[:48]  # no pickle protocol header
        if entry.parent.parent.name == "models":
            models += 1
            sections = decode_sections(data)  # every checksum checked
            assert sections is not None
            _, parts = sections
            assert parts
            for part in parts.values():
                msgspec.msgpack.decode(part)  # untyped decode: plain data, or this raises
            continue
        assert data.startswith(b"rlmap-cache 1\n")
        payload = data[14 + 32 :]
        assert hashlib.sha256(payload).digest() == data[14 : 14 + 32]
        msgspec.msgpack.decode(payload)  # untyped decode: plain data, or this raises
    assert models == 1


def test_two_processes_racing_on_one_cache_agree(tmp_path: Path) -> None:
    root = _checkout(tmp_path)
    cache_dir = tmp_path / "cache"
    base = [sys.executable, "-m", "rlmap", "graph", "--source", str(root), "--package", "pkg", "-q", "-j", "1"]
    command = [*base, "--cache-dir", str(cache_dir)]
    expected = subprocess.run([*base, "--no-cache"], capture_output=True, text=True, check=True).stdout
    for _ in range(3):
        shutil.rmtree(cache_dir, ignore_errors=True)
        runs = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(3)]
        results = [process.communicate(timeout=120) for process in runs]
        assert [process.returncode for process in runs] == [0, 0, 0], results
        assert all(out == expected for out, _ in results)
        assert all("rlmap:" not in err for _, err in results)


@pytest.mark.parametrize("path", ["../../../../etc/passwd", "/etc/passwd", "/dev/zero", "pkg/not_a_file.py"])
def test_an_intact_entry_naming_files_outside_the_tree_is_rejected(tmp_path: Path, run: Run, path: str) -> None:
    """A crafted model entry with a correct checksum cannot make rlmap read or quote other files."""
    root = _checkout(tmp_path)
    cache_dir = tmp_path / "cache"
    args = ["graph", "--source", str(root), "--package", "pkg", "--cache-dir", str(cache_dir), "-q"]
    code, expected, _ = run(*args)
    assert code == 0
    (entry,) = (cache_dir / "models").rglob("*.msgpack")
    found = decode_sections(entry.read_bytes())
    assert found is not None
    head, sections = found
    files = head[2]  # every path a symbol row can name (the rows hold an index into it)
    files[files.index("pkg/rnn.py")] = path
    entry.write_bytes(encode_sections(head, sections))
    code, again, err = run(*args)
    assert (code, again) == (0, expected)
    assert "rlmap: note: ignored 1 unusable cache entry" in err


def test_an_intact_file_entry_naming_another_file_is_parsed_again(tmp_path: Path, run: Run) -> None:
    """A file's records with a correct checksum whose symbols name ``/etc/passwd`` (forged, as
    anyone can recompute the checksum) used to reach the pages, which quoted that file: an entry
    holding any path but its own file's is rejected, and the file parsed again."""
    import dataclasses

    from rlmap.index.extract import extract_module

    root = _checkout(tmp_path)
    cache_dir = tmp_path / "cache"
    args = ["graph", "--source", str(root), "--package", "pkg", "--cache-dir", str(cache_dir), "-q"]
    data = (root / "pkg" / "rnn.py").read_bytes()
    index = extract_module(data, "pkg/rnn.py")
    for forged in (
        dataclasses.replace(
            index, symbols=tuple(dataclasses.replace(s, path="../../../../etc/passwd") for s in index.symbols)
        ),
        dataclasses.replace(index, path="/etc/passwd"),
    ):
        shutil.rmtree(cache_dir, ignore_errors=True)
        Cache.at(cache_dir).put("files", file_key("pkg/rnn.py", data, ()), forged)  # (no profile: no extension)
        code, out, err = run(*args)
        assert code == 0
        assert json.loads(out) == json.loads(_expected(root))  # the file's own records, parsed again
        assert "rlmap: note: ignored 1 unusable cache entry" in err


def test_a_model_path_out_of_the_tree_or_no_regular_file_is_never_read(tmp_path: Path) -> None:
    """Every reader of the model's files goes through ``read_source``: ``..`` and absolute paths
    are not read, nor is a FIFO (reading one would hold the run up)."""
    from rlmap.pages.refs import read_source

    root = _checkout(tmp_path)
    os.mkfifo(root / "pkg" / "pipe.py")
    assert read_source(root, "pkg/rnn.py") == (root / "pkg" / "rnn.py").read_bytes()
    for path in (
        "../checkout/pkg/rnn.py",
        "pkg/../pkg/rnn.py",
        str(root / "pkg" / "rnn.py"),
        "pkg/pipe.py",
        "",
        "C:/x.py",
    ):
        assert read_source(root, path) is None, path


def test_an_intact_model_entry_with_a_malformed_row_is_a_clear_error(tmp_path: Path, run: Run) -> None:
    """Rows of a cached model are decoded when a query reads them: a crafted row of the wrong
    type (behind a correct checksum) is ``rlmap: error`` naming the cache, never a traceback."""
    root = _checkout(tmp_path)
    cache_dir = tmp_path / "cache"
    args = ["show", "Collector.rollout", "--source", str(root), "--package", "pkg", "--cache-dir", str(cache_dir)]
    code, _, _ = run(*args, "-q")
    assert code == 0
    (entry,) = (cache_dir / "models").rglob("*.msgpack")
    found = decode_sections(entry.read_bytes())
    assert found is not None
    head, sections = found
    rollout = "pkg.collector.Collector.rollout"
    shards = {name: msgspec.msgpack.decode(part) for name, part in sections.items() if name[:6] == "calls:"}
    (name,) = (name for name, shard in shards.items() if isinstance(shard, dict) and rollout in shard)
    shard = shards[name]
    shard[rollout] = [["not", "an", "edge"]]
    sections[name] = msgspec.msgpack.encode(shard)
    entry.write_bytes(encode_sections(head, sections))
    code, _, err = run(*args, "-q")
    assert code == 2
    assert err.startswith("rlmap: error: the cached model's calls table is malformed")
    assert "delete the cache directory (or run with --no-cache)" in err
    assert "Traceback" not in err


def test_a_damaged_model_met_while_building_pages_is_rebuilt(tmp_path: Path, run: Run) -> None:
    """The sections a page reads are checked as the page is built: a damaged one is the cache's
    (removed, the command runs again), never a profile 'written for another version of the code'."""
    root = _checkout(tmp_path)
    cache_dir = tmp_path / "cache"
    generate = ["generate", "--source", str(root), "--package", "pkg", "--profile", str(FIXTURES / "profile.toml")]
    generate += ["--out", str(tmp_path / "out"), "--cache-dir", str(cache_dir), "-q"]
    assert run(*generate)[0] == 0
    for entry in _entries(cache_dir / "models"):
        entry.write_bytes(_flip_every_section(entry.read_bytes()))
    code, _, err = run(*generate)
    assert code == 0, err
    assert "rlmap: note: removed a damaged cache entry" in err
    assert "another version" not in err


def test_the_last_model_naming_a_file_entry_out_of_the_cache_is_not_followed(tmp_path: Path) -> None:
    """The cache keeps each checkout's last model with its files' keys (to move its lines instead
    of resolving): a key read back from it that is not a content key (``../planted``) names no
    entry, though a valid one waits where it would lead."""
    root = _checkout(tmp_path)
    cache_dir = tmp_path / "cache"
    source = locate_source(root, package="pkg")
    load_model(source, Cache.at(cache_dir), jobs=1)
    advantages = root / "pkg" / "advantages.py"
    key = file_key("pkg/advantages.py", advantages.read_bytes(), ())
    entry = cache_dir / "files" / key[:2] / f"{key}.msgpack"
    shutil.copyfile(entry, tmp_path / "planted.msgpack")  # where cache/files/../../planted.msgpack leads
    files, _, (paths, modules, keys, skipped) = _latest_entry(cache_dir)
    keys[paths.index("pkg/advantages.py")] = "../planted"
    files.write_bytes(encode_entry([paths, modules, keys, skipped]))
    advantages.write_text(advantages.read_text().replace("class GAE:", "# a line added\nclass GAE:"))

    cache = Cache.at(cache_dir)
    phases: list[str] = []
    load_model(source, cache, jobs=1, progress=lambda phase, *_: phases.append(phase))
    assert "resolve" in phases  # the planted records were not read: the edit was resolved
    assert cache.rejected >= 1


def _latest_entry(cache_dir: Path) -> tuple[Path, str, list[list[str]]]:
    """The checkout's last model: the entry of the files it was computed from, its key, and
    those files' lists (paths, modules, keys, skipped)."""
    [latest] = (cache_dir / LATEST).rglob("*.msgpack")
    model = decode_entry(latest.read_bytes(), msgspec.msgpack.Decoder(str))
    assert model is not None
    files = cache_dir / MODEL_FILES / model[:2] / f"{model}.msgpack"
    lists = decode_entry(files.read_bytes(), msgspec.msgpack.Decoder(list[list[str]]))
    assert lists is not None
    return files, model, lists


@pytest.mark.parametrize("jobs", [1, 2])
@pytest.mark.parametrize("damage", ["a module short", "a key short", "a path twice"])
def test_a_last_model_entry_that_does_not_add_up_is_ignored(tmp_path: Path, damage: str, jobs: int) -> None:
    root = _checkout(tmp_path)
    cache_dir = tmp_path / "cache"
    source = locate_source(root, package="pkg")
    load_model(source, Cache.at(cache_dir), jobs=jobs)
    files, _, (paths, modules, keys, skipped) = _latest_entry(cache_dir)
    if damage == "a module short":
        modules = modules[1:]
    elif damage == "a key short":
        keys = keys[1:]
    else:
        paths, modules, keys = [*paths, paths[0]], [*modules, modules[0]], [*keys, keys[0]]
    files.write_bytes(encode_entry([paths, modules, keys, skipped]))
    advantages = root / "pkg" / "advantages.py"
    advantages.write_text(advantages.read_text().replace("class GAE:", "# a line added\nclass GAE:"))

    cache = Cache.at(cache_dir)
    phases: list[str] = []
    loaded = load_model(source, cache, jobs=jobs, progress=lambda phase, *_: phases.append(phase))
    assert "resolve" in phases
    assert cache.rejected >= 1
    assert json.dumps(graph_json(loaded.model), sort_keys=True) == _expected(root)


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_last_model_whose_symbols_name_no_file_is_resolved_again(tmp_path: Path, run: Run, jobs: str) -> None:
    """An intact entry whose symbol rows name a file the head does not list: moving its lines
    gives up, and the edited tree is resolved (as a query of that entry reports it malformed)."""
    root = _checkout(tmp_path)
    cache_dir = tmp_path / "cache"
    command = ("graph", "--source", str(root), "--package", "pkg", "--cache-dir", str(cache_dir), "-q", "-j", jobs)
    code, _, err = run(*command)
    assert code == 0, err
    _, model, _ = _latest_entry(cache_dir)
    cache = Cache.at(cache_dir)
    entry = cache.get_sections("models", model, ModelHead)
    assert entry is not None
    sections = {name: entry.read(name) or b"" for name in entry.names()}
    for name, data in list(sections.items()):
        if name.startswith("symbols:") and name[len("symbols:") :].isdigit():
            rows = msgspec.msgpack.decode(data)
            sections[name] = msgspec.msgpack.encode({key: [*row[:2], 99, *row[3:]] for key, row in rows.items()})
    cache.put_sections("models", model, entry.head, sections)
    advantages = root / "pkg" / "advantages.py"
    advantages.write_text(advantages.read_text().replace("class GAE:", "# a line added\nclass GAE:"))

    code, out, err = run(*command)
    assert code == 0, err
    fresh, fresh_out, _ = run("graph", "--source", str(root), "--package", "pkg", "--no-cache", "-q", "-j", jobs)
    assert fresh == 0
    assert out == fresh_out
