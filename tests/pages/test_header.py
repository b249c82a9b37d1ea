"""A profile's header and glossary read alone (rlmap.pages.header): what ``show`` and ``graph`` use."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlmap.errors import ConfigError
from rlmap.pages.header import builtin_profile_path, load_profile_basics
from rlmap.pages.profile import load_profile
from tests.conftest import FIXTURES, Run


@pytest.mark.parametrize("profile", [FIXTURES / "profile.toml", builtin_profile_path("torchrl")])
def test_the_basics_are_what_the_whole_profile_holds(profile: Path) -> None:
    whole = load_profile(profile)
    basics = load_profile_basics(profile)
    assert basics.glossary  # both profiles have a glossary: the comparison below is not vacuous
    assert (basics.name, basics.origin, basics.glossary, basics.focus, basics.extensions) == (
        whole.name,
        whole.origin,
        whole.glossary,
        whole.focus,
        whole.extensions,
    )


def _profile(tmp_path: Path, header: str, pages: str = "") -> Path:
    path = tmp_path / "profile.toml"
    path.write_text(f"[profile]\n{header}\n{pages}", encoding="utf-8")
    return path


def test_the_header_and_glossary_are_checked_as_a_whole_load_checks_them(tmp_path: Path) -> None:
    for header, message in [
        ('extensions = ["jax"]', "profile.toml: [profile] extensions: jax is not an extension rlmap has"),
        ('colour = "red"', "profile.toml: [profile]"),
        ('glossary = "missing.toml"', "/missing.toml': No such file or directory"),
    ]:
        path = _profile(tmp_path, header)
        with pytest.raises(ConfigError) as basics:
            load_profile_basics(path)
        with pytest.raises(ConfigError) as whole:
            load_profile(path)
        assert message in str(basics.value)
        assert str(basics.value) == str(whole.value)


BROKEN_PAGE = '[pages.p]\ntitle = "P"\nslug = "p"\nsummary = "s"\n[[pages.p.sections]]\nkind = "flwo"\n'


def test_show_reads_the_header_only_and_generate_checks_the_pages(run: Run, tmp_path: Path) -> None:
    """A page the profile gets wrong stops ``generate`` (which renders it), not ``show`` (which
    reads the profile's extensions and glossary only); a wrong header stops both."""
    source = ["--source", str(FIXTURES / "pkg"), "--package", "pkg", "--no-cache", "-q"]
    profile = _profile(tmp_path, 'extensions = ["tensordict"]', BROKEN_PAGE)
    code, out, err = run("show", "collector.traj_ids", *source, "--profile", str(profile))
    assert (code, err) == (0, "")
    assert '("collector", "traj_ids")  (tensordict key)' in out  # the header's extension is in force
    code, _, err = run("generate", *source, "--profile", str(profile), "--out", str(tmp_path / "out"))
    assert code == 2
    assert "'kind' is 'flwo', not a section kind" in err
    bad_header = _profile(tmp_path, 'extensions = ["jax"]')
    code, _, err = run("show", "Collector.rollout", *source, "--profile", str(bad_header))
    assert code == 2
    assert "jax is not an extension rlmap has" in err
