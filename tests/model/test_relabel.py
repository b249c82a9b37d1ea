"""Files whose lines only moved (a comment line, a docstring line, blank lines added) give the last
model with those lines moved, without resolving: byte for byte the model a resolve would give."""

from __future__ import annotations

import json
import os
import random
import shutil
import textwrap
from collections.abc import Callable
from pathlib import Path

import msgspec
import pytest

from rlmap.index.cache import Cache, Sections
from rlmap.index.extract import extract_module
from rlmap.index.source import SourceTree, locate_source
from rlmap.model.codemodel import ModelHead
from rlmap.model.pointsto import CAP
from rlmap.model.relabel import moved_lines
from rlmap.model.session import MODELS, LoadedModel, load_model, project_key
from rlmap.query.graphdump import graph_json
from tests.conftest import TORCHRL_EXTENSIONS

PACKAGE = {
    "pkg/__init__.py": "from pkg.core import Engine\n",
    "pkg/core.py": '''
        """The engine."""
        from pkg.parts import Part, make


        class Engine:
            """Runs parts."""

            def __init__(self, parts):
                self.parts = [Part(p) for p in parts]
                self.table = {"a": make, "b": lambda: make()}

            def run(self, key):
                # pick the part maker
                maker = self.table[key]
                built = [maker() for _ in self.parts]
                return self.step(built)

            def step(self, built):
                total = {n: part.size() for n, part in enumerate(built)}
                return helper(total)


        def helper(total):
            return sorted(total, key=lambda k: total[k])
    ''',
    "pkg/parts.py": """
        class Part:
            def __init__(self, size=1):
                self.amount = size

            def size(self):
                return self.amount


        def make():
            return Part()
    """,
}


def _load(
    source: SourceTree, cache: Cache, value_cap: int = CAP, extensions: tuple[str, ...] = (), jobs: int = 1
) -> tuple[LoadedModel, list[str]]:
    phases: list[str] = []
    loaded = load_model(
        source,
        cache,
        jobs=jobs,
        progress=lambda phase, *_: phases.append(phase),
        extensions=extensions,
        value_cap=value_cap,
    )
    return loaded, phases


def _checkout(
    make_package: Callable[[dict[str, str | bytes]], Path], tmp_path: Path, files: dict[str, str] = PACKAGE
) -> tuple[Path, SourceTree, Cache]:
    """A synthetic package ``pkg`` of ``files``, its source tree, and a cache for it."""
    root = make_package(dict(files))
    return root, locate_source(root, package="pkg"), Cache.at(tmp_path / "cache")


def _resolved_alike(source: SourceTree, cache: Cache, tmp_path: Path, jobs: int = 1) -> list[str]:
    """Resolve ``source`` afresh in a cache of its own, check that ``cache`` holds the same model
    byte for byte, and give the fresh run's phases."""
    fresh_cache = Cache.at(tmp_path / "fresh")
    _, phases = _load(source, fresh_cache, jobs=jobs)
    assert _stored(source, cache) == _stored(source, fresh_cache)
    return phases


def _stored(
    source: SourceTree, cache: Cache, value_cap: int = CAP, extensions: tuple[str, ...] = ()
) -> dict[str, bytes]:
    """The cached model of ``source``, every section's bytes and its head's (as MessagePack)."""
    entry: Sections[ModelHead] | None = cache.get_sections(
        MODELS, project_key(source, extensions, value_cap), ModelHead
    )
    assert entry is not None
    found = {name: entry.read(name) or b"" for name in entry.names()}
    found["<head>"] = msgspec.msgpack.encode(entry.head)
    return found


def _insert(path: Path, before: str, line: str) -> None:
    """Add ``line`` above the first line holding ``before``, at that line's indentation."""
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    at = next(number for number, text in enumerate(lines) if before in text)
    indent = lines[at][: len(lines[at]) - len(lines[at].lstrip())]
    lines.insert(at, f"{indent}{line}\n" if line else "\n")
    path.write_text("".join(lines), encoding="utf-8")


