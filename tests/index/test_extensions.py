"""Extensions a profile enables: the tensordict key vocabulary, as data, and what it changes.

Key accesses are recorded only under an enabled extension; the enabled set is part of every
cache key, so runs with different sets never share entries.
"""

from __future__ import annotations

import dataclasses
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from rlmap.errors import ConfigError
from rlmap.index.cache import Cache
from rlmap.index.extract import extract_module
from rlmap.index.records import ModuleIndex
from rlmap.index.source import locate_source
from rlmap.index.vocabulary import EXTENSIONS, KeyVocabulary, vocabulary_for
from rlmap.model.session import LoadedModel, cached_module, load_model
from rlmap.query.graphdump import graph_json
from tests.conftest import Run

MakePackage = Callable[[dict[str, str | bytes]], Path]
TENSORDICT = ("tensordict",)

MODULE = '''
    """Every form of key access the tensordict vocabulary knows, and plain dicts it must skip."""

    DEFAULT_IN_KEYS = ["obs"]


    class Policy:
        out_keys = ["action"]

        def forward(self, td, kwargs, obs_spec):
            td.set(("next", "reward"), 1.0)
            td["done"] = False
            value = td.get("obs")
            td.exclude("a", "b")
            if "is_init" in td.keys():
                del td["is_init"]
            kwargs.get("device")
            kwargs["device"] = None
            obs_spec["obs"]
            make(in_keys=["hidden"], out_keys="features")
            td["collector", "traj_ids"] = 0
            td.fill_(("collector", "mask"), -1)
            kwargs["a", "b"] = 1
            marker = "started"
            if marker in td.keys(True):
                pass
            return value
'''

EXPECTED_KEYS = [
    (("obs",), "read", "DEFAULT_IN_KEYS", "pkg.m"),
    (("action",), "write", "out_keys", "pkg.m.Policy"),
    (("next", "reward"), "write", "set", "pkg.m.Policy.forward"),
    (("done",), "write", "[]", "pkg.m.Policy.forward"),
    (("obs",), "read", "get", "pkg.m.Policy.forward"),
    (("a",), "delete", "exclude", "pkg.m.Policy.forward"),
    (("b",), "delete", "exclude", "pkg.m.Policy.forward"),
    (("is_init",), "check", "in keys()", "pkg.m.Policy.forward"),
    (("is_init",), "delete", "[]", "pkg.m.Policy.forward"),
    (("hidden",), "read", "in_keys", "pkg.m.Policy.forward"),
    (("features",), "write", "out_keys", "pkg.m.Policy.forward"),
    (("collector", "traj_ids"), "write", "[]", "pkg.m.Policy.forward"),  # a nested key without parentheses
    (("collector", "mask"), "write", "fill_", "pkg.m.Policy.forward"),
    (("started",), "check", "in keys()", "pkg.m.Policy.forward"),  # through the name holding it
]


def _package(make_package: MakePackage) -> Path:
    return make_package({"pkg/__init__.py": "", "pkg/m.py": MODULE})


def _load(root: Path, cache: Cache, extensions: tuple[str, ...]) -> LoadedModel:
    return load_model(locate_source(root, package="pkg"), cache, jobs=1, extensions=extensions)


def _keys(loaded: LoadedModel) -> list[tuple[tuple[str, ...], str, str, str]]:
    """Every key access of the model in line order: (key, kind, how, function)."""
    model = loaded.model
    rows = [(a.line, a.key, a.kind, a.how, a.function) for key in model.state["keys"] for a in model.key_accesses(key)]
    return [row[1:] for row in sorted(rows, key=lambda row: (row[0], row[3], row[1]))]


def test_the_tensordict_vocabulary_is_named_frozen_data() -> None:
    vocabulary = EXTENSIONS["tensordict"]
    assert isinstance(vocabulary, KeyVocabulary)
    assert vocabulary.name == "tensordict"
    assert (vocabulary.methods["get"], vocabulary.methods["set_"], vocabulary.methods["exclude"]) == (
        "read",
        "write",
        "delete",
    )
    assert vocabulary.keywords["out_keys"] == "write"
    assert vocabulary.declared_kind("DEFAULT_IN_KEYS") == "read"
    assert vocabulary.is_plain_receiver("kwargs")
    assert vocabulary.is_plain_receiver("reward_spec")
    assert not vocabulary.is_plain_receiver("td")
    with pytest.raises(dataclasses.FrozenInstanceError):
        vocabulary.name = "other"  # type: ignore[misc]
    with pytest.raises(TypeError):
        vocabulary.methods["get"] = "write"  # type: ignore[index]
    assert vocabulary_for(()) is None
    assert vocabulary_for(["tensordict", "tensordict"]) is vocabulary


