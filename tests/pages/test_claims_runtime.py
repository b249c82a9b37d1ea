"""The curated claims a run can prove: torchrl runs on CPU and each claim's test checks what it says.

Every ``kind = "runtime"`` claim of the TorchRL profile, and every static claim that names a
``test``, names one of the tests below; :func:`test_every_runtime_claim_has_its_test` holds the
two lists together, so a claim cannot point at a test that does not exist (or silently lose it).
"""

from __future__ import annotations

import inspect
import math
import warnings
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torchrl")

from tensordict import TensorDict  # noqa: E402
from tensordict.nn import TensorDictModule, TensorDictSequential  # noqa: E402

from rlmap.pages.claims import load_claims  # noqa: E402

CLAIMS = Path(__file__).resolve().parents[2] / "rlmap" / "profiles" / "torchrl" / "claims.toml"


def _lstm(**kwargs):
    from torchrl.modules import LSTMModule

    torch.manual_seed(0)
    return LSTMModule(input_size=3, hidden_size=4, in_key="obs", out_key="features", **kwargs)


def _gru(**kwargs):
    from torchrl.modules import GRUModule

    torch.manual_seed(0)
    return GRUModule(input_size=3, hidden_size=4, in_key="obs", out_key="features", **kwargs)


def _hidden_keys(module) -> list[str]:
    return [key for key in module.in_keys if isinstance(key, str) and key.startswith("recurrent_state")]


def _step_input(module, is_init: bool, hidden_value: float) -> TensorDict:
    td = TensorDict({"obs": torch.ones(2, 3), "is_init": torch.full((2, 1), is_init, dtype=torch.bool)}, batch_size=[2])
    for key in _hidden_keys(module):
        td[key] = torch.full((2, 1, 4), hidden_value)
    return td


@pytest.mark.parametrize("make", [_lstm, _gru])
def test_sequential_mode_zeroes_hidden_at_is_init(make) -> None:
    module = make()
    stored = module(_step_input(module, True, 5.0))["features"]
    zero = module(_step_input(module, True, 0.0))["features"]
    carried = module(_step_input(module, False, 5.0))["features"]
    assert torch.allclose(stored, zero), "sequential mode must ignore the stored hidden state where is_init"
    assert not torch.allclose(carried, zero), "and use it where is_init is false"


@pytest.mark.parametrize("make", [_lstm, _gru])
def test_sequential_mode_runs_each_entry_as_one_step(make) -> None:
    """A [B, T] input in sequential mode does not raise: each of the B*T entries is one step from
    its own stored hidden state, so the output at a step does not depend on the steps before it."""
    module = make()
    td = TensorDict({"obs": torch.ones(2, 5, 3), "is_init": torch.zeros(2, 5, 1, dtype=torch.bool)}, batch_size=[2, 5])
    for key in _hidden_keys(module):
        td[key] = torch.zeros(2, 5, 1, 4)
    features = module(td)["features"]
    assert features.shape[:2] == (2, 5)
    assert torch.allclose(features, features[:, :1].expand_as(features)), "no state is carried along T"


def _sequence(module, stored_at_restart: float) -> TensorDict:
    """One row of 4 steps, a new trajectory starting at step 2 whose stored hidden state is given."""
    is_init = torch.tensor([True, False, True, False]).view(1, 4, 1)
    td = TensorDict({"obs": torch.ones(1, 4, 3), "is_init": is_init}, batch_size=[1, 4])
    for key in _hidden_keys(module):
        hidden = torch.zeros(1, 4, 1, 4)
        hidden[:, 2] = stored_at_restart
        td[key] = hidden
    return td


@pytest.mark.parametrize("make", [_lstm, _gru])
def test_recurrent_mode_restarts_from_stored_hidden(make) -> None:
    # the pad backend only: the scan backend needs torch's scan with backward support, which fails
    # its health check on this CPU build (its restart line is checked statically)
    from torchrl.modules import set_recurrent_mode

    module = make(recurrent_backend="pad")
    with set_recurrent_mode(True):
        stored = module(_sequence(module, 5.0))["features"]
        zero = module(_sequence(module, 0.0))["features"]
    assert torch.allclose(stored[:, :2], zero[:, :2]), "the first trajectory does not see the second's state"
    assert not torch.allclose(stored[:, 2:], zero[:, 2:]), "the restart at is_init uses the stored hidden state"


@pytest.mark.parametrize("make", [_lstm, _gru])
def test_recurrent_mode_returns_each_trajectorys_last_hidden_state(make) -> None:
    """Two trajectories of different lengths in one padded row: in recurrent mode the hidden state
    written at each trajectory's last step is the one a step-by-step run reaches there (the
    docstring's "0-filled input" caveat no longer holds: the sequences are packed), and the one
    written at its other steps is zero."""
    from torchrl.modules import set_recurrent_mode

    module = make(recurrent_backend="pad")
    keys = _hidden_keys(module)
    steps, ends = 6, (2, 5)  # trajectories 0-2 and 3-5
    obs = torch.randn(1, steps, 3, generator=torch.Generator().manual_seed(1))
    is_init = torch.zeros(1, steps, 1, dtype=torch.bool)
    is_init[0, 0] = is_init[0, 3] = True
    td = TensorDict({"obs": obs, "is_init": is_init}, batch_size=[1, steps])
    for key in keys:
        td[key] = torch.zeros(1, steps, 1, 4)
    with set_recurrent_mode(True):
        whole = module(td.clone())
    hidden = {key: torch.zeros(1, 1, 4) for key in keys}
    for t in range(steps):
        step = TensorDict({"obs": obs[:, t], "is_init": is_init[:, t], **hidden}, batch_size=[1])
        out = module(step)
        hidden = {key: out["next", key] for key in keys}
        for key in keys:
            if t in ends:
                assert torch.allclose(whole["next", key][:, t], hidden[key], atol=1e-5), (key, t)
            else:  # written at the trajectory's last step only: zeros at its other steps
                assert not whole["next", key][:, t].any(), (key, t)


def test_recurrent_mode_is_a_context_variable_defaulting_to_none() -> None:
    import contextvars

    from torchrl.modules import recurrent_mode, set_recurrent_mode
    from torchrl.modules.tensordict_module.rnn import recurrent_mode_state_manager

    assert recurrent_mode() is None
    assert isinstance(recurrent_mode_state_manager._context_mode, contextvars.ContextVar)
    with set_recurrent_mode(True):
        assert recurrent_mode() is True
        assert contextvars.Context().run(recurrent_mode) is None  # another context sees its own value
        with set_recurrent_mode("sequential"):
            assert recurrent_mode() is False
        assert recurrent_mode() is True
    assert recurrent_mode() is None


def test_module_uses_its_default_outside_any_context() -> None:
    from torchrl.modules import set_recurrent_mode

    module = _lstm(default_recurrent_mode=True)
    assert module.recurrent_mode is True
    with set_recurrent_mode(False):
        assert module.recurrent_mode is False
    assert _lstm().recurrent_mode is False


def test_loss_forward_runs_in_recurrent_mode_and_a_standalone_estimator_does_not() -> None:
    from torchrl.modules import recurrent_mode
    from torchrl.objectives import LossModule
    from torchrl.objectives.value import GAE

    seen: list[object] = []

    class Probe(LossModule):
        def forward(self, tensordict):
            del tensordict
            seen.append(recurrent_mode())
            return TensorDict({"loss_probe": torch.zeros(())}, batch_size=[])

        def probe_loss(self, tensordict):
            seen.append(recurrent_mode())
            return tensordict

    Probe()(TensorDict({}, batch_size=[]))
    Probe().probe_loss(TensorDict({}, batch_size=[]))
    assert seen == [True, True]
    assert recurrent_mode() is None

    def value(obs):
        seen.append(recurrent_mode())
        return obs.sum(-1, keepdim=True)

    critic = TensorDictModule(value, in_keys=["obs"], out_keys=["state_value"])
    data = TensorDict(
        {
            "obs": torch.ones(1, 3, 2),
            "next": {
                "obs": torch.ones(1, 3, 2),
                "reward": torch.ones(1, 3, 1),
                "done": torch.zeros(1, 3, 1, dtype=torch.bool),
                "terminated": torch.zeros(1, 3, 1, dtype=torch.bool),
            },
        },
        batch_size=[1, 3],
    )
    seen.clear()
    GAE(gamma=0.9, lmbda=0.9, value_network=critic)(data)
    assert seen
    assert all(mode is None for mode in seen)


# the collectors build a deprecated weight updater by default (torchrl 0.14.1)
_UPDATER = pytest.mark.filterwarnings("ignore:Creating .*WeightUpdater:DeprecationWarning")


def _pendulum(**kwargs):
    from torchrl.envs import PendulumEnv

    return PendulumEnv(**kwargs)


@_UPDATER
def test_post_collect_hook_sees_the_batch_after_postproc() -> None:
    """What ``postproc`` adds reaches the hook, but not a key whose name starts with ``_``."""
    from torchrl.collectors import Collector

    def postproc(batch: TensorDict) -> TensorDict:
        batch["_private"] = torch.zeros(batch.shape)
        batch["by_postproc"] = torch.ones(batch.shape)
        batch["next", "_nested_private"] = torch.zeros(batch.shape)
        return batch

    seen: list[set[object]] = []
    collector = Collector(_pendulum(), frames_per_batch=4, total_frames=4, postproc=postproc)
    collector.post_collect_hook = lambda batch: seen.append(set(batch.keys(True)))
    for _ in collector:
        pass
    assert len(seen) == 1
    assert "by_postproc" in seen[0]
    assert "_private" not in seen[0]
    assert ("next", "_nested_private") not in seen[0]
    collector.shutdown()