# With a second core the changed file is parsed in a worker while the others' records are decoded,
# and the look at the changed files' records is taken as soon as they are known: the other
# files' records are not all decoded (no index is made).  With one, after the index is made.
TWO_CORES = pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="the early look needs a second core")
JOBS = [pytest.param(1, id="one core"), pytest.param(2, id="two cores", marks=TWO_CORES)]


@pytest.mark.parametrize("jobs", JOBS)
def test_moved_lines_give_the_model_a_resolve_gives(
    make_package: Callable[[dict[str, str | bytes]], Path], tmp_path: Path, jobs: int
) -> None:
    root, source, cache = _checkout(make_package, tmp_path)
    cold, phases = _load(source, cache, jobs=jobs)
    assert "resolve" in phases
    assert cold.moved == ()
    core, parts = root / "pkg" / "core.py", root / "pkg" / "parts.py"
    _insert(core, "# pick the part maker", "# and another comment")  # in a method's body
    _insert(core, "Runs parts.", "")  # in a docstring
    _insert(core, "def helper", "")  # between two functions
    _insert(parts, "def make", "# a comment above a function")

    moved, phases = _load(source, cache, jobs=jobs)
    assert "resolve" not in phases
    assert moved.moved == ("pkg/core.py", "pkg/parts.py")
    assert (moved.stats is None) == (jobs > 1)  # no index made: the early look decided
    engine_run = moved.model.symbol("pkg.core.Engine.run")
    assert engine_run is not None
    assert engine_run.line == cold.model.symbol("pkg.core.Engine.run").line + 1  # type: ignore[union-attr]
    helper = moved.model.symbol("pkg.core.helper")
    assert helper is not None
    assert helper.line == cold.model.symbol("pkg.core.helper").line + 3  # type: ignore[union-attr]

    assert "resolve" in _resolved_alike(source, cache, tmp_path)

    again, phases = _load(source, cache, jobs=jobs)  # the moved model is stored under the tree's key
    assert again.stats is None
    assert phases == []


@pytest.mark.parametrize("jobs", JOBS)
def test_a_change_beyond_lines_resolves(
    make_package: Callable[[dict[str, str | bytes]], Path], tmp_path: Path, jobs: int
) -> None:
    root, source, cache = _checkout(make_package, tmp_path)
    _load(source, cache, jobs=jobs)
    core = root / "pkg" / "core.py"
    _insert(core, "# pick the part maker", "helper({})")  # a line that calls: records change beyond lines
    changed, phases = _load(source, cache, jobs=jobs)
    assert "resolve" in phases
    assert changed.moved == ()
    _resolved_alike(source, cache, tmp_path)


@pytest.mark.parametrize("jobs", JOBS)
def test_a_comment_edited_in_place_gives_the_last_model(
    make_package: Callable[[dict[str, str | bytes]], Path], tmp_path: Path, jobs: int
) -> None:
    root, source, cache = _checkout(make_package, tmp_path)
    cold, _ = _load(source, cache, jobs=jobs)
    core = root / "pkg" / "core.py"
    core.write_text(core.read_text().replace("# pick the part maker", "# pick the maker"), encoding="utf-8")
    edited, phases = _load(source, cache, jobs=jobs)
    assert "resolve" not in phases
    assert edited.moved == ()
    assert (edited.stats is None) == (jobs > 1)
    assert json.dumps(graph_json(edited.model), sort_keys=True) == json.dumps(graph_json(cold.model), sort_keys=True)
    _insert(core, "def helper", "")  # and then a line added: moved from that model (the latest now)
    moved, phases = _load(source, cache, jobs=jobs)
    assert "resolve" not in phases
    assert moved.moved == ("pkg/core.py",)


