"""Keys held in key lists: ``self.in_keys[1]``, ``*self.DEFAULT_IN_KEYS``, ``zip`` loops, locals.

The model follows key constants through the values that build key lists (rlmap.model.constants)
and gives each access made through an expression the keys that reach it, at its position when
the list's positions are known.
"""

from __future__ import annotations

import pytest

from rlmap.model.codemodel import CodeModel
from tests.conftest import model_of

RNN = "torchrl.modules.tensordict_module.rnn"

RECURRENT = """
    from tensordict.utils import unravel_key_list

    NO_DEFAULT = object()


    class Memory:
        DEFAULT_IN_KEYS = ["state_h", "state_c"]
        DEFAULT_OUT_KEYS = [("next", "state_h"), ("next", "state_c")]

        def __init__(self, in_key=None, in_keys=None, out_key=None, out_keys=None):
            if in_keys is None:
                in_keys = [in_key, *self.DEFAULT_IN_KEYS]
            if out_keys is None:
                out_keys = [out_key, *self.DEFAULT_OUT_KEYS]
            in_keys = unravel_key_list(in_keys)
            if "is_init" not in in_keys:
                in_keys = in_keys + ["is_init"]
            self.in_keys = in_keys
            self.out_keys = out_keys

        def forward(self, td):
            defaults = [NO_DEFAULT, None, None]
            value, hidden = (td.get(key, default) for key, default in zip(self.in_keys, defaults))
            td.set(self.out_keys[1], hidden)
            td.set(self.out_keys[2], hidden)
            td[self.out_keys[-1]] = hidden
            return td.select(*self.in_keys)

        def every(self, td):
            for key in self.in_keys:
                td.get(key)


    class Opaque:
        def __init__(self, keys):
            self.keys = [*keys, "tail"]

        def forward(self, td):
            td.get(self.keys[0])
            td.get(self.keys[1])
            for key in self.keys:
                td.get(key)
"""


def _sites(model: CodeModel, key: tuple[str, ...]) -> list[tuple[str, str, int, str]]:
    return sorted(
        (a.kind, a.function.rsplit(".", 1)[-1], a.line, a.expression)
        for a in model.key_accesses(key)
        if a.function.startswith("kp.")
    )


def test_positions_splices_and_zip_limits(make_package) -> None:  # type: ignore[no-untyped-def]
    model = model_of(make_package({"kp/__init__.py": "", "kp/memory.py": RECURRENT}), "kp")
    # line 7 is the class's declaration; zip stops at ``defaults`` (3 long), so line 23 reads the
    # first three in-keys; ``select(*self.in_keys)`` and the loop read every one
    for key in ("state_h", "state_c"):
        assert _sites(model, (key,)) == [
            ("read", "Memory", 7, ""),
            ("read", "every", 31, "key"),
            ("read", "forward", 23, "key"),
            ("read", "forward", 27, "self.in_keys"),
        ]
    # the list built by ``in_keys + ["is_init"]`` holds is_init, at position 3: not read at line 23
    assert _sites(model, ("is_init",)) == [("read", "every", 31, "key"), ("read", "forward", 27, "self.in_keys")]
    # an index picks one position (negative ones too, the list's length being known); a tuple of
    # strings is one key
    assert _sites(model, ("next", "state_h")) == [
        ("write", "Memory", 8, ""),
        ("write", "forward", 24, "self.out_keys[1]"),
    ]
    assert _sites(model, ("next", "state_c")) == [
        ("write", "Memory", 8, ""),
        ("write", "forward", 25, "self.out_keys[2]"),
        ("write", "forward", 26, "self.out_keys[-1]"),
    ]


def test_unknown_splice_keeps_members_not_positions(make_package) -> None:  # type: ignore[no-untyped-def]
    model = model_of(make_package({"kp/__init__.py": "", "kp/memory.py": RECURRENT}), "kp")
    # ``[*keys, "tail"]`` with ``keys`` unknown: "tail" is one of the list's keys (the loop reads
    # it) but at no known index, so neither ``self.keys[0]`` nor ``self.keys[1]`` is said to read it
    assert _sites(model, ("tail",)) == [("read", "forward", 42, "key")]


