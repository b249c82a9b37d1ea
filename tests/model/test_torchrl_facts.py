"""Real facts of the installed torchrl 0.14.1, read statically."""

from __future__ import annotations

import pytest

from rlmap.index.source import SourceTree
from rlmap.model.codemodel import CodeModel

pytestmark = pytest.mark.torchrl

SINGLE = "torchrl.collectors._single"
COLLECTOR = f"{SINGLE}.Collector"
RNN = "torchrl.modules.tensordict_module.rnn"


def test_source_is_the_installed_torchrl(torchrl_source: SourceTree) -> None:
    assert torchrl_source.version == "0.14.1"
    assert torchrl_source.permalink("torchrl/collectors/_single.py", 2030) == (
        "https://github.com/pytorch/rl/blob/v0.14.1/torchrl/collectors/_single.py#L2030"
    )
    assert len(torchrl_source.python_files()) > 400


def test_index_reads_every_file_without_diagnostics(torchrl_model: CodeModel) -> None:
    assert torchrl_model.diagnostics == ()


def test_rollout_calls_traj_ids_and_env_step(torchrl_model: CodeModel) -> None:
    callees = {edge.callee: edge for edge in torchrl_model.callees(f"{COLLECTOR}.rollout")}
    assert "self" in callees[f"{COLLECTOR}._update_traj_ids"].how
    step = callees["torchrl.envs.common.EnvBase.step_and_maybe_reset"]
    assert step.how == ("annotation",)  # from ``self.env: EnvBase = env`` in __init__
    assert "torchrl.collectors._base.BaseCollector.pre_collect_hook" in callees  # a property read


def test_carrier_lifecycle(torchrl_model: CodeModel) -> None:
    accesses = torchrl_model.attribute_accesses(f"{COLLECTOR}._carrier")
    writers = {access.function for access in accesses if access.kind == "write"}
    assert {f"{COLLECTOR}._make_carrier", f"{COLLECTOR}.rollout"} <= writers
    make = next(a for a in accesses if a.kind == "write" and a.function.endswith("_make_carrier"))
    assert make.value == "self.env.reset()"
    symbol = torchrl_model.symbol(f"{COLLECTOR}._carrier")
    assert symbol is not None
    assert symbol.kind == "attribute"
    assert symbol.path == "torchrl/collectors/_single.py"


def test_device_cast_flag_written_with_its_expression(torchrl_model: CodeModel) -> None:
    writes = [a for a in torchrl_model.attribute_accesses(f"{COLLECTOR}._cast_to_policy_device") if a.kind == "write"]
    assert [(a.function, a.value) for a in writes] == [
        (f"{COLLECTOR}._setup_devices", "self.policy_device != self.env_device")
    ]


def test_sync_functions_are_callable_attributes(torchrl_model: CodeModel) -> None:
    edge = torchrl_model.edge(f"{COLLECTOR}.rollout", f"{COLLECTOR}._sync_policy")
    assert edge is not None
    assert edge.how == ("attribute",)


def test_the_sync_functions_include_those_of_torch(torchrl_model: CodeModel) -> None:
    """The sync function a rollout calls may be torch's (``_get_sync_func`` returns
    ``torch.cuda.synchronize``, a partial of it, ``torch.mps.synchronize`` or ``_do_nothing``):
    the env-step page said it calls ``_do_nothing`` only."""
    sites = torchrl_model.call_sites("torchrl.envs.common.EnvBase._rollout_stop_early")
    called = {target for site in sites if site.callee_text == "sync_func" for target in site.targets}
    assert called == {"torchrl.envs.common._do_nothing", "torch.cuda.synchronize", "torch.mps.synchronize"}
    collector = {
        target
        for site in torchrl_model.call_sites(f"{COLLECTOR}.rollout")
        if site.callee_text == "self._sync_policy"
        for target in site.targets
    }
    assert {"torch.mps.synchronize", "torch.npu.synchronize", f"{SINGLE}._cuda_sync_if_initialized"} <= collector


def test_lstm_forward_calls_lstm(torchrl_model: CodeModel) -> None:
    edge = torchrl_model.edge(f"{RNN}.LSTMModule.forward", f"{RNN}.LSTMModule._lstm")
    assert edge is not None
    assert "self" in edge.how
    mode = torchrl_model.edge(f"{RNN}.LSTMModule.forward", f"{RNN}.LSTMModule.recurrent_mode")
    assert mode is not None
    assert "property" in mode.how  # certain; the value flow reads the same getter through ``self``
    assert set(mode.how) <= {"property", "flow"}


def test_init_tracker_writes_is_init(torchrl_model: CodeModel) -> None:
    writers = {a.function for a in torchrl_model.key_accesses(("is_init",)) if a.kind == "write"}
    assert "torchrl.envs.transforms._env.InitTracker._call" in writers
    assert "torchrl.envs.transforms._env.InitTracker._reset" in writers
    readers = {a.function for a in torchrl_model.key_accesses(("is_init",)) if a.kind in ("read", "check")}
    assert f"{RNN}.LSTMModule.forward" in readers


def test_traj_ids_key_flow(torchrl_model: CodeModel) -> None:
    accesses = torchrl_model.key_accesses(("collector", "traj_ids"))
    assert (f"{COLLECTOR}._update_traj_ids", "write") in {(a.function, a.kind) for a in accesses}


def test_module_level_context_manager_is_a_variable(torchrl_model: CodeModel) -> None:
    symbol = torchrl_model.symbol(f"{RNN}.recurrent_mode_state_manager")
    assert symbol is not None
    assert symbol.kind == "variable"
    assert symbol.value == "_RecurrentModeContextManager()"


def test_def_lines_hold_the_def(torchrl_source: SourceTree, torchrl_model: CodeModel) -> None:
    """Every function, method and class anchor points at its ``def``/``class`` line."""
    cache: dict[str, list[str]] = {}
    checked = 0
    for symbol in torchrl_model.symbols():
        if symbol.kind not in ("function", "method", "property", "class"):
            continue
        lines = cache.setdefault(symbol.path, (torchrl_source.root / symbol.path).read_text().splitlines())
        name = symbol.qualname.rsplit(".", 1)[-1]
        text = lines[symbol.line - 1].strip()
        keyword = "class" if symbol.kind == "class" else "def"
        assert text.startswith((f"{keyword} {name}", f"async {keyword} {name}")), f"{symbol.qualname}: {text!r}"
        checked += 1
    assert checked > 5000