def test_an_unknown_extension_is_a_configuration_error(make_package: MakePackage) -> None:
    with pytest.raises(ConfigError, match=r"unknown extension.*'tensorflow'.*use one of: tensordict"):
        _load(_package(make_package), Cache.disabled(), ("tensorflow",))
    with pytest.raises(ConfigError):
        extract_module(b"x = 1\n", "pkg/m.py", extensions=("nope",))


def test_keys_are_extracted_when_the_extension_is_enabled(make_package: MakePackage) -> None:
    loaded = _load(_package(make_package), Cache.disabled(), TENSORDICT)
    assert _keys(loaded) == EXPECTED_KEYS  # nothing from kwargs[...], kwargs.get(...) or obs_spec[...]


def test_a_key_of_a_call_over_lines_is_at_the_line_holding_it_whole(make_package: MakePackage) -> None:
    # "reward" is in reward_model and reward_module above it: the key is on the out_keys line
    module = """
        def build(make, reward_module):
            reward_model = make(
                reward_module,
                in_keys=["state"],
                out_keys=[("next", "reward")],
            )
            return reward_model
    """
    root = make_package({"pkg/__init__.py": "", "pkg/m.py": module})
    model = _load(root, Cache.disabled(), TENSORDICT).model
    (access,) = model.key_accesses(("next", "reward"))
    assert (access.how, access.line) == ("out_keys", 5)
    (state,) = model.key_accesses(("state",))
    assert state.line == 4


def test_an_entry_read_then_changed_in_place_is_a_write(make_package: MakePackage) -> None:
    module = """
        def fill(td, x, kwargs):
            td["next", "done"][:, -1] = True
            td.get("obs").copy_(x)
            td["state"].zero_()
            value = td.get("value")
            td["reward"].add(1)
            kwargs["a"][0] = 1
            return value
    """
    root = make_package({"pkg/__init__.py": "", "pkg/m.py": module})
    keys = _keys(_load(root, Cache.disabled(), TENSORDICT))
    assert keys == [
        (("next", "done"), "write", "[] changed in place by []=", "pkg.m.fill"),
        (("obs",), "write", "get changed in place by copy_", "pkg.m.fill"),
        (("state",), "write", "[] changed in place by zero_", "pkg.m.fill"),
        (("value",), "read", "get", "pkg.m.fill"),
        (("reward",), "read", "[]", "pkg.m.fill"),  # add returns a new tensor: nothing changed
    ]  # (kwargs is a plain dict: no key)


def test_a_tuple_of_strings_and_names_is_one_nested_key(make_package: MakePackage) -> None:
    # split_trajectories' (prefix, "traj_ids") was filed as two keys, "collector" and "traj_ids";
    # ("next", self.reward_key) written at the call was not found at all
    module = """
        def split(td, prefix=None):
            if prefix is None:
                prefix = "collector"
            traj_ids_key = (prefix, "traj_ids")
            ids = td.get(traj_ids_key)
            td.set(("next", prefix), ids)
            td["next", prefix] = ids
            return td.get((prefix, "done", other))


        class Loss:
            reward_key = "reward"

            def forward(self, td):
                return td[("next", self.reward_key)]
    """
    root = make_package({"pkg/__init__.py": "", "pkg/m.py": module})
    keys = _keys(_load(root, Cache.disabled(), TENSORDICT))
    assert keys == [
        (("collector", "traj_ids"), "read", "get", "pkg.m.split"),
        (("next", "collector"), "write", "set", "pkg.m.split"),
        (("next", "collector"), "write", "[]", "pkg.m.split"),
        (("next", "reward"), "read", "[]", "pkg.m.Loss.forward"),
    ]  # (prefix, "done", other) with other unknown: no key, and not "collector" or "done"


def test_no_key_is_extracted_without_an_extension(make_package: MakePackage) -> None:
    root = _package(make_package)
    plain = _load(root, Cache.disabled(), ())
    assert _keys(plain) == []
    index = extract_module((root / "pkg/m.py").read_bytes(), "pkg/m.py")
    assert (index.keys, index.diagnostics) == ((), ())
    # everything else is the same index: symbols, calls, attributes
    keyed = _load(root, Cache.disabled(), TENSORDICT)
    assert graph_json(plain.model) == graph_json(keyed.model)