@pytest.mark.parametrize(
    "edit",
    [
        pytest.param(lambda text: text.replace("return self.amount", "return self.amount + 1"), id="an expression"),
        pytest.param(lambda text: text.replace("def size(self):", "def size(self, n=0):"), id="a signature"),
        pytest.param(lambda text: text.replace("    return Part()\n", ""), id="a line removed"),
        pytest.param(lambda text: text, id="nothing"),
    ],
)
def test_moved_lines_is_none_unless_only_lines_moved(edit: Callable[[str], str]) -> None:
    text = '"""Parts."""\n' + textwrap.dedent(PACKAGE["pkg/parts.py"])
    before = extract_module(text.encode(), "pkg/parts.py")
    assert moved_lines(before, extract_module(edit(text).encode(), "pkg/parts.py")) is None
    moved = moved_lines(before, extract_module(("\n" + text).encode(), "pkg/parts.py"))
    assert moved is not None
    assert moved[1] == 1  # the module's own first line stays where it is
    assert all(new == old + 1 for old, new in moved.items() if old > 1)


@pytest.mark.usefixtures("torchrl_model")  # (which fills the session's cache with torchrl's records)
def test_moved_lines_on_torchrl_give_what_a_resolve_gives(
    torchrl_source: SourceTree, torchrl_cache: Path, tmp_path: Path
) -> None:
    """torchrl with tensordict, under the default cap, at which 168 variables drop values: the
    order the solve meets values in is part of the result there, and lines moving must not change it."""
    tree = tmp_path / "src"
    shutil.copytree(torchrl_source.package_dir, tree / "torchrl", ignore=shutil.ignore_patterns("__pycache__"))
    source = locate_source(tree / "torchrl")
    cache_dir = tmp_path / "cache"
    shutil.copytree(torchrl_cache / "files", cache_dir / "files")  # the files' records: not parsed again
    cache = Cache.at(cache_dir)
    jobs = min(2, os.cpu_count() or 1)  # (with two: the early look, as a command on a laptop takes it)
    cold, _ = _load(source, cache, extensions=TORCHRL_EXTENSIONS, jobs=jobs)
    assert cold.model.over_cap > 0
    package = tree / "torchrl"
    _insert(package / "collectors" / "_single.py", "self._carrier = env_next_output", "# a comment in rollout's loop")
    _insert(package / "modules" / "tensordict_module" / "rnn.py", "class LSTMModule", "")
    _insert(package / "objectives" / "value" / "advantages.py", "class GAE", "# GAE")
    edited = {"collectors/_single.py", "modules/tensordict_module/rnn.py", "objectives/value/advantages.py"}
    shuffled = _moved_at_random(package, random.Random(15), 20, edited)  # and lines added anywhere in more
    moved, phases = _load(source, cache, extensions=TORCHRL_EXTENSIONS, jobs=jobs)
    assert "resolve" not in phases
    assert len(moved.moved) == 3 + shuffled

    fresh_dir = tmp_path / "fresh"
    shutil.copytree(cache_dir / "files", fresh_dir / "files")
    fresh_cache = Cache.at(fresh_dir)
    _, phases = _load(source, fresh_cache, extensions=TORCHRL_EXTENSIONS)
    assert "resolve" in phases
    assert _stored(source, cache, extensions=TORCHRL_EXTENSIONS) == _stored(
        source, fresh_cache, extensions=TORCHRL_EXTENSIONS
    )