@pytest.mark.torchrl
def test_lstm_and_gru_hidden_state_keys_through_their_key_lists(torchrl_model: CodeModel, torchrl_source) -> None:  # type: ignore[no-untyped-def]
    """torchrl's recurrent modules name their hidden-state keys only through ``self.in_keys`` and
    ``self.out_keys`` (built from ``DEFAULT_IN_KEYS``/``DEFAULT_OUT_KEYS`` in ``__init__``)."""
    rnn = "torchrl/modules/tensordict_module/rnn.py"
    lines = (torchrl_source.root / rnn).read_text().splitlines()

    def line_of(text: str, after: str) -> int:
        start = next(number for number, line in enumerate(lines, 1) if after in line)
        return next(number for number, line in enumerate(lines, 1) if number > start and text in line)

    def sites(key: tuple[str, ...], function: str) -> set[tuple[str, int]]:
        return {(a.kind, a.line) for a in torchrl_model.key_accesses(key) if a.function == f"{RNN}.{function}"}

    lstm_read = line_of("tensordict_shaped.get(key, default)", "class LSTMModule(")
    assert ("read", lstm_read) in sites(("recurrent_state_h",), "LSTMModule.forward")
    assert ("read", lstm_read) in sites(("recurrent_state_c",), "LSTMModule.forward")
    # zipped with three defaults: the fourth in-key, is_init, is not read there
    assert ("read", lstm_read) not in sites(("is_init",), "LSTMModule.forward")
    for index, key in ((1, "recurrent_state_h"), (2, "recurrent_state_c")):
        written = line_of(f"tensordict_shaped.set(self.out_keys[{index}]", "class LSTMModule(")
        assert ("write", written) in sites(("next", key), "LSTMModule.forward")
    gru_read = line_of("tensordict_shaped.get(key, default)", "class GRUModule(")
    assert ("read", gru_read) in sites(("recurrent_state",), "GRUModule.forward")
    gru_written = line_of("tensordict_shaped.set(self.out_keys[1]", "class GRUModule(")
    assert ("write", gru_written) in sites(("next", "recurrent_state"), "GRUModule.forward")


COPIES = """
    class Estimator:
        def value(self, data):
            part = data.get("next").select("obs")
            part["is_init"] = data["is_init"]
            data.set("advantage", 1)
            out_keys = {}
            out_keys[("next", "reward")] = "r"
            part = data  # rebound to the caller's data: writes go there again
            part["done"] = 0
"""


def test_writes_into_a_copy_say_so_and_key_name_maps_are_no_tensordicts(make_package) -> None:  # type: ignore[no-untyped-def]
    model = model_of(make_package({"kp/__init__.py": "", "kp/est.py": COPIES}), "kp")

    def writes(key: tuple[str, ...]) -> list[tuple[int, str]]:
        return [(a.line, a.how) for a in model.key_accesses(key) if a.kind == "write"]

    assert writes(("is_init",)) == [(4, "[] on a copy")]  # ``part`` is a selected copy
    assert writes(("advantage",)) == [(5, "set")]
    assert writes(("next", "reward")) == []  # ``out_keys[k] = "name"``: a dict of key names
    assert writes(("done",)) == [(9, "[]")]


BUILT = """
    def replace_last(key, new_ending):
        if isinstance(key, str):
            return new_ending
        return key[:-1] + (new_ending,)


    def describe(key, label):
        return f"{label}: {key}"


    class Env:
        def step(self, td):
            for done_key in self.done_keys:
                init_key = replace_last(done_key, "is_init")
                td.set(init_key, td.get(done_key))
            text = describe("done", "note")
            td.get(text)

        def mark(self, td, info: dict):
            info["is_init"] = td.get("flag")
            extra = dict()
            extra["is_init"] = 1
"""


