"""Curated claims: what a profile's words say about the code, as data a check can hold them to.

A profile's ``claims.toml`` lists ``[[claim]]`` entries.  Each names the curated texts it backs
(``backs = ["term:is_init: zero their hidden state"]``: a text id, then words that text holds)
and one check of a fixed vocabulary (``kind``):

- ``code``: function ``in`` holds a statement containing ``code`` (whitespace ignored),
  optionally under an enclosing condition mentioning ``under``;
- ``calls``: function ``in`` calls ``target`` (a symbol) or ``callee`` (the callee as written, whole,
  or its trailing dotted parts),
  optionally under a condition mentioning ``under``; with ``only_under`` every such call is;
  with ``always = true`` none is inside a branch (an earlier ``if c: raise``/``return`` aside);
- ``writes-attribute``: function ``in`` assigns ``self.<attribute>`` a value mentioning
  ``value``, optionally under ``under``;
- ``raises`` / ``warns``: function ``in`` raises ``exception`` / warns with a message holding
  ``message`` (the literal parts of the message, as the code writes them);
- ``writes-key`` / ``reads-key``: function ``in`` writes / reads the tensordict ``key``;
- ``value``: the module variable or class attribute ``in`` is assigned a value mentioning ``value``;
- ``default``: function ``in`` has a parameter ``parameter`` whose default is ``value`` (the
  whole expression, whitespace ignored);
- ``docstring``: the docstring of ``in`` says ``text`` (whitespace ignored): for words that
  repeat what the package documents;
- ``runtime``: a test that runs the package (``test``, a function of rlmap's
  ``tests/pages/test_claims_runtime.py``) verifies it.

Static claims are evaluated at generation (:mod:`rlmap.pages.claimcheck`): a claim that stops
holding fails generation with the claims file's line.  ``[descriptive] texts`` lists the
curated texts that state no behaviour; every other curated text must be backed by a claim.
"""

from __future__ import annotations

import difflib
import re
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import msgspec

from rlmap.config import ONE_LINE, convert, read_text, read_toml
from rlmap.errors import ConfigError
from rlmap.pages.curated import check_markup

_Ident = Annotated[str, msgspec.Meta(pattern=r"^[a-z][a-z0-9_-]{0,80}$")]
_Name = Annotated[str, msgspec.Meta(min_length=1, max_length=500)]
_Snippet = Annotated[str, msgspec.Meta(min_length=1, max_length=500)]
_Back = Annotated[str, msgspec.Meta(pattern=r"^(prose|term|symptom):[^:]{1,200}: \S.{0,498}$")]
_Param = Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,80}$")]
_Cell = Annotated[str, msgspec.Meta(min_length=1, max_length=200, pattern=ONE_LINE)]


class _Claim(msgspec.Struct, forbid_unknown_fields=True, kw_only=True, tag_field="kind"):
    """Fields every claim has: its id, the texts it backs, and an optional table row and group."""

    id: _Ident
    # the curated texts it backs; a claim shown in a claims section backs its own ``says``
    backs: list[_Back] = []
    says: Annotated[str, msgspec.Meta(min_length=1, max_length=500, pattern=ONE_LINE)]
    group: _Ident | None = None  # a claims section shows the claims of one group as a table
    row: list[_Cell] = []  # that table's cells before the deciding line
    # a test of rlmap's tests/pages/test_claims_runtime.py that also runs what the claim says
    test: Annotated[str, msgspec.Meta(pattern=r"^test_[a-z0-9_]{1,80}$")] | None = None


class CodeClaim(_Claim, tag="code"):
    in_: _Name = msgspec.field(name="in")
    code: _Snippet
    under: _Snippet | None = None
    # a statement holding this follows the claimed one in its block: it runs after it
    before: _Snippet | None = None


class CallsClaim(_Claim, tag="calls"):
    in_: _Name = msgspec.field(name="in")
    target: _Name | None = None
    callee: _Snippet | None = None
    under: _Snippet | None = None
    only_under: _Snippet | None = None
    always: bool = False  # no such call is inside a branch (an earlier early exit aside)


class WritesAttributeClaim(_Claim, tag="writes-attribute"):
    in_: _Name = msgspec.field(name="in")
    attribute: _Name
    value: _Snippet | None = None
    under: _Snippet | None = None


class RaisesClaim(_Claim, tag="raises"):
    in_: _Name = msgspec.field(name="in")
    exception: _Name
    message: _Snippet


class WarnsClaim(_Claim, tag="warns"):
    in_: _Name = msgspec.field(name="in")
    message: _Snippet


class WritesKeyClaim(_Claim, tag="writes-key"):
    in_: _Name = msgspec.field(name="in")
    key: _Name | list[_Name]


class ReadsKeyClaim(_Claim, tag="reads-key"):
    in_: _Name = msgspec.field(name="in")
    key: _Name | list[_Name]


