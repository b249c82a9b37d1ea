"""What changed between two snapshots of a package: symbols renamed, moved or removed; attributes
renamed; calls and guards added or removed in the functions both versions have (a call or guard
that only names a renamed attribute of its class by its new name is not one of them).

A vanished symbol is *moved* when a new one has its name (and kind) elsewhere, *renamed* when a new
one of its kind in the same place (or where its module went) has its body or, for a class, most of
its members, else *removed*.  An attribute a class's methods wrote is *renamed* when, in the same
class, a new attribute is written by exactly the methods that wrote the old one.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from rlmap.diff.snapshot import Snapshot, SymbolFacts
from rlmap.scopes import in_scope

MIN_MEMBER_OVERLAP = 0.6


@dataclass(frozen=True, slots=True)
class Change:
    what: str  # "renamed", "moved", "removed", "added", "attribute renamed", "calls", "guards"
    old: str
    new: str = ""
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()

    def as_json(self) -> dict[str, object]:
        return {"what": self.what, "old": self.old, "new": self.new, "added": self.added, "removed": self.removed}


@dataclass(frozen=True, slots=True)
class PackageDiff:
    old: str
    new: str
    changes: tuple[Change, ...]
    flows: tuple[str, ...] = ()  # calls and guards were compared in these functions only ("": in all)
    # the documented flows neither version defines (all of them: no calls or guards were compared)
    missing_flows: tuple[str, ...] = ()

    def renames(self) -> dict[str, str]:
        """Old qualified name -> new one, for every symbol renamed or moved and every attribute
        renamed (``Collector._shuttle`` -> ``Collector._carrier``)."""
        return {c.old: c.new for c in self.changes if c.what in ("renamed", "moved", "attribute renamed")}


def compare(old: Snapshot, new: Snapshot, scope: tuple[str, ...] = (), flows: tuple[str, ...] = ()) -> PackageDiff:
    """The changes from ``old`` to ``new``.  Calls and guards are compared only in functions under
    ``scope`` (prefixes), and, when ``flows`` is given, only in those functions (the documented
    flows: qualified names, or their trailing parts as a profile may write them)."""
    gone = sorted(set(old.symbols) - set(new.symbols))
    fresh = set(new.symbols) - set(old.symbols)
    matched: dict[str, str] = {q: q for q in set(old.symbols) & set(new.symbols)}
    changes: list[Change] = []
    # outermost first: a class's methods follow it when it moves
    for qualname in sorted(gone, key=lambda q: (q.count("."), q)):
        facts = old.symbols[qualname]
        parent, _, name = qualname.rpartition(".")
        new_parent = matched.get(parent, parent)
        if f"{new_parent}.{name}" in fresh and new_parent != parent:
            matched[qualname] = f"{new_parent}.{name}"
            fresh.discard(matched[qualname])
            continue  # it went with its parent: the parent's change says so
        target = _moved(facts, name, fresh, new) or _renamed(facts, new_parent, fresh, new)
        if target is None:
            changes.append(Change("removed", qualname))
            continue
        what = "moved" if target.rpartition(".")[2] == name else "renamed"
        changes.append(Change(what, qualname, target))
        matched[qualname] = target
        fresh.discard(target)
    changes.extend(Change("added", "", q) for q in sorted(fresh) if q.rpartition(".")[0] not in fresh)
    renamed: dict[str, dict[str, str]] = {}  # a class (new name) -> its attributes renamed, old -> new
    for old_name, new_name in sorted(matched.items()):
        before, after = old.symbols[old_name], new.symbols[new_name]
        if before.kind == "class":
            found = _attribute_renames(before, after)
            changes.extend(found)
            renamed[new_name] = {c.old.rpartition(".")[2]: c.new.rpartition(".")[2] for c in found}
    for old_name, new_name in sorted(matched.items()):
        before, after = old.symbols[old_name], new.symbols[new_name]
        if before.kind == "function" and _compared(old_name, new_name, scope, flows):
            # a call or guard that differs only by an attribute of its class renamed is not listed
            # again: the rename says it (``self._shuttle.get`` -> ``self._carrier.get``)
            rename = _renaming(renamed.get(new_name.rpartition(".")[0], {}))
            for what, was, now in (("calls", before.calls, after.calls), ("guards", before.guards, after.guards)):
                renamed_was = {text: rename(text) for text in was}  # (a removed one is shown as it was)
                added = sorted(now - set(renamed_was.values()))
                removed = sorted(text for text, same in renamed_was.items() if same not in now)
                if added or removed:
                    changes.append(Change(what, new_name, new_name, tuple(added), tuple(removed)))
    order = {"renamed": 0, "moved": 1, "removed": 2, "attribute renamed": 3, "added": 4, "calls": 5, "guards": 6}
    changes.sort(key=lambda c: (order[c.what], c.old or c.new, c.new))
    functions = [q for snapshot in (old, new) for q, facts in snapshot.symbols.items() if facts.kind == "function"]
    present = {f for f in flows if any(_is_flow(name, f) for name in functions)}
    return PackageDiff(
        old.label, new.label, tuple(changes), tuple(sorted(present)), tuple(sorted(set(flows) - present))
    )


def _is_flow(name: str, flow: str) -> bool:
    """Whether function ``name`` is the documented flow ``flow`` (its qualified name, or trailing parts)."""
    return name == flow or name.endswith("." + flow)


def _compared(old_name: str, new_name: str, scope: tuple[str, ...], flows: tuple[str, ...]) -> bool:
    if not in_scope(new_name, scope):
        return False
    return not flows or any(_is_flow(name, f) for f in flows for name in (old_name, new_name))


def _moved(facts: SymbolFacts, name: str, fresh: set[str], new: Snapshot) -> str | None:
    same = [q for q in fresh if q.rpartition(".")[2] == name and new.symbols[q].kind == facts.kind]
    return sorted(same)[0] if len(same) == 1 else None


def _renamed(facts: SymbolFacts, parent: str, fresh: set[str], new: Snapshot) -> str | None:
    """The new symbol of the same kind that has the old one's body or, for a class, most of its
    members: under ``parent`` first, then anywhere (renamed and moved at once)."""
    kind = [new.symbols[q] for q in sorted(fresh) if new.symbols[q].kind == facts.kind]
    for candidates in ([c for c in kind if c.qualname.rpartition(".")[0] == parent], kind):
        same_body = [c.qualname for c in candidates if c.body == facts.body]
        if len(same_body) == 1:
            return same_body[0]
        if facts.kind != "class" or not facts.members:
            continue
        scored = sorted(
            ((len(facts.members & c.members) / len(facts.members | c.members), c.qualname) for c in candidates),
            reverse=True,
        )
        if scored and scored[0][0] >= MIN_MEMBER_OVERLAP and (len(scored) == 1 or scored[1][0] < scored[0][0]):
            return scored[0][1]
    return None


def _attribute_renames(before: SymbolFacts, after: SymbolFacts) -> list[Change]:
    gone = {name: writers for name, writers in before.attributes.items() if name not in after.attributes}
    fresh = {name: writers for name, writers in after.attributes.items() if name not in before.attributes}
    changes = []
    for name, writers in sorted(gone.items()):
        same = [other for other, other_writers in fresh.items() if other_writers == writers]
        if len(same) == 1:
            changes.append(Change("attribute renamed", f"{before.qualname}.{name}", f"{after.qualname}.{same[0]}"))
    return changes


def _renaming(attributes: dict[str, str]) -> Callable[[str], str]:
    """A call's or guard's text with ``self.<old>`` written ``self.<new>``, for each attribute renamed."""
    if not attributes:
        return lambda text: text
    pattern = re.compile(r"\bself\.(" + "|".join(re.escape(name) for name in sorted(attributes)) + r")\b")
    return lambda text: pattern.sub(lambda match: f"self.{attributes[match.group(1)]}", text)


def render_text(diff: PackageDiff) -> str:
    lines = [f"{diff.old} -> {diff.new}: {len(diff.changes)} change(s)"]
    if diff.flows:
        lines.append(f"  (calls and guards compared in the {len(diff.flows)} documented flow(s) only)")
    elif diff.missing_flows:
        lines.append(
            f"  (calls and guards not compared: none of the profile's {len(diff.missing_flows)} documented flow(s)"
            " is a function of either version; pass --all-functions to compare every function)"
        )
    for change in diff.changes:
        if change.what in ("calls", "guards"):
            lines.append(f"  {change.what:<17} {change.old}")
            lines.extend(f"      - {text}" for text in change.removed)  # (the old first, as every diff)
            lines.extend(f"      + {text}" for text in change.added)
        elif change.old and change.new:
            lines.append(f"  {change.what:<17} {change.old} -> {change.new}")
        else:  # (removed: the old name; added: the new one)
            lines.append(f"  {change.what:<17} {change.old or change.new}")
    return "\n".join(lines) + "\n"