def test_the_cache_never_mixes_extension_sets(make_package: MakePackage, tmp_path: Path) -> None:
    root = _package(make_package)
    cache_dir = tmp_path / "cache"
    keyed = _load(root, Cache.at(cache_dir), TENSORDICT)
    assert keyed.stats is not None
    assert keyed.stats.parsed == keyed.stats.files == 2
    plain = _load(root, Cache.at(cache_dir), ())
    assert plain.stats is not None, "the model entry of the other extension set was reused"
    assert plain.stats.parsed == 2, "file entries of the other extension set were reused"
    assert _keys(plain) == []
    warm_keyed = _load(root, Cache.at(cache_dir), TENSORDICT)
    assert warm_keyed.stats is None  # its own model entry is still there
    assert _keys(warm_keyed) == EXPECTED_KEYS
    warm_plain = _load(root, Cache.at(cache_dir), ())
    assert warm_plain.stats is None
    assert _keys(warm_plain) == []
    data = (root / "pkg/m.py").read_bytes()
    with_keys = cached_module(Cache.at(cache_dir), "pkg/m.py", data, TENSORDICT)
    without = cached_module(Cache.at(cache_dir), "pkg/m.py", data, ())
    assert isinstance(with_keys, ModuleIndex)
    assert isinstance(without, ModuleIndex)
    assert (len(with_keys.keys), len(without.keys)) == (len(EXPECTED_KEYS), 0)


def _project(root: Path, extensions: str | None) -> Path:
    """A ``pyproject.toml`` whose profile enables ``extensions`` (no profile when ``None``)."""
    table = '[tool.rlmap]\nsource = "."\npackage = "pkg"\n'
    if extensions is not None:
        (root / "profile.toml").write_text(f'[profile]\nname = "mini"\nextensions = {extensions}\n')
        table += 'profile = "profile.toml"\n'
    (root / "pyproject.toml").write_text(table)
    return root / "pyproject.toml"


@pytest.mark.parametrize("command", ["show", "graph"])
def test_the_cli_takes_the_extensions_from_the_profile(
    run: Run, make_package: MakePackage, tmp_path: Path, command: str
) -> None:
    root = _package(make_package)
    cache = str(tmp_path / "cache")
    enabled = str(_project(root, '["tensordict"]'))
    args = ["show", "--key", "done"] if command == "show" else ["graph"]
    code, out, err = run(*args, "--config", enabled, "--cache-dir", cache, "-q")
    assert (code, err) == (0, "")
    if command == "show":
        assert "td[]  pkg/m.py:11" in out
    none = str(_project(root, "[]"))
    code, out, err = run("show", "--key", "done", "--config", none, "--cache-dir", cache, "-q")
    assert code == 2
    assert "no tensordict key 'done' is read or written" in err
    no_profile = str(_project(root, None))
    code, _, err = run("show", "--key", "done", "--config", no_profile, "--cache-dir", cache, "-q")
    assert code == 2
    assert "no tensordict key 'done' is read or written" in err


def test_a_tensordict_made_from_a_dict_writes_its_keys() -> None:
    """``TensorDict({"_input": x, "is_init": i}, [b, t])`` (rnn.py's padding of LSTMModule and
    GRUModule) wrote ``is_init`` where no writer listed it: each string key of the dict given is a
    write, a nested dict's as nested keys; a plain ``dict(...)`` or a dict in another place is not."""
    source = textwrap.dedent(
        """
        from tensordict import TensorDict


        def make(x, done, other):
            source = TensorDict(
                {
                    "_input": x,
                    "next": {"done": done, "truncated": done},
                    other: x,
                },
                [1],
            )
            TensorDict(source={"reward": x}, batch_size=[])
            TensorDict.from_dict({"obs": x})
            TensorDict({"params": TensorDict({"max_speed": x}, [])}, [])
            dict({"plain": x})
            TensorDict(other, batch_size={"shape": 1})
            return source
        """
    ).lstrip()
    index = extract_module(source.encode(), "pkg/m.py", extensions=TENSORDICT)
    written = sorted((access.key, access.line, access.how) for access in index.keys if access.kind == "write")
    assert written == [
        (("_input",), 7, "TensorDict({...})"),
        (("next", "done"), 8, "TensorDict({...})"),
        (("next", "truncated"), 8, "TensorDict({...})"),
        (("obs",), 14, "from_dict({...})"),
        (("params", "max_speed"), 15, "TensorDict({...})"),  # a tensordict made inside: its keys nested
        (("reward",), 13, "TensorDict({...})"),
    ]