@_UPDATER
def test_an_interrupted_rollout_returns_the_whole_buffer() -> None:
    """A rollout with buffers stopped by an interruptor after its first step returns all of
    ``_final_rollout``: the first step written, the others as the batch before left them, and
    their ``("collector", "traj_ids")`` -1; the iterator counts the batch's frames whole."""
    from torchrl.collectors import Collector
    from torchrl.collectors._constants import _Interruptor

    collector = Collector(_pendulum(), frames_per_batch=4, total_frames=40, use_buffers=True)
    first = collector.rollout().clone()
    collector.interruptor = _Interruptor()
    collector.interruptor.stop_collection()
    second = collector.rollout()
    assert second is collector._final_rollout
    assert second.shape == first.shape == torch.Size([4])
    ids = second["collector", "traj_ids"].tolist()
    assert ids[0] >= 0  # the step collected has its trajectory's id
    assert ids[1:] == [-1, -1, -1]
    assert torch.equal(second["th"][1:], first["th"][1:])  # left by the batch before
    assert not torch.equal(second["th"][:1], first["th"][:1])  # written by this one
    collector.shutdown()
    # the iterator counts such a batch whole
    collector = Collector(_pendulum(), frames_per_batch=4, total_frames=40, use_buffers=True)
    collector.interruptor = _Interruptor()
    collector.interruptor.stop_collection()
    batch = next(iter(collector))
    assert batch["collector", "traj_ids"].tolist()[1:] == [-1, -1, -1]
    assert collector._frames == 4
    collector.shutdown()


@_UPDATER
def test_default_collector_on_cpu_casts_every_step() -> None:
    from torchrl.collectors import Collector

    collector = Collector(_pendulum(device="cpu"), frames_per_batch=4, total_frames=4)
    try:
        assert collector.policy_device is None
        assert collector.env_device == torch.device("cpu")
        assert collector._cast_to_policy_device is False
        assert collector._cast_to_env_device is True  # env.device (cpu) != storing_device (None)
        assert collector._carrier_has_no_device is True
        assert collector._carrier.device is None
        # the cast the rollout makes: a new tensordict over the same CPU tensors, nothing copied
        cast = collector._carrier.to(collector.env_device)
        assert cast is not collector._carrier
        leaves = list(cast.keys(True, True))
        assert leaves
        assert all(cast.get(key).data_ptr() == collector._carrier.get(key).data_ptr() for key in leaves)
    finally:
        collector.shutdown()
    collector = Collector(_pendulum(), frames_per_batch=4, total_frames=4)  # an env without a device
    try:
        assert collector._cast_to_policy_device is False
        assert collector._cast_to_env_device is False
        assert collector._carrier_has_no_device is True  # env_device is None
    finally:
        collector.shutdown()


def test_a_rollout_adding_to_a_buffer_step_by_step_ends_at_total_frames() -> None:
    """With a replay buffer and extend_buffer=False, the rollout adds each step and returns once
    the frames reach total_frames: the last batch is cut short."""
    from torchrl.collectors import Collector
    from torchrl.data import LazyTensorStorage, ReplayBuffer

    buffer = ReplayBuffer(storage=LazyTensorStorage(100))
    collector = Collector(_pendulum(), frames_per_batch=4, total_frames=6, replay_buffer=buffer, extend_buffer=False)
    sizes = []
    try:
        for _ in collector:
            sizes.append(len(buffer))
    finally:
        collector.shutdown()
    assert sizes == [4, 6]  # the second rollout stopped after 2 of its 4 steps


@_UPDATER
def test_rollout_runs_ceil_frames_per_batch_over_env_copies() -> None:
    from torchrl.collectors import Collector
    from torchrl.envs import SerialEnv

    env = SerialEnv(3, _pendulum)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        collector = Collector(env, frames_per_batch=10, total_frames=12)
    try:
        assert collector.frames_per_batch == math.ceil(10 / 3)
        batch = next(iter(collector))
        assert batch.shape == torch.Size([3, math.ceil(10 / 3)])
        assert any("not exactly divisible" in str(w.message) for w in caught)
    finally:
        collector.shutdown()


@_UPDATER
def test_carrier_swaps_for_the_post_reset_output_and_keeps_the_hidden_state() -> None:
    from torchrl.collectors import Collector
    from torchrl.envs import InitTracker, TransformedEnv
    from torchrl.modules import MLP

    lstm = _lstm_for_mock()
    policy = TensorDictSequential(
        lstm, TensorDictModule(MLP(in_features=4, out_features=7), in_keys=["features"], out_keys=["action"])
    )
    env = TransformedEnv(_mock_env(), InitTracker())
    env.append_transform(lstm.make_tensordict_primer())
    collector = Collector(env, policy, frames_per_batch=3, total_frames=3)
    try:
        batch = next(iter(collector))
        assert "recurrent_state_h" in collector._carrier
        # step_mdp moved ("next", h) of step t to h of step t+1
        assert torch.equal(batch["next", "recurrent_state_h"][:-1], batch["recurrent_state_h"][1:])
        assert batch["is_init"][0].all()
        assert not batch["is_init"][1:].any()
    finally:
        collector.shutdown()


@_UPDATER
def test_compact_obs_stores_steps_without_the_next_hidden_state() -> None:
    from torchrl.collectors import Collector
    from torchrl.envs import InitTracker, TransformedEnv
    from torchrl.modules import MLP

    for compact in (False, True):
        lstm = _lstm_for_mock()
        policy = TensorDictSequential(
            lstm, TensorDictModule(MLP(in_features=4, out_features=7), in_keys=["features"], out_keys=["action"])
        )
        env = TransformedEnv(_mock_env(), InitTracker())
        env.append_transform(lstm.make_tensordict_primer())
        collector = Collector(env, policy, frames_per_batch=3, total_frames=3, compact_obs=compact)
        try:
            batch = next(iter(collector))
        finally:
            collector.shutdown()
        assert batch["recurrent_state_h"][1:].abs().sum() > 0  # the hidden state at the root: stored either way
        stored = set(batch["next"].keys())
        assert "reward" in stored
        if not compact:
            assert {"recurrent_state_h", "recurrent_state_c", "observation", "is_init"} <= stored
            assert torch.equal(batch["next", "recurrent_state_h"][:-1], batch["recurrent_state_h"][1:])
            continue
        assert not {"observation", "is_init"} & stored, stored
        # the next hidden state is not stored: the stacked batch, preallocated, shows zeros there
        for key in ("recurrent_state_h", "recurrent_state_c"):
            assert key not in stored or not batch["next", key].any(), key


@_UPDATER
def test_a_collector_leaves_the_recurrent_mode_to_the_module() -> None:
    """No collector code sets the mode: the context value stays None while the policy runs, and a
    module built with ``default_recurrent_mode=True`` runs in recurrent mode there, which an
    environment without a batch dimension cannot feed."""
    from torchrl.collectors import Collector
    from torchrl.envs import InitTracker, TransformedEnv
    from torchrl.modules import MLP, LSTMModule, recurrent_mode

    seen: list[object] = []

    def record(observation):
        seen.append(recurrent_mode())
        return observation

    for default in (False, True):
        torch.manual_seed(0)
        lstm = LSTMModule(
            input_size=7, hidden_size=4, in_key="observation", out_key="features", default_recurrent_mode=default
        )
        policy = TensorDictSequential(
            TensorDictModule(record, in_keys=["observation"], out_keys=["observation"]),
            lstm,
            TensorDictModule(MLP(in_features=4, out_features=7), in_keys=["features"], out_keys=["action"]),
        )
        env = TransformedEnv(_mock_env(), InitTracker())
        env.append_transform(lstm.make_tensordict_primer())
        assert env.batch_size == torch.Size([])
        if not default:
            _collect_once(Collector, env, policy)
            assert seen
            assert all(mode is None for mode in seen), seen
            continue
        with pytest.raises(ValueError, match="requires the input tensordict to have at least one batch dim"):
            _collect_once(Collector, env, policy)


@pytest.mark.parametrize("make", [_lstm, _gru])
def test_recurrent_mode_by_default_chains_a_batched_envs_copies_as_time_steps(make) -> None:
    """A module built with ``default_recurrent_mode=True``, fed one step of three env copies (a
    batched environment's carrier, batch ``[3]``), raises nothing: it takes the copies as three
    time steps of one sequence, so only the first copy starts from its own stored hidden state."""
    sequential, recurrent = make(), make(default_recurrent_mode=True)
    td = TensorDict({"obs": torch.randn(3, 3), "is_init": torch.zeros(3, 1, dtype=torch.bool)}, batch_size=[3])
    for key in _hidden_keys(sequential):
        td[key] = torch.randn(3, 1, 4)
    each = sequential(td.clone())["features"]
    chained = recurrent(td.clone())["features"]  # (no error)
    assert torch.allclose(each[0], chained[0])  # the first copy: its own stored state
    assert not torch.allclose(each[1:], chained[1:])  # the others: the state the copy before left


def _collect_once(collector_class, env, policy) -> None:
    collector = None
    try:
        collector = collector_class(env, policy, frames_per_batch=3, total_frames=3)
        next(iter(collector))
    finally:
        if collector is not None:
            collector.shutdown()


@_UPDATER
def test_primer_resets_the_hidden_state_whatever_is_init_says() -> None:
    """A policy that forces is_init to False: the LSTM never zeroes, yet every reset output holds
    the primer's default (zero) hidden state, because the primer writes it where the reset flag is."""
    from torchrl.collectors import Collector
    from torchrl.envs import Compose, InitTracker, StepCounter, TransformedEnv
    from torchrl.modules import MLP

    lstm = _lstm_for_mock()
    never_init = TensorDictModule(torch.zeros_like, in_keys=["is_init"], out_keys=["is_init"])
    policy = TensorDictSequential(
        never_init,
        lstm,
        TensorDictModule(MLP(in_features=4, out_features=7), in_keys=["features"], out_keys=["action"]),
    )
    env = TransformedEnv(_mock_env(), Compose(StepCounter(3), InitTracker(), lstm.make_tensordict_primer()))
    collector = Collector(env, policy, frames_per_batch=8, total_frames=8, auto_register_policy_transforms=False)
    try:
        batch = next(iter(collector))
    finally:
        collector.shutdown()
    steps = batch["step_count"].squeeze(-1)
    hidden = batch["recurrent_state_h"].abs().flatten(1).sum(-1)
    assert not batch["is_init"].any(), "the policy hid every episode start"
    assert (steps == 0).sum() >= 2, "the batch crosses at least one reset"
    assert (hidden[steps == 0] == 0).all(), "every reset output holds the primer's default state"
    assert (hidden[steps > 0] > 0).all(), "and the state is carried between resets"