class ValueClaim(_Claim, tag="value"):
    in_: _Name = msgspec.field(name="in")
    value: _Snippet


class DefaultClaim(_Claim, tag="default"):
    in_: _Name = msgspec.field(name="in")
    parameter: _Param
    value: _Snippet


class DocstringClaim(_Claim, tag="docstring"):
    in_: _Name = msgspec.field(name="in")
    text: _Snippet


class RuntimeClaim(_Claim, tag="runtime"):
    """Verified by running the package: ``test`` names the test that does."""


AnyClaim = (
    CodeClaim
    | CallsClaim
    | WritesAttributeClaim
    | RaisesClaim
    | WarnsClaim
    | WritesKeyClaim
    | ReadsKeyClaim
    | ValueClaim
    | DefaultClaim
    | DocstringClaim
    | RuntimeClaim
)
STATIC_KINDS = (
    "code",
    "calls",
    "writes-attribute",
    "raises",
    "warns",
    "writes-key",
    "reads-key",
    "value",
    "default",
    "docstring",
)


class _Descriptive(msgspec.Struct, forbid_unknown_fields=True):
    texts: list[Annotated[str, msgspec.Meta(pattern=r"^(prose|term|symptom):[^:]{1,200}$")]] = []
    # single sentences of a backed text that state no behaviour: "<text id>: <its first words>"
    sentences: list[_Back] = []


class _ClaimsFile(msgspec.Struct, forbid_unknown_fields=True):
    claim: list[AnyClaim] = []
    descriptive: _Descriptive = msgspec.field(default_factory=_Descriptive)


@dataclass(frozen=True, slots=True)
class Claim:
    """One claim as loaded: its check (``spec``), the texts it backs and where it was written."""

    spec: AnyClaim
    backs: tuple[tuple[str, str], ...]  # (text id, the words of that text it backs)
    origin: str  # "rlmap/profiles/torchrl/claims.toml:42: claim 'lstm-zeroes'"

    @property
    def id(self) -> str:
        return self.spec.id

    @property
    def kind(self) -> str:
        return str(type(self.spec).__struct_config__.tag)  # the tag its class declares

    @property
    def static(self) -> bool:
        return self.kind != "runtime"


@dataclass(frozen=True, slots=True)
class Claims:
    claims: tuple[Claim, ...] = ()
    descriptive: tuple[str, ...] = ()
    origin: str = ""
    descriptive_sentences: tuple[tuple[str, str], ...] = ()  # (text id, the sentence's first words)

    def group(self, name: str) -> tuple[Claim, ...]:
        return tuple(claim for claim in self.claims if claim.spec.group == name)


def load_claims(path: Path, display: str) -> Claims:
    text = read_text(path, display)
    data = read_toml(path, display, text)
    unknown = set(data) - {"claim", "descriptive"}
    if unknown:
        raise ConfigError(
            f"{display}: unknown table(s) {', '.join(sorted(unknown))}", "the file holds [[claim]] and [descriptive]"
        )
    lines = _claim_lines(text)
    claims: list[Claim] = []
    seen: set[str] = set()
    for index, raw in enumerate(data.get("claim", []) if isinstance(data.get("claim"), list) else [], start=1):
        line = lines[index - 1] if index <= len(lines) else 1
        ident = raw.get("id") if isinstance(raw, dict) else None
        where = f"{display}:{line}: claim {ident!r}" if isinstance(ident, str) else f"{display}:{line}: claim #{index}"
        spec = _convert(raw, where)
        if spec.id in seen:
            raise ConfigError(f"{where}: duplicate id", "give every claim its own id")
        seen.add(spec.id)
        if isinstance(spec, CallsClaim) and (spec.target is None) == (spec.callee is None):
            raise ConfigError(f"{where}: a calls claim names one of 'target' or 'callee'", "write exactly one")
        for text in (spec.says, *spec.row):  # shown on the pages: words only, like all curated text
            check_markup(text, f"{where}: 'says' or 'row'")
        if isinstance(spec, RuntimeClaim) and spec.test is None:
            raise ConfigError(f"{where}: a runtime claim names its 'test'", "name the test that runs it")
        backs = tuple(_split_back(back) for back in spec.backs)
        if not backs and spec.group is None:
            raise ConfigError(
                f"{where}: 'backs' is empty and no section shows it",
                'name the curated text it backs ("term:is_init: words") or give it a group',
            )
        claims.append(Claim(spec, backs, f"{where.split(': claim', maxsplit=1)[0]}: claim '{spec.id}'"))
    if "claim" in data and not isinstance(data["claim"], list):
        raise ConfigError(f"{display}: 'claim' must be an array of tables", "write each entry as [[claim]]")
    parsed = convert({"descriptive": data.get("descriptive", {})}, _ClaimsFile, display)
    sentences = tuple(_split_back(sentence) for sentence in parsed.descriptive.sentences)
    return Claims(tuple(claims), tuple(parsed.descriptive.texts), display, sentences)


