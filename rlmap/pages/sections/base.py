"""What every section builder shares: name resolution against the profile, and the typed rows.

A builder turns one ``[[pages.<page>.sections]]`` table (already checked against its kind's
schema) into a frozen body the section's template renders.  Names are resolved here, so a
symbol that vanished from the code fails generation with the profile file, page and parameter.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from rlmap.errors import ConfigError
from rlmap.index.records import ATTRIBUTE, CHECK, FUNCTION, MODULE, ON_COPY, READ, WRITE, format_key, key_of
from rlmap.model.codemodel import CodeModel, ResolvedCall
from rlmap.model.mro import mro
from rlmap.model.target import BY_VALUE
from rlmap.pages.diagrams import Diagram
from rlmap.pages.refs import Anchor, Ref, Refs
from rlmap.pages.shortcircuit import operand_conditions
from rlmap.query.guards import readable_guards

BUILTIN_NOISE = ("builtins.",)
KeyName = str | list[str]


@dataclass(frozen=True, slots=True)
class Site:
    """One place in the code a section lists: where, in which function, under which condition."""

    anchor: Anchor | None
    function: Ref | None = None
    guard: str = ""
    how: str = ""
    kind: str = ""
    value: str = ""
    text: str = ""
    # a key's access: the name it is declared in (``in_keys``, ``DEFAULT_OUT_KEYS``: a declaration,
    # not an access of a tensordict), or whether it writes into a local copy (``td.select(...)``)
    declared_in: str = ""
    on_copy: bool = False
    more: tuple[Site, ...] = ()  # the function's other lines doing the same (key_functions)

    @property
    def sites(self) -> tuple[Site, ...]:
        """This row's lines: itself, then ``more``."""
        return (self, *self.more)


@dataclass(frozen=True, slots=True)
class Call:
    """A call a function makes: the callee as written, what it resolves to, its condition.

    Grouped (``calls_of``): every line making the same call under the same condition is in
    ``anchors``.  In a flow, each call is one numbered step (``number``)."""

    anchor: Anchor | None
    text: str
    targets: tuple[Ref | str, ...]
    overrides: int  # how many overriding methods a call on ``self`` may also reach
    guard: str
    anchors: tuple[Anchor | None, ...] = ()
    number: int = 0