def test_a_function_returning_its_argument_builds_the_key(make_package) -> None:  # type: ignore[no-untyped-def]
    """``replace_last(done_key, "is_init")`` returns its ``new_ending`` as is when the key is a
    string: the access may be to ``is_init``; a function that only formats its argument gives no key."""
    model = model_of(make_package({"kp/__init__.py": "", "kp/env.py": BUILT}), "kp")
    assert _sites(model, ("is_init",)) == [("write", "step", 15, "init_key")]  # not ``info``'s, a dict
    assert _sites(model, ("done",)) == []  # ``describe("done", ...)`` formats its argument
    assert _sites(model, ("note",)) == []


def test_a_function_building_a_key_from_its_arguments_is_evaluated_branch_by_branch(make_package) -> None:  # type: ignore[no-untyped-def]
    """``_replace_last(("next", "truncated"), "done")`` (SliceSampler's done key) was filed under
    ``"done"``: the model took only the branch returning ``new_ending`` as is.  Each ``return`` is
    now evaluated with the arguments' keys, a branch under ``isinstance(key, str)`` (or its
    ``else``) taking only the keys it fits; a default tuple of strings is a parameter's key."""
    source = (
        BUILT
        + """

    def append_last(key, new_suffix):
        if isinstance(key, str):
            return key + new_suffix
        else:
            return key[:-1] + (key[-1] + new_suffix,)


    class Sampler:
        def __init__(self, truncated_key=("next", "truncated")):
            self.truncated_key = truncated_key

        def finalize(self, td):
            truncated_key = self.truncated_key
            done_key = replace_last(truncated_key, "done")
            td.get(done_key)
            td.get(replace_last("truncated", "terminated"))
            td.get(append_last(("next", "reward"), "_sum"))
            td.get(append_last("reward", "_sum"))

        def render(self, td, pixel_keys=("pixels",), render_kwargs=None):
            for key in pixel_keys:  # a list of keys, not one: nothing known of ``key``
                render_kwargs.setdefault(key)
"""
    )
    model = model_of(make_package({"kp/__init__.py": "", "kp/env.py": source}), "kp")

    def read_in_finalize(key: tuple[str, ...]) -> list[int]:
        return [line for kind, function, line, _ in _sites(model, key) if function == "finalize" and kind == "read"]

    lines = source.lstrip("\n").splitlines()
    start = next(n for n, line in enumerate(lines, 1) if "def finalize" in line)
    first = next(n for n, line in enumerate(lines, 1) if n > start and "td.get(done_key)" in line)
    assert read_in_finalize(("next", "done")) == [first]
    assert read_in_finalize(("done",)) == []
    assert read_in_finalize(("terminated",)) == [first + 1]
    assert read_in_finalize(("next", "reward_sum")) == [first + 2]
    assert read_in_finalize(("reward_sum",)) == [first + 3]
    assert _sites(model, ("is_init",)) == [("write", "step", 15, "init_key")]  # done keys not known: as before
    assert _sites(model, ("pixels",)) == []


def test_a_plain_dict_is_a_tensordict_key_holder_only_where_a_tensordict_is_made_from_it(make_package) -> None:  # type: ignore[no-untyped-def]
    """The items of a plain dict (a call's ``-> dict[...]``, ``d: dict``) are no tensordict's keys
    (torchrl's evaluator: ``metrics = self._run_eval(w)`` then ``metrics["_step"] = step``), unless
    the function makes a tensordict from it: ``obs_dict = self.read_obs(obs)`` then
    ``TensorDict(obs_dict, ...)`` (``GymLikeEnv._step``), ``out: dict = {}`` then ``TensorDict(out)``
    (``WorldModelLoss.forward``), or ``TensorDict({**obs, ...})``."""
    source = """
        from typing import Any

        from tensordict import TensorDict, TensorDictBase


        class Env:
            def read_obs(self) -> dict[str, Any]:
                return {}

            def _poll(self) -> dict[str, Any] | None:
                return None

            def _rollout(self) -> TensorDictBase:
                return None

            def metrics(self, step):
                metrics = self.read_obs()
                metrics["_step"] = step
                result = self._poll()
                result["_step"] = step
                data = self._rollout()
                data["_step"] = step
                return metrics

            def step(self, done):
                obs_dict = self.read_obs()
                obs_dict["done"] = done
                return TensorDict(obs_dict, batch_size=[])

            def loss(self, value):
                out: dict[str, Any] = {}
                out["loss_value"] = value
                return TensorDict(out)

            def reset(self, flag):
                obs = self.read_obs()
                obs["observation"] = flag
                kept: dict = {}
                kept["kept"] = flag
                return TensorDict({**obs, "terminated": flag}, batch_size=[])
    """
    model = model_of(make_package({"kp/__init__.py": "", "kp/ev.py": source}), "kp")
    assert [(kind, function) for kind, function, _, _ in _sites(model, ("_step",))] == [("write", "metrics")]
    assert [(kind, function) for kind, function, _, _ in _sites(model, ("done",))] == [("write", "step")]
    assert [(kind, function) for kind, function, _, _ in _sites(model, ("loss_value",))] == [("write", "loss")]
    assert [(kind, function) for kind, function, _, _ in _sites(model, ("observation",))] == [("write", "reset")]
    assert _sites(model, ("kept",)) == []