@_UPDATER
def test_env_sync_is_chosen_before_the_env_device_is_adopted(monkeypatch: pytest.MonkeyPatch) -> None:
    """With CUDA available, a CPU destination gets a CUDA synchronisation; but ``_sync_env`` is
    chosen from the constructor's ``env_device`` (None here), before ``_apply_env_device`` adopts
    the environment's CPU device, so it stays the function that does nothing."""
    from torchrl.collectors import Collector
    from torchrl.collectors._single import _cuda_sync_if_initialized, _do_nothing

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    collector = Collector(_pendulum(device="cpu"), frames_per_batch=4, total_frames=4)
    try:
        assert collector.env_device == torch.device("cpu")
        assert collector._cast_to_env_device is True  # the carrier is copied to the env's device
        assert collector._sync_env is _do_nothing
        assert collector._get_sync_fn(collector.env_device) is _cuda_sync_if_initialized
    finally:
        collector.shutdown()


def test_a_recurrent_module_without_is_init_raises_the_quoted_key_error() -> None:
    """The debugging map's symptom title quotes this message."""
    module = _lstm_for_mock()
    with pytest.raises(KeyError, match='key "is_init" not found in TensorDict with keys'):
        module(TensorDict({"observation": torch.zeros(3, 7)}, [3]))


def test_step_and_maybe_reset_writes_next_into_its_input() -> None:
    env = _pendulum()
    carrier = env.reset()
    carrier.set("action", env.action_spec.rand())
    output, _ = env.step_and_maybe_reset(carrier)
    assert output is carrier
    assert "next" in carrier


def _mock_env():
    """torchrl's own test environment with a 7-float ``observation`` and action, on CPU."""
    from torchrl.testing.mocking_classes import ContinuousActionVecMockEnv

    return ContinuousActionVecMockEnv()


def _lstm_for_mock():
    from torchrl.modules import LSTMModule

    torch.manual_seed(0)
    return LSTMModule(input_size=7, hidden_size=4, in_key="observation", out_key="features")


def test_primer_writes_its_keys_on_reset_and_copies_them_forward_on_step() -> None:
    from torchrl.envs import TransformedEnv

    lstm = _lstm_for_mock()
    primer = lstm.make_tensordict_primer()
    assert set(primer.primers.keys()) == {"recurrent_state_h", "recurrent_state_c"}
    env = TransformedEnv(_mock_env(), primer)
    td = env.reset()
    assert td["recurrent_state_h"].abs().sum() == 0
    td["recurrent_state_h"] = torch.ones_like(td["recurrent_state_h"])
    td["action"] = torch.zeros(7)
    stepped = env.step(td)  # the policy did not write ("next", h): the primer copies the root value
    assert torch.equal(stepped["next", "recurrent_state_h"], td["recurrent_state_h"])


@pytest.mark.parametrize("random", [False, True])
def test_a_partial_reset_restarts_only_the_hidden_state_of_the_envs_it_resets(random: bool) -> None:
    """Two envs, the first reset: it gets the primer's value (5, or a random one), the second
    keeps the value of its input, whatever the primer's default."""
    from torchrl.data import Unbounded
    from torchrl.envs import SerialEnv, TensorDictPrimer, TransformedEnv
    from torchrl.testing.mocking_classes import ContinuousActionVecMockEnv

    spec = Unbounded(shape=(3,))  # per env: (2, 3) in all
    primer = TensorDictPrimer(h=spec, random=True) if random else TensorDictPrimer(h=spec, default_value=5.0)
    env = TransformedEnv(SerialEnv(2, ContinuousActionVecMockEnv), primer)
    try:
        td = env.reset()
        td["h"] = torch.ones(2, 3)
        td["_reset"] = torch.tensor([[True], [False]])
        out = env.reset(td)
        assert torch.equal(out["h"][1], torch.ones(3)), "the env not reset keeps its input's value"
        assert not torch.equal(out["h"][0], torch.ones(3)), "the env reset takes the primer's"
        if not random:
            assert torch.equal(out["h"][0], torch.full((3,), 5.0))
    finally:
        env.close()


@_UPDATER
def test_a_collector_built_on_a_recurrent_policy_without_is_init_raises_the_key_error() -> None:
    """The collector runs the policy once while it is built, so the missing ``is_init`` raises
    there; left unset, ``auto_register_policy_transforms`` warns first, ``False`` says nothing,
    and ``True`` appends the transforms the policy needs."""
    from tensordict.nn import TensorDictModule, TensorDictSequential
    from torch import nn
    from torchrl.collectors import Collector
    from torchrl.envs import TransformedEnv

    lstm = _lstm_for_mock()
    policy = TensorDictSequential(lstm, TensorDictModule(nn.Linear(4, 7), in_keys=["features"], out_keys=["action"]))
    # the policy (no spec) runs in the constructor's branch for a policy without a complete spec:
    # the last of _maybe_make_final_rollout's calls of the policy
    lines, start = inspect.getsourcelines(Collector._maybe_make_final_rollout)
    calls = [start + n for n, text in enumerate(lines) if "policy_output = self._wrapped_policy(" in text]
    for flag in (None, False):
        env = TransformedEnv(_mock_env(), lstm.make_tensordict_primer())
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with pytest.raises(KeyError, match="is_init") as raised:
                Collector(env, policy, frames_per_batch=4, total_frames=8, auto_register_policy_transforms=flag)
        warned = [w for w in caught if "missing transforms required by the policy" in str(w.message)]
        assert bool(warned) is (flag is None)
        frames = [
            (f.name, f.lineno + 1) for f in raised.traceback if f.name == "_maybe_make_final_rollout"
        ]  # (0-based)
        assert len(calls) == 2
        assert [line for _, line in frames] == [calls[-1]]
    env = TransformedEnv(_mock_env(), lstm.make_tensordict_primer())
    collector = Collector(env, policy, frames_per_batch=4, total_frames=8, auto_register_policy_transforms=True)
    try:
        assert "is_init" in next(iter(collector)).keys(True)
    finally:
        collector.shutdown()


def test_a_hand_built_hidden_state_of_another_shape_fails_where_the_lstm_transposes_it() -> None:
    """A step's hidden state shaped as the primer's specs (one row per layer) runs; without that
    row dimension the module fails in ``_lstm``, where it takes the first step and transposes it."""
    from tensordict import TensorDict

    lstm = _lstm_for_mock()
    for shape, runs in (((3, 1, 4), True), ((3, 4), False)):
        hidden = {"recurrent_state_h": torch.zeros(shape), "recurrent_state_c": torch.zeros(shape)}
        td = TensorDict(
            {"observation": torch.randn(3, 7), "is_init": torch.zeros(3, 1, dtype=torch.bool), **hidden}, batch_size=[3]
        )
        if runs:
            lstm(td)
            continue
        with pytest.raises(IndexError) as raised:
            lstm(td)
        assert raised.traceback[-1].name == "_lstm"


def test_step_mdp_moves_next_entries_to_the_root() -> None:
    from torchrl.envs.utils import step_mdp

    td = TensorDict(
        {"h": torch.zeros(1), "next": {"h": torch.ones(1), "reward": torch.ones(1), "foo": torch.ones(2)}},
        batch_size=[],
    )
    moved = step_mdp(td)
    assert torch.equal(moved["h"], torch.ones(1))
    assert torch.equal(moved["foo"], torch.ones(2))  # every entry: the function has no specs to read
    assert "reward" not in moved  # but those it excludes by name: the reward, the action
    td["next", "action"] = torch.ones(1)
    assert "action" not in step_mdp(td)
    assert "next" not in moved


def test_step_and_maybe_reset_moves_to_the_root_only_the_keys_its_specs_list() -> None:
    """The env's ``_step_mdp`` is not the function ``step_mdp``: it moves the observation spec's
    keys (a primer's among them) and the done keys, not every entry under ``"next"``."""
    from torchrl.envs import TransformedEnv

    lstm = _lstm_for_mock()
    for primed in (True, False):
        base = _mock_env()
        env = TransformedEnv(base, lstm.make_tensordict_primer()) if primed else base
        td = env.reset()
        td["action"] = env.action_spec.rand()
        # what an LSTM policy writes under "next", and an entry no spec lists
        td.set(("next", "recurrent_state_h"), torch.ones(1, 4))
        td.set(("next", "foo"), torch.ones(1))
        stepped, carried = env.step_and_maybe_reset(td)
        assert ("next", "recurrent_state_h") in stepped.keys(True)
        assert ("next", "foo") in stepped.keys(True)
        assert "observation" in carried
        assert "foo" not in carried
        assert ("recurrent_state_h" in carried) is primed  # moved only where the primer's spec lists it
    # an InitTracker lists ``is_init`` in the specs: the next input's ``is_init`` is the step's
    # ``("next", "is_init")``, moved to the root
    from torchrl.envs import InitTracker

    env = TransformedEnv(_mock_env(), InitTracker())
    td = env.reset()
    td["action"] = env.action_spec.rand()
    stepped, carried = env.step_and_maybe_reset(td)
    assert "is_init" in env.full_observation_spec
    assert torch.equal(carried["is_init"], stepped["next", "is_init"])
    assert not carried["is_init"].any()  # (an ordinary step)


def test_init_tracker_marks_reset_true_and_step_false() -> None:
    from torchrl.envs import InitTracker, TransformedEnv

    env = TransformedEnv(_pendulum(), InitTracker())
    rollout = env.rollout(3)
    assert rollout["is_init"][0].all()
    assert not rollout["is_init"][1:].any()


def _two_envs_ending_differently(second_ends: bool = True):
    """Two envs with the done keys ``done``, ``terminated`` and ``truncated``: on the second step
    the first terminates and the second is truncated (or, ``second_ends=False``, goes on)."""
    from torchrl.data import Categorical, Composite, Unbounded
    from torchrl.envs import EnvBase

    def flags(*values: bool) -> torch.Tensor:
        return torch.tensor(values, dtype=torch.bool).unsqueeze(-1)

    class Ends(EnvBase):
        def __init__(self) -> None:
            super().__init__(batch_size=[2])
            self.observation_spec = Composite(obs=Unbounded((2, 3)), shape=(2,))
            self.action_spec = Unbounded((2, 1))
            self.reward_spec = Unbounded((2, 1))
            done = {name: Categorical(2, (2, 1), dtype=torch.bool) for name in ("done", "terminated", "truncated")}
            self.full_done_spec = Composite(**done, shape=(2,))
            self.steps = 0

        def _reset(self, td):  # noqa: ARG002 - the env ignores its input
            none = flags(False, False)
            return TensorDict({"obs": torch.zeros(2, 3), "done": none, "terminated": none, "truncated": none}, [2])

        def _step(self, td):  # noqa: ARG002 - the env ignores its input
            self.steps += 1
            last = self.steps == 2
            terminated, truncated = flags(last, False), flags(False, last and second_ends)
            data = {"obs": torch.full((2, 3), float(self.steps)), "reward": torch.zeros(2, 1)}
            data.update(done=terminated | truncated, terminated=terminated, truncated=truncated)
            return TensorDict(data, [2])

        def _set_seed(self, seed):
            return seed

    return Ends()


