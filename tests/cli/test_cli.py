"""The command line: output, exit codes and error messages, run in-process and as a process."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import rlmap
from tests.conftest import FIXTURES, Run


def fixture_args(*args: str) -> list[str]:
    return [*args, "--source", str(FIXTURES / "pkg"), "--package", "pkg", "--no-cache", "-q"]


def test_show_method_on_fixture(run: Run) -> None:
    code, out, err = run("show", *fixture_args("Collector.rollout"))
    assert (code, err) == (0, "")
    assert "pkg.collector.Collector.rollout  (method in pkg.collector)" in out
    assert "defined at  pkg/collector.py:47" in out
    assert "(names in pkg.collector are shown relative to it)" in out
    assert "  line 51          pkg.envs.base.Env.step_and_maybe_reset  [annotation]              (inferred)\n" in out
    assert "  line 53          BaseCollector._sync                     [attribute]               (inferred)\n" in out
    assert "  BaseCollector.collect  line 34  [override]\n" in out  # a caller, relative to the module


def test_show_gives_the_file_of_a_caller_in_another_file(run: Run) -> None:
    # ``line N`` is a line of the symbol's own file: a caller elsewhere has its file named
    code, out, _ = run("show", *fixture_args("Env.step_and_maybe_reset"))
    assert code == 0
    assert "  pkg.collector.Collector.rollout  pkg/collector.py:51  [annotation]\n" in out
    code, out, _ = run("show", *fixture_args("Env.step_and_maybe_reset", "--json"))
    assert json.loads(out)["callers"][0]["path"] == "pkg/collector.py"
    code, out, _ = run("show", *fixture_args("pkg.collector.Collector"))
    assert "constructed by (1):\n  run  line 85\n" in out  # in its own file


def test_show_never_cuts_a_name_to_fit_a_terminal() -> None:
    from rlmap.query.lookup import _table

    name = "torchrl.envs.transforms._base.TransformedEnv._step_and_maybe_reset"
    lines = _table([("read", "torchrl/envs/common.py:3518", name)], width=60)
    assert name in "\n".join(lines)
    # and a terminal with room aligns every column whole; so does a pipe, past the column's cap
    rows = [("line 1, 2, 3, 4, 5", "a.b"), ("line 7", "c")]
    assert _table(rows, width=120) == ["  line 1, 2, 3, 4, 5  a.b", "  line 7              c"]
    assert _table(rows, caps=(8,)) == ["  line 1, 2, 3, 4, 5  a.b", "  line 7              c"]
    # into a pipe: a few cells past the cap (the lines of a call made three times) stay in line;
    # one in thirty, far longer, pushes its own row only
    piped = [(f"line {n}", "name") for n in range(27)] + [("line 1, 2, 3", "name")] * 2
    assert {line.index("name") for line in _table(piped, caps=(8,))} == {2 + len("line 1, 2, 3") + 2}
    piped = [(f"line {n}", "name") for n in range(29)] + [("line " + ", ".join(map(str, range(40))), "name")]
    assert {line.index("name") for line in _table(piped, caps=(8,))[:-1]} == {2 + 8 + 2}  # (the cap: wider than those)
    # two callers longer than the default cap of 60, on a wide terminal: aligned
    callers = [("x" * 70, "a.py:1", "[flow]"), ("y" * 65, "line 9", "[self]")]
    assert (
        len({line.index(" a.py:1") if "a.py" in line else line.index(" line 9") for line in _table(callers, width=200)})
        == 1
    )
    # a column of many short cells and one very long one: the long one pushes its own row only
    many = [(f"line {n}", "name") for n in range(19)] + [("line " + ", ".join(map(str, range(40))), "name")]
    lines = _table(many, caps=(16,), width=200)  # (as the callees' lines column)
    assert {line.index("name") for line in lines[:-1]} == {2 + 16 + 2}


def test_show_takes_format_as_the_other_commands_do(run: Run) -> None:
    """``--format json`` is ``--json`` (graph, audit and diff take ``--format``); ``--json`` with
    ``--format text`` is a usage error, not one silently chosen."""
    code, as_format, _ = run("show", *fixture_args("Collector.rollout", "--format", "json"))
    assert code == 0
    assert json.loads(as_format)["qualname"] == "pkg.collector.Collector.rollout"
    assert as_format == run("show", *fixture_args("Collector.rollout", "--json"))[1]
    assert run("show", *fixture_args("Collector.rollout", "--format", "text"))[1].startswith(
        "pkg.collector.Collector.rollout  (method in pkg.collector)"
    )
    code, out, err = run("show", *fixture_args("Collector.rollout", "--json", "--format", "text"))
    assert (code, out) == (2, "")
    assert "rlmap: error: --json and --format text are both given" in err


def test_show_attribute_lists_writes_with_guards(run: Run) -> None:
    code, out, _ = run("show", *fixture_args("_carrier"))
    assert code == 0
    assert '  write  line 49  Collector.rollout   = self.env.reset() [if self.mode == "recurrent"]\n' in out


def test_show_json_is_stable_and_complete(run: Run) -> None:
    code, out, _ = run("show", *fixture_args("Collector._carrier", "--json"))
    assert code == 0
    data = json.loads(out)
    assert data["qualname"] == "pkg.collector.Collector._carrier"
    assert data["definition"]["location"] == "pkg/collector.py:44"
    assert [a["line"] for a in data["accesses"] if a["kind"] == "write"] == [44, 49, 51]
    assert out == json.dumps(data, indent=2, sort_keys=True) + "\n"
    # what the answer was read from, as graph's document says it (a script storing it can tell)
    assert data["source"] == {"package": "pkg", "version": None, "commit": None}
    code, out, _ = run("show", *fixture_args("Colector._carrier", "--json"))
    assert code == 2
    assert json.loads(out)["source"] == data["source"]


def test_show_key(run: Run) -> None:
    code, out, _ = run("show", *fixture_args("collector.traj_ids"), "--profile", str(FIXTURES / "profile.toml"))
    assert code == 0
    assert '("collector", "traj_ids")  (tensordict key)' in out
    assert "  data.set  pkg/collector.py:73  pkg.collector.Collector._prepare" in out


def test_show_key_names_the_receiver_of_each_access(run: Run, make_package: Any, tmp_path: Path) -> None:
    """Two reads of one key on one line (``a["k"] | b["k"]``) are two rows that say which is which."""
    profile = tmp_path / "profile.toml"
    profile.write_text('[profile]\nname = "keys"\nextensions = ["tensordict"]\n', encoding="utf-8")
    root = make_package(
        {
            "app/__init__.py": "",
            "app/merge.py": """
                def merge(root, nxt):
                    nxt["done"] = nxt["done"] | root["done"]
                    if "done" in root.keys():
                        return nxt.get("done")

                def shifted(root):
                    part = root.select("done")
                    part["done"] = 0
            """,
        }
    )
    code, out, err = run("show", "done", "--key", "--source", str(root), "--package", "app", "--no-cache", "-q",
                         "--profile", str(profile))  # fmt: skip
    assert code == 0, err
    readers = out.split("readers (5):\n", 1)[1].splitlines()
    assert [row.split()[0] for row in readers] == ["nxt[]", "root[]", "in", "nxt.get", "root.select"]
    assert "in root.keys()  app/merge.py:3" in out
    assert out.count("app/merge.py:2") == 3  # the write and the two reads
    assert "  part[] (on a copy)  app/merge.py:8" in out  # a write into a copy says so, after the access


def test_show_key_without_a_profile_that_enables_keys_says_so(run: Run) -> None:
    """Keys are an extension a profile turns on: with none, the error says how to turn it on."""
    code, _, err = run("show", *fixture_args("collector.traj_ids", "--key"))
    assert code == 2
    assert 'keys are read only under a profile with extensions = ["tensordict"] (pass --profile)' in err


def test_show_ambiguous_lists_candidates(run: Run) -> None:
    code, out, _ = run("show", *fixture_args("rollout"))
    assert code == 2
    assert "'rollout' matches 3 symbols:" in out
    assert "pkg.collector.LLMCollector.rollout" in out


def test_show_unknown_symbol(run: Run) -> None:
    code, out, err = run("show", *fixture_args("NoSuchThing"))
    assert (code, out) == (2, "")
    assert err.startswith("rlmap: error: 'NoSuchThing' is neither a symbol, a tensordict key nor a glossary term")
    assert "Traceback" not in err
    # --json: a document on stdout too (a script reading it got nothing), as for an ambiguous name
    code, out, json_err = run("show", *fixture_args("Colector.rollout", "--json"))
    assert code == 2
    document = json.loads(out)
    assert document["query"] == "Colector.rollout"
    assert document["not_found"].startswith("'Colector.rollout' is neither a symbol")
    assert document["hint"].startswith("did you mean 'Collector.rollout', ")
    assert document["suggestions"][0] == "Collector.rollout"  # the names the hint offers, as a list
    assert list(document) == sorted(document)
    assert json_err.startswith(f"rlmap: error: {document['not_found']}")
    code, out, _ = run("show", *fixture_args("rollout", "--json"))
    assert code == 2
    assert len(json.loads(out)["ambiguous"]) == 3


def test_show_says_a_stand_in_for_an_import_is_one(run: Run, make_package: Any) -> None:
    """``try: from torch.compiler import mark`` / ``except ImportError: def mark(): ...``: a call of
    ``mark`` resolves to the stand-in, which runs only when the import fails (torchrl's
    ``cudagraph_mark_step_begin``; its page names the import, ``show`` named the stand-in alone)."""
    stand_in = """
        try:
            from torch.compiler import mark
        except ImportError:

            def mark():
                raise NotImplementedError("no mark")


        def step():
            mark()
        """
    root = make_package({"sp/__init__.py": "", "sp/consts.py": stand_in})
    args = ["--source", str(root), "--package", "sp", "--no-cache", "-q"]
    code, out, err = run("show", "step", *args)
    assert (code, err) == (0, "")
    assert "(a stand-in: torch.compiler.mark runs unless its import fails)" in out
    code, out, _ = run("show", "consts.mark", *args)
    assert "  stand-in    for torch.compiler.mark, defined where its import fails" in out.splitlines()
    code, out, _ = run("show", "consts.mark", "--json", *args)
    assert json.loads(out)["stands_in_for"] == "torch.compiler.mark"


def test_show_unknown_name_says_which_files_were_skipped(run: Run, make_package: Any) -> None:
    # the name is defined in a file that does not parse: the reason is said, not only "not found"
    root = make_package({"bp/__init__.py": "def ok():\n    return 1\n", "bp/bad.py": "def broken(:\n"})
    code, out, err = run("show", "broken", "--source", str(root), "--package", "bp", "--no-cache", "-q")
    assert (code, out) == (2, "")
    lines = err.splitlines()
    assert lines[0].startswith("rlmap: warning: bp/bad.py:1: syntax error")
    assert lines[1].startswith("rlmap: error: 1 file(s) could not be read or indexed in full - fix them")
    assert lines[2].startswith("rlmap: error: 'broken' is neither a symbol")
    assert "Collector" not in lines[2]  # no example taken from torchrl for another package


def test_show_key_suggests_a_key_spelled_alike(run: Run) -> None:
    profile = ("--profile", str(FIXTURES / "profile.toml"))
    code, _, err = run("show", *fixture_args("collector.traj_id", "--key"), *profile)
    assert code == 2
    assert "did you mean 'collector.traj_ids'?" in err
    # a symbol asked for as a key: the hint says so
    code, _, err = run("show", *fixture_args("Collector.rollout", "--key"), *profile)
    assert code == 2
    assert err.rstrip().endswith("- 'Collector.rollout' names a symbol: leave out --key"), err


@pytest.mark.parametrize(
    ("scope", "hint"),
    [
        ("Env.step", "did you mean 'pkg.envs.base.Env.step'?"),  # a suffix, not a prefix
        ("pkg.envz", "did you mean 'pkg.envs'"),
        ("nothing.here", "pass a dotted prefix of full qualified names"),
        ("pkg.env", "did you mean 'pkg.envs'"),  # the start of a name, not a dotted prefix
    ],
)
def test_graph_scope_that_keeps_nothing_is_an_error(run: Run, scope: str, hint: str) -> None:
    code, out, err = run("graph", *fixture_args("--scope", scope))
    assert (code, out) == (2, "")
    assert err.startswith(f"rlmap: error: --scope '{scope}' names no package, module, class or function of ")
    assert hint in err


def test_graph_scope_takes_an_import_path_or_a_file_as_show_does(run: Run) -> None:
    """``--scope torchrl.collectors.Collector`` was refused with "did you mean
    torchrl.collectors._single.Collector?", and a file with an unrelated function; both name
    what ``show`` shows for them."""
    code, out, err = run("graph", *fixture_args("--scope", "pkg.collector"))
    assert code == 0, err
    whole = json.loads(out)
    for scope in ("pkg/collector.py", "./pkg/collector.py"):
        code, out, err = run("graph", *fixture_args("--scope", scope))
        assert (code, err) == (0, ""), scope
        assert json.loads(out) == whole
    code, out, err = run("graph", *fixture_args("--scope", "pkg.envs.Env"))  # (pkg/envs/__init__.py imports it)
    assert (code, err) == (0, "")
    callers = {edge["caller"] for edge in json.loads(out)["edges"]}
    assert callers == {"pkg.envs.base.Env.step", "pkg.envs.base.Env.step_and_maybe_reset"}


def test_an_empty_graph_scope_is_an_error(run: Run) -> None:
    code, out, err = run("graph", *fixture_args("--scope", ""))
    assert (code, out) == (2, "")
    assert err.startswith("rlmap: error: --scope is empty")


def test_graph_json_scoped_and_sorted(run: Run) -> None:
    code, out, _ = run("graph", *fixture_args("--scope", "pkg.envs"))
    assert code == 0
    data = json.loads(out)
    callers = {edge["caller"] for edge in data["edges"]}
    assert callers == {"pkg.envs.base.Env.step", "pkg.envs.base.Env.step_and_maybe_reset"}
    assert data["edges"] == sorted(data["edges"], key=lambda edge: (edge["caller"], edge["callee"]))
    step = next(node for node in data["nodes"] if node["qualname"] == "pkg.envs.base.Env.step")
    assert step == {
        "qualname": "pkg.envs.base.Env.step",
        "kind": "method",
        "path": "pkg/envs/base.py",
        "line": 13,
        "end_line": 14,
        "documented": False,
    }
    assert data["source"] == {"package": "pkg", "version": None, "commit": None}  # not known: null, not ""


def test_graph_dot_is_deterministic(run: Run) -> None:
    first = run("graph", *fixture_args("--format", "dot"))
    second = run("graph", *fixture_args("--format", "dot"))
    assert first == second
    assert first[1].startswith("digraph calls {")
    assert '"pkg.helpers.outer" -> "pkg.helpers.outer.inner" [label="26", how="direct"];' in first[1]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["graph", "--format", "xml"], "Invalid value for '--format': 'xml' is not one of 'json', 'dot'"),
        (["show", "--nope", "x"], "No such option"),
        (["show"], "Missing argument"),
        (["show", "x", "--source", "/definitely/not/here"], "source path '/definitely/not/here' does not exist"),
        (["frobnicate"], "No such command"),
        (["show", "x", "--no-cache", "--cache-dir", "d"], "--no-cache and --cache-dir are both given - pass"),
        (["graph", "--cache-dir=d", "--no-cache"], "--no-cache and --cache-dir are both given - pass"),
        # a number out of its range, or none, in words rather than click's ``x>=1``, ``int range``
        (["show", "x", "--jobs", "0"], "Invalid value for '--jobs' / '-j': 0 is below 1 (pass 1 or more) - run"),
        (["show", "x", "--jobs", "abc"], "Invalid value for '--jobs' / '-j': 'abc' is not a number - run"),
    ],
)
def test_usage_errors_exit_2(run: Run, args: list[str], message: str) -> None:
    code, _, err = run(*args)
    assert code == 2
    assert err.startswith("rlmap: error: ")
    assert message in err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["generate", "--chek"], "No such option: --chek - did you mean --check? (run 'rlmap generate --help'"),
        (["show", "x", "--cach-dir", "d"], "No such option: --cach-dir - did you mean --cache-dir? (run 'rlmap show"),
        (["--verison"], "No such option: --verison - did you mean --version? (run 'rlmap --help'"),
        # nothing spelled like it: no guess (click's own offered --jobs for --bogus)
        (["show", "--bogus", "x"], "No such option: --bogus - run 'rlmap show --help'\n"),
    ],
)
def test_an_unknown_option_is_answered_with_the_options_spelled_like_it(run: Run, args: list[str], said: str) -> None:
    code, _, err = run(*args)
    assert code == 2
    assert err.startswith(f"rlmap: error: {said}")


def test_a_profile_passed_is_named_as_given(run: Run, tmp_path: Path) -> None:
    # its name alone ("passwd", "etc/profile.toml") hid where it was, or named another place
    not_toml = tmp_path / "passwd"
    not_toml.write_text("root:x:0:0:root:/root:/bin/bash\n")
    code, _, err = run("show", *fixture_args("x", "--profile", str(not_toml)))
    assert code == 2
    assert err.startswith(f"rlmap: error: {not_toml}: invalid TOML: ")
    code, _, err = run("show", *fixture_args("x", "--profile", str(tmp_path)))
    assert code == 2
    assert err.startswith(f"rlmap: error: cannot read '{tmp_path}/profile.toml': ")
    # an empty profile is refused: read as one, it would drop the keys and terms without a word
    (tmp_path / "profile.toml").write_text("")
    code, _, err = run("show", *fixture_args("x", "--profile", str(tmp_path)))
    assert code == 2
    assert err.startswith(f"rlmap: error: {tmp_path}/profile.toml: the profile is empty - ")


def test_a_path_of_the_wrong_kind_is_named_as_given_and_said_to_be_so(run: Run, tmp_path: Path) -> None:
    a_file = tmp_path / "afile"
    a_file.write_text("")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    generate = ["generate", "--source", str(FIXTURES), "--package", "pkg", "--out", str(tmp_path / "out"), "-q"]
    for args, says in [
        ((*generate, "--templates", str(a_file)), f"templates directory '{a_file}' is not a directory"),
        ((*generate, "--config", str(fifo)), f"config file '{fifo}' is not a regular file"),  # (never opened: no hang)
        ((*generate, "--profile", str(tmp_path / "gone")), f"profile '{tmp_path / 'gone'}' does not exist"),
    ]:
        code, _, err = run(*args)
        assert code == 2, args
        assert says in err


def test_a_name_not_found_is_echoed_on_one_bounded_line(run: Run) -> None:
    # (-q: a loaded machine may take a second, and a progress line would come first)
    code, _, err = run("show", "Coll\nector.rollout", "--source", str(FIXTURES), "--package", "pkg", "--no-cache", "-q")
    assert code == 2
    assert err.startswith("rlmap: error: 'Coll\\x0aector.rollout' is neither a symbol")
    code, _, err = run("show", "x" * 100_000, "--source", str(FIXTURES), "--package", "pkg", "--no-cache", "-q")
    assert code == 2
    assert len(err) < 1000


def test_source_that_is_not_a_package(run: Run, tmp_path: Path) -> None:
    code, _, err = run("show", "x", "--source", str(tmp_path), "--no-cache")
    assert code == 2
    assert f"'{tmp_path}' is neither a checkout holding 'torchrl/__init__.py' nor a package directory" in err
    afile = tmp_path / "passwd"
    afile.write_text("root:x:0:0\n")
    code, _, err = run("show", "x", "--source", str(afile), "--no-cache")
    assert code == 2
    assert err.startswith(f"rlmap: error: source path '{afile}' is a file - pass --source the folder")


def test_unusable_cache_dir(run: Run, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    code, _, err = run(
        "show", "x", "--source", str(FIXTURES / "pkg"), "--package", "pkg", "--cache-dir", str(blocker / "cache")
    )
    assert code == 2
    assert err.startswith(
        f"rlmap: error: the cache directory '{blocker}' (in '{blocker / 'cache'}') is a file, not a directory"
    )
    assert err.rstrip().endswith("- pass --cache-dir a writable directory (it is created if missing), or --no-cache")
    code, _, err = run("show", "x", "--source", str(FIXTURES / "pkg"), "--package", "pkg", "--cache-dir", str(blocker))
    assert code == 2
    assert err.startswith(f"rlmap: error: the cache directory '{blocker}' is a file, not a directory - ")


def test_unreadable_files_are_reported_and_the_rest_indexed(run: Run, make_package) -> None:  # type: ignore[no-untyped-def]
    root = make_package(
        {
            "bad/__init__.py": "",
            "bad/good.py": "def fine():\n    return helper()\n\ndef helper():\n    return 1\n",
            "bad/broken.py": "def broken(:\n    pass\n",
            "bad/latin1.py": b'x = 1\nname = "caf\xe9"\n',
            "bad/empty.py": "",
        }
    )
    code, out, err = run("show", "fine", "--source", str(root / "bad"), "--no-cache", "-q")
    assert code == 3
    assert "bad.good.fine  (function in bad.good)" in out
    assert "  line 2  helper  [direct]\n" in out  # bad.good.helper, relative to the module
    assert "rlmap: warning: bad/broken.py:1: syntax error" in err
    assert "rlmap: warning: bad/latin1.py:2: not valid UTF-8" in err
    assert "empty.py" not in err
    assert "2 file(s) could not be read or indexed in full" in err


def test_version(run: Run) -> None:
    code, out, _ = run("--version")
    assert code == 0
    assert out.startswith("rlmap ")


def test_console_script_process_has_no_traceback(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "rlmap", "show", "Nope", "--source", str(tmp_path / "missing")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 2
    assert result.stderr.startswith("rlmap: error: source path")
    assert "Traceback" not in result.stderr


def _command(*args: str, traced: bool = False, monitored: bool = False) -> list[str]:
    """``rlmap *args`` as a process, with an ``atexit`` hook that says whether the interpreter shut
    down the usual way; ``traced``: under a trace function, as coverage sets on Python 3.11;
    ``monitored``: under a ``sys.monitoring`` tool, as cProfile and coverage use from 3.12."""
    probe = (
        "import atexit, sys\n"
        "atexit.register(lambda: sys.stderr.write('shut down the usual way\\n'))\n"
        + ("sys.settrace(lambda *_: None)\n" if traced else "")
        + ("sys.monitoring.use_tool_id(2, 'profiler')\n" if monitored else "")
        + "from rlmap.cli import run\n"
        "sys.argv = ['rlmap', *sys.argv[1:]]\n"
        "run()\n"
    )
    return [sys.executable, "-c", probe, *args]


def test_the_command_leaves_at_once_with_its_whole_output_and_its_exit_code() -> None:
    done = subprocess.run(_command("graph", *fixture_args("--format", "json")), capture_output=True, check=False)
    assert done.returncode == 0
    assert json.loads(done.stdout)["nodes"]  # flushed whole before the process left
    assert b"shut down the usual way" not in done.stderr
    missing = subprocess.run(_command("show", *fixture_args("NoSuchThing")), capture_output=True, check=False)
    assert missing.returncode == 2
    assert missing.stderr.startswith(b"rlmap: error: ")
    assert b"shut down the usual way" not in missing.stderr


def test_the_command_under_a_tracer_shuts_down_the_usual_way() -> None:
    # (a profiler or coverage writes its results as the interpreter shuts down)
    done = subprocess.run(_command("show", *fixture_args("NoSuchThing"), traced=True), capture_output=True, check=False)
    assert done.returncode == 2
    assert done.stderr.endswith(b"shut down the usual way\n")


@pytest.mark.skipif(not hasattr(sys, "monitoring"), reason="sys.monitoring is Python 3.12+")
def test_the_command_under_a_monitoring_tool_shuts_down_the_usual_way() -> None:
    args = _command("show", *fixture_args("NoSuchThing"), monitored=True)
    done = subprocess.run(args, capture_output=True, check=False)
    assert done.returncode == 2
    assert done.stderr.endswith(b"shut down the usual way\n")


def test_a_reader_that_goes_away_ends_the_command_with_exit_1_and_no_traceback() -> None:
    # closed before the command writes: its output (a few KB, buffered) meets it as it leaves
    with subprocess.Popen(
        _command("show", *fixture_args("Collector.rollout")), stdout=subprocess.PIPE, stderr=subprocess.PIPE
    ) as process:
        assert process.stdout is not None
        assert process.stderr is not None
        process.stdout.close()  # ``| head -c 0``
        errors = process.stderr.read()
        assert process.wait() == 1  # typer's exit when the reader went away, as before the fast exit
    assert b"Exception ignored" not in errors
    assert b"Traceback" not in errors


@pytest.mark.parametrize(
    ("args", "closed", "code"),
    [
        (("--version",), 1, 0),
        (("--version",), 2, 0),
        (("show", *fixture_args("NoSuchThing")), 2, 2),
        (("show", *fixture_args("Collector.rollout")), 1, 0),  # (asks whether stdout is a terminal)
        (("show", *fixture_args("Collector.rollout")), 2, 0),
        (("show", "Collector.rollout", "--source", str(FIXTURES / "pkg"), "--package", "pkg", "--no-cache"), 2, 0),
    ],
)
def test_a_stream_closed_from_the_start_changes_no_exit_code(args: tuple[str, ...], closed: int, code: int) -> None:
    done = subprocess.run(
        _command(*args),
        stdin=subprocess.DEVNULL,
        capture_output=closed != 2,
        preexec_fn=lambda: os.close(closed),
        check=False,
    )  # (``>&-`` or ``2>&-``)
    assert done.returncode == code


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full (a device every write fills)")
@pytest.mark.parametrize(
    "args",
    [
        ("--version",),
        ("show", *fixture_args("Collector.rollout")),
        ("graph", *fixture_args("--format", "json")),
        ("audit", "--explain", "stale-ref"),
        ("--help",),  # written by click itself
        ("show", "--help"),
    ],
)
def test_an_output_that_cannot_be_written_is_exit_120_and_not_a_bug(args: tuple[str, ...]) -> None:
    with open("/dev/full", "wb") as full:  # a full disk
        done = subprocess.run(_command(*args), stdout=full, stderr=subprocess.PIPE, check=False)
    assert done.returncode == 120
    assert done.stderr.decode().splitlines() == [
        "rlmap: error: cannot write the output: No space left on device - free space on its device, or send it elsewhere"
    ]


@pytest.mark.parametrize("unbuffered", [False, True])
def test_an_output_the_device_cuts_short_is_exit_120_not_a_silent_success(tmp_path: Path, unbuffered: bool) -> None:
    """A disk that fills in the middle of the output (a file size limit here, not on a boundary
    of any buffer): the write that is cut short says nothing, the next fails; the command must not
    end as if its output were whole, with stdout buffered or not (``python -u``)."""
    import resource

    package = tmp_path / "big"
    package.mkdir()
    (package / "__init__.py").write_text("")
    for number in range(60):  # each module's functions call the ones of the module before
        previous = max(number - 1, 0)
        body = "".join(f"\n\ndef f{k}():\n    return before.f{k}()\n" for k in range(6))
        (package / f"m{number}.py").write_text(f"from big import m{previous} as before\n{body}")
    args = _command("graph", "--format", "dot", "--source", str(package), "--package", "big", "--no-cache", "-q")
    environment = dict(os.environ)
    environment.pop("PYTHONUNBUFFERED", None)
    if unbuffered:
        environment["PYTHONUNBUFFERED"] = "1"
    whole = subprocess.run(args, capture_output=True, check=True, env=environment).stdout
    assert len(whole) > 2 * 8192  # more than one buffer of the stream
    for limit in (len(whole) - 100, 5000):
        with open(tmp_path / "graph.dot", "wb") as out:
            done = subprocess.run(
                args,
                stdout=out,
                stderr=subprocess.PIPE,
                env=environment,
                preexec_fn=lambda limit=limit: resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit)),
                check=False,
            )
        assert (tmp_path / "graph.dot").read_bytes() == whole[:limit]
        assert done.returncode == 120
        assert done.stderr.decode().splitlines() == [
            "rlmap: error: cannot write the output: File too large - "
            "raise the file size limit (ulimit -f), or send it elsewhere"
        ]


@pytest.mark.parametrize(
    ("encoding", "expected"),
    [
        ("utf-8", "a \x1b[31mred\x1b[0m \u2192 done\ntail".encode()),  # an escape sequence: rlmap's, kept
        ("ascii", "a \x1b[31mred\x1b[0m \u2192 done\ntail".encode()),  # a C locale's stdout: UTF-8, as click wrote
        ("latin-1", b"a \x1b[31mred\x1b[0m \\u2192 done\ntail"),  # a character it lacks: escaped, not a crash
        ("utf-16", None),  # written by the stream's own encoder: no byte-order mark per call
    ],
)
def test_the_output_is_its_exact_text_in_the_streams_encoding(encoding: str, expected: bytes | None) -> None:
    probe = "from rlmap.cli.common import say\nsay('a \\x1b[31mred\\x1b[0m \\u2192 done')\nsay('tail', nl=False)\n"
    environment = {**os.environ, "PYTHONIOENCODING": encoding}
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, check=True, env=environment)
    if expected is not None:
        assert done.stdout == expected
    else:
        assert done.stdout.decode(encoding).lstrip("\ufeff") == "a \x1b[31mred\x1b[0m \u2192 done\ntail"


def test_rlmap_alone_prints_its_help_and_exits_2() -> None:
    done = subprocess.run(_command(), capture_output=True, text=True, check=False)
    assert done.returncode == 2
    assert done.stdout == ""
    assert "Usage: rlmap [OPTIONS] COMMAND [ARGS]..." in done.stderr
    assert "show " in done.stderr


def test_a_write_failing_on_its_device_is_exit_120_for_pages_and_a_baseline(tmp_path: Path) -> None:
    """generate and --write-baseline meet a full disk as the output does: exit 120, not a usage
    error that asks for another directory."""
    import resource

    limit = 1024
    out = tmp_path / "pages"
    done = subprocess.run(
        _command("generate", *fixture_args("--out", str(out), "--profile", str(FIXTURES / "profile.toml"))),
        capture_output=True,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit)),
        check=False,
    )
    assert done.returncode == 120, done.stderr
    assert done.stderr.decode().startswith(f"rlmap: error: cannot write to '{out}': File too large - ")
    baseline = tmp_path / "baseline.json"
    probe = (
        "import resource, sys\n"
        "from rlmap.audit.catalog import Finding\n"
        "from rlmap.audit.report import save_baseline\n"
        "from rlmap.errors import WriteFailed\n"
        f"resource.setrlimit(resource.RLIMIT_FSIZE, ({limit}, {limit}))\n"
        "found = [Finding('stale-ref', 'error', f'docs/p{n}.rst', n, f'name{n}', 'gone') for n in range(200)]\n"
        "try:\n"
        f"    save_baseline(__import__('pathlib').Path({str(baseline)!r}), found)\n"
        "except WriteFailed as error:\n"
        "    print(error.exit_code, error)\n"
    )
    said = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert said.startswith(f"120 cannot write the baseline {baseline}: File too large - ")


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full (a device every write fills)")
def test_a_diagnostic_that_cannot_be_written_changes_no_exit_code() -> None:
    with open("/dev/full", "wb") as full:
        done = subprocess.run(_command("show", *fixture_args("NoSuchThing")), stderr=full, capture_output=False,
                              stdout=subprocess.PIPE, check=False)  # fmt: skip
    assert (done.returncode, done.stdout) == (2, b"")


def test_main_in_a_longer_process_keeps_nothing_to_its_end(run: Run) -> None:
    from rlmap.cli.common import _KeptToExit

    code, _, _ = run("show", *fixture_args("Collector.rollout"))
    assert code == 0
    assert _KeptToExit.values is None  # a test's models are freed as usual


@pytest.mark.torchrl
def test_show_a_module_lists_what_it_defines_holds_and_imports(run: Run, torchrl_cache: Path) -> None:
    """``show torchrl.envs`` printed its file and "docstring none", nothing else: a module's report
    lists what it defines by line, the modules under it and the package's names it imports, each
    with where it is defined (checked against the ``__init__``'s own imports, read with ``ast``)."""
    import ast

    import torchrl

    code, out, _ = run("show", "torchrl.envs", "--json", "--cache-dir", str(torchrl_cache), "-q")
    assert code == 0
    result = json.loads(out)
    init = Path(torchrl.__file__).parent / "envs" / "__init__.py"
    imported = {
        alias.asname or alias.name
        for node in ast.parse(init.read_text(encoding="utf-8")).body
        if isinstance(node, ast.ImportFrom) and node.level == 1
        for alias in node.names
    }
    names = {row["name"]: row for row in result["imports"]}
    assert set(names) <= imported
    for missing in sorted(imported - set(names)):  # re-exported from tensordict, the companion: not torchrl's
        code, out, _ = run("show", f"torchrl.envs.{missing}", "--json", "--cache-dir", str(torchrl_cache), "-q")
        assert code == 0, out
        assert json.loads(out)["qualname"].startswith("tensordict."), missing
    assert len(imported - set(names)) < 10
    assert names["EnvBase"]["target"] == "torchrl.envs.common.EnvBase"
    assert names["EnvBase"]["kind"] == "class"
    assert {"torchrl.envs.common", "torchrl.envs.transforms", "torchrl.envs.libs"} <= set(result["submodules"])
    code, out, _ = run("show", "torchrl", "--json", "--cache-dir", str(torchrl_cache), "-q")
    assert code == 0
    assert all(row["target"].startswith("torchrl.") for row in json.loads(out)["imports"])  # not tensordict's
    code, out, _ = run("show", "torchrl.envs.common", "--cache-dir", str(torchrl_cache), "-q")
    assert code == 0
    members = out.split("members (", 1)[1].split("\n\n", 1)[0]
    common = ast.parse((init.parent / "common.py").read_text(encoding="utf-8"))
    line = next(node.lineno for node in common.body if isinstance(node, ast.ClassDef) and node.name == "EnvBase")
    assert re.search(rf"line {line} +EnvBase +\[class\]", members), members
    assert "__all__" not in members or "(no docstring)" not in members.split("__all__", 1)[1].split("\n", 1)[0]


@pytest.mark.torchrl
def test_show_rollout_on_installed_torchrl(run: Run, torchrl_cache: Path) -> None:
    code, out, _ = run("show", "Collector.rollout", "--cache-dir", str(torchrl_cache), "-q")
    assert code == 0
    assert "torchrl.collectors._single.Collector.rollout  (method in torchrl.collectors._single)" in out
    assert "https://github.com/pytorch/rl/blob/v0.14.1/torchrl/collectors/_single.py#L2030" in out
    assert " Collector._update_traj_ids " in out
    assert "torchrl.collectors._single.Collector._update_traj_ids" not in out  # relative to its module
    assert "not (not " not in out
    # a member TransformedEnv inherits: the debugger's question, answered where it is defined
    code, out, err = run("show", "TransformedEnv.rollout", "--cache-dir", str(torchrl_cache), "-q")
    assert code == 0, err
    assert out.startswith("torchrl.envs.common.EnvBase.rollout  (method in torchrl.envs.common)\n")
    assert "  inherited   by torchrl.envs.transforms._base.TransformedEnv (asked as TransformedEnv.rollout)" in out


def test_show_lists_a_long_ambiguity_in_part_and_a_keys_other_names_wrapped(
    run: Run, torchrl_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``show forward`` printed 238 rows, tensordict's before torchrl's; ``show step`` (then a key
    too) named its 37 methods on one line of 2,214 characters (``done``: 31 symbols)."""
    code, out, _ = run("show", "forward", "--cache-dir", str(torchrl_cache), "-q")
    assert code == 2
    listed = [line for line in out.splitlines() if line.startswith("  ") and ".forward" in line]
    assert len(listed) == 20
    assert all(line.lstrip().startswith("torchrl.") for line in listed)  # the documented package's first
    assert "  ... and 218 more (every one of them: --json)" in out
    code, out, _ = run("show", "forward", "--json", "--cache-dir", str(torchrl_cache), "-q")
    assert len(json.loads(out)["ambiguous"]) == 238
    monkeypatch.setenv("COLUMNS", "80")
    code, out, _ = run("show", "done", "--cache-dir", str(torchrl_cache), "-q")
    assert code == 0
    head = out.split("\n\n")[0].splitlines()
    assert head[1].startswith("  also the name of 31 symbols: ")
    assert all(len(line) <= 100 for line in head)
    assert "and 27 more; to show one, pass a longer suffix or its full name" in " ".join(" ".join(head).split())


def test_a_keys_namesake_example_is_a_name_show_answers(run: Run, torchrl_cache: Path) -> None:
    """``show action`` offered ``rlmap show '_AcceptedKeys.action'`` as the way to one of the 22
    symbols the key is also the name of: that name is ambiguous too.  The example given is a
    suffix that names one symbol, and ``show`` answers it."""
    code, out, _ = run("show", "action", "--cache-dir", str(torchrl_cache), "-q")
    assert code == 0
    head = " ".join(out.split("\n\n")[0].split())
    example = re.search(r"\(rlmap show '([^']+)'\)", head)
    assert example is not None, head
    code, out, _ = run("show", example.group(1), "--cache-dir", str(torchrl_cache), "-q")
    assert code == 0, out
    assert out.splitlines()[0].split()[0].endswith("." + example.group(1))


def test_a_name_of_a_thousand_parts_is_not_found_not_a_crash(run: Run) -> None:
    """The "did you mean" search looked for each part of a misspelled owner in turn: a name of
    1,000 parts ran out of recursion (exit 70) in ``show`` and ``graph --scope``."""
    name = "a." * 1000 + "a"
    code, out, err = run("show", *fixture_args(name))
    assert (code, out) == (2, "")
    assert err.startswith("rlmap: error: 'a.a.a.")
    assert "internal error" not in err
    code, _, err = run(
        "graph", "--scope", name, "--source", str(FIXTURES / "pkg"), "--package", "pkg", "--no-cache", "-q"
    )
    assert code == 2
    assert err.startswith("rlmap: error: --scope 'a.a.a.")
    assert "internal error" not in err


def test_show_suggests_a_name_spelled_alike(run: Run) -> None:
    code, out, err = run("show", *fixture_args("Colector.rollout"))
    assert (code, out) == (2, "")
    assert "did you mean 'Collector.rollout'" in err


def test_show_suggests_the_member_of_a_misspelled_owner_and_terms_before_private_names(run: Run) -> None:
    # the module misspelled, the member right: the member is kept, not dropped for its class
    code, _, err = run("show", *fixture_args("pkg.envz.base.Env.step"))
    assert code == 2
    assert "did you mean 'pkg.envs.base.Env.step'" in err
    # a glossary term spelled alike comes before a private attribute spelled alike
    profile = ("--profile", str(FIXTURES / "profile.toml"))
    code, _, err = run("show", *fixture_args("carier"), *profile)
    assert code == 2
    assert "did you mean 'carrier' or '_carrier'?" in err
    code, _, err = run("show", *fixture_args("_carier"), *profile)
    assert "did you mean '_carrier' or 'carrier'?" in err  # (asked with the underscore: it first)


def test_show_a_term_that_is_a_key_too_and_a_misspelt_nested_key(run: Run, tmp_path: Path) -> None:
    profile = ("--profile", str(FIXTURES / "profile.toml"))
    # the key's report follows the term: its keys line says so, not "run another command"
    code, out, _ = run("show", *fixture_args("is_init"), *profile)
    assert code == 0
    assert "keys: is_init  (writers and readers below)\n" in out
    assert out.index("keys: is_init") < out.index("is_init  (tensordict key)")
    # a term whose keys are not the key shown below says which key that is
    glossary = (FIXTURES / "glossary.toml").read_text(encoding="utf-8")
    shutil.copytree(FIXTURES, tmp_path / "fixtures", ignore=shutil.ignore_patterns("pkg"))
    (tmp_path / "fixtures" / "glossary.toml").write_text(
        glossary.replace('keys = ["is_init"]', 'keys = [["collector", "traj_ids"]]'), encoding="utf-8"
    )
    code, out, _ = run("show", *fixture_args("is_init"), "--profile", str(tmp_path / "fixtures" / "profile.toml"))
    assert code == 0
    assert 'keys: ("collector", "traj_ids")  (below: the key is_init, not one of these;' in out
    # a term that is no key names the command that shows its key, as it is typed
    (tmp_path / "fixtures" / "glossary.toml").write_text(
        glossary.replace('term = "is_init"', 'term = "first step"'), encoding="utf-8"
    )
    code, out, _ = run("show", *fixture_args("first step"), "--profile", str(tmp_path / "fixtures" / "profile.toml"))
    assert code == 0
    assert "keys: is_init  (rlmap show --key is_init for writers and readers)\n" in out
    # a misspelt nested key is suggested in its dotted spelling
    code, _, err = run("show", *fixture_args("collector.traj_id"), *profile)
    assert code == 2
    assert "did you mean 'collector.traj_ids'?" in err


def test_a_name_not_found_without_a_profile_says_keys_and_terms_need_one(run: Run) -> None:
    code, _, err = run("show", *fixture_args("NoSuchThing"))  # (no profile: no keys, no terms read)
    assert code == 2
    assert err.rstrip().endswith("; keys and glossary terms are read under a profile only")
    code, _, err = run("show", *fixture_args("NoSuchThing"), "--profile", str(FIXTURES / "profile.toml"))
    assert code == 2
    assert "under a profile" not in err
    code, _, err = run("show")  # click's own message, without its full stop before ours
    assert err == "rlmap: error: Missing argument 'NAME' - run 'rlmap show --help'\n"


def test_show_finds_a_name_through_the_package_that_imports_it(run: Run) -> None:
    # ``pkg.Env`` is what users type (pkg/__init__.py imports it from pkg.envs, which imports it
    # from pkg.envs.base); so is a member through it
    for query, qualname in [
        ("pkg.Env", "pkg.envs.base.Env"),
        ("pkg.envs.TransformedEnv", "pkg.envs.base.TransformedEnv"),
        ("pkg.Env.step", "pkg.envs.base.Env.step"),
    ]:
        code, out, err = run("show", *fixture_args(query))
        assert code == 0, err
        assert out.startswith(f"{qualname}  (")
    code, _, err = run("show", *fixture_args("pkg.Env.nothing"))
    assert code == 2
    code, _, err = run("show", *fixture_args("pkg.envs.TransformdEnv"))
    assert "did you mean 'pkg.envs.TransformedEnv'" in err
    code, _, err = run("show", *fixture_args("pkg.Env.stp"))  # a member through the import path
    assert "did you mean 'pkg.Env.step'" in err


@pytest.mark.parametrize(
    "query", ["TransformedEnv.step", "pkg.envs.TransformedEnv.step", "pkg.envs.base.TransformedEnv.step"]
)
def test_show_finds_a_member_a_class_inherits(run: Run, query: str) -> None:
    # TransformedEnv defines _step only: its step is Env.step, as Python's lookup finds it
    code, out, err = run("show", *fixture_args(query))
    assert code == 0, err
    assert out.startswith("pkg.envs.base.Env.step  (method in pkg.envs.base)\n")
    assert f"  inherited   by TransformedEnv (asked as {query})\n" in out
    code, out, err = run("show", *fixture_args(query, "--json"))
    assert json.loads(out)["inherited_by"] == "pkg.envs.base.TransformedEnv"
    # a member the class defines itself is not said to be inherited
    code, out, err = run("show", *fixture_args(query.replace(".step", "._step")))
    assert out.startswith("pkg.envs.base.TransformedEnv._step  (method")
    assert "inherited" not in out
    # a misspelt inherited member is suggested, and completed
    code, _, err = run("show", *fixture_args(query.replace(".step", ".step_and_maybe_rest")))
    assert code == 2
    assert f"did you mean '{query}_and_maybe_reset'?" in err


def test_completion_offers_inherited_members() -> None:
    from rlmap.query.lookup import completions
    from tests.conftest import model_of

    model = model_of(FIXTURES, "pkg")
    assert "TransformedEnv.step_and_maybe_reset" in completions(model, "TransformedEnv.st")
    assert "pkg.envs.TransformedEnv.reset" in completions(model, "pkg.envs.TransformedEnv.re")


@pytest.mark.parametrize(
    "query",
    [
        "envs.TransformedEnv",
        "pkg.envs.TransformdEnv",
        "Colector.rollout",
        "pkg.Env.stp",
        "TransformedEnv.step_and_maybe_rest",
    ],
)
def test_show_suggests_only_names_it_takes(run: Run, query: str) -> None:
    import re

    code, _, err = run("show", *fixture_args(query))
    assert code == 2
    suggested = re.findall(r"'([^']+)'", err.split("did you mean", 1)[1]) if "did you mean" in err else []
    assert suggested, err  # (the case is real: something is suggested)
    for name in suggested:
        code, _, err = run("show", *fixture_args(name))
        assert code in (0, 2), err
        assert "neither a symbol" not in err, (query, name)


@pytest.mark.parametrize(
    ("recorded", "shown"),
    [
        ("not (not self.track_traj_ids)", "self.track_traj_ids"),
        ("not (self.env_device is not None)", "self.env_device is None"),
        ("not (a == b)", "a != b"),
        ("else (not (self._cast_to_env_device))", "else: not self._cast_to_env_device"),
        ("if not (not x)", "if x"),
        ("not (a and b)", "not (a and b)"),
        ("not (next_params is not None and next_params is not params)", "next_params is None or next_params is params"),
        ("not (not x or a in b)", "x and a not in b"),
        ("not (not (a or b) or c == d)", "(a or b) and c != d"),
        ("not (a is None and b)", "not (a is None and b)"),  # ``not b`` would read no better
        ("not (storage.max_size < self.slice_len)", "not (storage.max_size < self.slice_len)"),  # (not >= for a set)
        # an operand looser than the comparison keeps its parentheses
        ("not ((found := f(item)) is None or found == key)", "(found := f(item)) is not None and found != key"),
        ("not (x is (a if c else b) and not y)", "x is not (a if c else b) or y"),
        ("not ((a or b) == c and not d)", "(a or b) != c or d"),
        ("not ((not a) == b)", "(not a) != b"),
        ("for t in range(3)", "for t in range(3)"),
        ("not (cut off...", "not (cut off..."),
        # a formatter's trailing comma after a call's last argument goes; a tuple's stays
        (
            'not (not ok and hasattr(policy, "out_keys",) and (x,))',
            'not (not ok and hasattr(policy, "out_keys") and (x,))',
        ),
        ("if f(a, (1,),)", "if f(a, (1,))"),
        ("else (g(é, key=1, ))", "else: g(é, key=1)"),
        ("if x[1,]", "if x[1,]"),
    ],
)
def test_guards_read_as_conditions(recorded: str, shown: str) -> None:
    from rlmap.query.guards import readable_guard

    assert readable_guard(recorded) == shown


def test_a_hint_lists_the_names_it_offers_as_a_sentence() -> None:
    from rlmap.errors import did_you_mean

    assert did_you_mean(["a"]) == "did you mean 'a'?"
    assert did_you_mean(["a", "b"]) == "did you mean 'a' or 'b'?"
    assert did_you_mean(["a", "b", "c"]) == "did you mean 'a', 'b' or 'c'?"
    assert did_you_mean(["--check", "--chunk"], quoted=False) == "did you mean --check or --chunk?"
    assert did_you_mean([]) == ""


def test_a_branch_not_taken_that_the_elif_after_it_repeats_is_shown_once() -> None:
    from rlmap.query.guards import readable_guards

    recorded = ["if cast", "not (self.device is not None)", "elif self.device is None"]
    assert readable_guards(recorded) == ["if cast", "elif self.device is None"]
    # a different condition after it says more: both are kept
    recorded = ["not (self.device is not None)", "elif self.mode == 'x'"]
    assert readable_guards(recorded) == ["self.device is None", "elif self.mode == 'x'"]
    assert readable_guards(["else (not (a))", "if a"]) == ["else: not a", "if a"]


def test_hyperlinks_only_where_the_terminal_shows_them() -> None:
    from rlmap.terminal import hyperlink, supports_hyperlinks

    assert supports_hyperlinks(True, {"TERM_PROGRAM": "WezTerm"})
    assert not supports_hyperlinks(False, {"TERM_PROGRAM": "WezTerm"})  # a pipe, a file, a CI log
    assert not supports_hyperlinks(True, {"TERM_PROGRAM": "WezTerm", "TMUX": "/tmp/tmux"})
    assert not supports_hyperlinks(True, {"TERM": "xterm-256color"})
    assert supports_hyperlinks(False, {"FORCE_HYPERLINK": "1"})
    url = "https://github.com/pytorch/rl/blob/v0.14.1/x.py#L2"
    assert hyperlink("x.py:2", url) == f"\x1b]8;;{url}\x1b\\x.py:2\x1b]8;;\x1b\\"
    assert hyperlink("x.py:2", "https://evil\x1b]0;title\x07") == "x.py:2"  # no sequence from a URL


def test_a_location_of_several_lines_links_each_line() -> None:
    from rlmap.query.lookup import _linked
    from rlmap.terminal import hyperlink

    url = "https://github.com/pytorch/rl/blob/v0.14.1/x.py#L2066"
    (line,) = _linked(["  line 2066, 2132  f"], [("line 2066, 2132", url)], hyperlink)
    assert line == (
        f"  {hyperlink('line 2066', url)}, {hyperlink('2132', url.replace('L2066', 'L2132'))}  f"
    )  # (the second went to the first line)
    (line,) = _linked(["  v2/x.py:3, 9  f"], [("v2/x.py:3, 9", url.replace("2066", "3"))], hyperlink)
    assert hyperlink("9", url.replace("2066", "9")) in line
    (line,) = _linked(["  line 7  f"], [("line 7", url)], hyperlink)  # one line: one link
    assert line == f"  {hyperlink('line 7', url)}  f"


def test_show_and_graph_never_import_networkx_or_libcst_when_warm(tmp_path: Path) -> None:
    """The warm path loads plain data: the graph library and the parser stay unimported."""
    probe = (
        "import sys\n"
        "from rlmap.cli import main\n"
        f"args = ['--source', {str(FIXTURES)!r}, '--package', 'pkg', '--cache-dir', {str(tmp_path)!r}, '-q']\n"
        "main(['graph', *args])\n"  # cold: fills the cache
        "for name in [m for m in sys.modules if m.startswith(('networkx', 'libcst'))]:\n"
        "    del sys.modules[name]\n"
        "main(['show', 'Collector.rollout', *args])\n"
        "main(['graph', *args])\n"
        "print(sorted({m.split('.')[0] for m in sys.modules if m.startswith(('networkx', 'libcst'))}))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_show_and_graph_honour_tool_rlmap_and_its_repo_url(
    run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``[tool.rlmap]`` sets source, package and the repository whose permalinks ``show`` prints."""
    shutil.copytree(FIXTURES / "pkg", tmp_path / "pkg")  # (a config reads only inside its repository)
    (tmp_path / "pyproject.toml").write_text(
        '[tool.rlmap]\nsource = "."\npackage = "pkg"\nrepo-url = "https://example.org/acme/pkg"\n',
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)
    code, out, err = run("show", "Collector.rollout", "--json", "--no-cache", "-q")
    assert code == 0, err
    assert json.loads(out)["definition"]["permalink"].startswith(
        "https://example.org/acme/pkg/blob/main/pkg/collector.py#L"
    )
    code, out, err = run("graph", "--no-cache", "-q")
    assert code == 0, err
    assert any(node["qualname"] == "pkg.collector.Collector.rollout" for node in json.loads(out)["nodes"])


@pytest.mark.parametrize("command", ["generate", "audit", "show", "graph"])
def test_help_keeps_its_text(run: Run, command: str) -> None:
    """Help is literal text: no markup eats ``[tool.rlmap]``, no ``<bool>`` on flags."""
    code, out, _ = run(command, "--help")
    assert code == 0
    assert "<bool>" not in out
    if command in ("generate", "audit"):
        assert "[tool.rlmap]" in out


def test_root_help_lists_the_commands_in_the_readmes_order(run: Run) -> None:
    from rlmap.cli.common import COMMAND_ORDER

    code, out, _ = run("--help")
    assert code == 0
    commands = out.split("Commands:")[1]
    listed = [line.split()[0] for line in commands.splitlines() if line[2:3].strip()]  # (not a wrapped line)
    assert {"generate", "audit", "diff", "show", "graph"} <= set(listed)
    assert listed == [name for name in COMMAND_ORDER if name in listed]
    assert "..." not in commands  # each summary whole, wrapped if need be, not cut


@pytest.mark.parametrize("command", ["generate", "audit", "diff", "show", "graph"])
def test_help_names_values_not_types(run: Run, command: str) -> None:
    """Metavars say what to pass (``NAME``, ``PATH``, ``DIR``, ``N``); closed sets list their choices."""
    code, out, _ = run(command, "--help")
    assert code == 0
    assert "{" not in out.splitlines()[0]  # the usage line: ``NAME``, not ``{name}``
    for typed in ("<str>", "<path>", "<float>", "<int>", "<bool>", "\\["):  # (typer 0.19-0.21 wrote "\\[required]")
        assert typed not in out
    if command != "diff":
        assert "--source PATH" in out
        assert "-j, --jobs N" in out
    if command == "diff":
        assert out.splitlines()[0].endswith("diff [OPTIONS] A B")
    if command == "show":
        assert out.splitlines()[0].endswith("show [OPTIONS] NAME")
    if command == "graph":
        assert "--format <json|dot|pycg>" in out or "--format [json|dot|pycg]" in out  # (typer's click, or click's)


def test_progress_on_a_dumb_terminal_is_plain_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    """TERM=dumb on a terminal: rich draws no bar there (a cold run said nothing for 20 s)."""
    import io

    from rlmap.cli import common

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(sys, "stderr", Terminal())
    monkeypatch.setenv("TERM", "dumb")
    with common.progress_display(quiet=False) as progress:
        assert isinstance(progress, common._PlainProgress)
    monkeypatch.setenv("TERM", "xterm-256color")
    with common.progress_display(quiet=False) as progress:
        assert isinstance(progress, common._DelayedBar)


def test_a_terminals_bar_is_drawn_only_for_a_run_longer_than_a_second() -> None:
    """A warm answer draws nothing (no hidden cursor, no bar flashing for a tenth of a second); a
    longer run gets the bar, opened on the phase it is in, its clock from that phase's start."""
    import io
    import time

    from rich.console import Console

    from rlmap.cli import common

    assert common.BAR_DELAY == 1.0
    terminal = io.StringIO()
    bar = common._DelayedBar(Console(file=terminal, force_terminal=True), "index")
    bar("index", 5, 10)
    bar.close()
    assert terminal.getvalue() == ""
    time.sleep(0.1)  # (had the timer not been stopped, it would draw now)
    assert terminal.getvalue() == ""

    terminal = io.StringIO()
    console = Console(file=terminal, force_terminal=True, width=80)
    bar = common._DelayedBar(console, "index", delay=0.2)
    bar("index", 10, 10)
    bar("resolve", 0, 0)  # a phase not counted as it goes: the timer draws it
    started = console.get_time()
    deadline = time.monotonic() + 10
    while bar._bar is None and time.monotonic() < deadline:
        time.sleep(0.02)
    (task,) = bar._bar.tasks
    assert (task.description, task.total) == ("resolve", None)
    assert task.start_time is not None
    assert task.start_time <= started
    bar("resolve", 7, 7)
    assert bar._bar.tasks[-1].fields["count"] == "7/7"
    bar.close()
    assert "resolve" in terminal.getvalue()


def test_progress_bar_has_a_task_per_phase() -> None:
    """Each phase its own task: its clock runs from its start (a finished task's clock stops), a
    phase not counted has no total (it pulses) and shows no count left from the last phase."""
    import io

    from rich.console import Console

    from rlmap.cli import common

    bar = common.progress_bar(Console(file=io.StringIO(), force_terminal=True), refresh=False)
    report = common._BarProgress(bar, "read")
    assert [task.description for task in bar.tasks] == ["read"]
    report("index", 1, 3)
    report("index", 3, 3)
    first = bar.tasks[-1]
    assert (first.description, first.completed, first.total, first.fields["count"]) == ("index", 3, 3, "3/3")
    assert first.finished
    report("resolve", 0, 0)
    (task,) = bar.tasks
    assert (task.description, task.total, task.fields["count"], task.finished) == ("resolve", None, "", False)
    report("resolve", 7, 7)
    assert bar.tasks[-1].fields["count"] == "7/7"
    report("read", 5, 10)
    before = bar.tasks[-1].id
    report("read", 0, 10)  # the same phase again (a second version read): a task of its own
    (again,) = bar.tasks
    assert again.id != before
    assert (again.completed, again.fields["count"]) == (0, "0/10")


def _plain_progress_lines(events: list[tuple[float, str, int, int]]) -> list[str]:
    """The lines a log's progress says for these reports, each (seconds since the start, phase,
    done, total)."""
    from rlmap.cli import common

    lines: list[str] = []
    now = [0.0]
    report = common._PlainProgress()
    report._clock = lambda: now[0]
    report._start = 0.0
    original = common.say_progress
    common.say_progress = lines.append  # type: ignore[assignment]
    try:
        for at, phase, done, total in events:
            now[0] = at
            report(phase, done, total)
    finally:
        common.say_progress = original
        report.close()
    return lines


def test_plain_progress_says_each_phase_with_counts_and_stays_quiet_for_a_second() -> None:
    lines = _plain_progress_lines(
        [
            (0.0, "index", 0, 40),  # in the first second: nothing (a warm run says nothing)
            *((2.0, "index", done, 40) for done in range(41)),
            (5.0, "resolve", 0, 0),  # not counted as it goes
            (9.0, "resolve", 40, 40),
            (9.0, "render", 0, 0),
        ]
    )
    # each line at the seconds since the start; a phase's last line also with its own: the
    # index began at 0 s, unsaid (the first second), the resolve at 5 s
    assert lines == [
        "index 0/40 files (at 2.0 s)",
        "index 10/40 files (at 2.0 s)",
        "index 20/40 files (at 2.0 s)",
        "index 30/40 files (at 2.0 s)",
        "index 40/40 files (2.0 s, at 2.0 s)",
        "resolve (at 5.0 s)",
        "resolve 40/40 modules (4.0 s, at 9.0 s)",
        "render (at 9.0 s)",
    ]


@pytest.mark.parametrize("name", ["Collector._carrier", "Collector.rollout"])
def test_show_fits_rows_to_a_narrow_terminal_and_keeps_every_word(run: Run, name: str) -> None:
    from rlmap.query.lookup import format_description

    code, out, _ = run("show", *fixture_args(name, "--json"))
    assert code == 0
    result = json.loads(out)
    whole = format_description(result)
    narrow = format_description(result, width=48)
    assert max(len(line) for line in whole.splitlines()) > 48  # the case is real: some row is wider
    # every line fits, the header's too, but a link's (kept whole) and a single name longer than the width
    fitting = [line for line in narrow.splitlines() if "://" not in line and " " in line.strip()]
    assert all(len(line) <= 48 for line in fitting), narrow
    assert narrow.split() == whole.split()  # the same words in the same order, only the layout differs


def test_a_project_passed_as_source_is_not_given_torchrls_profile(run: Run, make_package: Any, tmp_path: Path) -> None:
    """``--source`` a package directory or a folder of modules names its own package: TorchRL's
    built-in profile (its pages, claims, glossary) is not applied to it."""
    root = make_package({"proj/main.py": "def carrier():\n    return 1\n", "proj/pkg/__init__.py": ""})
    out = tmp_path / "pages"
    code, _, err = run("generate", "--source", str(root / "proj"), "--out", str(out), "--no-cache", "-q")
    assert code == 2
    assert err.startswith("rlmap: error: no built-in profile for 'proj'")
    assert f"(TorchRL's, to start from: {Path(rlmap.__file__).parent / 'profiles' / 'torchrl'})" in err
    assert "claims.toml" not in err
    assert not out.exists()
    # show answers from the code alone: 'carrier' is the function, not TorchRL's glossary term
    code, text, err = run("show", "carrier", "--source", str(root / "proj"), "--no-cache", "-q")
    assert code == 0, err
    assert text.startswith("main.carrier  (function")
    assert "glossary" not in text


def test_show_lists_no_attribute_every_object_has_as_a_member(run: Run, make_package: Any) -> None:
    """``self.__class__.__name__`` and ``self.__dict__.get(...)`` read what Python gives every
    object: no member of the class (show listed ``__class__ [attribute]``)."""
    root = make_package(
        {
            "pk/__init__.py": "",
            "pk/env.py": """
                class Env:
                    def __init__(self):
                        self.batch = 1

                    def __repr__(self):
                        return self.__class__.__name__ + str(self.__dict__.get("batch")) + str(self.__doc__)
            """,
        }
    )
    code, out, err = run("show", "Env", "--source", str(root), "--package", "pk", "--no-cache", "-q")
    assert code == 0, err
    members = out.split("members", 1)[1]
    assert "batch" in members
    assert "__repr__" in members
    for every_objects in ("__class__", "__dict__", "__doc__"):
        assert every_objects not in members


def test_a_pager_that_fails_leaves_the_report_printed(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``PAGER=false`` ran, failed, and the report was lost (exit 0, nothing shown)."""
    from rlmap.cli import common

    monkeypatch.setenv("PAGER", "false")
    common.page("the report")
    assert capsys.readouterr().out == "the report\n"
    monkeypatch.setenv("PAGER", "true")  # a pager that took it (as less does, quitting with 0)
    common.page("the report")
    assert capsys.readouterr().out == ""


def test_a_pager_that_cannot_run_leaves_the_report_printed(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ``PAGER`` with an unbalanced quote was an internal error (exit 70); under ``TERM=dumb``
    less asks for RETURN, and quitting there lost the report.  Both print it."""
    from rlmap.cli import common

    monkeypatch.setenv("PAGER", 'less "unterminated')
    common.page("the report")
    out, err = capsys.readouterr()
    assert out == "the report\n"
    assert "rlmap: warning: PAGER='less \"unterminated' is not a command line (No closing quotation)" in err
    monkeypatch.setenv("PAGER", "true")  # would take the report and show nothing
    monkeypatch.setenv("TERM", "dumb")
    common.page("the report")
    assert capsys.readouterr().out == "the report\n"


def test_a_pager_that_read_the_report_and_exits_with_an_error_has_shown_it(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pager left with an error after showing the report (``less -K`` quit with Ctrl-C exits
    2) had the whole report printed again below it; one that read none of it still has it printed,
    a long one too (the write does not wait on a pager that is gone)."""
    import signal

    from rlmap.cli import common

    before = signal.getsignal(signal.SIGINT)
    for reads in ("cat >/dev/null", "head -c 1 >/dev/null"):  # all of it, or only its start
        monkeypatch.setenv("PAGER", f"sh -c '{reads}; exit 2'")
        common.page("the report\n" * 20_000)
        assert capsys.readouterr().out == ""
    monkeypatch.setenv("PAGER", "sh -c 'exit 2'")
    common.page("the report\n" * 20_000)
    assert capsys.readouterr().out == "the report\n" * 20_000 + "\n"
    assert signal.getsignal(signal.SIGINT) is before  # Ctrl-C is rlmap's again once the pager ends


def test_every_location_of_a_report_is_a_link_where_the_terminal_shows_them() -> None:
    """Callers, callees, accesses and a key's rows link their lines too (only ``defined at`` did),
    and the links leave the columns where they are."""
    import re
    from dataclasses import replace

    from rlmap.query.lookup import describe, format_description
    from tests.conftest import model_of

    model = model_of(FIXTURES, "pkg")
    model.source = replace(model.source, repo_url="https://github.com/o/r", version="1.0")

    def fake(text: str, url: str) -> str:
        return f"\x00{text}\x01{url}\x02"

    for query in ("Collector.rollout", "Collector._carrier", "BaseCollector._sync"):
        result = json.loads(json.dumps(describe(model, query)))
        linked = format_description(result, link=fake)
        plain = format_description(result).replace(f"  permalink   {result['definition']['permalink']}\n", "")
        assert re.sub("\x01[^\x02]*\x02|\x00", "", linked) == plain  # the same text, the same columns
        urls = re.findall("\x00([^\x01]*)\x01([^\x02]*)\x02", linked)
        for text, url in urls:
            line = text.rpartition(":")[2].replace("line ", "").split(",")[0]
            assert url.endswith(f"#L{line}"), (text, url)
        rows = sum(len(result.get(section) or ()) for section in ("callers", "callees"))
        assert len(urls) >= 1 + rows + bool(result.get("accesses")), query  # defined at, each caller and callee
    key = json.loads(json.dumps(describe(model, "collector.traj_ids")))
    urls = re.findall("\x00([^\x01]*)\x01", format_description(key, link=fake))
    assert urls == [access["location"] for kind in (("write",), ("read", "check"), ("delete",))
                    for access in key["accesses"] if access["kind"] in kind]  # fmt: skip


@pytest.mark.parametrize("command", [[], ["generate"], ["audit"], ["diff"], ["show"], ["graph"]])
def test_dash_h_is_help(run: Run, command: list[str]) -> None:
    """``-h`` was refused ("No such option"): it is the short form of ``--help``, as most tools take it."""
    code, out, err = run(*command, "-h")
    assert (code, err) == (0, "")
    assert (code, out, err) == run(*command, "--help")


def test_show_follows_a_lazy_getattr_only_to_the_names_it_serves(run: Run, make_package: Any) -> None:
    """A module's ``__getattr__`` serves the names its ``__all__`` lists (TorchRL's lazy exports):
    those, at module level, are found; any other name is not (a local function of that name
    elsewhere in the package was shown as ``mypk.run``)."""
    root = make_package(
        {
            "mypk/__init__.py": """
                __all__ = ["Lazy"]

                def __getattr__(name):
                    if name == "Lazy":
                        from mypk.sub.lazy import Lazy
                        return Lazy
                    raise AttributeError(name)
            """,
            "mypk/sub/__init__.py": "",
            "mypk/sub/lazy.py": """
                class Lazy:
                    def go(self):
                        def run():
                            return 1
                        return run()
            """,
        }
    )
    args = ("--source", str(root), "--package", "mypk", "--no-cache", "-q")
    code, out, err = run("show", "mypk.Lazy", *args)
    assert code == 0, err
    assert out.startswith("mypk.sub.lazy.Lazy  (class")
    code, out, err = run("show", "mypk.Lazy.go", *args)
    assert out.startswith("mypk.sub.lazy.Lazy.go  (method")
    code, out, err = run("show", "mypk.run", *args)  # Python raises AttributeError
    assert code == 2
    assert "neither a symbol" in err


def test_show_finds_an_inherited_member_in_pythons_order(run: Run, make_package: Any) -> None:
    """``class D(B, C)`` with ``B(A)``: Python's MRO is D, B, A, C, so ``D.m`` is ``A.m`` (the
    nearest base, ``C``, was shown), as the resolver says of ``self.m()`` in ``D``."""
    root = make_package(
        {
            "dia/__init__.py": "",
            "dia/m.py": """
                class A:
                    def m(self):
                        return 1

                class B(A):
                    pass

                class C:
                    def m(self):
                        return 2

                class D(B, C):
                    def go(self):
                        return self.m()
            """,
        }
    )
    args = ("--source", str(root), "--package", "dia", "--no-cache", "-q")
    code, out, err = run("show", "D.m", *args)
    assert code == 0, err
    assert out.startswith("dia.m.A.m  (method")
    code, out, err = run("show", "dia.m.D.go", *args, "--json")
    assert [edge["callee"] for edge in json.loads(out)["callees"]] == ["dia.m.A.m"]


def test_a_link_is_laid_on_its_own_rows_whole_cell_on_a_narrow_terminal() -> None:
    """A caller's lines wrapped on a narrow terminal are found on no line: its link went to the
    next row that held its text's start ("line 10" inside "line 100, 104"), splitting it."""
    import re

    from rlmap.query.lookup import format_description

    def permalink(line: int) -> str:
        return f"https://example.org/pk/m.py#L{line}"

    many = list(range(100, 160, 4))
    result = {
        "qualname": "pk.m.f", "kind": "function", "query": "f",
        "definition": {"path": "pk/m.py", "line": 1, "location": "pk/m.py:1", "permalink": permalink(1)},
        "end_line": 2, "documented": True, "docstring": "F.", "callees": [],
        "callers": [
            {"caller": "pk.m.long_caller_name", "path": "pk/m.py", "lines": many, "permalink": permalink(100),
             "how": ["direct"]},
            {"caller": "pk.m.other", "path": "pk/m.py", "lines": [10], "permalink": permalink(10), "how": ["direct"]},
        ],
    }  # fmt: skip
    linked = format_description(result, link=lambda text, url: f"<{text}|{url}>", width=50)
    pairs = re.findall(r"<([^|>]*)\|([^>]*)>", linked)
    assert ("line 10", permalink(10)) in pairs
    other = next(line for line in linked.splitlines() if line.lstrip().startswith("other"))
    assert f"<line 10|{permalink(10)}>" in other  # on its own row, whole: not inside "line 100"
    assert not re.search(r"<[^>]*>\S", linked)
    for text, url in pairs:
        assert url.endswith("#L" + text.replace("line ", "").split(",")[0].rpartition(":")[2]), (text, url)


@pytest.mark.parametrize(
    "guard",
    [
        "not (not x)",
        "not (a == b)",
        "not (a and b)",
        "not (p is not None and p is not q)",
        "not (not x or a in b)",
        "not (not (a or b) or c == d)",
        "not ((found := f(a)) is None or found == b)",
        "not (x is (a if c else b) and not d)",
        "not ((a or b) == c and not d)",
        "not ((not a) == b)",
    ],
)
def test_a_simplified_guard_holds_exactly_when_the_recorded_one_does(guard: str) -> None:
    """Evaluated on every assignment of a few values to its names, a guard as show reads it is
    true exactly when the guard as recorded is (De Morgan, negated operators, parentheses)."""
    import ast
    import itertools

    from rlmap.query.guards import readable_guard

    shown = readable_guard(guard)
    names = sorted({node.id for node in ast.walk(ast.parse(guard)) if isinstance(node, ast.Name)} - {"f"})
    for values in itertools.product([None, 0, 1, (1,)], repeat=len(names)):
        scope: dict[str, Any] = {"f": lambda value: value, **dict(zip(names, values, strict=True))}
        try:
            expected = bool(eval(guard, dict(scope)))  # (the test's own literals, on plain values)
        except TypeError:  # (``a in 0``)
            continue
        assert bool(eval(shown, dict(scope))) == expected, (guard, shown, scope)


def test_two_classes_of_one_name_one_inheriting_the_member_make_it_ambiguous(run: Run, make_package: Any) -> None:
    """``Child.stop`` with ``base.Child`` defining ``stop`` and ``other.Child`` inheriting
    ``Base.stop``: both are meant, and the list says which class inherits which."""
    root = make_package(
        {
            "kin/__init__.py": "",
            "kin/base.py": """
                class Base:
                    def stop(self):
                        pass

                class Child(Base):
                    def stop(self):
                        pass
            """,
            "kin/other.py": """
                from kin.base import Base

                class Child(Base):
                    pass
            """,
        }
    )
    code, out, err = run("show", "Child.stop", "--source", str(root), "--package", "kin", "--no-cache", "-q")
    assert code == 2
    assert "'Child.stop' matches 2 symbols:" in out
    assert "kin.base.Base.stop" in out
    assert "inherited by kin.other.Child" in out
    assert "kin.base.Child.stop" in out
    assert "is ambiguous" in err


def test_a_flag_given_a_value_points_to_its_commands_help(run: Run) -> None:
    """``--quiet=1``: the parser says so without the command's context; the hint named the top level."""
    code, _, err = run("show", "x", "--quiet=1")
    assert code == 2
    assert err == "rlmap: error: Option '--quiet' does not take a value - run 'rlmap show --help'\n"


def test_generate_takes_format_repeated_as_it_takes_it_comma_separated(run: Run, tmp_path: Path) -> None:
    """``--format rst --format md`` generated md alone: the last --format replaced the others."""
    profile = ("--profile", str(FIXTURES / "profile.toml"))
    for number, formats in enumerate((["--format", "rst", "--format", "md"], ["--format", "md,rst"])):
        out = tmp_path / f"out{number}"
        code, _, err = run("generate", *fixture_args("--out", str(out), *profile, *formats))
        assert code == 0, err
        assert sorted(path.name for path in out.iterdir() if path.is_dir()) == ["md", "rst"]
    # the command --check gives to regenerate keeps both
    (tmp_path / "out0" / "md" / "glossary.md").write_text("edited\n", encoding="utf-8")
    args = fixture_args("--out", str(tmp_path / "out0"), *profile, "--format", "rst", "--format", "md", "--check")
    code, _, err = run("generate", *args)
    assert code == 1
    assert "--format rst,md" in err


def test_a_streamed_output_whose_reader_goes_away_also_ends_with_exit_1(tmp_path: Path) -> None:
    """``graph`` writes as it goes: a reader gone mid-way (``| head -c 100``) ends it as ``show``'s
    does.  The package's graph is larger than a pipe holds, so the command meets the closed pipe."""
    package = tmp_path / "wide"
    package.mkdir()
    calls = "".join(f"def function_{n}():\n    return function_{n + 1}()\n\n\n" for n in range(3000))
    (package / "__init__.py").write_text(calls + "def function_3000():\n    return 0\n")
    args = ["graph", "--source", str(tmp_path), "--package", "wide", "--no-cache", "-q", "--format", "json"]
    with subprocess.Popen(_command(*args), stdout=subprocess.PIPE, stderr=subprocess.PIPE) as process:
        assert process.stdout is not None
        assert process.stderr is not None
        assert process.stdout.read(100)
        process.stdout.close()
        errors = process.stderr.read()
        assert process.wait() == 1
    assert b"Traceback" not in errors


def test_ctrl_c_in_a_command_says_interrupted_and_exits_130(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """typer turns an interrupt inside a command into its own exit 130, which said nothing."""
    from rlmap.cli import common, main

    def interrupted(*_: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(common, "load_model_of", interrupted)
    assert main(["show", *fixture_args("Collector.rollout")]) == 130
    assert capsys.readouterr().err == "rlmap: error: interrupted\n"


def test_ctrl_c_while_the_command_line_is_imported_ends_cleanly() -> None:
    """An interrupt during the imports (a fifth of a second of typer and rich) ended with a
    traceback from the import machinery: until the command line handles it, the entry point does."""
    code = (
        "import os, signal, sys\n"
        "import rlmap.entry\n"
        "real = __import__\n"
        "def slow(name, *args, **kwargs):\n"
        "    if name == 'rlmap.cli':\n"
        "        os.kill(os.getpid(), signal.SIGINT)\n"
        "    return real(name, *args, **kwargs)\n"
        "import builtins\n"
        "builtins.__import__ = slow\n"
        "sys.argv = ['rlmap', '--version']\n"
        "rlmap.entry.run()\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, check=False)
    assert (done.returncode, done.stderr) == (130, b"rlmap: error: interrupted\n")


@pytest.mark.parametrize("given", [["--cache-dir", ""], ["--docs="], ["--profile", ""], ["--templates", ""]])
def test_an_empty_path_option_is_a_usage_error(run: Run, tmp_path: Path, given: list[str]) -> None:
    """``--cache-dir "$UNSET"`` made a cache in the working directory, ``--docs=`` audited it,
    ``--templates ""`` read templates from it: an empty path is the working directory to the parser."""
    code, _, err = run("generate", "--check", "--out", str(tmp_path / "out"), *given)
    assert code == 2
    name = given[0].split("=")[0]
    assert err == f"rlmap: error: {name} is given an empty path - pass a path, or leave the option out\n"
    assert not (tmp_path / "out").exists()


def test_plain_progress_says_a_phase_started_in_the_first_second_once_it_ends() -> None:
    """A warm generate started rendering within the first second and reported nothing more until
    it was done: a log showed nothing for seconds, then only its end."""
    import re
    import time

    from rlmap.cli import common

    lines: list[str] = []
    original = common.say_progress
    common.say_progress = lines.append  # type: ignore[assignment]
    report = common._PlainProgress()
    try:
        report("render", 0, 0)
        assert lines == []
        deadline = time.monotonic() + 5
        while not lines and time.monotonic() < deadline:
            time.sleep(0.05)
        report("render", 16, 16)
    finally:
        report.close()
        common.say_progress = original
    assert len(lines) == 2
    assert re.fullmatch(r"render \(at 0\.\d s\)", lines[0])  # said late, as of when it began
    assert re.fullmatch(r"render 16/16 pages \(1\.\d s, at 1\.\d s\)", lines[1])


def test_plain_progress_of_a_phase_that_ended_in_the_first_second_says_when_it_did() -> None:
    """A phase reported at its end in the first second is said by the timer, at 1 s: it was said
    to end then, and to have taken until then (``index 40/40 files (0.8 s, at 1.0 s)`` for one
    that took 0.5 s and ended at 0.7 s)."""
    from rlmap.cli import common

    lines: list[str] = []
    now = [0.2]
    report = common._PlainProgress()
    report._timer.cancel()  # (its moment is played below)
    report._clock = lambda: now[0]
    report._start = 0.0
    original = common.say_progress
    common.say_progress = lines.append  # type: ignore[assignment]
    try:
        report("index", 0, 40)
        now[0] = 0.7
        report("index", 40, 40)
        now[0] = 1.0
        report._late()
    finally:
        common.say_progress = original
        report.close()
    assert lines == ["index 40/40 files (0.5 s, at 0.7 s)"]


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="/proc: a directory where nothing can be made")
def test_an_output_directory_that_cannot_be_made_is_refused_before_the_work(run: Run, tmp_path: Path) -> None:
    """``--out /proc/foo`` failed only once every page was built; it is refused before the source
    is even looked at (which does not exist here: that error would come first otherwise)."""
    code, _, err = run("generate", "--out", "/proc/rlmap-out", "--source", str(tmp_path / "nothing"))
    assert code == 2
    assert err.startswith("rlmap: error: cannot write to '/proc/rlmap-out': ")
    assert "(in '/proc')" in err


@pytest.mark.parametrize("command", ["generate", "audit", "diff", "show", "graph"])
def test_the_readme_synopsis_names_every_option_of_the_command(run: Run, command: str) -> None:
    """``rlmap show --help`` offered ``--package`` and ``--config``, which the README's synopsis of
    ``show`` did not name (the options every command shares are named in the sentence after it)."""
    import re

    readme = (Path(__file__).parents[2] / "README.md").read_text()
    block = readme[readme.index("## Commands") :]
    block = block[block.index("```text") : block.index("```", block.index("```text") + 7)]
    synopsis = re.search(rf"^rlmap {command} .*?(?=^rlmap |\Z)", block, flags=re.MULTILINE | re.DOTALL)
    assert synopsis is not None
    code, out, _ = run(command, "--help")
    assert code == 0
    offered = set(re.findall(r"^\s+(?:-\w, )?(--[a-z][a-z-]*)", out, flags=re.MULTILINE))
    shared = {"--help", "--cache-dir", "--no-cache", "--jobs", "--quiet"}
    assert offered - shared
    assert sorted(option for option in offered - shared if option not in synopsis.group()) == []


def test_show_suggests_a_class_by_its_words_when_its_old_name_is_spelt_otherwise(run: Run) -> None:
    """``SyncDataCollector`` (torchrl's name before ``Collector``) got no "did you mean" at all: a
    CapWords name is matched by its last word and the most of its others."""
    code, _, err = run("show", *fixture_args("SyncDataCollector"))
    assert code == 2
    assert err.rstrip().endswith("did you mean 'Collector', 'BaseCollector' or 'LLMCollector'?"), err


def test_show_key_lists_the_accesses_the_profiles_claims_place_as_the_pages_do(run: Run, torchrl_cache: Path) -> None:
    """``show is_init`` listed only where the code names the key: not ``_step_mdp`` moving the
    step's ("next", "is_init") to the root, nor the replay buffer writing every entry of its
    sampler's info, both of which the recurrent page lists (its keys section's ``through`` rows,
    each at a claim's line).  ``show`` now lists them, each with the claim that places it, at a
    line that holds what the claim checks, and never one the model already lists."""
    from rlmap.index.source import locate_source

    code, out, _ = run("show", "is_init", "--json", "--cache-dir", str(torchrl_cache), "-q")
    assert code == 0
    result = json.loads(out)
    placed = {(row["kind"], row["function"], row["claim"]): row for row in result["placed"]}
    step = placed[("write", "torchrl.envs.common.EnvBase._step_and_maybe_reset", "step-mdp-in-step-and-maybe-reset")]
    sample = placed[
        (
            "write",
            "torchrl.data.replay_buffers.replay_buffers.tensordict.TensorDictReplayBuffer.sample",
            "td-buffer-writes-info",
        )
    ]
    root = locate_source().root
    for row, code_text in ((step, "self._step_mdp(tensordict)"), (sample, "data.set(key, val)")):
        path, _, line = row["location"].rpartition(":")
        assert code_text in (root / path).read_text(encoding="utf-8").splitlines()[int(line) - 1]
        assert row["permalink"].endswith(f"{path}#L{line}")
    # the native autoreset's write is at a line the model finds itself: listed once, by the model
    found = {(access["kind"], access["function"], access["line"]) for access in result["accesses"]}
    assert not any((row["kind"], row["function"], row["line"]) in found for row in result["placed"])
    assert "native-autoreset-is-init" not in {row["claim"] for row in result["placed"]}
    code, out, _ = run("show", "is_init", "--key", "--cache-dir", str(torchrl_cache), "-q")
    assert code == 0
    block = out.split("writers through a value, the key not named there (by the profile's claims, checked) (2):\n")[1]
    assert block.split("\n\n")[0].splitlines()[1].split()[:2] == [
        step["location"],
        "torchrl.envs.common.EnvBase._step_and_maybe_reset",
    ]
    assert out.index("writers through a value") < out.index("readers (")  # (beside the writers)


_PLACED_PROFILE = """[profile]
name = "app"
claims = "claims.toml"
extensions = ["tensordict"]

[pages.env]
slug = "env_internals"
title = "Env internals"
summary = "the keys of the env"

[[pages.env.sections]]
kind = "keys"
id = "keys"
title = "Keys"
keys = ["obs"]
prose = "keys"
through = [
    { claim = "primers-written", writes = ["obs"], how = "every key of the primers, on reset" },
    { claim = "held-nowhere", writes = ["act"], how = "a claim of another key, which does not hold" },
]

[prose.env]
keys = "Reset writes every key of the primers."
"""

_PLACED_CLAIMS = """[[claim]]
id = "primers-written"
kind = "code"
in = "app.env.Env.reset"
code = "td.set(key, spec)"
says = "reset writes every key of the primers."
backs = ["prose:env.keys: writes every key of the primers"]

[[claim]]
id = "held-nowhere"
kind = "code"
in = "app.env.Env.step"
code = "td.set(act, 2)"
says = "step writes act."
backs = ["prose:env.keys: Reset writes"]
"""


def test_show_key_places_a_profiles_row_and_warns_when_its_claim_no_longer_holds(
    run: Run, make_package: Any, tmp_path: Path
) -> None:
    env = (
        "class Env:\n"
        "    def reset(self, td):\n"
        "        for key, spec in self.primers.items():\n"
        "            td.set(key, spec)\n"
        "        return td\n"
        "\n"
        "    def step(self, td):\n"
        '        td.set("obs", 1)\n'
        '        return td.get("obs")\n'
    )
    root = make_package({"app/__init__.py": "", "app/env.py": env})
    profile = tmp_path / "profile"
    profile.mkdir()
    (profile / "profile.toml").write_text(_PLACED_PROFILE, encoding="utf-8")
    (profile / "claims.toml").write_text(_PLACED_CLAIMS, encoding="utf-8")
    args = ("--source", str(root), "--package", "app", "--profile", str(profile), "--no-cache", "-q")
    code, out, err = run("show", "obs", "--json", *args)
    assert (code, err) == (0, "")
    assert json.loads(out)["placed"] == [
        {
            "kind": "write",
            "how": "every key of the primers, on reset",
            "function": "app.env.Env.reset",
            "line": 4,
            "location": "app/env.py:4",
            "permalink": "",
            "guards": ["for key, spec in self.primers.items()"],
            "claim": "primers-written",
        }
    ]
    # the code the claim checks is gone: a warning names the claim, the model's accesses are the answer
    (root / "app" / "env.py").write_text(env.replace("td.set(key, spec)", "td.update(spec)"), encoding="utf-8")
    code, out, err = run("show", "obs", *args)
    assert code == 0
    assert err.startswith("rlmap: warning: the accesses the profile's claims place for this key are not shown: ")
    assert "primers-written" in err
    assert "writers (1):" in out
    assert "through a value" not in out


def test_show_takes_a_location_as_rlmap_prints_it(run: Run) -> None:
    """Every report prints ``path:line``; pasted back into ``show`` it was no name ("did you mean
    'torchrl.collectors._single.prod'?").  It is the innermost definition holding that line; a
    file alone is its module; a line no definition holds is its module's."""
    code, out, err = run("show", *fixture_args("pkg/collector.py:51"))
    assert (code, err) == (0, "")
    assert out.startswith("pkg.collector.Collector.rollout  (method in pkg.collector)\n")
    assert "  holds       line 51 (the innermost definition there)\n" in out
    code, out, _ = run("show", *fixture_args("pkg/collector.py:47"))  # the def line: said once
    assert out.startswith("pkg.collector.Collector.rollout  (method")
    assert "holds" not in out
    code, out, _ = run("show", *fixture_args("pkg/collector.py:42", "--json"))
    assert (json.loads(out)["qualname"], json.loads(out)["located"]) == (
        "pkg.collector.Collector.__init__",
        "pkg/collector.py:42",
    )
    code, out, _ = run("show", *fixture_args("./pkg/collector.py:47", "--json"))  # (as a shell completes it)
    assert json.loads(out)["located"] == "pkg/collector.py:47"
    code, out, _ = run("show", *fixture_args("./pkg/collector.py"))
    assert out.startswith("pkg.collector  (module)\n")
    assert "holds" not in out
    code, out, _ = run("show", *fixture_args("pkg/collector.py:39"))  # (between two classes)
    assert out.startswith("pkg.collector  (module)\n")
    assert "  holds       line 39 (no definition holds it: the module's)\n" in out
    code, out, err = run("show", *fixture_args("pkg/nope.py:3"))
    assert (code, out) == (2, "")
    assert err.startswith("rlmap: error: 'pkg/nope.py:3' is no file of pkg")
    assert "did you mean" not in err  # (nothing spelled like it)
    code, out, err = run("show", *fixture_args("pkg/collector.py:100000"))
    assert (code, out) == (2, "")
    lines = len((FIXTURES / "pkg" / "collector.py").read_text().splitlines())
    assert err.startswith(
        f"rlmap: error: 'pkg/collector.py:100000' is past the end of pkg/collector.py, which has {lines} lines"
    )


def test_show_takes_a_location_as_a_traceback_or_a_linter_prints_it(run: Run) -> None:
    """A location at hand when a rollout fails is a traceback's: the installed file's absolute
    path (``File "/.../site-packages/torchrl/collectors/_single.py", line 2100, in rollout``);
    rlmap printed 'is no line of a file', with no suggestion for a misspelt file either."""
    absolute = str(FIXTURES / "pkg" / "collector.py")
    for location in (
        f"{absolute}:51",
        f'File "{absolute}", line 51, in rollout',
        f'"{absolute}", line 51',
        "pkg/collector.py:51:13:",  # a linter's path:line:column:
        "collector.py:51",  # the end of one indexed path
    ):
        code, out, err = run("show", *fixture_args(location, "--json"))
        assert (code, err) == (0, ""), location
        assert (json.loads(out)["qualname"], json.loads(out)["located"]) == (
            "pkg.collector.Collector.rollout",
            "pkg/collector.py:51",
        ), location
    code, out, err = run("show", *fixture_args("pkg/colector.py:51"))
    assert (code, out) == (2, "")
    assert err.startswith("rlmap: error: 'pkg/colector.py:51' is no file of pkg")
    assert "did you mean 'pkg/collector.py:51'?" in err
    code, out, err = run("show", *fixture_args(f"{absolute[: -len('collector.py')]}colector.py:51"))
    assert code == 2
    assert "did you mean 'pkg/collector.py:51'?" in err  # an absolute path's misspelt tail
    code, out, err = run("show", *fixture_args("__init__.py"))  # the end of several paths
    assert code == 2
    assert "is the end of " in err
    assert "give more of the path: 'pkg/__init__.py'" in err


def test_show_answers_a_name_outside_the_package_that_it_calls(run: Run) -> None:
    """``show`` lists ``builtins.range`` (or ``torch.stack``) among a function's callees as
    ``[external]``; asked for it, it said "check the spelling".  It lists its callers now."""
    code, out, err = run("show", *fixture_args("builtins.range"))
    assert (code, err) == (0, "")
    assert out == (
        "builtins.range  (outside the analysed code: its calls are read, not its definition)\n"
        "\n"
        "callers (1):\n"
        "  pkg.collector.Collector.rollout  pkg/collector.py:50  [external]\n"
    )
    code, out, _ = run("show", *fixture_args("builtins.range", "--json"))
    result = json.loads(out)
    assert (result["kind"], [row["caller"] for row in result["callers"]]) == (
        "external",
        ["pkg.collector.Collector.rollout"],
    )
    code, _, err = run("show", *fixture_args("builtins.zip"))  # called nowhere: not a name of the graph
    assert code == 2
    assert "is neither a symbol" in err


def test_plain_progress_says_a_quick_phase_when_it_starts_and_ends_only() -> None:
    """A warm ``generate --check`` wrote five lines for a render of 0.3 s (0/16, 4/16, ...); a
    phase younger than two seconds is said at its start and its end, a longer one at its
    quarters as well."""
    lines = _plain_progress_lines(
        [
            *((2.0 + done * 0.02, "render", done, 16) for done in range(17)),
            *((3.0 + done * 0.5, "write", done, 8) for done in range(9)),
        ]
    )
    assert lines == [
        "render 0/16 pages (at 2.0 s)",
        "render 16/16 pages (0.3 s, at 2.3 s)",
        "write 0/8 files (at 3.0 s)",
        "write 4/8 files (at 5.0 s)",  # (two seconds in: a quarter said)
        "write 6/8 files (at 6.0 s)",
        "write 8/8 files (4.0 s, at 7.0 s)",
    ]


@pytest.mark.parametrize("command", ["generate", "audit", "diff", "show", "graph"])
def test_the_help_of_a_command_names_every_exit_code(run: Run, command: str) -> None:
    """A CI author had to read the README to learn that audit exits 1 on findings, 3 on input it
    could not read: the help of every command ends with the codes, every one of
    :class:`rlmap.errors.ExitCode`'s and the interrupt's (``show`` and ``graph`` have no 1: a
    script reads their 2 as a name or scope that names nothing)."""
    from rlmap.entry import INTERRUPTED
    from rlmap.errors import ExitCode

    code, out, _ = run(command, "--help")
    assert code == 0
    epilog = " ".join(out[out.index("Exit codes:") :].split())
    for value in (*(int(each) for each in ExitCode), INTERRUPTED):
        if value == 1 and command in ("show", "graph"):
            assert not re.search(r"[:;] 1 [a-z]", epilog), epilog
            continue
        assert re.search(rf"[:;] {value} [a-z]", epilog), (value, epilog)
    if command in ("show", "graph"):
        assert "2 a name that is unknown or ambiguous" in epilog or "2 a --scope that names nothing" in epilog


@pytest.mark.parametrize("width", ["60", "80", "100"])
@pytest.mark.parametrize("command", ["generate", "audit", "diff", "show", "graph"])
def test_help_never_breaks_a_word_at_its_hyphen(
    run: Run, command: str, width: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Click's wrapper broke ``--fail-under`` after its hyphen: a reader saw ``--fail-`` and
    ``under`` on two lines."""
    monkeypatch.setenv("COLUMNS", width)
    code, out, _ = run(command, "--help")
    assert code == 0
    broken = [line for line in out.splitlines() if re.search(r"\w-$", line)]
    assert broken == [], broken