def test_an_item_of_an_attribute_inherited_from_outside_holds_no_keys(make_package) -> None:  # type: ignore[no-untyped-def]
    """``for group in self.param_groups: group["step"] += 1`` in a ``torch.optim.Optimizer``
    subclass (torchrl's ``DreamerV3Optimizer``): the list comes from the outside base, which makes
    no tensordict, so its items' entries are no keys.  The same loop counts where the package
    assigns the attribute, in the class or a base of its own, or where the only base is
    ``object``."""
    source = """
        import torch
        from tensordict import TensorDict


        class Optim(torch.optim.Optimizer):
            def step(self):
                for group in self.param_groups:
                    group["step"] += 1


        class Owned(torch.optim.Optimizer):
            def __init__(self):
                self.param_groups = [TensorDict()]

            def step(self):
                for group in self.param_groups:
                    group["owned"] = 1


        class Base:
            def __init__(self):
                self.parts = [TensorDict()]


        class Child(Base, torch.nn.Module):
            def step(self):
                for part in self.parts:
                    part["inherited"] = 1


        class Plain(object):
            def step(self):
                for item in self.items:
                    item["unknown"] = 1
    """
    model = model_of(make_package({"kp/__init__.py": "", "kp/opt.py": source}), "kp")
    assert _sites(model, ("step",)) == []
    assert [(kind, function) for kind, function, _, _ in _sites(model, ("owned",))] == [("write", "step")]
    assert [(kind, function) for kind, function, _, _ in _sites(model, ("inherited",))] == [("write", "step")]
    assert [(kind, function) for kind, function, _, _ in _sites(model, ("unknown",))] == [("write", "step")]


def test_keys_named_through_a_key_name_object_and_loops_over_literal_lists(make_package) -> None:  # type: ignore[no-untyped-def]
    """``td.set(self.tensor_keys.advantage, adv)`` is a write of ``advantage``, the default its
    key-name class declares (torchrl's losses and estimators, through ``_AcceptedKeys``, named in the
    ``tensor_keys`` property's annotation, in the class's scope); ``for key in (self.tensor_keys.advantage,
    "value_target")`` holds each element (``ValueEstimatorBase._mask_shifted_output``), and a name
    looped over two literal lists holds each list's elements in its own loop only."""
    source = """
        from dataclasses import dataclass


        class Estimator:
            @dataclass
            class _AcceptedKeys:
                advantage: str = "advantage"
                value: str = "state_value"

            tensor_keys: _AcceptedKeys

            @property
            def tensor_keys(self) -> _AcceptedKeys:
                return self._tensor_keys

            def forward(self, td, adv):
                td.get(self.tensor_keys.value)
                td.set(self.tensor_keys.advantage, adv)

            def mask(self, td):
                for key in (self.tensor_keys.advantage, "value_target"):
                    td.set(key, td.get(key))

            def to_dict(self, data):
                for key in ("ckpt", "out"):
                    data[key] = 1
                for key in ("device",):
                    data[key] = 2

            def spread(self, td, value):
                td.set(
                    ("next", self.tensor_keys.value),
                    value,
                )
    """
    root = make_package({"kp/__init__.py": "", "kp/est.py": source})
    model = model_of(root, "kp")
    written = (root / "kp" / "est.py").read_text().splitlines()
    assert [(kind, function) for kind, function, _, _ in _sites(model, ("advantage",))] == [
        ("read", "mask"),
        ("write", "forward"),
        ("write", "mask"),
    ]
    assert [(kind, function) for kind, function, _, _ in _sites(model, ("state_value",))] == [("read", "forward")]
    assert [(kind, function) for kind, function, _, _ in _sites(model, ("value_target",))] == [
        ("read", "mask"),
        ("write", "mask"),
    ]
    assert [line for _, _, line, _ in _sites(model, ("ckpt",))] == [written.index("            data[key] = 1") + 1]
    assert [line for _, _, line, _ in _sites(model, ("device",))] == [written.index("            data[key] = 2") + 1]
    # a key spread over a call's lines is at the line that names it (where a page's anchor points)
    spread = written.index('            ("next", self.tensor_keys.value),') + 1
    assert [line for _, function, line, _ in _sites(model, ("next", "state_value")) if function == "spread"] == [spread]


