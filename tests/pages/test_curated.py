"""Glossary and debugging-map data: validation on load, generation, and ``rlmap show TERM``."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlmap.cli import main
from rlmap.errors import ConfigError
from rlmap.pages.curated import load_glossary, load_symptoms
from tests.conftest import FIXTURES


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "data.toml"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            '[[term]]\nterm = "carrier"\ndefinition = "x"\ncolour = "red"\n',
            "data.toml: term 'carrier': unknown key 'colour'",
        ),
        (
            '[[term]]\nterm = "carrier"\ndefinition = "  "\n',
            "data.toml: term 'carrier': 'definition' is missing or empty",
        ),
        (
            '[[term]]\nterm = "carrier"\ndefinition = "x"\n[[term]]\nterm = "Carrier"\ndefinition = "y"\n',
            "data.toml: term 'Carrier': 'Carrier' is already a term or alias of 'carrier'",
        ),
        (
            '[[term]]\nterm = "a"\ndefinition = "x"\nformer = ["b"]\n[[term]]\nterm = "c"\ndefinition = "y"\naliases = ["b"]\n',
            "data.toml: term 'c': 'b' is already a term or alias of 'a'",
        ),
        (
            '[[term]]\nterm = "k"\ndefinition = "x"\nkeys = [1]\n',
            "data.toml: term 'k'.keys[0]: expected a string or a list, got an integer",
        ),
        ("[terms]\nx = 1\n", "data.toml: unknown table(s) terms"),
    ],
)
def test_glossary_validation(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_glossary(write(tmp_path, text), "data.toml")
    assert message in str(caught.value)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            '[[symptom]]\nid = "s"\nsymptom = "x"\ncause = "y"\nlook = ["f"]\nsee = ["collectors:nowhere"]\n',
            "data.toml: symptom 's': 'see' names an unknown section 'collectors:nowhere'",
        ),
        (
            '[[symptom]]\nid = "s"\nsymptom = "x"\ncause = "y"\nlook = ["f"]\n[[symptom]]\nid = "s"\nsymptom = "x"\ncause = "y"\nlook = ["f"]\n',
            "data.toml: symptom 's': duplicate id",
        ),
        (
            '[[symptom]]\nid = "s"\nsymptom = "x"\ncause = ""\nlook = ["f"]\n',
            "data.toml: symptom 's': 'cause' is missing or empty",
        ),
        ('[[symptom]]\nid = "s"\nsymptom = "x"\ncause = "y"\nlook = []\n', "data.toml: symptom 's': 'look' is empty"),
    ],
)
def test_symptom_validation(tmp_path: Path, text: str, message: str) -> None:
    sections = {"collectors": {"flags": "Device-cast flags"}, "recurrent": {"keys": "Key flow"}}
    with pytest.raises(ConfigError) as caught:
        load_symptoms(write(tmp_path, text), "data.toml", sections)
    assert message in str(caught.value)


def test_builtin_data_is_valid_and_covers_the_required_terms() -> None:
    from rlmap.pages.profile import builtin_profile_path, load_profile

    profile = load_profile(builtin_profile_path("torchrl"), "profile.toml")  # type: ignore[arg-type]
    names = {name.lower() for term in profile.glossary for name in term.names()}
    required = [
        "carrier",
        "shuttle",
        "in_keys",
        "out_keys",
        "_acceptedkeys",
        "set_keys",
        "tensor_keys",
        "recurrent mode",
        "set_recurrent_mode",
        "tensordictprimer",
        "is_init",
        "inittracker",
        "trajectory id",
        "storing_device",
        "policy_device",
        "env_device",
        "no_cuda_sync",
        "compact_obs",
        "functional loss",
        "batchedenv",
        "composite",
        "compositespec",
        "env batch size",
        "envcreator",
        "ted",
        "transform",
        "sync points",
        "split trajectories",
        "step_mdp",
        "lstmmodule hidden-state keys",
        "slicesampler",
    ]
    assert [name for name in required if name not in names] == []
    assert 12 <= len(profile.symptoms) <= 20


def test_glossary_symbol_that_vanished_fails_generation(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for name in ("profile.toml", "symptoms.toml"):
        (tmp_path / name).write_text((FIXTURES / name).read_text())
    (tmp_path / "glossary.toml").write_text(
        (FIXTURES / "glossary.toml").read_text().replace("pkg.buffers.Buffer", "pkg.buffers.RenamedBuffer")
    )
    code = main(
        [
            "generate",
            "--source",
            str(FIXTURES),
            "--package",
            "pkg",
            "--profile",
            str(tmp_path / "profile.toml"),
            "--out",
            str(tmp_path / "out"),
            "--no-cache",
            "-q",
        ]
    )
    err = capsys.readouterr().err
    assert code == 2
    assert "glossary.toml: term 'Buffer': 'pkg.buffers.RenamedBuffer' names no symbol" in err
    assert not (tmp_path / "out").exists()


@pytest.mark.torchrl
def test_a_glossary_term_that_is_also_the_name_of_several_symbols_is_an_answer(
    torchrl_cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``show set_keys`` printed the term, then failed with exit 2 as an ambiguous name: the
    term answers; the symbols that share its name are listed for a second query."""
    assert main(["show", "set_keys", "--cache-dir", str(torchrl_cache), "-q"]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith("set_keys  (glossary term")
    assert "'set_keys' also matches " in captured.out
    assert "torchrl.objectives.common.LossModule.set_keys" in captured.out
    assert "To show one of them, pass a longer suffix or its full qualified name." in captured.out
    assert "error" not in captured.err
    # a name that is no term and matches several symbols is still refused
    assert main(["show", "forward", "--cache-dir", str(torchrl_cache), "-q"]) == 2
    captured = capsys.readouterr()
    assert "rlmap: error: 'forward' is ambiguous" in captured.err
    assert "also matches" not in captured.out
    assert "To show one of them" not in captured.out


@pytest.mark.torchrl
def test_show_a_glossary_term_and_a_former_name(torchrl_cache: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for query in ("carrier", "shuttle"):
        assert main(["show", query, "--cache-dir", str(torchrl_cache), "-q"]) == 0
        out = capsys.readouterr().out
        assert out.startswith("carrier  (glossary term; also shuttle (former name))")
        # code in the definition as a terminal reads it, not as rst marks it
        definition = out.split("code:\n", 1)[0]
        assert "`step_and_maybe_reset`" in definition
        assert "``" not in definition
        code_rows = out.split("code:\n", 1)[1].splitlines()
        assert code_rows[0].split() == [
            "torchrl.collectors._single.Collector._carrier",
            "torchrl/collectors/_single.py:1394",
            "https://github.com/pytorch/rl/blob/v0.14.1/torchrl/collectors/_single.py#L1394",
        ]
        # the rows in aligned columns
        assert len({row.index("torchrl/collectors/_single.py:") for row in code_rows}) == 1
