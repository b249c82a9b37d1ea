"""Page models: what each generated page says, computed from the model and the profile.

Each ``*_page`` function returns a plain dict (the template's context) of :class:`Ref`,
:class:`Anchor`, strings and lists; nothing here formats rst or Markdown.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from rlmap.errors import ConfigError
from rlmap.index.records import ATTRIBUTE, CHECK, FUNCTION, METHOD, PROPERTY, READ, WRITE, format_key
from rlmap.model.codemodel import CodeModel
from rlmap.pages.diagrams import Diagram, call_diagram, flow_diagram, key_diagram
from rlmap.pages.kinds import PAGE_KINDS, SECTIONS
from rlmap.pages.profile import Profile
from rlmap.pages.refs import Anchor, Ref, Refs

Context = dict[str, Any]

_BUILTIN_NOISE = ("builtins.",)
# Lines worth quoting on the recurrent page: shape changes and time/batch indexing.
_DEFAULT_QUOTE = (
    *(f".{method}(" for method in ("reshape", "transpose", "permute", "view", "unsqueeze", "squeeze")),
    *(f".{method}(" for method in ("flatten", "unflatten", "movedim", "expand", "flip")),
    "[...",
    *(f"[:,{space}{start}" for space in ("", " ") for start in "-:0123456789"),
)


class Topics:
    """Builds the context of every page for one model, source tree and profile."""

    def __init__(self, model: CodeModel, refs: Refs, profile: Profile) -> None:
        self.model = model
        self.refs = refs
        self.profile = profile

    # -- helpers ---------------------------------------------------------------------------
    def name(self, page: str, key: str, value: str) -> str:
        return self.refs.lookup(value, f"{self.profile.origin} [pages.{page}] {key}")

    def member(self, page: str, key: str, cls: str, name: str) -> str:
        """``cls.name`` as defined in ``cls`` or the nearest base that defines it."""
        if "." in name:
            return self.name(page, key, name)
        found = self.model.find_member(cls, name)
        if found is not None:
            return found
        return self.name(page, key, f"{cls}.{name}")  # fails with the profile's file and key

    def setting(self, page: str, key: str, default: Any = None) -> Any:
        table = self.profile.page(page)
        if key in table:
            return table[key]
        if default is None:
            raise ConfigError(
                f"{self.profile.origin}: [pages.{page}] needs '{key}'",
                "add it to the profile (see the TorchRL profile)",
            )
        return default

    def ref(self, qualname: str) -> Ref:
        return self.refs.ref(qualname)

    def site_anchor(self, function: str, name: str, line: int) -> Anchor | None:
        return self.refs.anchor(name, self.model.path_of(function), line)

    def target_refs(self, targets: Iterable[str]) -> list[Ref | str]:
        found: list[Ref | str] = []
        for target in targets:
            found.append(self.ref(target) if self.model.has_symbol(target) else target)
        return found

    def accesses(self, attribute: str, kinds: tuple[str, ...]) -> list[Context]:
        rows = []
        for access in self.model.attribute_accesses(attribute):
            if access.kind not in kinds:
                continue
            rows.append(
                {
                    "anchor": self.site_anchor(access.function, access.attribute, access.line),
                    "function": self.ref(access.function) if self.model.has_symbol(access.function) else None,
                    "kind": access.kind,
                    "value": access.value,
                    "guard": " / ".join(access.guards),
                }
            )
        return rows

    def key_rows(self, key: tuple[str, ...], kinds: tuple[str, ...], scope: tuple[str, ...] = ()) -> list[Context]:
        rows = []
        seen: set[tuple[str, int, str, str]] = set()
        for access in self.model.key_accesses(key):
            if access.kind not in kinds or (scope and not access.function.startswith(scope)):
                continue
            identity = (access.function, access.line, access.kind, access.how)
            if identity in seen:
                continue  # the same key read twice on one line (``td["k"] ... td["k"]``)
            seen.add(identity)
            name = access.expression.rsplit(".", 1)[-1] if access.expression else key[-1]
            owner = access.function if self.model.has_symbol(access.function) else ""
            rows.append(
                {
                    "anchor": self.site_anchor(access.function, name, access.line),
                    "function": self.ref(owner) if owner else None,
                    "how": access.how + (f" via {access.expression}" if access.expression else ""),
                    "kind": access.kind,
                    "guard": " / ".join(access.guards),
                }
            )
        return rows

    def calls_to(self, callee: str, scope: tuple[str, ...]) -> list[Context]:
        """Every call site (with its guard) whose target is ``callee``, in callers within ``scope``."""
        rows = []
        for edge in self.model.callers(callee):
            if scope and not edge.caller.startswith(scope):
                continue
            for site in self.model.call_sites(edge.caller):
                if callee in site.targets:
                    rows.append(
                        {
                            "anchor": self.site_anchor(edge.caller, site.callee_text.rsplit(".", 1)[-1], site.line),
                            "function": self.ref(edge.caller) if self.model.has_symbol(edge.caller) else None,
                            "guard": " / ".join(site.guards),
                            "text": site.callee_text,
                        }
                    )
        return rows

    # -- pages -----------------------------------------------------------------------------
    def collectors_page(self) -> Context:
        page = "collectors"
        cls = self.name(page, "class", self.setting(page, "class"))
        rollout = self.member(page, "rollout", cls, self.setting(page, "rollout", "rollout"))
        loop = self.setting(page, "loop")
        scope = tuple(self.setting(page, "scope", [cls.rpartition(".")[0]]))
        before, steps, after = self._flow(rollout, loop)
        if not steps:
            raise ConfigError(
                f"{self.profile.origin}: [pages.{page}] loop '{loop}' encloses no call in {rollout}",
                "the loop header changed: update it to the loop's text as written in the code",
            )
        carrier = self._attribute(cls, self.setting(page, "carrier"), page, "carrier")
        by_method: dict[str, list[Context]] = defaultdict(list)
        for row in self.accesses(carrier, ("write", "read", "augmented", "delete")):
            by_method[row["function"].qualname if row["function"] else ""].append(row)
        carrier_methods = [
            {
                "method": self.ref(method) if method else None,
                "writes": [row for row in rows if row["kind"] != "read"],
                "reads": [row for row in rows if row["kind"] == "read"],
            }
            for method, rows in sorted(by_method.items(), key=lambda item: min(r["anchor"].line for r in item[1]))
        ]
        sync_attributes = []
        for name in self.setting(page, "sync_attributes", []):
            attribute = self._attribute(cls, name, page, "sync_attributes")
            sync_attributes.append(
                {
                    "ref": self.ref(attribute),
                    "assigned": self.accesses(attribute, ("write",)),
                    "called": self.calls_to(attribute, scope),
                }
            )
        selector = self.member(page, "sync_selector", cls, self.setting(page, "sync_selector"))
        returns = [
            {
                "anchor": self.site_anchor(selector, "return", site.line),
                "value": site.value or "None",
                "guard": " / ".join(site.guards) or "(no enclosing condition)",
            }
            for site in self.model.returns(selector)
        ]
        flags = []
        for name in self.setting(page, "device_flags", []):
            attribute = self._attribute(cls, name, page, "device_flags")
            flags.append(
                {
                    "ref": self.ref(attribute),
                    "writes": self.accesses(attribute, ("write", "augmented")),
                    "reads": self.accesses(attribute, ("read",)),
                }
            )
        traj_key = tuple(self.setting(page, "traj_key"))
        if not self.model.key_accesses(traj_key):
            raise ConfigError(
                f"{self.profile.origin}: [pages.{page}] traj_key {format_key(traj_key)} is used nowhere",
                "update the key to the one the code reads and writes",
            )
        hooks = []
        for name in self.setting(page, "hooks", []):
            hook = self.member(page, "hooks", cls, name)
            hooks.append({"ref": self.ref(hook), "calls": self.calls_to(hook, scope)})
        return {
            "title": self.setting(page, "title"),
            "cls": self.ref(cls),
            "rollout": self.ref(rollout),
            "loop": loop,
            "before": before,
            "steps": steps,
            "after": after,
            "flow_diagram": flow_diagram("collectors_rollout_flow", self.ref(rollout).display, loop, steps),
            "call_diagram": call_diagram(self.model, "collectors_rollout_calls", rollout, scope, depth=1),
            "carrier": self.ref(carrier),
            "carrier_methods": carrier_methods,
            "sync_attributes": sync_attributes,
            "selector": self.ref(selector),
            "selector_returns": returns,
            "flags": flags,
            "traj_symbols": [
                self.ref(self.name(page, "traj_symbols", n)) for n in self.setting(page, "traj_symbols", [])
            ],
            "traj_key": format_key(traj_key),
            "traj_writers": self.key_rows(traj_key, (WRITE,), scope),
            "traj_readers": self.key_rows(traj_key, (READ, CHECK), scope),
            "hooks": hooks,
            "helpers": self._private_members(cls),
            "subclasses": self._subclasses(cls, rollout, self.setting(page, "former_carrier_names", [])),
        }

    def _attribute(self, cls: str, name: str, page: str, key: str) -> str:
        qualname = self.member(page, key, cls, name)
        if not self.model.attribute_accesses(qualname) and self.model.node_kind(qualname) == ATTRIBUTE:
            raise ConfigError(f"{self.profile.origin}: [pages.{page}] {key}: '{name}' is never accessed", "update it")
        return qualname

    def _flow(self, function: str, loop: str) -> tuple[list[Context], list[Context], list[Context]]:
        before: list[Context] = []
        steps: list[Context] = []
        after: list[Context] = []
        seen_loop = False
        for site in self.model.call_sites(function):
            if all(target.startswith(_BUILTIN_NOISE) for target in site.targets) and site.targets:
                continue
            inside = loop in site.guards
            relative = site.guards[site.guards.index(loop) + 1 :] if inside else site.guards
            row = {
                "anchor": self.site_anchor(function, site.callee_text.rsplit(".", 1)[-1], site.line),
                "text": site.callee_text,
                "targets": self.target_refs(_primary(site.targets, site.how)),
                "overrides": _overrides(site.how),
                "how": sorted(set(site.how)),
                "guard": " / ".join(relative),
            }
            if inside:
                seen_loop = True
                steps.append(row)
            elif seen_loop:
                after.append(row)
            else:
                before.append(row)
        for number, row in enumerate(steps, start=1):
            row["number"] = number
        return before, steps, after

    def _private_members(self, cls: str) -> list[Context]:
        prefix = cls + "."
        rows = []
        for name in self.model.qualnames():
            if not name.startswith(prefix) or "." in name[len(prefix) :]:
                continue
            member = name[len(prefix) :]
            if not member.startswith("_") or member.startswith("__"):
                continue
            if self.model.node_kind(name) not in (METHOD, PROPERTY, FUNCTION):
                continue
            callers = sorted({edge.caller for edge in self.model.callers(name)})
            rows.append({"ref": self.ref(name), "callers": [self.ref(c) for c in callers if self.model.has_symbol(c)]})
        return sorted(rows, key=lambda row: row["ref"].anchor.line if row["ref"].anchor else 0)

    def _subclasses(self, cls: str, rollout: str, former_names: list[str]) -> list[Context]:
        method = rollout.rsplit(".", 1)[-1]
        rows = []
        for sub in self.model.subclasses_of(cls):
            override = f"{sub}.{method}"
            former = []
            for old in former_names:
                found = [q for q in self.model.attribute_names() if q.endswith(f".{old}") and q.startswith(sub + ".")]
                for qualname in found:
                    former.extend(self.accesses(qualname, ("write", "read")))
            has_override = self.model.node_kind(override) in (METHOD, FUNCTION, PROPERTY)
            if has_override or former:
                rows.append(
                    {
                        "ref": self.ref(sub),
                        "override": self.ref(override) if has_override else None,
                        "former": former,
                    }
                )
        return rows

    def recurrent_page(self) -> Context:
        page = "recurrent"
        scope = tuple(self.setting(page, "scope"))
        markers = tuple(self.setting(page, "quote_markers", [])) or _DEFAULT_QUOTE
        modules = []
        quotes = []
        diagrams = []
        for class_name in self.setting(page, "modules"):
            cls = self.name(page, "modules", class_name)
            entry = self.member(page, "entry", cls, self.setting(page, "entry", "forward"))
            helpers = [
                self.member(page, "helpers_of", cls, n)
                for n in self.setting(page, "helpers_of", {}).get(class_name.rsplit(".", 1)[-1], [])
            ]
            chain = []
            for function in (entry, *helpers):
                calls = [
                    row
                    for row in self._calls_of(function)
                    if any(isinstance(t, Ref) and t.qualname.startswith(scope) for t in row["targets"])
                ]
                chain.append({"ref": self.ref(function), "calls": calls})
                lines = self._quoted_lines(function, markers)
                if lines:
                    quotes.append({"ref": self.ref(function), "lines": lines})
            modules.append({"ref": self.ref(cls), "chain": chain})
            short = cls.rsplit(".", 1)[-1].lower()
            diagrams.append(call_diagram(self.model, f"recurrent_{short}_calls", entry, scope, depth=2))
        mode_symbols = [self.ref(self.name(page, "mode_symbols", n)) for n in self.setting(page, "mode_symbols", [])]
        readers = []
        for name in self.setting(page, "mode_readers_of", []):
            target = self.name(page, "mode_readers_of", name)
            readers.append({"ref": self.ref(target), "calls": self._readers(target)})
        keys = []
        for raw in self.setting(page, "keys", []):
            key = tuple(raw) if isinstance(raw, list) else (raw,)
            if not self.model.key_accesses(key):
                raise ConfigError(
                    f"{self.profile.origin}: [pages.{page}] keys: {format_key(key)} is used nowhere", "update it"
                )
            keys.append(
                {
                    "key": format_key(key),
                    "writers": self.key_rows(key, (WRITE,)),
                    "readers": self.key_rows(key, (READ, CHECK)),
                }
            )
        caveats = []
        for name in self.setting(page, "caveats_of", []):
            qualname = self.name(page, "caveats_of", name)
            symbol = self.model.symbol(qualname)
            assert symbol is not None
            notes = _caveats(self.refs.docstring(symbol))
            if notes:
                caveats.append({"ref": self.ref(qualname), "notes": notes})
        return {
            "title": self.setting(page, "title"),
            "modules": modules,
            "call_diagrams": diagrams,
            "quotes": quotes,
            "mode_symbols": mode_symbols,
            "mode_readers": readers,
            "keys": keys,
            "key_diagram": key_diagram(self.model, "recurrent_key_flow", [str(k["key"]) for k in keys], keys),
            "caveats": caveats,
        }

    def _calls_of(self, function: str) -> list[Context]:
        """Calls of ``function`` to named targets, one row per (targets, condition) with every line."""
        rows: dict[tuple[tuple[str, ...], str], Context] = {}
        for site in self.model.call_sites(function):
            targets = [t for t in _primary(site.targets, site.how) if not t.startswith(_BUILTIN_NOISE)]
            if not targets:
                continue
            guard = " / ".join(site.guards)
            anchor = self.site_anchor(function, site.callee_text.rsplit(".", 1)[-1], site.line)
            key = (tuple(targets), guard)
            if key in rows:
                rows[key]["anchors"].append(anchor)
                continue
            rows[key] = {
                "anchor": anchor,
                "anchors": [anchor],
                "text": site.callee_text,
                "targets": self.target_refs(targets),
                "overrides": _overrides(site.how),
                "how": sorted(set(site.how)),
                "guard": guard,
            }
        return list(rows.values())

    def _readers(self, target: str) -> list[Context]:
        rows = []
        for edge in self.model.callers(target):
            if not self.model.has_symbol(edge.caller):
                continue
            for line in edge.lines:
                rows.append(
                    {
                        "anchor": self.site_anchor(edge.caller, target.rsplit(".", 1)[-1], line),
                        "function": self.ref(edge.caller),
                        "how": ", ".join(edge.how),
                    }
                )
        return rows

    def _quoted_lines(self, function: str, markers: tuple[str, ...]) -> list[Context]:
        symbol = self.model.symbol(function)
        assert symbol is not None
        rows = []
        docstring = self.refs.docstring_lines(symbol)
        for line in range(symbol.line + 1, symbol.end_line + 1):
            text = self.refs.line_text(symbol.path, line)
            stripped = text.strip()
            if line in docstring or stripped.startswith("#") or not any(marker in text for marker in markers):
                continue
            anchor = self.refs.anchor(stripped, symbol.path, line)
            rows.append({"anchor": anchor, "code": stripped})
        return rows

    def advantages_page(self) -> Context:
        page = "advantages"
        kernels_module = self.setting(page, "kernels_module")
        estimators = []
        kernel_edges: list[tuple[str, str]] = []
        for class_name in self.setting(page, "estimators"):
            cls = self.name(page, "estimators", class_name)
            entries = []
            for method in self.setting(page, "entry_points", ["forward"]):
                qualname = f"{cls}.{method}"
                if self.model.node_kind(qualname) not in (METHOD, FUNCTION):
                    continue
                kernels = [
                    row
                    for row in self._calls_of(qualname)
                    if any(isinstance(t, Ref) and t.qualname.startswith(kernels_module + ".") for t in row["targets"])
                ]
                kernel_edges.extend(
                    (qualname, t.qualname) for row in kernels for t in row["targets"] if isinstance(t, Ref)
                )
                entries.append({"ref": self.ref(qualname), "kernels": kernels})
            estimators.append({"ref": self.ref(cls), "entries": entries})
        mask_key = tuple(self.setting(page, "mask_key", ["is_init"]))
        mask_scope = tuple(self.setting(page, "mask_scope", [kernels_module]))
        symbols = []
        for name in self.setting(page, "symbols", []):
            qualname = self.name(page, "symbols", name)
            symbols.append(
                {
                    "ref": self.ref(qualname),
                    "callers": self._readers(qualname),
                    "calls": [
                        row for row in self._calls_of(qualname) if any(isinstance(t, Ref) for t in row["targets"])
                    ],
                }
            )
        return {
            "title": self.setting(page, "title"),
            "estimators": estimators,
            "kernels_module": kernels_module,
            "diagram": _edges_diagram(self.model, "advantages_kernels", kernel_edges),
            "mask_key": format_key(mask_key),
            "mask_sites": self.key_rows(mask_key, (READ, WRITE, CHECK), mask_scope),
            "symbols": symbols,
        }

    def glossary_page(self) -> Context:
        entries = []
        for term in sorted(self.profile.glossary, key=lambda t: t.term.lower()):
            symbols = []
            for name in term.symbols:
                qualname = self.refs.lookup(name, term.origin)
                places, files = usage(self.model, qualname)
                symbols.append({"ref": self.ref(qualname), "places": places, "files": files})
            keys = []
            for key in term.keys:
                if not self.model.key_accesses(key):
                    raise ConfigError(f"{term.origin}: key {format_key(key)} is used nowhere", "update the key")
                accesses = self.model.key_accesses(key)
                keys.append(
                    {
                        "key": format_key(key),
                        "writers": self._key_functions(key, (WRITE,)),
                        "readers": self._key_functions(key, (READ, CHECK)),
                        "places": len(accesses),
                        "files": len({self.model.path_of(a.function) for a in accesses}),
                    }
                )
            entries.append(
                {
                    "term": term.term,
                    "slug": term.slug,
                    "aliases": list(term.aliases),
                    "former": list(term.former),
                    "definition": term.definition,
                    "symbols": symbols,
                    "key_flows": keys,
                }
            )
        return {"title": self.setting("glossary", "title", "Glossary"), "terms": entries}

    def _key_functions(self, key: tuple[str, ...], kinds: tuple[str, ...]) -> list[Context]:
        """One row per function touching ``key`` (first line of each), sorted."""
        first: dict[str, Context] = {}
        for row in self.key_rows(key, kinds):
            if row["function"] is not None and row["function"].qualname not in first:
                first[row["function"].qualname] = row
        return [first[name] for name in sorted(first)]

    def debugging_page(self) -> Context:
        rows = []
        for symptom in self.profile.symptoms:
            look = [self.ref(self.refs.lookup(name, symptom.origin)) for name in symptom.look]
            keys = []
            for key in symptom.keys:
                if not self.model.key_accesses(key):
                    raise ConfigError(f"{symptom.origin}: key {format_key(key)} is used nowhere", "update the key")
                keys.append(format_key(key))
            see = [
                {"title": SECTIONS[page][section], "slug": PAGE_KINDS[page].slug, "section": section}
                for page, section in symptom.see
                if page in self.profile.pages
            ]
            rows.append(
                {
                    "id": symptom.id,
                    "symptom": symptom.symptom,
                    "cause": symptom.cause,
                    "look": look,
                    "key_names": keys,
                    "see": see,
                }
            )
        return {"title": self.setting("debugging", "title", "Debugging map"), "symptoms": rows}

    def helpers_page(self) -> Context:
        page = "helpers"
        scope = tuple(self.setting(page, "scope"))
        limit = int(self.setting(page, "limit", 0)) or None
        rows: list[Context] = []
        for symbol in self.model.symbols():
            if symbol.kind not in (FUNCTION, METHOD) or symbol.has_docstring:
                continue
            if not symbol.qualname.startswith(scope):
                continue
            name = symbol.qualname.rsplit(".", 1)[-1]
            if not name.startswith("_") or name.startswith("__"):
                continue
            callers = {edge.caller for edge in self.model.callers(symbol.qualname)}
            rows.append({"ref": self.ref(symbol.qualname), "callers": len(callers)})
        rows.sort(key=lambda row: (-row["callers"], row["ref"].qualname))
        total = len(rows)
        return {"title": self.setting(page, "title"), "helpers": rows[:limit], "total": total, "scope": list(scope)}


def usage(model: CodeModel, qualname: str) -> tuple[int, int]:
    """(places, files): call sites and attribute accesses that use a symbol, and their files.

    A class is used where it is constructed: calls that resolve to the ``__init__`` it runs
    (its own or a base's) and are written with the class's name.
    """
    places = 0
    files: set[str] = set()
    if model.node_kind(qualname) == "class":
        init = model.find_member(qualname, "__init__") or ""
        name = qualname.rsplit(".", 1)[-1]
        for edge in model.callers(init) if init else ():
            for site in model.call_sites(edge.caller):
                if init in site.targets and site.callee_text.rsplit(".", 1)[-1] == name:
                    places += 1
                    files.add(model.path_of(edge.caller))
    else:
        for edge in model.callers(qualname):
            places += len(edge.lines)
            files.add(model.path_of(edge.caller))
    for access in model.attribute_accesses(qualname):
        places += 1
        files.add(model.path_of(access.function))
    files.discard("")
    return places, len(files)


def _primary(targets: tuple[str, ...], hows: tuple[str, ...]) -> list[str]:
    """The targets a call names (overrides in subclasses are counted, not listed)."""
    return [t for t, how in zip(targets, hows, strict=False) if how != "override" and not t.startswith("?:")]


def _overrides(hows: tuple[str, ...]) -> int:
    return sum(1 for how in hows if how == "override")


def _caveats(docstring: str) -> list[str]:
    """``.. note::`` / ``.. warning::`` blocks of a docstring, as plain text.

    A block ends at the first non-blank line indented no deeper than its directive.
    """
    notes = []
    lines = docstring.splitlines()
    index = 0
    while index < len(lines):
        match = re.match(r"(\s*)\.\. (note|warning|caution|important)::\s*(.*)", lines[index])
        if not match:
            index += 1
            continue
        indent = len(match.group(1))
        body = [match.group(3)] if match.group(3) else []
        index += 1
        while index < len(lines):
            line = lines[index]
            if line.strip() and len(line) - len(line.lstrip()) <= indent:
                break
            body.append(line.strip())
            index += 1
        text = " ".join(part for part in body if part)
        text = re.sub(r":[a-z]+:`~?([^`<]*?)(?: <[^>]*>)?`", r"\1", text)
        notes.append(f"{match.group(2).capitalize()}: {text.replace('``', '')}")
    return notes


def _edges_diagram(model: CodeModel, name: str, edges: list[tuple[str, str]]) -> Diagram:
    from rlmap.pages.diagrams import diagram_from_edges

    return diagram_from_edges(model, name, sorted(set(edges)))