def test_torchrl_estimators_write_advantage_through_tensor_keys(torchrl_model: CodeModel) -> None:
    """``rlmap show --key advantage`` named only an LLM helper and a config: every estimator writes
    it through ``self.tensor_keys.advantage``, and ``_mask_shifted_output`` rewrites it in a loop."""
    writers = {a.function for a in torchrl_model.key_accesses(("advantage",)) if a.kind == "write"}
    base = "torchrl.objectives.value.advantages."
    assert {base + "GAE.forward", base + "TD0Estimator.forward", base + "VTrace.forward"} <= writers
    assert base + "ValueEstimatorBase._mask_shifted_output" in writers
    readers = {a.function for a in torchrl_model.key_accesses(("value_target",)) if a.kind == "read"}
    assert "torchrl.objectives.a2c.A2CLoss.loss_critic" in readers


def test_a_subclass_key_names_and_a_loop_in_a_function_without_self(make_package) -> None:  # type: ignore[no-untyped-def]
    """A loss that declares its own ``_AcceptedKeys`` without annotating ``tensor_keys`` again reads
    its own defaults (``self._AcceptedKeys`` is the subclass's: torchrl's ``ACTLoss``), not the
    base's empty one; a module-level function's loop over a literal list gives each element
    (``openx._format_data``: ``for key in ("reward", "done")``)."""
    source = """
        from dataclasses import dataclass


        class Base:
            @dataclass
            class _AcceptedKeys:
                pass

            tensor_keys: _AcceptedKeys

            @property
            def tensor_keys(self) -> _AcceptedKeys:
                return self._tensor_keys


        class Loss(Base):
            @dataclass
            class _AcceptedKeys:
                action: str = "action_pred"

            def forward(self, td):
                return td.get(self.tensor_keys.action)


        def format_data(data):
            for key in ("reward", "done"):
                data.set(("next", key), data.get(key))
    """
    model = model_of(make_package({"kp/__init__.py": "", "kp/loss.py": source}), "kp")
    assert [(kind, function) for kind, function, _, _ in _sites(model, ("action_pred",))] == [("read", "forward")]
    for key in ("reward", "done"):
        assert [(kind, function) for kind, function, _, _ in _sites(model, ("next", key))] == [("write", "format_data")]
        assert [(kind, function) for kind, function, _, _ in _sites(model, (key,))] == [("read", "format_data")]


