"""The accesses of a tensordict key that a profile's claims place: ``show KEY`` lists them as the pages do.

Some code holds a key in a value rather than naming it: a primer writes every key of its specs
on reset, ``_step_mdp`` moves every entry under ``"next"`` to the root, a replay buffer writes
every entry of its sampler's info.  The model, which finds a key where the code names it, does
not list those; a profile's keys section lists them by ``through`` rows, each at the line of a
claim checked against the code (:func:`rlmap.pages.sections.data.through_rows`).  Those rows are
the ones given here, checked the same way, so that ``show is_init`` says who writes ``is_init``
as the recurrent page does.  Nothing is imported or run: the claims read the source.
"""

from __future__ import annotations

from typing import Any

import msgspec

from rlmap.index.records import key_of
from rlmap.index.source import SourceTree
from rlmap.model.codemodel import CodeModel
from rlmap.pages.profile import Profile


def placed_accesses(
    model: CodeModel, source: SourceTree, profile: Profile, key: tuple[str, ...]
) -> list[dict[str, Any]]:
    """The ``through`` rows of ``profile``'s keys sections for ``key``, as ``show``'s accesses
    (with the claim that places each), writes first, then by location; a row at a line where the
    model finds an access of that kind in that function is left out (the access is listed).
    Raises :class:`rlmap.errors.RlmapError` when the profile names no such claim or a claim no
    longer holds."""
    from rlmap.pages.refs import Refs
    from rlmap.pages.sections import specs
    from rlmap.pages.sections.base import READERS, WRITERS, Context
    from rlmap.pages.sections.data import through_rows

    listed = {(access.kind, access.function, access.line) for access in model.key_accesses(key)}
    kinds = {"write": WRITERS, "read": READERS}
    refs: Refs | None = None
    rows: dict[tuple[str, str, int], dict[str, Any]] = {}
    for page in profile.pages.values():
        for section in page.sections:
            spec = section.spec
            if not isinstance(spec, specs.Keys) or not any(_names(entry, key) for entry in spec.through):
                continue
            # only the entries that place this key: a claim placing another one is not checked here
            spec = msgspec.structs.replace(spec, through=[entry for entry in spec.through if _names(entry, key)])
            refs = refs or Refs(model, source)
            ctx = Context(model, refs, section.where)
            for placed, kind, claim, how, held in through_rows(spec, ctx, profile):
                if placed != key or held.anchor is None or not held.function:
                    continue
                function, line = held.function, held.anchor.line
                if any((each, function, line) in listed for each in kinds[kind]):
                    continue
                rows.setdefault(
                    (kind, function, line),
                    {
                        "kind": kind,
                        "how": how,
                        "function": function,
                        "line": line,
                        "location": held.anchor.location,
                        "permalink": held.anchor.url,
                        "guards": [held.guard] if held.guard else [],
                        "claim": claim,
                    },
                )
    return sorted(
        rows.values(), key=lambda row: (row["kind"] != "write", row["location"].rpartition(":")[0], row["line"])
    )


def _names(entry: Any, key: tuple[str, ...]) -> bool:
    """Whether a ``through`` entry lists ``key`` among what it writes or reads."""
    return any(key_of(raw) == key for raw in (*entry.writes, *entry.reads))
