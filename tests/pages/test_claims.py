"""Curated claims: the vocabulary is checked against a synthetic package, each kind holding and failing."""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from rlmap.errors import ConfigError
from rlmap.pages.claimcheck import ClaimChecker
from rlmap.pages.claims import check_coverage, load_claims, summary
from rlmap.pages.profile import load_profile
from rlmap.pages.refs import Refs
from tests.conftest import model_of

PACKAGE = {
    "pkg/__init__.py": "",
    "pkg/core.py": '''
        import warnings

        DEFAULT_KEYS = ["h", "c"]


        class Loop:
            """Runs steps.

            .. note:: the hidden state is zeroed at starts.
                It is carried over
                between steps.
            """

            def __init__(self, steps, track, mode: str | None = None):
                if steps < 0:
                    raise ValueError(f"steps must be positive, got {steps}")
                if steps % 2:
                    warnings.warn("odd step counts " + "are slow")
                self.steps = -(-steps // 2)
                self.track = track

            def run(self, td):
                for t in range(self.steps):
                    if self.track:
                        self.record(td)
                    td["next", "h"] = td.get("h")
                return td

            def record(self, td):
                td.set("is_init", False)
        ''',
}


def _claims(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "claims.toml"
    path.write_text(body, encoding="utf-8")
    return path


@pytest.fixture
def checker(make_package: Callable[[dict[str, str | bytes]], Path]) -> ClaimChecker:
    root = make_package(PACKAGE)
    model = model_of(root, "pkg")
    return ClaimChecker(model, Refs(model, root))


HOLDING = """
[[claim]]
id = "code"
kind = "code"
in = "pkg.core.Loop.run"
code = "self.record(td)"
under = "if self.track"
says = "records only when tracking"
backs = ["prose:p.intro: records"]

[[claim]]
id = "calls"
kind = "calls"
in = "pkg.core.Loop.run"
target = "pkg.core.Loop.record"
only_under = "if self.track"
says = "calls record only under track"
backs = ["prose:p.intro: records"]

[[claim]]
id = "attr"
kind = "writes-attribute"
in = "pkg.core.Loop.__init__"
attribute = "steps"
value = "-(-steps // 2)"
says = "rounds up"
backs = ["prose:p.intro: records"]

[[claim]]
id = "raises"
kind = "raises"
in = "pkg.core.Loop.__init__"
exception = "ValueError"
message = "steps must be positive"
says = "refuses negative counts"
backs = ["prose:p.intro: records"]

[[claim]]
id = "warns"
kind = "warns"
in = "pkg.core.Loop.__init__"
message = "odd step counts are slow"
says = "warns on odd counts"
backs = ["prose:p.intro: records"]

[[claim]]
id = "writes-key"
kind = "writes-key"
in = "pkg.core.Loop.record"
key = "is_init"
says = "record writes is_init"
backs = ["prose:p.intro: records"]

[[claim]]
id = "reads-key"
kind = "reads-key"
in = "pkg.core.Loop.run"
key = "h"
says = "run reads h"
backs = ["prose:p.intro: records"]

[[claim]]
id = "value"
kind = "value"
in = "pkg.core.DEFAULT_KEYS"
value = '"h", "c"'
says = "default keys"
backs = ["prose:p.intro: records"]

[[claim]]
id = "default"
kind = "default"
in = "pkg.core.Loop.__init__"
parameter = "mode"
value = "None"
says = "no mode unless given"
backs = ["prose:p.intro: records"]

[[claim]]
id = "docstring"
kind = "docstring"
in = "pkg.core.Loop"
text = "the hidden state is zeroed at starts"
says = "documented"
backs = ["prose:p.intro: records"]

[[claim]]
id = "runtime"
kind = "runtime"
test = "test_something"
says = "a run shows it"
backs = ["prose:p.intro: records"]
"""


def test_every_kind_holds_at_the_line_that_shows_it(checker: ClaimChecker, tmp_path: Path) -> None:
    claims = load_claims(_claims(tmp_path, HOLDING), "claims.toml")
    held = checker.check_all(claims)
    refs = checker.refs
    shown = {ident: refs.line_text(h.anchor.path, h.anchor.line).strip() for ident, h in held.items() if h.anchor}
    assert shown == {
        "code": "self.record(td)",
        "calls": "self.record(td)",
        "attr": "self.steps = -(-steps // 2)",
        "raises": 'raise ValueError(f"steps must be positive, got {steps}")',
        "warns": 'warnings.warn("odd step counts " + "are slow")',
        "writes-key": 'td.set("is_init", False)',
        "reads-key": 'td["next", "h"] = td.get("h")',
        "value": 'DEFAULT_KEYS = ["h", "c"]',
        "default": "def __init__(self, steps, track, mode: str | None = None):",
        # the docstring's line where the words start (not the class line: a page links the words)
        "docstring": ".. note:: the hidden state is zeroed at starts.",
    }
    assert held["warns"].text == "odd step counts are slow"  # literal parts joined, as the code writes them
    # words over two lines: the line they start on
    spanning = load_claims(
        _claims(tmp_path, HOLDING.replace("the hidden state is zeroed at starts", "carried over between")), "c.toml"
    )
    line = checker.check_all(spanning)["docstring"].anchor.line
    assert refs.line_text(held["docstring"].anchor.path, line).strip() == "It is carried over"
    assert summary(claims) == {
        "claims": 11,
        "static": 10,
        "runtime": 1,
        "kinds": {
            "calls": 1,
            "code": 1,
            "default": 1,
            "docstring": 1,
            "raises": 1,
            "reads-key": 1,
            "runtime": 1,
            "value": 1,
            "warns": 1,
            "writes-attribute": 1,
            "writes-key": 1,
        },
    }


@pytest.mark.parametrize(
    ("claim", "says"),
    [
        ('kind = "code"\nin = "pkg.core.Loop.run"\ncode = "self.record(td)"\nunder = "if t"', "is not under 'if t'"),
        ('kind = "calls"\nin = "pkg.core.Loop.run"\ntarget = "pkg.core.Loop.record"\nonly_under = "if td"', ""),
        ('kind = "calls"\nin = "pkg.core.Loop.__init__"\ntarget = "pkg.core.Loop.record"', "does not call"),
        ('kind = "writes-attribute"\nin = "pkg.core.Loop.__init__"\nattribute = "steps"\nvalue = "steps // 3"', ""),
        ('kind = "raises"\nin = "pkg.core.Loop.__init__"\nexception = "TypeError"\nmessage = "steps"', ""),
        ('kind = "warns"\nin = "pkg.core.Loop.run"\nmessage = "odd"', "warns nothing"),
        ('kind = "writes-key"\nin = "pkg.core.Loop.run"\nkey = "is_init"', "does not write"),
        ('kind = "value"\nin = "pkg.core.DEFAULT_KEYS"\nvalue = "obs"', ""),
        ('kind = "docstring"\nin = "pkg.core.Loop"\ntext = "dropped"', "does not say"),
        ('kind = "default"\nin = "pkg.core.Loop.__init__"\nparameter = "mode"\nvalue = "True"', "defaults to 'None'"),
        ('kind = "default"\nin = "pkg.core.Loop.__init__"\nparameter = "steps"\nvalue = "None"', "has no default"),
        ('kind = "default"\nin = "pkg.core.Loop.__init__"\nparameter = "nope"\nvalue = "None"', "no parameter 'nope'"),
        (
            'kind = "default"\nin = "pkg.core.Loop.__init__"\nparameter = "mode"\nvalue = "(("',
            "not a Python expression",
        ),
        ('kind = "default"\nin = "pkg.core.DEFAULT_KEYS"\nparameter = "mode"\nvalue = "None"', "not a function"),
    ],
)
def test_a_claim_that_stops_holding_fails_with_file_and_line(
    checker: ClaimChecker, tmp_path: Path, claim: str, says: str
) -> None:
    body = f'# a comment\n\n[[claim]]\nid = "broken"\n{claim}\nsays = "x"\nbacks = ["prose:p.intro: x"]\n'
    claims = load_claims(_claims(tmp_path, body), "claims.toml")
    with pytest.raises(ConfigError) as raised:
        checker.check_all(claims)
    assert "claims.toml:3: claim 'broken'" in raised.value.message
    assert says in raised.value.message


def test_only_under_fails_when_one_call_escapes_the_condition(
    make_package: Callable[[dict[str, str | bytes]], Path], tmp_path: Path
) -> None:
    root = make_package(
        {"pkg/__init__.py": "", "pkg/m.py": "def g():\n    pass\n\ndef f(x):\n    if x:\n        g()\n    g()\n"}
    )
    model = model_of(root, "pkg")
    body = '[[claim]]\nid = "c"\nkind = "calls"\nin = "pkg.m.f"\ntarget = "pkg.m.g"\nonly_under = "if x"\nsays = "s"\n'
    claims = load_claims(_claims(tmp_path, body + 'backs = ["prose:p.intro: x"]\n'), "claims.toml")
    with pytest.raises(ConfigError, match="at line 7 without 'if x'"):
        ClaimChecker(model, Refs(model, root)).check_all(claims)


def test_always_fails_inside_a_branch_but_not_after_an_input_check(
    make_package: Callable[[dict[str, str | bytes]], Path], tmp_path: Path
) -> None:
    source = "def g():\n    pass\n\ndef f(x):\n    if x is None:\n        raise ValueError\n    g()\n\ndef h(x):\n    if x:\n        g()\n"
    check = _one_claim_checker(make_package, tmp_path, source)
    body = 'kind = "calls"\nin = "pkg.m.{}"\ntarget = "pkg.m.g"\nalways = true\n'
    assert check(body.format("f")).anchor.line == 7  # f calls g after its input check only: the claim holds
    with pytest.raises(ConfigError, match="at line 11 under 'if x'"):
        check(body.format("h"))


def test_unknown_fields_and_kinds_are_refused(tmp_path: Path) -> None:
    base = '[[claim]]\nid = "c"\nsays = "s"\nbacks = ["prose:p.intro: x"]\n'
    with pytest.raises(ConfigError, match="unknown key 'undr'"):
        load_claims(_claims(tmp_path, base + 'kind = "code"\nin = "f"\ncode = "x"\nundr = "y"\n'), "claims.toml")
    with pytest.raises(ConfigError, match=re.escape("claims.toml:1: claim 'c'")):
        load_claims(_claims(tmp_path, base + 'kind = "believes"\n'), "claims.toml")
    with pytest.raises(ConfigError, match="a hand-written role"):
        load_claims(
            _claims(tmp_path, base.replace('says = "s"', 'says = ":raw:`x`"') + 'kind = "runtime"\ntest = "test_x"\n'),
            "c",
        )
    with pytest.raises(ConfigError, match="names its 'test'"):
        load_claims(_claims(tmp_path, base + 'kind = "runtime"\n'), "claims.toml")


def test_coverage_needs_every_behaviour_text_backed_and_every_quote_present(tmp_path: Path) -> None:
    body = '[descriptive]\ntexts = ["term:word"]\n\n[[claim]]\nid = "c"\nkind = "runtime"\ntest = "test_x"\n'
    body += 'says = "s"\nbacks = ["prose:p.intro: it zeroes"]\n'
    claims = load_claims(_claims(tmp_path, body), "claims.toml")
    check_coverage(claims, {"prose:p.intro": "Here it zeroes the state.", "term:word": "A word."})
    with pytest.raises(ConfigError, match=re.escape("'prose:p.intro' does not say 'it zeroes'")):
        check_coverage(claims, {"prose:p.intro": "Here it carries the state.", "term:word": "A word."})
    with pytest.raises(ConfigError, match="'symptom:s' states no checked claim"):
        check_coverage(claims, {"prose:p.intro": "it zeroes", "term:word": "w", "symptom:s": "It breaks."})


def test_every_sentence_of_a_backed_text_is_quoted_or_declared_plain(tmp_path: Path) -> None:
    body = '[descriptive]\nsentences = ["prose:p.intro: Use hooks"]\n\n[[claim]]\nid = "c"\nkind = "runtime"\n'
    body += 'test = "test_x"\nsays = "s"\nbacks = ["prose:p.intro: it zeroes the state. Then it"]\n'
    claims = load_claims(_claims(tmp_path, body), "claims.toml")
    check_coverage(claims, {"prose:p.intro": "First it zeroes the state. Then it runs. Use hooks."})
    with pytest.raises(ConfigError, match=re.escape("no claim backs the sentence 'It also carries it.'")):
        check_coverage(claims, {"prose:p.intro": "First it zeroes the state. Then it runs. It also carries it."})


def test_the_torchrl_profile_backs_every_behaviour_text() -> None:
    root = Path(__file__).resolve().parents[2] / "rlmap" / "profiles" / "torchrl"
    profile = load_profile(root)  # the coverage check runs on load
    figures = summary(profile.claims)
    assert figures["claims"] == len(profile.claims.claims) > 0
    backed = {text for claim in profile.claims.claims for text, _ in claim.backs}
    assert {f"symptom:{s.id}" for s in profile.symptoms} <= backed
    assert not {f"term:{t.term}" for t in profile.glossary} - backed - set(profile.claims.descriptive)


def test_the_torchrl_claims_hold_on_torchrl(torchrl_model, torchrl_source) -> None:
    root = Path(__file__).resolve().parents[2] / "rlmap" / "profiles" / "torchrl"
    profile = load_profile(root)
    held = ClaimChecker(torchrl_model, Refs(torchrl_model, torchrl_source.root)).check_all(profile.claims)
    for claim_id, found in held.items():
        assert found.anchor is not None, claim_id
        line = Refs(torchrl_model, torchrl_source.root).line_text(found.anchor.path, found.anchor.line)
        assert line.strip(), claim_id


@pytest.fixture(scope="module")
def torchrl_pages(torchrl_model, torchrl_source):
    from rlmap.pages.compose import build_pages

    profile = load_profile(Path(__file__).resolve().parents[2] / "rlmap" / "profiles" / "torchrl")
    return {
        page.page.slug: page for page in build_pages(torchrl_model, Refs(torchrl_model, torchrl_source.root), profile)
    }


def test_hidden_state_keys_have_the_writers_values_hold(torchrl_pages) -> None:
    recurrent = torchrl_pages["recurrent_state_lifecycle"]
    keys = next(section for section in recurrent.sections if section.id == "keys").body
    by_key = {key.key: key for key in keys.keys}

    def functions(sites) -> set[str]:
        return {site.function.display for site in sites}

    assert {"TensorDictPrimer._reset_func", "EnvBase._step_and_maybe_reset"} <= functions(
        by_key["recurrent_state_h"].writers
    )
    assert {"LSTMModule.forward", "TensorDictPrimer._step"} <= functions(
        by_key['("next", "recurrent_state_h")'].writers
    )
    assert "EnvBase._step_and_maybe_reset" in functions(by_key['("next", "recurrent_state_c")'].readers)
    assert {"GRUModule.forward"} <= functions(by_key["recurrent_state"].readers)
    for key in by_key.values():  # no hidden-state key is left without a writer
        assert key.writers, key.key


def test_no_key_access_is_listed_twice(torchrl_pages) -> None:
    # a row a profile places by a claim, at a line where the model finds the access itself (the
    # native autoreset's is_init write), is that row with the profile's words, not a second row
    bodies = [s.body for page in torchrl_pages.values() for s in page.sections if s.kind == "keys"]
    assert bodies
    for body in bodies:
        for key in body.keys:
            for kind, sites in (("writes", key.writers), ("reads", key.readers)):
                places = [(s.function.qualname, s.anchor.location) for s in sites if s.function and s.anchor]
                assert len(places) == len(set(places)), (key.key, kind)
    recurrent = next(s.body for s in torchrl_pages["recurrent_state_lifecycle"].sections if s.id == "keys")
    is_init = next(key for key in recurrent.keys if key.key == "is_init")
    native = [s for s in is_init.writers if s.function.display == "EnvBase._step_and_maybe_reset"]
    # its two lines: the native autoreset's write (once, in the profile's words) and _step_mdp's move
    assert sorted(s.how for s in native) == [
        '_step_mdp: the step\'s ("next", "is_init") to the root (an InitTracker lists it in the specs)',
        "the key built from each done key (native autoreset)",
    ]


def test_an_estimator_that_inherits_its_forward_names_what_it_overrides(torchrl_pages) -> None:
    kernels = next(s.body for s in torchrl_pages["advantages_internals"].sections if s.id == "kernels")
    groups = {group.ref.display: group for group in kernels.groups}
    multi = groups["MultiAgentGAE"]
    assert not multi.rows  # it defines neither forward nor value_estimate
    inherited = {row.name: row for row in multi.inherited}
    assert inherited["MultiAgentGAE.forward"].ref.display == "GAE.forward"
    assert [o.display for o in inherited["MultiAgentGAE.forward"].overrides] == [
        "MultiAgentGAE._prepare_signals",
        "MultiAgentGAE._broadcast_optional",
        "MultiAgentGAE._normalize_advantage",
    ]  # in the order GAE.forward calls them on self
    assert [o.display for o in inherited["MultiAgentGAE.value_estimate"].overrides] == [
        "MultiAgentGAE._prepare_signals"
    ]
    assert {row.ref.display for row in groups["GAE"].rows} == {"GAE.forward", "GAE.value_estimate"}
    assert not groups["GAE"].inherited
    (vtrace,) = groups["VTrace"].inherited
    assert (vtrace.ref.display, vtrace.overrides) == ("ValueEstimatorBase.value_estimate", ())
    assert vtrace.raises == "NotImplementedError"  # the base's is abstract: VTrace has no value_estimate
    assert not inherited["MultiAgentGAE.forward"].raises


def test_symptoms_are_anchored_where_the_code_raises_or_warns(torchrl_pages, torchrl_source) -> None:
    body = next(section for section in torchrl_pages["debugging_map"].sections if section.kind == "symptoms").body
    rows = {row.entry.id: row for row in body.symptoms}
    refs_root = torchrl_source.root
    raised = rows["split-trajs-without-ids"].evidence[0]
    assert raised.kind == "raises"
    assert raised.text == "split_trajs=True requires track_traj_ids=True."
    line = (refs_root / raised.anchor.path).read_text(encoding="utf-8").splitlines()[raised.anchor.line - 1]
    assert "raise ValueError" in line
    warned = rows["more-frames-than-asked"].evidence[0]
    assert warned.kind == "warns"
    assert (
        "warnings.warn"
        in (refs_root / warned.anchor.path).read_text(encoding="utf-8").splitlines()[warned.anchor.line - 1]
    )
    assert "test_rollout_runs_ceil_frames_per_batch_over_env_copies" in rows["more-frames-than-asked"].tests


def test_a_broken_claim_a_section_shows_is_reported_once(torchrl_model, torchrl_source, tmp_path: Path) -> None:
    """The claims check and the flags table both check 'gae-vectorized-default': one problem, said once."""
    from rlmap.pages.compose import build_pages

    copy = tmp_path / "torchrl"
    shutil.copytree(Path(__file__).resolve().parents[2] / "rlmap" / "profiles" / "torchrl", copy)
    claims = copy / "claims.toml"
    text = claims.read_text(encoding="utf-8")
    broken = text.replace('parameter = "vectorized"\nvalue = "None"', 'parameter = "vectorized"\nvalue = "False"', 1)
    assert broken != text
    claims.write_text(broken, encoding="utf-8")
    with pytest.raises(ConfigError) as raised:
        build_pages(torchrl_model, Refs(torchrl_model, torchrl_source.root), load_profile(copy))
    message = raised.value.message
    assert message.startswith("the profile no longer matches the code:\n  - ")
    assert message.count("claim 'gae-vectorized-default' (default)") == 1
    assert "defaults to 'None', not 'False'" in message


def test_a_code_line_after_an_early_exit_is_under_its_negation(
    make_package: Callable[[dict[str, str | bytes]], Path], tmp_path: Path
) -> None:
    """A ``code`` claim's line after ``if c: return`` runs only under ``not (c)``, as a call's site
    does: the condition is one its ``under`` can name (the Triton row: neither bidirectional nor
    projected).  A branch that does not leave puts no condition on the lines after it."""
    source = (
        "def f(x, y):\n    if x or y:\n        return None\n    z = 1\n    return z\n\n"
        "def g(x, y):\n    if x or y:\n        x = 0\n    z = 1\n    return z\n"
    )
    check = _one_claim_checker(make_package, tmp_path, source)
    body = 'kind = "code"\nin = "pkg.m.{}"\ncode = "z = 1"\nunder = "not (x or y)"\n'
    assert check(body.format("f")).anchor.line == 4
    with pytest.raises(ConfigError, match="is not under 'not \\(x or y\\)'"):
        check(body.format("g"))


def test_a_code_claims_before_is_a_later_statement_of_the_same_block(
    make_package: Callable[[dict[str, str | bytes]], Path], tmp_path: Path
) -> None:
    """``before``: a statement holding it follows the claimed one in its block, itself or inside a
    later statement (``td = self._postproc(td)`` then ``if hook: hook(td)``: AsyncBatchedCollector's
    iterator), so it runs after it; one before it, or in another branch, does not count."""
    source = (
        "def f(td, post, hook):\n"
        "    for _ in range(2):\n"
        "        if post is not None:\n"
        "            td = post(td)\n"
        "        if hook is not None:\n"
        "            hook(td)\n"
        "    return td\n\n"
        "def g(td, post, hook):\n"
        "    if hook is not None:\n"
        "        hook(td)\n"
        "    if post is not None:\n"
        "        td = post(td)\n"
        "    else:\n"
        "        hook(td)\n"
        "    return td\n"
    )
    check = _one_claim_checker(make_package, tmp_path, source)
    body = 'kind = "code"\nin = "pkg.m.{}"\ncode = "if post is not None:"\nbefore = "hook(td)"\n'
    assert check(body.format("f")).anchor.line == 3
    with pytest.raises(ConfigError, match="no statement with 'hook\\(td\\)' follows line 12"):
        check(body.format("g"))


def test_a_statement_written_over_several_lines_matches_its_code_written_on_one(
    make_package: Callable[[dict[str, str | bytes]], Path], tmp_path: Path
) -> None:
    """White space is not compared, inside brackets either: ``f(\n    a, b\n)`` is ``f(a, b)``
    (the primer's ``torch.where(`` over three lines matched no claim), in ``code`` and ``under``
    alike; other code still does not match."""
    source = (
        "def f(a, b):\n    if max(\n        a, b\n    ):\n        v = min(\n            a, b\n        )\n    return v\n"
    )
    check = _one_claim_checker(make_package, tmp_path, source)
    assert check('kind = "code"\nin = "pkg.m.f"\ncode = "v = min(a, b)"\nunder = "if max(a, b)"\n').anchor.line == 5
    with pytest.raises(ConfigError, match="holds no statement"):
        check('kind = "code"\nin = "pkg.m.f"\ncode = "v = min(b, a)"\n')
    # as black writes a call too long for one line: a comma before the bracket, comments between
    black = "def g(a, b):\n    w = max(\n        a,  # the first\n        b,\n    )\n    return '#' + w\n"
    check = _one_claim_checker(make_package, tmp_path, black)
    assert check('kind = "code"\nin = "pkg.m.g"\ncode = "w = max(a, b)"\n').anchor.line == 2
    assert check('kind = "code"\nin = "pkg.m.g"\ncode = "return \'#\' + w"\n').anchor.line == 6
    # code one line of the statement holds whole is anchored there, not at the statement's first
    # line (``kwargs = {`` for an entry of the dict it opens)
    spread = "def h(pool):\n    kwargs = {\n        'a': 1,\n        'pool': pool,\n        'b': 2,\n    }\n    return kwargs\n"
    check = _one_claim_checker(make_package, tmp_path, spread)
    held = check('kind = "code"\nin = "pkg.m.h"\ncode = "\'pool\': pool,"\n')
    assert held.anchor.line == 4
    assert held.anchor.name == "'pool': pool,"


def test_a_calls_claim_names_the_callee_whole(
    make_package: Callable[[dict[str, str | bytes]], Path], tmp_path: Path
) -> None:
    """``callee = "self._policy"`` held on ``self._policy_uncompiled.parameters()`` (a substring),
    citing that line as the call; the callee is matched whole, or by its trailing dotted parts."""
    source = (
        "class C:\n    def f(self, x):\n        for p in self._policy_uncompiled.parameters():\n            pass\n\n"
        "    def g(self, x):\n        self._policy_uncompiled.parameters()\n        return self._policy(x)\n"
    )
    check = _one_claim_checker(make_package, tmp_path, source)
    with pytest.raises(ConfigError, match=r"does not call self\._policy"):
        check('kind = "calls"\nin = "pkg.m.C.f"\ncallee = "self._policy"\n')
    assert check('kind = "calls"\nin = "pkg.m.C.g"\ncallee = "self._policy"\n').anchor.line == 8
    assert check('kind = "calls"\nin = "pkg.m.C.g"\ncallee = "_policy"\n').anchor.line == 8


def _one_claim_checker(
    make_package: Callable[[dict[str, str | bytes]], Path], tmp_path: Path, source: str
) -> Callable[[str], Any]:
    """Check one claim (its kind's fields) against the module ``pkg.m`` holding ``source``; what held."""
    root = make_package({"pkg/__init__.py": "", "pkg/m.py": source})
    model = model_of(root, "pkg")
    checker = ClaimChecker(model, Refs(model, root))

    def check(fields: str) -> Any:
        body = f'[[claim]]\nid = "c"\n{fields}says = "s"\nbacks = ["prose:p.intro: x"]\n'
        return checker.check_all(load_claims(_claims(tmp_path, body), "claims.toml"))["c"]

    return check