def test_a_dict_made_in_a_function_holds_keys_only_where_it_may_reach_a_tensordict(make_package) -> None:  # type: ignore[no-untyped-def]
    """A local every binding of which makes a plain dict (``{}``, a comprehension, ``asdict(x)``,
    ``x.__dict__.copy()``) and that stays in its function holds no tensordict's keys: torchrl's
    ``constructor_kwargs`` (46 false keys in ``vLLMWrapper.get_new_version``), and the state
    ``__getstate__`` returns.  One that leaves it (stored, handed to a call, returned by a
    function not declared to return a plain mapping) or is rebound keeps its keys, and so does
    one a ``-> dict`` function returns where a tensordict is made from that function's result
    (``TensorDict(self._obs_as_tensordict(), ...)`` in torchrl's Genesis wrapper; ``obs =
    self._build_obs_dict(state)`` then ``TensorDict({**obs, ...})`` in its MuJoCo envs, where
    MicroDuck's override adds ``command`` and ``task_id`` to ``super()._build_obs_dict(state)``).
    A call made into a tensordict that resolves to nothing (``unknown.state_dict()``) names no
    function: every ``state_dict`` of the package would hold keys by its name."""
    source = """
        from dataclasses import asdict, dataclass
        from typing import Any

        from tensordict import TensorDict


        def build(**kwargs):
            return kwargs


        @dataclass
        class Config:
            def to_dict(self) -> dict[str, Any]:
                data = asdict(self)
                data["c_asdict"] = 1
                return data


        class Env:
            def __getstate__(self):
                state = self.__dict__.copy()
                state["c_state"] = None
                return state

            def rebuild(self, device):
                kwargs = {}
                kwargs["c_kwargs"] = device
                names = {name: 0 for name in ("a", "b")}
                names["c_comprehension"] = 1
                return build(**kwargs)

            def _obs(self) -> dict[str, Any]:
                out = {"observation": 0}
                out["k_pixels"] = 1
                return out

            def reset(self):
                return TensorDict(self._obs(), batch_size=[])

            def _info(self) -> dict[str, Any]:
                info = {}
                info["c_info"] = 1
                return info

            def stored(self, source, td):
                agent = {}
                agent["k_stored"] = 1
                source["group"] = agent
                extra = {}
                extra["k_updated"] = 2
                td.update(extra)
                unsaid = {}
                unsaid["k_returned"] = 3
                return unsaid

            def _build_obs(self) -> dict[str, Any]:
                built: dict[str, Any] = {}
                built["k_base_obs"] = 1
                return built

            def start(self):
                obs = self._build_obs()
                return TensorDict({**obs, "done": 0}, batch_size=[])

            def rebound(self, td, pairs):
                chosen = {}
                chosen["k_rebound"] = 1
                chosen = td.select("x")
                first, second = {}, {}
                first["k_unpacked"] = 1
                first, second = pairs
                for looped in pairs:
                    looped["k_looped"] = 1
                looped = {}
                return chosen, second


        class SubEnv(Env):
            def _build_obs(self) -> dict[str, Any]:
                observation = super()._build_obs()
                observation["k_sub_obs"] = 2
                return observation


        class Composite:
            def __init__(self, **specs):
                self.specs = specs


        class Saver:
            def state_dict(self) -> dict[str, Any]:
                sd = {}
                sd["c_saver_state"] = 1
                return sd

            def save(self, unknown):
                return TensorDict(unknown.state_dict(), batch_size=[])


        def leaving(td, flag, items, param=None):
            if param is None:
                param = {}
            param["k_param"] = 1
            entries = {}
            entries["k_spec"] = 1
            made = Composite(**entries)
            held = {}
            held["k_nested"] = 1

            def inner():
                return TensorDict(held, batch_size=[])

            chosen = {}
            chosen["k_ifexp"] = 1
            picked = chosen if flag else None
            copied = {}
            copied["k_copied"] = 1
            twin = copied.copy()
            walrus = {}
            walrus["k_walrus"] = 1
            if (walrus := td.get("x")) is not None:
                pass
            opened = {}
            opened["k_with"] = 1
            with td.unlock_() as opened:
                pass
            caught = {}
            caught["k_except"] = 1
            try:
                pass
            except ValueError as caught:
                pass
            return made, inner, picked, twin


        def yielding(td):
            out = {}
            out["k_yielded"] = 1
            yield out
    """
    model = model_of(make_package({"kp/__init__.py": "", "kp/env.py": source}), "kp")
    keys = {key[0] for key in model.tensordict_keys() if len(key) == 1}
    assert not {key for key in keys if key.startswith("c_")}, "a plain dict's items became keys"
    kept = {"k_pixels", "k_stored", "k_updated", "k_returned", "k_rebound", "k_unpacked", "k_looped"}
    assert kept | {"k_base_obs", "k_sub_obs"} <= keys
    # a parameter, a dict a class is built from by keyword or an inner function hands on, one
    # chosen, copied or yielded, a name rebound by a walrus, ``with`` or ``except``: keys kept
    leaving = {"k_param", "k_spec", "k_nested", "k_ifexp", "k_copied", "k_walrus", "k_with", "k_except"}
    assert leaving | {"k_yielded"} <= keys