@dataclass(frozen=True, slots=True)
class Entry:
    """A symbol and the rows a section lists under it (its calls, call sites, lines or notes)."""

    ref: Ref
    rows: tuple[Any, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Body:
    """What every section body has: the diagrams it draws (written beside the page)."""

    diagrams: tuple[Diagram, ...] = ()


@dataclass(frozen=True, slots=True)
class Context:
    """The model, the references and where the section was declared (for error messages)."""

    model: CodeModel
    refs: Refs
    where: str  # "profile.toml [pages.collectors] section 3 (accesses)"

    def fail(self, message: str, hint: str = "update your profile to the code") -> ConfigError:
        return ConfigError(f"{self.where}: {message}", hint)

    # -- names -----------------------------------------------------------------------------
    def name(self, value: str, parameter: str) -> str:
        return self.refs.lookup(value, f"{self.where} {parameter}")

    def member(self, cls: str | None, name: str, parameter: str) -> str:
        """``name`` as written, or, unqualified, as defined in ``cls`` or its nearest base."""
        if cls is None or "." in name:
            return self.name(name, parameter)
        found = self.model.find_member(cls, name)
        if found is not None:
            return found
        return self.name(f"{cls}.{name}", parameter)  # fails naming the profile and parameter

    def attribute(self, cls: str | None, name: str, parameter: str) -> str:
        qualname = self.member(cls, name, parameter)
        if not self.model.attribute_accesses(qualname) and self.model.node_kind(qualname) == ATTRIBUTE:
            raise self.fail(f"{parameter}: '{name}' is never accessed")
        return qualname

    def key(self, raw: KeyName, parameter: str) -> tuple[str, ...]:
        key = key_of(raw)
        if not self.model.key_accesses(key):
            raise self.fail(f"{parameter}: {format_key(key)} is used nowhere", "update the key")
        return key

    def ref(self, qualname: str) -> Ref:
        return self.refs.ref(qualname)

    def ref_or_none(self, qualname: str) -> Ref | None:
        return self.ref(qualname) if qualname and self.model.has_symbol(qualname) else None

    def targets(self, targets: list[str], site: ResolvedCall | None = None) -> tuple[Ref | str, ...]:
        """The targets as the page names them, those of the analysed code first (an outside
        function the value flow found, ``torch.cuda.synchronize``, has no anchor); with the
        ``site`` they were found at, a decorator's wrapper among them names the site's methods it
        is wrapped around."""
        found: list[Ref | str] = []
        outside: list[Ref | str] = []
        for target in targets:
            if not self.model.has_symbol(target):
                outside.append(target)
                continue
            ref = self.ref(target)
            decorator, wrapped = wrapped_by(self.model, target, site) if site is not None else ("", [])
            if wrapped:
                ref = replace(ref, decorator=decorator, wraps=tuple(self.ref(method) for method in wrapped))
            found.append(ref)
        return (*found, *outside)

    def anchor(self, function: str, name: str, line: int) -> Anchor | None:
        return self.refs.anchor(name, self.model.path_of(function), line)

    # -- rows ------------------------------------------------------------------------------
    def accesses(self, attribute: str, kinds: tuple[str, ...]) -> list[Site]:
        return [
            Site(
                anchor=self.anchor(access.function, access.attribute, access.line),
                function=self.ref_or_none(access.function),
                kind=access.kind,
                value=access.value,
                guard=shown_guards(access.guards),
                how=access.operation,
            )
            for access in self.model.attribute_accesses(attribute)
            if access.kind in kinds
        ]

    def key_sites(self, key: tuple[str, ...], kinds: tuple[str, ...], scope: tuple[str, ...] = ()) -> list[Site]:
        rows = []
        seen: set[tuple[str, int, str, str]] = set()
        for access in self.model.key_accesses(key):
            if access.kind not in kinds or (scope and not access.function.startswith(scope)):
                continue
            identity = (access.function, access.line, access.kind, access.how)
            if identity in seen:
                continue  # the same key read twice on one line (``td["k"] ... td["k"]``)
            seen.add(identity)
            name = held_name(access.expression) if access.expression else key[-1]
            rows.append(
                Site(
                    anchor=self.anchor(access.function, name, access.line),
                    function=self.ref_or_none(access.function),
                    how=access.how + (f" via {access.expression}" if access.expression else ""),
                    kind=access.kind,
                    guard=shown_guards(access.guards),
                    # (only a declaration or a keyword argument names a key with no object holding it)
                    declared_in="" if access.receiver or access.expression else access.how,
                    on_copy=access.how.endswith(ON_COPY),
                )
            )
        return rows

    def key_functions(self, key: tuple[str, ...], kinds: tuple[str, ...]) -> list[Site]:
        """One row per function touching ``key``, sorted by function: its first line, with its
        other lines in ``more``."""
        rows: dict[str, list[Site]] = {}
        for row in self.key_sites(key, kinds):
            if row.function is not None:
                rows.setdefault(row.function.qualname, []).append(row)
        found = []
        for name in sorted(rows):
            ordered = sorted(rows[name], key=lambda row: row.anchor.line if row.anchor else 0)
            # a line once (``td.get("k") if "k" in td.keys() else td["k"]``), unless it says something else
            once: dict[tuple[Anchor | None, str, bool], Site] = {}
            for row in ordered:
                once.setdefault((row.anchor, row.declared_in, row.on_copy), row)
            first, *more = once.values()
            found.append(replace(first, more=tuple(more)))
        return found

    def calls_to(self, callee: str, scope: tuple[str, ...]) -> list[Site]:
        """Every call site (with its condition) whose target is ``callee``, in callers within ``scope``."""
        rows = []
        for edge in self.model.callers(callee):
            if scope and not edge.caller.startswith(scope):
                continue
            for site in self.model.call_sites(edge.caller):
                if callee in site.targets:
                    rows.append(
                        Site(
                            anchor=self.anchor(edge.caller, site.callee_text.rsplit(".", 1)[-1], site.line),
                            function=self.ref_or_none(edge.caller),
                            guard=shown_guards(site.guards),
                            text=site.callee_text,
                        )
                    )
        return rows

    def readers(self, target: str) -> list[Site]:
        """Every line of every function that calls ``target`` (from the call graph)."""
        rows = []
        for edge in self.model.callers(target):
            if not self.model.has_symbol(edge.caller):
                continue
            for line in edge.lines:
                rows.append(
                    Site(
                        anchor=self.anchor(edge.caller, target.rsplit(".", 1)[-1], line),
                        function=self.ref(edge.caller),
                        how=", ".join(edge.how),
                    )
                )
        return rows

    def operand_conditions(self, function: str, line: int, callee: str) -> list[str]:
        """``a and f()`` on ``line``: ``f`` runs only when ``a`` holds (:mod:`rlmap.pages.shortcircuit`)."""
        path = self.model.path_of(function)
        lines = self.refs.source_lines(path) if path else []
        return operand_conditions(lines[line - 1], callee) if 0 < line <= len(lines) else []

    def calls_of(self, function: str) -> list[Call]:
        """Calls of ``function`` to named targets, one row per (targets, condition) with every line."""
        rows: dict[tuple[tuple[str, ...], str], dict[str, Any]] = {}
        for site in self.model.call_sites(function):
            targets = [t for t in primary(site.targets, site.how) if not t.startswith(BUILTIN_NOISE)]
            if not targets:
                continue
            guard = shown_guards([*site.guards, *self.operand_conditions(function, site.line, site.callee_text)])
            anchor = self.anchor(function, site.callee_text.rsplit(".", 1)[-1], site.line)
            group = (tuple(targets), guard)
            if group in rows:
                rows[group]["anchors"].append(anchor)
                continue
            rows[group] = {
                "anchor": anchor,
                "anchors": [anchor],
                "text": site.callee_text,
                "targets": self.targets(targets, site),
                "overrides": overrides(site.how),
                "guard": guard,
            }
        return [Call(**{**row, "anchors": tuple(row["anchors"])}) for row in rows.values()]


def primary(targets: tuple[str, ...], hows: tuple[str, ...]) -> list[str]:
    """The targets a call names (overrides in subclasses are counted, not listed)."""
    return [t for t, how in zip(targets, hows, strict=False) if how != "override" and not t.startswith("?:")]


def shown_guards(guards: Sequence[str]) -> str:
    """A site's guards as the pages show them: each as a person reads it (``not (x is None)`` is
    ``x is not None``: :func:`rlmap.query.guards.readable_guards`, as ``rlmap show`` has them),
    joined by ``/``."""
    return " / ".join(readable_guards(list(guards)))


def wrapped_by(model: CodeModel, target: str, site: ResolvedCall) -> tuple[str, list[str]]:
    """The decorator's name and the methods ``site`` may reach, as overrides, that its target
    ``target`` is the wrapper of (none: ``("", [])``):
    ``target`` is a function nested in a module-level function (``_check_start.decorated_fun``),
    that function is one of each method's decorators (``@_check_start``, by its last name; another
    may be outside it, ``@torch.no_grad()``), and the model has ``target`` call the method.
    ``self._step`` reaches ``decorated_fun`` because ``SerialEnv._step`` is decorated; the page
    names the method as well as its wrapper."""
    decorator = target.rpartition(".")[0]
    symbol = model.symbol(decorator)
    if symbol is None or symbol.kind != FUNCTION or model.node_kind(decorator.rpartition(".")[0]) != MODULE:
        return "", []
    name = decorator.rpartition(".")[2]
    found = []
    for method, how in zip(site.targets, site.how, strict=False):
        if how != "override":
            continue
        defined = model.symbol(method)
        if defined is None or not defined.decorators:
            continue
        names = {written.split("(", 1)[0].rpartition(".")[2] for written in defined.decorators}
        if name in names and model.edge(target, method) is not None:
            found.append(method)
    return name, found


def overrides(hows: tuple[str, ...]) -> int:
    return sum(1 for how in hows if how == "override")


def method_family(model: CodeModel, targets: tuple[str, ...], hows: tuple[str, ...]) -> tuple[str, int] | None:
    """For a call the value flow alone resolves to several methods of one name (``t._step`` over
    a list of transforms): the most general class among their common bases that defines it, and
    how many classes of its hierarchy define it, when that is more than were found.  The flow
    finds the classes it sees reach the call; any subclass may."""
    if len(targets) < 2 or not set(hows) <= BY_VALUE:
        return None
    name = targets[0].rpartition(".")[2]
    owners = [target.rpartition(".")[0] for target in targets]
    if any(target.rpartition(".")[2] != name for target in targets) or not all(map(model.has_symbol, owners)):
        return None
    common = [cls for cls in mro(model.bases, owners[0]) if model.has_symbol(f"{cls}.{name}")]
    common = [cls for cls in common if all(cls == owner or cls in mro(model.bases, owner) for owner in owners)]
    if not common:
        return None
    base = common[-1]
    defining = [cls for cls in (base, *model.subclasses_of(base)) if model.has_symbol(f"{cls}.{name}")]
    return (f"{base}.{name}", len(defining)) if len(defining) > len(targets) else None


READERS = (READ, CHECK)
WRITERS = (WRITE,)
ALL_KEY_ACCESSES = (READ, WRITE, CHECK)


def held_name(expression: str) -> str:
    """What a key's line shows of the expression that holds it: the last name of a dotted one
    (``self.tensor_keys.reward``: ``reward``) or of a call's callee (``_replace_last(key,
    "done")``); a nested key of strings and names whole (``("next", self.tensor_keys.reward)``,
    at the line naming its last part: not ``reward)``)."""
    if expression.startswith("("):
        return expression
    head, paren, rest = expression.partition("(")
    return head.rsplit(".", 1)[-1] + paren + rest
