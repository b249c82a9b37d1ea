"""What replaced a vanished name, in this order: git history (``--since REV``: what was renamed or
moved since then, certain), the class whose members cover the members the docs use (when that is
certain), the same name elsewhere (certain when it is one class), for a missing member of a
class that exists the members of that class spelt like it, then a close spelling.  Each
suggestion says how it was found and whether it is certain (only certain ones are applied by
``rlmap audit --fix``).

Member coverage: when the docs write ``Old.rollout``, ``Old._make_carrier`` and ``Old._setup_devices``
and ``Old`` is gone, the class that has all three members (defining the most of them itself) is
what ``Old`` became, whatever its spelling.  It is certain when at least two members are used,
all of them are covered, and no other class scores as well.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rlmap.audit.context import is_private
from rlmap.index.records import CLASS, FUNCTION, METHOD, MODULE, PROPERTY

if TYPE_CHECKING:
    from rlmap.audit.context import AuditContext

MIN_MEMBERS_FOR_CERTAIN = 2
_ENDS = (FUNCTION, METHOD, PROPERTY)


@dataclass(frozen=True, slots=True)
class Suggestion:
    text: str  # the hint as shown
    replacement: str = ""  # the dotted path to write instead ("" when there is none)
    certain: bool = False


def first_missing(ctx: AuditContext, dotted: str) -> int | None:
    """The index of the first part of ``dotted`` that resolves to nothing (``None``: it resolves, or
    what it hangs off is outside the package or a value whose members cannot be known)."""
    parts = dotted.split(".")
    for index in range(1, len(parts) + 1):
        resolved = ctx.resolve(".".join(parts[:index]))
        if resolved is None:
            return index - 1
        if resolved.startswith("external:") or ctx.model.node_kind(resolved) not in (CLASS, MODULE):
            return None
    return None


def referenced_members(ctx: AuditContext) -> dict[str, set[str]]:
    """For each vanished name the docs use, the members they use on it (``Old.rollout`` -> rollout)."""
    members: dict[str, set[str]] = defaultdict(set)
    for dotted in ctx.code_references():
        parts = dotted.split(".")
        cls = class_part(parts, first_missing(ctx, dotted))
        if cls is not None and cls + 1 < len(parts):
            members[parts[cls]].add(parts[cls + 1])
    return dict(members)


def class_part(parts: list[str], missing: int | None) -> int | None:
    """The index of the vanished class in a dotted name that resolves no further than ``missing``:
    the first capitalised part from there on (a vanished module may hold it: moved and renamed)."""
    if missing is None:
        return None
    return next((index for index in range(missing, len(parts)) if parts[index][:1].isupper()), None)


def covering_class(ctx: AuditContext, name: str) -> Suggestion | None:
    """The class whose members best cover the members the docs use on the vanished ``name``."""
    used = ctx.members_used(name)
    if not used:
        return None
    scores: list[tuple[int, int, str]] = []
    for qualname in ctx.classes():
        if not _ours_or_public(ctx, qualname):  # (another package's internals are never the answer)
            continue
        covered = [member for member in used if ctx.member(qualname, member) is not None]
        if covered:
            own = sum(1 for member in covered if ctx.model.has_symbol(f"{qualname}.{member}"))
            scores.append((len(covered), own, qualname))
    if not scores:
        return None
    scores.sort(key=lambda score: (-score[0], -score[1], score[2]))
    best = scores[0]
    unique = len(scores) == 1 or scores[1][:2] != best[:2]
    certain = unique and best[0] == len(used) >= MIN_MEMBERS_FOR_CERTAIN
    public = ctx.public_or_qualname(best[2])
    shown = ", ".join(sorted(used)[:5]) + (", ..." if len(used) > 5 else "")
    how = f"the class whose members cover the members the docs use ({best[0]}/{len(used)}: {shown})"
    return Suggestion(f"{how}: {public}", public, certain)


def suggest_replacement(ctx: AuditContext, dotted: str) -> Suggestion:
    """What to write instead of the stale ``dotted`` (fully qualified), and how sure that is."""
    missing = first_missing(ctx, dotted)
    parts = dotted.split(".")
    covering, cls = None, None
    if missing is not None and ctx.history:
        # as written, and through the path its resolving part stands for (``torchrl.collectors.
        # Collector`` is ``torchrl.collectors._single.Collector``, the name history knows)
        for written, name, resolved in _spellings(ctx, parts, missing):
            for cut in range(len(name), len(name) - len(parts) + missing, -1):  # the longest prefix renamed
                new = ctx.history.get(".".join(name[:cut]))
                if new is None:
                    continue
                public = ctx.public_or_qualname(new) if ctx.model.has_symbol(new) else new
                if resolved and new.startswith(resolved + "."):
                    # renamed under the part the docs wrote through an export: that part is kept
                    # (``rq.helpers.old`` -> ``rq.helpers.new``, not ``rq._helpers.new``)
                    public = ".".join([*parts[:written], new[len(resolved) + 1 :]])
                how = f"git history since {ctx.history_rev}: {'.'.join(name[:cut])} is now {public}"
                return Suggestion(how, ".".join([public, *name[cut:]]), True)
    if missing is not None:
        # member coverage for a vanished class (a capitalised name), first when it is certain
        cls = class_part(parts, missing)
        covering = covering_class(ctx, parts[cls]) if cls is not None else None
        if covering is not None and covering.certain and cls is not None:
            return _extended(covering, parts[cls + 1 :])
    last = parts[-1]
    same = [
        q
        for q in ctx.named(last)
        if ctx.model.node_kind(q) in (CLASS, FUNCTION, METHOD, PROPERTY) and _ours_or_public(ctx, q)
    ]
    if same:
        same.sort(key=lambda q: _closest_first(ctx, q, dotted))
        public = ctx.public_or_qualname(same[0])
        text = "the name exists as " + ", ".join(ctx.public_or_qualname(q) for q in same[:3])
        return Suggestion(text, public, len(same) == 1 and ctx.model.node_kind(same[0]) == CLASS)
    if covering is not None and cls is not None:
        return _extended(covering, parts[cls + 1 :])
    if missing == len(parts) - 1 and missing > 0:
        owner = ctx.resolve(".".join(parts[:missing]))
        if owner and ctx.model.node_kind(owner) == CLASS:
            kept = _members_like(ctx, owner, last)
            if kept:
                shown = " or ".join(f"{'.'.join(parts[:missing])}.{name}" for name in kept)
                return Suggestion(
                    f"did you mean {shown}? (a member of {parts[missing - 1]})",
                    f"{'.'.join(parts[:missing])}.{kept[0]}",
                )
    close = ctx.close_matches("names", last, 3, 0.75)
    found = [q for name in close for q in ctx.named(name) if _ours_or_public(ctx, q)]

    # the written path's own class and module first, then the closest spelling
    def order(qualname: str) -> tuple[object, ...]:
        closest = _closest_first(ctx, qualname, dotted)
        return (*closest[:2], close.index(qualname.rpartition(".")[2]), *closest[2:])

    candidates = sorted(found, key=order)[:3]
    if candidates:
        shown = " or ".join(ctx.public_or_qualname(q) for q in candidates)
        return Suggestion(f"did you mean {shown}? (spelling)", ctx.public_or_qualname(candidates[0]))
    return Suggestion("remove the reference or point it at the code that replaced it")


def _members_like(ctx: AuditContext, owner: str, name: str) -> list[str]:
    """The members of class ``owner`` (inherited ones included) a missing member ``name`` likely
    meant: a near spelling (``step_and_maybe_resett``: ``step_and_maybe_reset``), then those its
    ``_``-separated words begin or end with (``rollout`` for ``rollout_trajectory``), then looser
    spellings; public ones first, at most three."""
    words = [word for word in name.split("_") if word]
    joined = ["_".join(words[:cut]) for cut in range(len(words) - 1, 0, -1)]
    joined += ["_".join(words[cut:]) for cut in range(1, len(words))]
    near = ctx.close_matches("names", name, 10, 0.85)
    loose = ctx.close_matches("names", name, 10, 0.6)
    found = [word for word in (*near, *joined, *loose) if ctx.member(owner, word) is not None]
    unique = list(dict.fromkeys(found))
    unique.sort(key=lambda word: word.startswith("_"))
    return unique[:3]


def _spellings(ctx: AuditContext, parts: list[str], missing: int) -> list[tuple[int, list[str], str]]:
    """``parts`` as written, then with its longest part that resolves (``parts[:missing]`` at
    most) replaced by the qualified name it resolves to, when that differs: each as (how many of
    the written parts were replaced, the parts, what they resolved to; ``""`` as written)."""
    found = [(0, parts, "")]
    for cut in range(missing, 0, -1):
        resolved = ctx.resolve(".".join(parts[:cut]))
        if resolved is not None and ctx.model.has_symbol(resolved):
            if resolved != ".".join(parts[:cut]):
                found.append((cut, [*resolved.split("."), *parts[cut:]], resolved))
            break
    return found


def _ours_or_public(ctx: AuditContext, qualname: str) -> bool:
    """Whether a replacement may be ``qualname``: the documented package's, or another's public
    one (a reference to torchrl is never pointed at ``tensordict._archive._ArchivePath.open``)."""
    return qualname.startswith(ctx.package + ".") or not is_private(ctx.public_or_qualname(qualname))


def _extended(found: Suggestion, rest: list[str]) -> Suggestion:
    if not rest:
        return found
    return Suggestion(found.text, ".".join([found.replacement, *rest]), found.certain)


def _closest_first(ctx: AuditContext, qualname: str, dotted: str) -> tuple[int, int, int, int, str]:
    """The order of candidates for the written ``dotted``: the most leading parts shared (by the
    name the docs use, or the qualified name), then the most trailing parts before the name (its own class:
    ``rnn.LSTMModule.x`` means ``LSTMModule.x`` before ``GRUModule.x``), the defining base, the
    shortest name."""
    public = ctx.public_or_qualname(qualname)
    written = dotted.split(".")
    trailing = 0
    for a, b in zip(reversed(qualname.split(".")[:-1]), reversed(written[:-1]), strict=False):
        if a != b:
            break
        trailing += 1
    return (
        -max(_shared_prefix(public, dotted), _shared_prefix(qualname, dotted)),
        -trailing,
        -len(ctx.model.subclasses_of(qualname.rpartition(".")[0])),  # the defining base first
        len(public),
        qualname,
    )


def _shared_prefix(left: str, right: str) -> int:
    count = 0
    for a, b in zip(left.split("."), right.split("."), strict=False):
        if a != b:
            break
        count += 1
    return count