_BY_KIND: dict[str, type[_Claim]] = {
    str(msgspec.inspect.type_info(kind).tag): kind  # type: ignore[attr-defined]
    for kind in typing.get_args(AnyClaim)
}


def _convert(raw: Any, where: str) -> AnyClaim:
    """One ``[[claim]]`` checked against its kind's schema (so a misspelt field names the kind's fields)."""
    kind = raw.get("kind") if isinstance(raw, dict) else None
    if kind not in _BY_KIND:
        close = difflib.get_close_matches(str(kind), list(_BY_KIND), n=1)
        raise ConfigError(
            f"{where}: 'kind' is {kind!r}, not a claim kind",
            (f"did you mean '{close[0]}'? " if close else "") + f"kinds are {', '.join(_BY_KIND)}",
        )
    fields = {key: value for key, value in raw.items() if key != "kind"}
    return convert(fields, _BY_KIND[kind], where)  # type: ignore[no-any-return]


def _split_back(back: str) -> tuple[str, str]:
    text_id, _, words = back.partition(": ")
    return text_id, " ".join(words.split())


def _claim_lines(text: str) -> list[int]:
    header = re.compile(r"^\s*\[\[\s*claim\s*\]\]\s*(#.*)?$")
    return [number for number, line in enumerate(text.splitlines(), start=1) if header.match(line)]


def check_coverage(claims: Claims, texts: dict[str, str]) -> None:
    """Every backed text exists and holds the words quoted; every curated text is backed or
    declared descriptive.  ``texts``: text id -> its curated words (whitespace folded)."""
    problems: list[str] = []
    backed: set[str] = set()
    for claim in claims.claims:
        for text_id, words in claim.backs:
            if text_id not in texts:
                problems.append(f"{claim.origin}: backs '{text_id}', which is no curated text of the profile")
            elif words not in texts[text_id]:
                problems.append(f"{claim.origin}: '{text_id}' does not say {words!r}")
            backed.add(text_id)
    for text_id in claims.descriptive:
        if text_id not in texts:
            problems.append(f"{claims.origin}: [descriptive] names '{text_id}', which is no curated text")
        elif text_id in backed:
            problems.append(f"{claims.origin}: '{text_id}' is both descriptive and backed by claims")
    for text_id in sorted(set(texts) - backed - set(claims.descriptive)):
        problems.append(f"{claims.origin}: '{text_id}' states no checked claim and is not declared descriptive")
    quotes: dict[str, list[str]] = {}
    for claim in claims.claims:
        for text_id, words in claim.backs:
            quotes.setdefault(text_id, []).append(words)
    plain = set(claims.descriptive_sentences)
    for text_id, words in sorted(plain):
        if text_id in texts and not any(s.startswith(words) for s in sentences(texts[text_id])):
            problems.append(f"{claims.origin}: [descriptive] sentences: '{text_id}' has no sentence starting {words!r}")
    for text_id in sorted(backed & set(texts)):
        for sentence in unbacked_sentences(texts[text_id], quotes[text_id]):
            if not any(sentence.startswith(words) for tid, words in plain if tid == text_id):
                problems.append(f"{claims.origin}: '{text_id}': no claim backs the sentence {sentence!r}")
    if problems:
        raise ConfigError(
            "curated text and its claims disagree:\n" + "\n".join(f"  - {p}" for p in problems),
            "back every curated text that states behaviour with a claim, or list it under [descriptive] texts",
        )


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z{`(\"'])")


def sentences(text: str) -> list[str]:
    """A curated text's sentences (split after ``.``, ``!`` or ``?`` before a capital or markup)."""
    return [part for part in _SENTENCE_END.split(text) if part.strip()]


def unbacked_sentences(text: str, quotes: list[str]) -> list[str]:
    """The sentences of ``text`` that no quote touches (a quote may span sentences)."""
    spans = [(start, start + len(quote)) for quote in quotes if (start := text.find(quote)) >= 0]
    found = []
    offset = 0
    for sentence in sentences(text):
        start = text.find(sentence, offset)
        end = start + len(sentence)
        offset = end
        if not any(a < end and start < b for a, b in spans):
            found.append(sentence)
    return found


def summary(claims: Claims) -> dict[str, Any]:
    """How many claims there are and how each kind is checked (for reports and tests)."""
    kinds: dict[str, int] = {}
    for claim in claims.claims:
        kinds[claim.kind] = kinds.get(claim.kind, 0) + 1
    return {
        "claims": len(claims.claims),
        "static": sum(1 for claim in claims.claims if claim.static),
        "runtime": sum(1 for claim in claims.claims if not claim.static),
        "kinds": dict(sorted(kinds.items())),
    }