def test_native_autoreset_leaves_the_truncated_flags_in_is_init() -> None:
    """Under native autoreset the done keys, in ``done_keys`` order, each write their flags into
    the next input's ``is_init``: the last, ``truncated``, decides, so the env that terminated is
    not marked; the step's own ``("next", "is_init")`` is cleared where it is done."""
    from torchrl.envs import InitTracker, TransformedEnv

    base = _two_envs_ending_differently()
    env = TransformedEnv(base, InitTracker())
    base._torchrl_native_autoreset = env._torchrl_native_autoreset = True
    assert list(env.done_keys) == ["done", "terminated", "truncated"]
    td = env.reset()
    assert td["is_init"].all()
    for _ in range(2):
        td["action"] = torch.zeros(2, 1)
        out, td = env.step_and_maybe_reset(td)
    assert out["next", "done"].squeeze(-1).tolist() == [True, True]
    assert out["next", "terminated"].squeeze(-1).tolist() == [True, False]
    assert td["is_init"].squeeze(-1).tolist() == [False, True], "the truncated flags decide"
    assert not out["next", "is_init"].any(), "the stored next is_init is cleared where the step is done"


@_UPDATER
def test_auto_register_appends_init_tracker_and_primer() -> None:
    from torchrl.collectors import Collector
    from torchrl.modules import MLP

    lstm = _lstm_for_mock()
    policy = TensorDictSequential(
        lstm, TensorDictModule(MLP(in_features=4, out_features=7), in_keys=["features"], out_keys=["action"])
    )
    collector = Collector(_mock_env(), policy, frames_per_batch=2, total_frames=2, auto_register_policy_transforms=True)
    try:
        batch = next(iter(collector))
        assert "is_init" in batch
        assert "recurrent_state_h" in batch
    finally:
        collector.shutdown()


def test_slice_sampler_marks_slice_starts_is_init() -> None:
    from torchrl.data import LazyTensorStorage, ReplayBuffer, SliceSampler, TensorDictReplayBuffer

    n = 12
    data = TensorDict(
        {
            "episode": torch.zeros(n, dtype=torch.long),
            "is_init": torch.zeros(n, 1, dtype=torch.bool),
            "obs": torch.arange(n).float().unsqueeze(-1),
        },
        batch_size=[n],
    )
    data["is_init"][0] = True
    buffer = TensorDictReplayBuffer(storage=LazyTensorStorage(n), sampler=SliceSampler(slice_len=4), batch_size=8)
    buffer.extend(data)
    sample = buffer.sample()
    assert sample["is_init"].view(2, 4)[:, 0].all()
    steps = sample["obs"].view(2, 4)
    assert torch.equal(steps[:, 1:] - steps[:, :-1], torch.ones(2, 3))  # contiguous slices
    # a plain ReplayBuffer leaves the sample's flags as stored: the marker is in the info only
    plain = ReplayBuffer(storage=LazyTensorStorage(n), sampler=SliceSampler(slice_len=4), batch_size=8)
    plain.extend(data)
    sample, info = plain.sample(return_info=True)
    starts = sample["obs"].view(2, 4)[:, 0].long().squeeze(-1)
    assert torch.equal(sample["is_init"].view(2, 4)[:, 0].squeeze(-1), starts == 0)
    assert info["is_init"].view(2, 4)[:, 0].all()


def test_step_output_keeps_next_entries_under_next() -> None:
    env = _mock_env()
    stepped = env.step(env.reset().set("action", torch.zeros(7)))
    for key in ("reward", "done", "observation"):
        assert key in stepped["next"]
    assert "reward" not in stepped


def _value_data() -> TensorDict:
    return TensorDict(
        {
            "obs": torch.ones(1, 3, 2),
            "state_value": torch.zeros(1, 3, 1),
            "next": {
                "obs": torch.ones(1, 3, 2),
                "state_value": torch.zeros(1, 3, 1),
                "reward": torch.ones(1, 3, 1),
                "done": torch.zeros(1, 3, 1, dtype=torch.bool),
                "terminated": torch.zeros(1, 3, 1, dtype=torch.bool),
            },
        },
        batch_size=[1, 3],
    )


def _gaussian_actor() -> TensorDictSequential:
    """A policy that writes ``action`` and its log-probability (what VTrace reads)."""
    from tensordict.nn import ProbabilisticTensorDictModule, ProbabilisticTensorDictSequential
    from torch.distributions import Normal

    net = TensorDictModule(
        lambda obs: (obs[..., :1] * 0, obs[..., :1] * 0 + 1), in_keys=["obs"], out_keys=["loc", "scale"]
    )
    head = ProbabilisticTensorDictModule(
        in_keys=["loc", "scale"], out_keys=["action"], distribution_class=Normal, return_log_prob=True
    )
    return ProbabilisticTensorDictSequential(net, head)


@pytest.mark.parametrize("name", ["GAE", "TD0Estimator", "TD1Estimator", "TDLambdaEstimator", "VTrace"])
def test_estimator_recomputes_present_values_unless_skip_existing(name: str) -> None:
    from torchrl.objectives import value as estimators

    calls: list[int] = []

    def value(obs):
        calls.append(1)
        return obs.sum(-1, keepdim=True)

    critic = TensorDictModule(value, in_keys=["obs"], out_keys=["state_value"])
    kwargs = {"gamma": 0.9, "value_network": critic}
    if name in ("GAE", "TDLambdaEstimator"):
        kwargs["lmbda"] = 0.9
    if name == "VTrace":
        kwargs["actor_network"] = _gaussian_actor()

    def _data() -> TensorDict:
        data = _value_data()
        if name == "VTrace":  # the action taken and its log-probability under the behaviour policy
            data["action"] = torch.zeros(1, 3, 1)
            data["action_log_prob"] = torch.zeros(1, 3, 1)
        return data

    data = _data()
    getattr(estimators, name)(**kwargs)(data)
    assert calls
    assert data["state_value"].sum() == 6  # the zeros given were overwritten
    calls.clear()
    data = _data()
    getattr(estimators, name)(**kwargs, skip_existing=True)(data)
    assert not calls
    assert data["state_value"].sum() == 0
    from tensordict.nn import set_skip_existing

    data = _data()
    with set_skip_existing(True):  # a default-built estimator follows the ambient setting
        getattr(estimators, name)(**kwargs)(data)
    assert not calls
    assert data["state_value"].sum() == 0
    data = _data()
    with set_skip_existing(True):  # ... one built with skip_existing=False does not
        getattr(estimators, name)(**kwargs, skip_existing=False)(data)
    assert calls
    assert data["state_value"].sum() == 6
    if name == "VTrace":  # (it has no value_estimate)
        return
    # value_estimate does not apply the constructor's setting: only the ambient one
    calls.clear()
    getattr(estimators, name)(**kwargs, skip_existing=True).value_estimate(_data())
    assert calls
    calls.clear()
    with set_skip_existing(True):
        getattr(estimators, name)(**kwargs, skip_existing=False).value_estimate(_data())
    assert not calls


def test_gae_value_estimate_ignores_auto_reset_env() -> None:
    """``auto_reset_env`` changes what ``GAE.forward`` computes at a truncated step, not what
    ``GAE.value_estimate`` does (the targets of a GAE built without it)."""
    from torchrl.objectives.value import GAE

    critic = TensorDictModule(lambda obs: obs.sum(-1, keepdim=True), in_keys=["obs"], out_keys=["state_value"])

    def data() -> TensorDict:
        flags = torch.tensor([False, True, False]).view(1, 3, 1)
        return TensorDict(
            {
                "obs": torch.ones(1, 3, 2),
                "state_value": torch.full((1, 3, 1), 2.0),
                "next": {
                    "obs": torch.full((1, 3, 2), 2.0),
                    "state_value": torch.full((1, 3, 1), 4.0),
                    "reward": torch.ones(1, 3, 1),
                    "done": flags.clone(),
                    "terminated": torch.zeros(1, 3, 1, dtype=torch.bool),
                    "truncated": flags.clone(),
                },
            },
            batch_size=[1, 3],
        )

    with_reset = GAE(gamma=0.9, lmbda=0.9, value_network=critic, auto_reset_env=True)
    without = GAE(gamma=0.9, lmbda=0.9, value_network=critic, auto_reset_env=False)
    assert not torch.allclose(with_reset(data())["value_target"], without(data())["value_target"])
    assert torch.equal(with_reset.value_estimate(data()), without.value_estimate(data()))


def test_gae_runs_the_plain_kernel_unless_built_vectorized(monkeypatch: pytest.MonkeyPatch) -> None:
    from torchrl.objectives.value import GAE, TDLambdaEstimator, advantages

    ran: list[str] = []
    for kernel in (
        "generalized_advantage_estimate",
        "vec_generalized_advantage_estimate",
        "td_lambda_return_estimate",
        "vec_td_lambda_return_estimate",
    ):
        original = getattr(advantages, kernel)

        def recorded(*args, _name=kernel, _original=original, **kwargs):
            ran.append(_name)
            return _original(*args, **kwargs)

        monkeypatch.setattr(advantages, kernel, recorded)
    critic = TensorDictModule(lambda obs: obs.sum(-1, keepdim=True), in_keys=["obs"], out_keys=["state_value"])
    GAE(gamma=0.9, lmbda=0.9, value_network=critic)(_value_data())
    assert ran == ["generalized_advantage_estimate"], "a GAE built without vectorized runs the plain kernel"
    ran.clear()
    GAE(gamma=0.9, lmbda=0.9, value_network=critic, vectorized=True)(_value_data())
    assert ran == ["vec_generalized_advantage_estimate"]
    ran.clear()
    TDLambdaEstimator(gamma=0.9, lmbda=0.9, value_network=critic)(_value_data())
    assert ran == ["vec_td_lambda_return_estimate"], "TDLambdaEstimator defaults to the vectorised kernel"