def _moved_at_random(package: Path, rng: random.Random, files: int, besides: set[str]) -> int:
    """Add comment lines at random places of ``files`` files of ``package`` other than ``besides``
    (a place inside a string or a bracket is given up for another: only edits that move lines are
    kept, as the tests' profile indexes them); how many files were edited."""
    edited = 0
    candidates = [
        path
        for path in sorted(package.rglob("*.py"))
        if path.relative_to(package).as_posix() not in besides and path.read_text(encoding="utf-8").strip()
    ]
    for path in rng.sample(candidates, files):
        text = path.read_text(encoding="utf-8")
        relative = path.relative_to(package.parent).as_posix()
        before = extract_module(text.encode(), relative, extensions=TORCHRL_EXTENSIONS)
        for _ in range(20):
            lines = text.splitlines(keepends=True)
            for _ in range(3):
                at = rng.randrange(1, len(lines) + 1)
                following = lines[at] if at < len(lines) else ""
                indent = following[: len(following) - len(following.lstrip())] if following.strip() else ""
                lines.insert(at, f"{indent}# a line added\n")
            after = extract_module("".join(lines).encode(), relative, extensions=TORCHRL_EXTENSIONS)
            if moved_lines(before, after) is not None:
                path.write_text("".join(lines), encoding="utf-8")
                edited += 1
                break
    return edited


# Names that do not tell one file's rows from another's: a function named like a module beside it
# (its name is the module's), a module written twice (``a.py`` beside ``a/__init__.py``).
COLLIDING = {
    "a function named like a module beside it, moved": (
        {
            "pkg/__init__.py": "from pkg.helpers import work\n\n\ndef utils(x):\n    work(x)\n    return len(x)\n",
            "pkg/utils.py": "import sys\n\n\n\n\n\nsys.exit(0)\n",
            "pkg/helpers.py": "def work(x):\n    return x\n",
        },
        ("pkg/__init__.py", "def utils", "# a line added"),
    ),
    "the module a function is named like, moved": (
        {
            "pkg/__init__.py": "import os\n\n\ndef utils():\n    return os.getcwd()\n",
            "pkg/utils.py": "import sys\n\n\ndef f():\n    return sys.exit(0)\n\n\nf()\n",
        },
        ("pkg/utils.py", "def f", "# a line added"),
    ),
    "a module written twice": (
        {
            "pkg/__init__.py": "",
            "pkg/a.py": "import os\n\n\ndef f():\n    return os.getcwd()\n",
            "pkg/a/__init__.py": "import sys\n\n\ndef g():\n    return sys.exit(0)\n",
        },
        ("pkg/a.py", "def f", "# a line added"),
    ),
}


@pytest.mark.parametrize("jobs", JOBS)
@pytest.mark.parametrize("case", sorted(COLLIDING))
def test_names_that_do_not_tell_files_apart_resolve(
    make_package: Callable[[dict[str, str | bytes]], Path], tmp_path: Path, case: str, jobs: int
) -> None:
    files, (edited, before, line) = COLLIDING[case]
    root, source, cache = _checkout(make_package, tmp_path, files)
    _load(source, cache, jobs=jobs)
    _insert(root / edited, before, line)
    _load(source, cache, jobs=jobs)
    _resolved_alike(source, cache, tmp_path, jobs)


@pytest.mark.parametrize("jobs", JOBS)
def test_a_tree_found_whole_in_the_cache_is_the_last_model_again(
    make_package: Callable[[dict[str, str | bytes]], Path], tmp_path: Path, jobs: int
) -> None:
    """Back on a branch whose model the cache holds (a code edit made, then undone), a comment line
    added next is a move from that model, not from the one of the edit undone."""
    root, source, cache = _checkout(make_package, tmp_path)
    _load(source, cache, jobs=jobs)
    core = root / "pkg" / "core.py"
    before = core.read_text(encoding="utf-8")
    _insert(core, "# pick the part maker", "helper({})")  # another branch: a code edit
    _, phases = _load(source, cache, jobs=jobs)
    assert "resolve" in phases
    core.write_text(before, encoding="utf-8")  # back
    back, phases = _load(source, cache, jobs=jobs)
    assert back.stats is None  # found whole
    _insert(core, "def helper", "# a comment line")
    moved, phases = _load(source, cache, jobs=jobs)
    assert "resolve" not in phases
    assert moved.moved == ("pkg/core.py",)