def test_torchrl_keyword_dicts_and_pickled_state_hold_no_keys(torchrl_model: CodeModel) -> None:
    """On torchrl: a wrapper's keyword dicts and a ``__getstate__``'s state are no key writers;
    the observation dicts the Genesis and MuJoCo envs make their tensordicts from write theirs.
    (An item's items, ``constructor_kwargs["tokenizer_kwargs"]["padding"]``, are not judged: the
    item may be a tensordict.)"""
    writers = {
        access.function
        for key in torchrl_model.tensordict_keys()
        for access in torchrl_model.key_accesses(key)
        if access.kind == "write" and "[" not in access.receiver
    }
    for function in (
        "torchrl.modules.llm.policies.vllm_wrapper.vLLMWrapper.get_new_version",
        "torchrl.data.replay_buffers.replay_buffers.base.ReplayBuffer.__getstate__",
        "torchrl.modules.llm.policies.transformers_wrapper.TransformersWrapper.get_new_version",
        "torchrl.record.loggers.common._write_video",
        "torchrl.checkpoint._checkpoint.GlobalRNGState.state_dict",  # (``inner_collector.state_dict()``: unresolved)
        "torchrl.render.config.RenderConfig.to_dict",
    ):
        assert function not in writers, function
    # a tensorclass built from a dict by keyword: its fields are the dict's items
    tools = {access.function for access in torchrl_model.key_accesses(("tool_calls",)) if access.kind == "write"}
    assert "torchrl.data.llm.history.History._inv_chatml" in tools
    pixels = {access.function for access in torchrl_model.key_accesses(("pixels",)) if access.kind == "write"}
    assert "torchrl.envs.libs.genesis.GenesisWrapper._obs_as_tensordict" in pixels
    assert "torchrl.envs.custom.mujoco.base.MujocoEnv._build_obs_dict" in pixels
    commands = {access.function for access in torchrl_model.key_accesses(("command",)) if access.kind == "write"}
    assert "torchrl.envs.custom.mujoco.microduck.MicroDuckEnv._build_obs_dict" in commands


def test_a_read_through_a_name_for_one_key_is_a_key_read(make_package) -> None:  # type: ignore[no-untyped-def]
    """``x[name]`` reads are mostly lists and dicts and are not listed, but a name or attribute
    named for one key (``self.traj_key``, ``done_key``) holds one: torchrl's ``SliceSampler``
    reads the trajectory ids through ``storage[:][self.traj_key]`` (the ids' main reader, which no
    key list named)."""
    source = """
        class Sampler:
            def __init__(self, traj_key=None):
                self.traj_key = traj_key
                self.slot = "c_slot"

            def resolve(self):
                self.traj_key = ("collector", "traj_ids")

            def stops(self, storage, done_key="k_done"):
                ids = storage[:][self.traj_key]
                done = storage[done_key]
                cached = storage[self.slot]
                return ids, done, cached
    """
    model = model_of(make_package({"kp/__init__.py": "", "kp/s.py": source}), "kp")
    assert [kind for kind, *_ in _sites(model, ("collector", "traj_ids"))] == ["read"]
    assert [kind for kind, *_ in _sites(model, ("k_done",))] == ["read"]
    assert _sites(model, ("c_slot",)) == []


def test_torchrl_slice_sampler_reads_the_trajectory_ids(torchrl_model: CodeModel) -> None:
    readers = {a.function for a in torchrl_model.key_accesses(("collector", "traj_ids")) if a.kind == "read"}
    assert "torchrl.data.replay_buffers.samplers.slice.SliceSampler._get_stop_and_length" in readers