@pytest.mark.parametrize("shifted", [False, True])
def test_value_code_ors_is_init_into_a_copy(shifted: bool) -> None:
    from torchrl.objectives.value import GAE

    seen: list[bool] = []

    def value(obs, is_init):
        seen.append(True)
        return obs.sum(-1, keepdim=True) + is_init.float()

    # is_init among the critic's inputs: the estimator selects it, so the or-ing line runs
    critic = TensorDictModule(value, in_keys=["obs", "is_init"], out_keys=["state_value"])
    data = _value_data()
    data["is_init"] = torch.tensor([False, True, False]).view(1, 3, 1)
    data["next", "is_init"] = torch.zeros(1, 3, 1, dtype=torch.bool)
    GAE(gamma=0.9, lmbda=0.9, value_network=critic, shifted=shifted, deactivate_vmap=True)(data)
    assert seen
    assert not data["next", "is_init"].any(), "the or-ed flags stay in the value network's input"
    assert data["is_init"][0, 1].item()


def test_adjacent_slices_of_one_trajectory_get_each_others_observation_not_nan() -> None:
    """A ``NextStateReconstructor`` after a ``SliceSampler`` (which samples trajectories with
    replacement): at a slice's end the next observation is the next slice's first when both slices
    come from one trajectory, not NaN as its docstring says; NaN only at the sample's end.  With a
    ``step_count_key`` the two steps must be consecutive, and that end is NaN too."""
    from torchrl.data import LazyTensorStorage, SliceSampler, TensorDictReplayBuffer
    from torchrl.envs.transforms.rb_transforms import NextStateReconstructor

    n = 40
    data = TensorDict(
        {
            "observation": torch.arange(n, dtype=torch.float32),
            "step_count": torch.arange(n),
            ("collector", "traj_ids"): torch.zeros(n, dtype=torch.long),
            ("next", "done"): torch.zeros(n, 1, dtype=torch.bool),
        },
        [n],
    )
    data["next", "done"][-1] = True
    torch.manual_seed(0)
    for counted in (False, True):
        transform = NextStateReconstructor(step_count_key="step_count" if counted else None)
        buffer = TensorDictReplayBuffer(
            storage=LazyTensorStorage(n), sampler=SliceSampler(slice_len=4), transform=transform, batch_size=8
        )
        buffer.extend(data)
        boundaries = 0
        for _ in range(10):
            sample = buffer.sample()
            observation, following = sample["observation"], sample["next", "observation"]
            assert math.isnan(following[-1])  # the sample's end
            boundary = following[3]  # the first slice's last step
            if observation[4] != observation[3] + 1:  # (two slices that are not one run of steps)
                boundaries += 1
                if counted:
                    assert math.isnan(boundary)
                else:
                    assert boundary == observation[4]  # the second slice's first observation, no NaN
            assert torch.equal(following[:3], observation[1:4])  # inside a slice: the next step
        assert boundaries > 0


def test_every_runtime_claim_has_its_test() -> None:
    claims = load_claims(CLAIMS, "claims.toml")
    named = {claim.spec.test for claim in claims.claims if claim.spec.test}
    defined = {
        name for name in globals() if name.startswith("test_") and name != "test_every_runtime_claim_has_its_test"
    }
    assert named - defined == set(), "claims name tests that do not exist"
    assert defined - named == set(), "tests that back no claim"
    assert all(claim.spec.test for claim in claims.claims if not claim.static)


def test_value_outputs_go_to_a_copy_when_next_observations_hold_nan() -> None:
    """``_sanitize_next_obs_nan`` fills NaN next observations in a shallow copy, and the value
    network's outputs are written to that copy: the caller's tensordict does not get them."""
    from torchrl.objectives.value import GAE

    critic = TensorDictModule(lambda obs: obs.sum(-1, keepdim=True), in_keys=["obs"], out_keys=["state_value"])
    data = _value_data().exclude("state_value", ("next", "state_value"))
    GAE(gamma=0.9, lmbda=0.9, value_network=critic)(data)
    assert "state_value" in data
    assert ("next", "state_value") in data.keys(True)
    data = _value_data().exclude("state_value", ("next", "state_value"))
    data["next", "obs"][0, -1] = float("nan")
    GAE(gamma=0.9, lmbda=0.9, value_network=critic)(data)
    assert "state_value" not in data
    assert ("next", "state_value") not in data.keys(True)
    assert "advantage" in data  # the estimator's own outputs still reach the caller
    assert torch.isfinite(data["advantage"]).all()


@pytest.mark.parametrize("name", ["TD0Estimator", "TD1Estimator", "TDLambdaEstimator"])
def test_average_rewards_rewrites_the_callers_rewards(name: str) -> None:
    from torchrl.objectives import value as estimators

    critic = TensorDictModule(lambda obs: obs.sum(-1, keepdim=True), in_keys=["obs"], out_keys=["state_value"])
    kwargs = {"gamma": 0.9, "value_network": critic, "average_rewards": True}
    if name == "TDLambdaEstimator":
        kwargs["lmbda"] = 0.9
    data = _value_data()
    data["next", "reward"] = torch.arange(3.0).view(1, 3, 1)
    getattr(estimators, name)(**kwargs)(data)  # shifted=False, the default
    rewards = data["next", "reward"].flatten()
    assert torch.allclose(rewards.mean(), torch.tensor(0.0), atol=1e-6)
    assert torch.allclose(rewards, torch.tensor([-1.0, 0.0, 1.0]), atol=1e-5)
    # shifted=True: the values are computed on a copy of the data, which gets the rewards
    data = _value_data()
    data["next", "reward"] = torch.arange(3.0).view(1, 3, 1)
    getattr(estimators, name)(**kwargs, shifted=True)(data)
    assert torch.equal(data["next", "reward"].flatten(), torch.arange(3.0))
    # shifted=True without a value network (the values given): no copy is made, the caller's own again
    data = _value_data()
    data["next", "reward"] = torch.arange(3.0).view(1, 3, 1)
    getattr(estimators, name)(**{**kwargs, "value_network": None}, shifted=True)(data)
    assert torch.allclose(data["next", "reward"].flatten(), torch.tensor([-1.0, 0.0, 1.0]), atol=1e-5)


def test_native_autoreset_stores_nan_next_hidden_state_and_carries_the_primers_default() -> None:
    """Under native autoreset the step ``step_and_maybe_reset`` returns holds NaN for the next
    hidden state (a float observation entry) where the step is done, and false for its next
    ``is_init`` (another entry: zero); the next input keeps the state as the policy wrote it,
    except where the step is done: there the primer writes its default (zeros).  A random primer
    replaces the state of every env."""
    from torchrl.data import Unbounded
    from torchrl.envs import Compose, InitTracker, TensorDictPrimer, TransformedEnv
    from torchrl.modules import LSTMModule

    torch.manual_seed(0)
    lstm = LSTMModule(input_size=3, hidden_size=4, in_key="obs", out_key="features")

    def two_steps(primer: TensorDictPrimer) -> tuple[TensorDict, TensorDict, torch.Tensor]:
        """The second step's output and next input under native autoreset (the first env is
        done there, the second not), and the next hidden state the policy wrote for it."""
        base = _two_envs_ending_differently(second_ends=False)
        env = TransformedEnv(base, Compose(InitTracker(), primer))
        base._torchrl_native_autoreset = env._torchrl_native_autoreset = True
        td = env.reset()
        for _ in range(2):
            td["action"] = torch.zeros(2, 1)
            td = lstm(td)
            written = td["next", "recurrent_state_h"].clone()
            out, td = env.step_and_maybe_reset(td)
        assert out["next", "done"].squeeze(-1).tolist() == [True, False]
        return out, td, written

    out, td, written = two_steps(lstm.make_tensordict_primer())
    assert bool(written.abs().sum(-1).gt(0).all()), "the policy wrote states that are not zero"
    stored = out["next", "recurrent_state_h"]
    assert torch.isnan(stored[0]).all(), "the stored next hidden state is NaN where the step is done"
    assert torch.equal(stored[1], written[1]), "and as the policy wrote it elsewhere"
    assert not out["next", "is_init"][0].any(), "the stored next is_init is false where the step is done"
    assert torch.equal(td["recurrent_state_h"][0], torch.zeros_like(written[0])), "the primer's default"
    assert torch.equal(td["recurrent_state_h"][1], written[1]), "carried where the step is not done"
    # a random primer draws the state of every env anew, the one whose step is not done too
    specs = {key: Unbounded((1, 4)) for key in ("recurrent_state_h", "recurrent_state_c")}
    _, td, written = two_steps(TensorDictPrimer(specs, random=True, expand_specs=True))
    assert not torch.equal(td["recurrent_state_h"][1], written[1]), "replaced where the step is not done"


def test_an_env_not_batch_locked_returns_the_rows_it_did_not_step_as_zeros() -> None:
    """``PendulumEnv`` is not batch-locked (its batch size is empty): stepped with a ``"_step"``
    mask, it steps the selected rows only and returns the others as zeros, root entries included
    (the copy of the input into the result runs only where no row was left out)."""
    from torchrl.envs import PendulumEnv, StepCounter, TransformedEnv

    for env in (PendulumEnv(), TransformedEnv(PendulumEnv(), StepCounter())):
        assert not env.batch_locked
        assert env.batch_size == torch.Size([])
        torch.manual_seed(0)
        td = env.reset(env.gen_params(batch_size=[3]))
        td = env.rand_action(td)
        td["th"] = torch.tensor([0.5, 1.0, 1.5])
        td["_step"] = torch.tensor([True, False, True])
        out = env.step(td)
        assert out.batch_size == torch.Size([3])
        assert torch.equal(out["th"], torch.tensor([0.5, 0.0, 1.5]))  # the root row not stepped: zeros
        assert out["next", "th"][1] == 0
        assert out["next", "reward"][1].abs().sum() == 0
        assert (out["next", "th"][[0, 2]] != 0).all()  # the selected rows stepped
        # a new tensordict: the caller's lost its mask and holds no "next"
        assert out is not td
        assert "_step" not in td
        assert "next" not in td
    # every row selected: the mask is dropped and the input comes back stepped whole
    env = PendulumEnv()
    td = env.rand_action(env.reset(env.gen_params(batch_size=[3])))
    th = td["th"].clone()
    td["_step"] = torch.ones(3, dtype=torch.bool)
    out = env.step(td)
    assert out is td  # (no tensordict of zeros made)
    assert "_step" not in out
    assert torch.equal(out["th"], th)


def test_a_batch_locked_env_steps_every_row_unless_its_step_reads_the_mask() -> None:
    """``CountingEnv`` is batch-locked and its ``_step`` does not read ``"_step"``: every row is
    stepped whatever the mask; with no row selected, ``_skip_tensordict`` answers and none is."""
    from torchrl.testing.mocking_classes import CountingEnv

    env = CountingEnv(max_steps=100, batch_size=[3])
    assert env.batch_locked
    td = env.reset()
    td["action"] = torch.ones(3, 1, dtype=torch.int)
    td["_step"] = torch.tensor([True, False, True])
    assert torch.equal(env.step(td)["next", "observation"].squeeze(-1), torch.ones(3, dtype=torch.int))
    td = env.reset()
    td["action"] = torch.ones(3, 1, dtype=torch.int)
    td["_step"] = torch.zeros(3, dtype=torch.bool)
    assert torch.equal(env.step(td)["next", "observation"].squeeze(-1), torch.zeros(3, dtype=torch.int))
    assert env.count.sum() == 0  # (the env's counter did not move)
    # a step of no row repeats the input's observation under "next" (not zeros), the reward zero
    td = env.reset()
    td["action"] = torch.ones(3, 1, dtype=torch.int)
    td = env.step(td)["next"].clone()
    assert torch.equal(td["observation"].squeeze(-1), torch.ones(3, dtype=torch.int))
    td["action"] = torch.ones(3, 1, dtype=torch.int)
    td["_step"] = torch.zeros(3, dtype=torch.bool)
    td["done"] = td["terminated"] = torch.tensor([[True], [False], [False]])
    skipped = env.step(td.clone())
    assert torch.equal(skipped["next", "observation"].squeeze(-1), torch.ones(3, dtype=torch.int))
    assert skipped["next", "done"].squeeze(-1).tolist() == [True, False, False]  # the done flags too
    assert not skipped["next", "reward"].any()  # (the input holds no reward at its root)
    td["reward"] = torch.full((3, 1), 5.0)
    assert env.step(td.clone())["next", "reward"].squeeze(-1).tolist() == [5.0, 5.0, 5.0]
    assert env.count.squeeze(-1).tolist() == [1, 1, 1]


def test_a_next_entry_in_the_input_adds_only_the_keys_the_step_did_not_write() -> None:
    """The docstring says a ``"next"`` entry passed in prevails; the step's own value is kept."""
    from torchrl.testing.mocking_classes import CountingEnv

    env = CountingEnv(max_steps=100)
    td = env.reset()
    td["action"] = torch.ones(1, dtype=torch.int)
    td["next"] = TensorDict({"observation": torch.full((1,), 99), "extra": torch.tensor(7.0)}, [])
    out = env.step(td)
    assert out["next", "observation"].item() == 1  # computed, not the 99 passed in
    assert out["next", "extra"].item() == 7.0  # a key the step did not write is added


def test_the_envs_step_mdp_keeps_the_action_and_leaves_the_reward() -> None:
    """``step_and_maybe_reset`` and ``rollout`` build the next input with the env's
    ``_step_mdp``, not the function ``step_mdp``: the action and an entry no spec lists stay at
    the root, the reward (no state key) is left out, the done keys are the step's."""
    from torchrl.envs.utils import _StepMDP, step_mdp

    env = _mock_env()
    assert isinstance(env._step_mdp, _StepMDP)
    td = env.reset()
    td["action"] = env.action_spec.rand()
    td["extra"] = torch.ones(1)
    stepped = env.step(td)
    stepped["next", "done"] = torch.ones(1, dtype=torch.bool)
    stepped["reward"] = torch.ones(1)  # a reward and a reset flag at the root: left out
    stepped["_reset"] = torch.ones(1, dtype=torch.bool)
    carried = env._step_mdp(stepped)
    assert "_reset" not in carried
    assert torch.equal(carried["action"], td["action"])
    assert torch.equal(carried["extra"], torch.ones(1))  # a root entry no spec lists: kept as it was
    assert "next" not in carried
    assert "reward" not in carried
    assert "reward" not in env._state_keys_step_mdp
    assert carried["done"].all()  # (the step's, from "next")
    assert "action" not in step_mdp(stepped)  # the function leaves the action out by default


def test_transformed_env_steps_on_what_inv_returns_without_the_base_step_processing() -> None:
    """``TransformedEnv._step``: the transform's ``_step`` gets the copy ``inv`` made (the
    caller's input does not hold what ``inv`` wrote); the base env's ``_step_proc_data`` never
    runs, its ``_complete_done`` does, before the transform's ``_step``."""
    from torchrl.envs import Transform, TransformedEnv
    from torchrl.testing.mocking_classes import ContinuousActionVecMockEnv

    calls: list[object] = []

    class Base(ContinuousActionVecMockEnv):
        def _step_proc_data(self, next_tensordict):
            calls.append("base._step_proc_data")
            return super()._step_proc_data(next_tensordict)

        def _complete_done(self, *args, **kwargs):
            calls.append("base._complete_done")
            return super()._complete_done(*args, **kwargs)

    class Mark(Transform):  # (the default inv: it copies, then runs _inv_call)
        def _inv_call(self, tensordict):
            tensordict.set("marked", torch.ones(1))
            return tensordict

        def _step(self, tensordict, next_tensordict):
            calls.append(("transform._step", "marked" in tensordict))
            return next_tensordict

    class Recorded(TransformedEnv):
        def _step_proc_data(self, next_tensordict):
            calls.append("transformed._step_proc_data")
            return super()._step_proc_data(next_tensordict)

    from torchrl.envs import EnvBase

    assert TransformedEnv.step is EnvBase.step
    env = Recorded(Base(), Mark())
    td = env.reset()
    td["action"] = env.action_spec.rand()
    calls.clear()
    out = env.step(td)
    # the transformed env's own processing runs last, on what the transforms returned
    assert calls == ["base._complete_done", ("transform._step", True), "transformed._step_proc_data"]
    assert "marked" not in td
    assert "marked" not in out


def test_the_losses_built_on_gae_call_its_forward_not_value_estimate(monkeypatch: pytest.MonkeyPatch) -> None:
    """PPO's, A2C's and REINFORCE's losses, whose default estimator is GAE, run it through its
    ``forward`` (where ``auto_reset_env`` is read), never ``value_estimate``: their value targets
    honour the flag."""
    from tensordict.nn import NormalParamExtractor
    from torchrl.modules import ProbabilisticActor, TanhNormal, ValueOperator
    from torchrl.objectives import A2CLoss, ClipPPOLoss, PPOLoss, ReinforceLoss
    from torchrl.objectives.value import GAE

    ran: list[str] = []
    forward = GAE.forward

    def recorded(self: GAE, *args: Any, **kwargs: Any) -> Any:
        ran.append("forward")
        return forward(self, *args, **kwargs)

    def refused(*_: object, **__: object) -> None:
        raise AssertionError("value_estimate was called")

    monkeypatch.setattr(GAE, "forward", recorded)
    monkeypatch.setattr(GAE, "value_estimate", refused)
    steps = 4
    done = torch.tensor([False, True, False, False]).view(1, steps, 1)
    for loss_class in (PPOLoss, ClipPPOLoss, A2CLoss, ReinforceLoss):
        net = torch.nn.Sequential(torch.nn.Linear(3, 2), NormalParamExtractor())
        actor = ProbabilisticActor(
            TensorDictModule(net, ["observation"], ["loc", "scale"]),
            in_keys=["loc", "scale"],
            distribution_class=TanhNormal,
            return_log_prob=True,
        )
        critic = ValueOperator(torch.nn.Linear(3, 1), in_keys=["observation"])
        loss = loss_class(actor, critic)
        loss.make_value_estimator(auto_reset_env=True)
        assert isinstance(loss.value_estimator, GAE)
        assert loss.value_estimator.auto_reset_env
        data = TensorDict(
            {
                "observation": torch.randn(1, steps, 3),
                "action": torch.full((1, steps, 1), 0.25),
                "action_log_prob": torch.zeros(1, steps),
                "sample_log_prob": torch.zeros(1, steps),
                "next": {
                    "observation": torch.randn(1, steps, 3),
                    "reward": torch.ones(1, steps, 1),
                    "done": done.clone(),
                    "terminated": torch.zeros_like(done),
                    "truncated": done.clone(),
                },
            },
            batch_size=[1, steps],
        )
        ran.clear()
        loss(data.clone())
        assert ran == ["forward"], loss_class.__name__
        ran.clear()
        data["advantage"] = torch.zeros(1, steps, 1)  # an advantage given: the estimator is not run
        data["value_target"] = torch.zeros(1, steps, 1)
        loss(data)
        assert ran == [], loss_class.__name__


def test_the_primer_writes_a_fixed_default_only_where_the_reset_flag_is_set() -> None:
    """A reset of some envs: a fixed default goes where ``_reset`` is set and the input's value
    elsewhere (zeros where the input has none); a random or per-key callable default goes to
    every env."""
    from torchrl.data import Unbounded
    from torchrl.envs import TensorDictPrimer

    def primer(**kwargs: Any) -> TensorDictPrimer:
        made = TensorDictPrimer({"h": Unbounded(shape=(2, 3))}, **kwargs)
        made.reset_key = "_reset"  # (no parent env to infer it from)
        return made

    flags = torch.tensor([[True], [False]])
    given = TensorDict({"_reset": flags, "h": torch.ones(2, 3)}, [2])
    fixed = primer(default_value=5.0)._reset_func(given, given.clone())["h"]
    assert fixed.tolist() == [[5.0] * 3, [1.0] * 3]
    bare = TensorDict({"_reset": flags}, [2])
    assert primer(default_value=5.0)._reset_func(bare, bare.clone())["h"].tolist() == [[5.0] * 3, [0.0] * 3]
    torch.manual_seed(0)
    drawn = primer(random=True)._reset_func(given, given.clone())["h"]
    assert not torch.equal(drawn[1], torch.ones(3))
    called = primer(default_value={"h": lambda: torch.full((2, 3), 7.0)})._reset_func(given, given.clone())["h"]
    assert called.tolist() == [[7.0] * 3, [7.0] * 3]


def test_a_recurrent_module_built_without_a_backend_uses_pad() -> None:
    """The constructors' default is ``pad``, not ``auto``: ``torch.compile`` does not move a module
    built without ``recurrent_backend`` to the scan."""
    from torchrl.modules import GRUModule, LSTMModule

    for kind in (LSTMModule, GRUModule):
        module = kind(input_size=3, hidden_size=4, in_key="obs", out_key="features")
        assert module.recurrent_backend == "pad", kind.__name__
        assert inspect.signature(kind.__init__).parameters["recurrent_backend"].default == "pad"


def test_without_a_primer_the_hidden_state_is_zero_at_every_step() -> None:
    """No primer: the module's next hidden state is written under ``"next"`` but not moved to the
    root (no spec lists it), so every step runs as a trajectory's first (zeros), and nothing
    raises; with the primer the same steps carry the state."""
    from torchrl.envs import InitTracker, TransformedEnv

    lstm = _lstm_for_mock()

    def firsts(primed: bool) -> list[bool]:
        """For each of three steps, whether the features are those of a zeroed state."""
        env = TransformedEnv(_mock_env(), InitTracker())
        if primed:
            env.append_transform(lstm.make_tensordict_primer())
        td = env.reset()
        found = []
        for _ in range(3):
            fresh = td.clone()
            fresh["is_init"] = torch.ones_like(fresh["is_init"])  # sequential mode zeroes the state here
            td = lstm(td)
            found.append(torch.equal(td["features"], lstm(fresh)["features"]))
            td["action"] = env.action_spec.zero()
            _, td = env.step_and_maybe_reset(td)
            assert primed or "recurrent_state_h" not in td
        return found

    assert firsts(primed=False) == [True, True, True]
    assert firsts(primed=True) == [True, False, False]


def test_an_init_tracker_with_another_key_leaves_is_init_unwritten() -> None:
    """``InitTracker(init_key="first")`` writes ``first``: a recurrent module, which reads
    ``is_init`` by name, finds none (and raises)."""
    from torchrl.envs import InitTracker, TransformedEnv

    env = TransformedEnv(_mock_env(), InitTracker(init_key="first"))
    td = env.reset()
    assert td["first"].all()
    assert "is_init" not in td
    with pytest.raises(KeyError):
        _lstm_for_mock()(td)


@_UPDATER
def test_a_collectors_policy_runs_without_gradients_and_explores_at_random() -> None:
    """The policy a collector runs sees gradients off and, unless the collector is given another
    ``exploration_type``, ``ExplorationType.RANDOM``; given one, that one."""
    from torchrl.collectors import Collector
    from torchrl.envs.utils import ExplorationType, exploration_type

    env = _mock_env()
    seen: list[tuple[bool, object]] = []

    def policy(td: TensorDict) -> TensorDict:
        seen.append((torch.is_grad_enabled(), exploration_type()))
        td["action"] = env.action_spec.zero()
        return td

    for given, expected in (
        (None, ExplorationType.RANDOM),
        (ExplorationType.DETERMINISTIC, ExplorationType.DETERMINISTIC),
    ):
        kwargs = {} if given is None else {"exploration_type": given}
        collector = Collector(env, policy, frames_per_batch=2, total_frames=2, **kwargs)
        seen.clear()
        for _ in collector:
            pass
        collector.shutdown()
        steps = [entry for entry in seen if entry[1] is not None]
        assert steps
        assert all(entry == (False, expected) for entry in steps), seen


def test_each_truncation_takes_one_step_of_the_shifted_budget() -> None:
    """``shifted=True`` calls the value network on ``T + shifted_budget`` steps; each truncation
    inside the data takes one: with the default budget of 1 and two truncations, the last two
    steps no longer fit (``shifted_valid`` False, advantage and target 0) and the last that fits
    is treated as done; a budget of 3 gives the values of ``shifted=False`` back."""
    from torchrl.objectives.value import GAE

    torch.manual_seed(0)
    critic = TensorDictModule(torch.nn.Linear(3, 1), in_keys=["obs"], out_keys=["state_value"])
    steps = 10
    obs = torch.randn(1, steps, 3)
    following = obs.roll(-1, 1).clone()
    truncated = torch.zeros(1, steps, 1, dtype=torch.bool)
    truncated[0, 3] = truncated[0, 6] = True
    following[0, 3], following[0, 6] = torch.randn(3), torch.randn(3)  # each truncated step's own last observation
    data = TensorDict(
        {
            "obs": obs,
            "next": {
                "obs": following,
                "reward": torch.randn(1, steps, 1),
                "done": truncated.clone(),
                "terminated": torch.zeros_like(truncated),
                "truncated": truncated.clone(),
            },
        },
        [1, steps],
    )

    def estimate(**kwargs: Any) -> TensorDict:
        out = data.clone()
        with torch.no_grad():
            GAE(gamma=0.9, lmbda=0.9, value_network=critic, **kwargs)(out)
        return out

    plain = estimate()
    shifted = estimate(shifted=True)
    valid = shifted["shifted_valid"].reshape(-1)
    assert valid.tolist() == [True] * 8 + [False] * 2
    for key in ("advantage", "value_target"):
        assert (shifted[key].reshape(-1)[8:] == 0).all()
        assert torch.allclose(shifted[key].reshape(-1)[:7], plain[key].reshape(-1)[:7], atol=1e-6)
        assert not torch.allclose(shifted[key].reshape(-1)[7], plain[key].reshape(-1)[7], atol=1e-6)
    # the last step that fits is truncated there: its target is one step, r + gamma * V(next)
    with torch.no_grad():
        following_value = critic(TensorDict({"obs": data["next", "obs"][0, 7]}, []))["state_value"]
    one_step = data["next", "reward"][0, 7] + 0.9 * following_value
    assert torch.allclose(shifted["value_target"][0, 7], one_step, atol=1e-5)
    assert "shifted_valid" not in plain
    roomy = estimate(shifted=True, shifted_budget=3)
    assert roomy["shifted_valid"].all()
    for key in ("advantage", "value_target"):
        assert torch.allclose(roomy[key], plain[key], atol=1e-6)


def test_the_td_estimators_value_estimate_leaves_nan_next_observations_to_the_losses() -> None:
    """An estimator's ``forward`` replaces a NaN next observation (what a
    ``NextStateReconstructor`` leaves) before it calls the value network; the TD estimators'
    ``value_estimate`` does not, and the losses that compute their targets through it (``SACLoss``
    with a value network or without, ``TD3Loss``, ``DDPGLoss``) get a NaN loss, even where the
    step terminated."""
    from tensordict.nn import NormalParamExtractor
    from torchrl.data import Bounded
    from torchrl.modules import ProbabilisticActor, TanhNormal, ValueOperator
    from torchrl.objectives import DDPGLoss, SACLoss, TD3Loss
    from torchrl.objectives.value import TD0Estimator, TD1Estimator, TDLambdaEstimator

    torch.manual_seed(0)
    observations, actions, rows = 3, 2, 6
    spec = Bounded(-1, 1, shape=(actions,))

    class Critic(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.linear = torch.nn.Linear(observations + actions, 1)

        def forward(self, observation: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
            return self.linear(torch.cat([observation, action], -1))

    def batch(nan: bool) -> TensorDict:
        following = torch.randn(rows, observations)
        if nan:
            following[-1] = float("nan")
        terminated = torch.zeros(rows, 1, dtype=torch.bool)
        terminated[-1] = True  # the NaN row's step terminated: its next value is masked, and NaN still
        return TensorDict(
            {
                "observation": torch.randn(rows, observations),
                "action": torch.rand(rows, actions) * 2 - 1,
                "next": {
                    "observation": following,
                    "reward": torch.randn(rows, 1),
                    "done": terminated.clone(),
                    "terminated": terminated.clone(),
                },
            },
            [rows],
        )

    normal = TensorDictModule(
        torch.nn.Sequential(torch.nn.Linear(observations, 2 * actions), NormalParamExtractor()),
        in_keys=["observation"],
        out_keys=["loc", "scale"],
    )
    sac = SACLoss(
        ProbabilisticActor(normal, in_keys=["loc", "scale"], distribution_class=TanhNormal, spec=spec),
        ValueOperator(Critic(), in_keys=["observation", "action"]),
    )
    deterministic = TensorDictModule(
        torch.nn.Linear(observations, actions), in_keys=["observation"], out_keys=["action"]
    )
    td3 = TD3Loss(deterministic, ValueOperator(Critic(), in_keys=["observation", "action"]), action_spec=spec)
    state_value = ValueOperator(torch.nn.Linear(observations, 1), in_keys=["observation"])
    sac_with_value = SACLoss(
        ProbabilisticActor(normal, in_keys=["loc", "scale"], distribution_class=TanhNormal, spec=spec),
        ValueOperator(Critic(), in_keys=["observation", "action"]),
        value_network=state_value,
    )
    ddpg = DDPGLoss(deterministic, ValueOperator(Critic(), in_keys=["observation", "action"]))
    for loss, key in (
        (sac, "loss_qvalue"),
        (td3, "loss_qvalue"),
        (sac_with_value, "loss_qvalue"),
        (ddpg, "loss_value"),
    ):
        name = type(loss).__name__
        assert torch.isfinite(loss(batch(nan=False))[key]), name
        assert type(loss._value_estimator).__name__ in ("TD0Estimator", "TD1Estimator", "TDLambdaEstimator"), name
        assert torch.isnan(loss(batch(nan=True))[key]), name
    # the estimator alone: forward replaces the NaN, value_estimate does not
    for estimator in (TD0Estimator, TD1Estimator, TDLambdaEstimator):
        kwargs = {"lmbda": 0.9} if estimator is TDLambdaEstimator else {}
        made = estimator(gamma=0.9, value_network=state_value, **kwargs)
        data = batch(nan=True).unsqueeze(0)  # (a time dimension)
        assert torch.isfinite(made(data.clone())["value_target"]).all(), estimator.__name__
        assert torch.isnan(made.value_estimate(data.clone())).any(), estimator.__name__


@_UPDATER
def test_a_collector_reads_no_device_from_the_policy_and_device_fills_the_others() -> None:
    """Without ``policy_device`` or ``device`` the collector keeps the policy as given and its
    ``policy_device`` is None, whatever device the parameters are on; ``device`` stands for
    ``policy_device``, ``env_device`` and ``storing_device`` where they are not given."""
    from torchrl.collectors import Collector

    class Gain(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.weight = torch.nn.Parameter(torch.zeros(1))

        def forward(self, th: torch.Tensor) -> torch.Tensor:
            return th.unsqueeze(-1) * self.weight

    policy = TensorDictModule(Gain(), in_keys=["th"], out_keys=["action"])
    collector = Collector(_pendulum(device="cpu"), policy, frames_per_batch=4, total_frames=4)
    try:
        assert collector.policy is policy
        assert collector.policy_device is None  # (its parameters are on the CPU)
        assert collector.env_device == torch.device("cpu")  # the environment's own
        assert next(iter(collector)).numel() == 4
    finally:
        collector.shutdown()
    collector = Collector(_pendulum(), policy, frames_per_batch=4, total_frames=4, device="cpu")
    try:
        cpu = torch.device("cpu")
        assert (collector.policy_device, collector.env_device, collector.storing_device) == (cpu, cpu, cpu)
    finally:
        collector.shutdown()


def test_maybe_reset_resets_the_done_rows_from_the_reset_keys_alone() -> None:
    """``maybe_reset`` writes ``"_reset"`` from the done flags and resets with
    ``select_reset_only=True``: ``_reset`` sees the reset flag and no state of the input; the row
    not reset keeps its values."""
    env = _two_envs_ending_differently(second_ends=False)
    seen: list[list[str]] = []
    reset = env._reset

    def recorded(td: TensorDict | None, **kwargs: Any) -> TensorDict:
        seen.append(sorted(td.keys()) if td is not None else [])
        return reset(td, **kwargs)

    env._reset = recorded
    td = env.reset()
    seen.clear()
    td["action"] = torch.zeros(2, 1)
    td["state"] = torch.ones(2)  # a state entry of the input: hidden from the reset
    _, td = env.step_and_maybe_reset(td)
    assert seen == []  # no env done: no reset
    td["action"] = torch.zeros(2, 1)
    _, td = env.step_and_maybe_reset(td)  # the first env terminates
    assert seen == [["_reset"]]
    assert td["obs"][0].tolist() == [0.0, 0.0, 0.0]  # reset
    assert td["obs"][1].tolist() == [2.0, 2.0, 2.0]  # not reset: the step's observation kept
    assert "_reset" not in td


def test_rollout_stops_early_by_default_and_its_two_loops_call_back_with_different_data() -> None:
    """A plain ``rollout(n)`` runs ``_rollout_stop_early``, whose ``callback`` gets the next
    step's input (no ``"next"``); ``break_when_any_done=False`` runs ``_rollout_nonstop``, whose
    ``callback`` gets the step's output, ``"next"`` included."""
    from torchrl.envs import StepCounter, TransformedEnv

    for stop, expected in ((None, False), (False, True)):
        env = TransformedEnv(_pendulum(), StepCounter(3))
        received: list[bool] = []

        def callback(_: Any, td: TensorDict, received: list[bool] = received) -> None:
            received.append("next" in td)

        kwargs = {} if stop is None else {"break_when_any_done": stop}
        env.rollout(5, callback=callback, **kwargs)
        assert received, stop
        assert set(received) == {expected}, (stop, received)
        if stop is False:
            assert len(received) == 4  # five steps, no call after the last
    received = []
    env = TransformedEnv(_pendulum(), StepCounter(3))
    env.rollout(
        5, callback=lambda _, td: received.append("next" in td), break_when_any_done=False, break_when_all_done=True
    )
    assert received == [False, False]  # until all done: the stop-early loop, which stops at the done


def _stepping(returned: dict[str, torch.Tensor]):
    """An env of 2 rows whose done spec has done, terminated and truncated, and whose ``_step``
    returns ``returned`` (with an observation)."""
    from torchrl.data import Categorical, Composite, Unbounded
    from torchrl.envs import EnvBase

    class Stepping(EnvBase):
        def __init__(self) -> None:
            super().__init__(batch_size=[2])
            self.observation_spec = Composite(obs=Unbounded((2, 1)), shape=(2,))
            self.action_spec = Unbounded((2, 1))
            self.reward_spec = Unbounded((2, 1))
            done = {name: Categorical(2, (2, 1), dtype=torch.bool) for name in ("done", "terminated", "truncated")}
            self.full_done_spec = Composite(**done, shape=(2,))

        def _reset(self, td):  # noqa: ARG002 - the env ignores its input
            none = torch.zeros(2, 1, dtype=torch.bool)
            return TensorDict({"obs": torch.zeros(2, 1), "done": none, "terminated": none, "truncated": none}, [2])

        def _step(self, td):  # noqa: ARG002 - the env ignores its input
            return TensorDict({"obs": torch.ones(2, 1), **returned}, [2])

        def _set_seed(self, seed):
            return seed

    return Stepping()


def test_step_proc_data_reshapes_the_reward_and_completes_the_done_entries() -> None:
    """``_step_proc_data`` views a reward as its spec's shape and completes the done entries: a
    missing terminated copies done (an error when truncated is there instead), a missing done is
    terminated or truncated, another missing entry is zeros."""
    flags = torch.tensor([[True], [False]])
    other = torch.tensor([[False], [True]])

    def step(returned: dict[str, torch.Tensor]) -> TensorDict:
        env = _stepping(returned)
        td = env.reset()
        td["action"] = torch.zeros(2, 1)
        return env.step(td)["next"]

    out = step({"reward": torch.ones(2), "done": flags})  # a reward of shape [2]: made [2, 1]
    assert out["reward"].shape == torch.Size([2, 1])
    assert torch.equal(out["terminated"], flags)
    assert not out["truncated"].any()
    out = step({"reward": torch.ones(2, 1), "terminated": flags, "truncated": other})
    assert torch.equal(out["done"], flags | other)
    with pytest.raises(RuntimeError, match="Cannot infer the value of terminated"):
        step({"reward": torch.ones(2, 1), "done": flags, "truncated": other})
    out = step({"reward": torch.ones(2, 1), "truncated": flags})  # neither done nor terminated: zeros
    assert not out["done"].any()
    assert not out["terminated"].any()
    assert torch.equal(out["truncated"], flags)


def test_rollout_until_all_done_masks_the_done_envs_and_repeats_their_last_step() -> None:
    """With ``break_when_all_done``, a done env is not reset: the steps after it carry a
    ``"_step"`` mask that leaves it out, and its stacked rows repeat its last step."""
    env = _two_envs_ending_differently(second_ends=False)  # the first env terminates at the second step
    masks: list[list[bool] | None] = []
    step = env._step

    def recorded(td: TensorDict) -> TensorDict:
        mask = td.get("_step", None)
        masks.append(None if mask is None else mask.squeeze(-1).tolist())
        return step(td)

    env._step = recorded
    out = env.rollout(4, break_when_all_done=True)
    assert masks == [None, None, [False, True], [False, True]]
    assert out["next", "obs"][..., 0].tolist() == [[1.0, 2.0, 2.0, 2.0], [1.0, 2.0, 3.0, 4.0]]
    assert out["next", "done"].squeeze(-1).tolist() == [[False, True, True, True], [False] * 4]


def test_a_losss_set_keys_reaches_its_value_estimator() -> None:
    """``PPOLoss.set_keys(value_target=...)`` renames the key its GAE writes too, before the
    estimator is made and after."""
    from torchrl.objectives import PPOLoss

    actor = _gaussian_actor()
    critic = TensorDictModule(torch.nn.Linear(3, 1), in_keys=["obs"], out_keys=["state_value"])
    loss = PPOLoss(actor, critic)
    loss.set_keys(value_target="my_target")
    loss.make_value_estimator()
    assert loss.value_estimator.tensor_keys.value_target == "my_target"
    loss.set_keys(value_target="other_target")
    assert loss.value_estimator.tensor_keys.value_target == "other_target"


@_UPDATER
def test_a_multi_process_collector_calls_the_post_collect_hook_in_its_workers(tmp_path: Path) -> None:
    """``MultiSyncCollector`` hands ``post_collect_hook`` to its worker processes: the hook runs
    there (a file it writes shows each batch), and a list it appends to in this process stays
    empty."""
    from torchrl.collectors import MultiSyncCollector

    seen: list[int] = []
    written = tmp_path / "hook.txt"

    def hook(td: TensorDict) -> None:
        seen.append(td.numel())
        with open(written, "a", encoding="utf-8") as handle:
            handle.write(f"{td.numel()}\n")

    collector = MultiSyncCollector(
        [lambda: _pendulum(device="cpu")], frames_per_batch=4, total_frames=8, post_collect_hook=hook
    )
    try:
        batches = sum(1 for _ in collector)
    finally:
        collector.shutdown()
    assert batches == 2
    assert seen == []  # (this process's list: the workers appended to their copies)
    assert written.read_text(encoding="utf-8").split() == ["4", "4"]


@_UPDATER
def test_a_multi_sync_collector_rounds_frames_per_batch_up_to_its_workers() -> None:
    """Two workers and ``frames_per_batch=5``: each collects 3 frames, a batch holds 6, and the
    collector warns."""
    from torchrl.collectors import MultiSyncCollector

    with pytest.warns(UserWarning, match="is not exactly divisible by the number of collector workers"):
        collector = MultiSyncCollector(
            [lambda: _pendulum(device="cpu")] * 2, frames_per_batch=5, total_frames=10, cat_results="stack"
        )
    try:
        batch = next(iter(collector))
    finally:
        collector.shutdown()
    assert batch.shape == torch.Size([2, 3])  # (stacked: each worker's 3 frames)
