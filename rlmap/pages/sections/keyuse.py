"""Keys a class's methods read and write, names held by a key-name object resolved to their defaults.

Losses and value estimators name their keys through an attribute (``self.tensor_keys.reward``)
whose fields are declared, with their default names, on a nested class (``_AcceptedKeys``).
This section reads those defaults from the class and the accesses from each method's source
(parsed with :mod:`ast`, never run): ``td.get(self.tensor_keys.reward)``,
``td.set(("next", self.tensor_keys.value), v)``, ``td["shifted_valid"]`` and so on, and the keys
handed to a function of the package that reads or writes them (``_maybe_get_or_select(td, key)``).
A field declared without a default name (``None``) has each name the key-name class's methods
give it (``__post_init__``).
"""

from __future__ import annotations

import ast
import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rlmap.index.records import ATTRIBUTE, FUNCTION, METHOD, READ, WRITE, format_key
from rlmap.index.vocabulary import KeyVocabulary, vocabulary_for
from rlmap.pages.claimcheck import statements
from rlmap.pages.refs import Anchor, Ref
from rlmap.pages.sections import specs
from rlmap.pages.sections.base import Body, Context

if TYPE_CHECKING:
    from rlmap.pages.profile import Profile


@dataclass(frozen=True, slots=True)
class KeyUse:
    kind: str  # read / write
    key: str  # the default name, formatted (``("next", "reward")``)
    how: str  # ``get via tensor_keys.reward`` or ``set``
    anchor: Anchor | None
    guard: str = ""  # the conditions the access runs under, `` / ``-joined (those of every row left out)
    order: tuple[int, int] = (0, 0)  # (the member's line, the line in a method it calls on self)
    conditions: tuple[str, ...] = ()  # the conditions, before those every row shares are left out


@dataclass(frozen=True, slots=True)
class MemberKeys:
    member: Ref
    uses: tuple[KeyUse, ...]


@dataclass(frozen=True, slots=True)
class ClassKeys:
    cls: Ref
    members: tuple[MemberKeys, ...]


@dataclass(frozen=True, slots=True)
class KeyUseBody(Body):
    classes: tuple[ClassKeys, ...]


def build_key_use(spec: specs.KeyUse, ctx: Context, profile: Profile) -> KeyUseBody:
    vocabulary = vocabulary_for(profile.extensions)
    if vocabulary is None:
        raise ctx.fail("key_use needs a key extension", 'add extensions = ["tensordict"] to [profile]')
    classes = []
    for name in spec.classes:
        cls = ctx.name(name, "classes")
        defaults = _defaults(ctx, cls, spec.defaults)
        members = []
        for member in spec.members:
            function = ctx.model.find_member(cls, member)
            if function is None:
                raise ctx.fail(f"members: {name} has no '{member}'")
            uses = _shown_conditions(_uses(ctx, function, vocabulary, spec.through, defaults))
            members.append(MemberKeys(ctx.ref(function), uses))
        classes.append(ClassKeys(ctx.ref(cls), tuple(members)))
    return KeyUseBody(tuple(classes))


def _shown_conditions(uses: tuple[KeyUse, ...]) -> tuple[KeyUse, ...]:
    """Each row's conditions, less those every row of the table shares (the member's input checks,
    ``not (tensordict.batch_dims < 1)``): what tells the rows apart."""
    shared = set.intersection(*(set(use.conditions) for use in uses)) if uses else set()
    return tuple(
        dataclasses.replace(use, guard=" / ".join(c for c in use.conditions if c not in shared)) for use in uses
    )


def _defaults(ctx: Context, cls: str, nested: str) -> dict[str, tuple[str, ...]]:
    """Field -> its default key names, from the nested class (its own, or a base's): the name
    declared on the class, or, for a field declared without one (``None``), each name its methods
    assign to it (``__post_init__`` picks ``"sample_log_prob"`` or ``"action_log_prob"``)."""
    holder = ctx.model.find_member(cls, nested)
    if holder is None:
        raise ctx.fail(f"defaults: {cls} has no '{nested}'")
    found: dict[str, tuple[str, ...]] = {}
    unnamed: set[str] = set()
    methods = []
    prefix = f"{holder}."
    for symbol in ctx.model.symbols():
        if not symbol.qualname.startswith(prefix) or "." in symbol.qualname[len(prefix) :]:
            continue
        field = symbol.qualname[len(prefix) :]
        if symbol.kind == METHOD:
            methods.append(symbol)
        if symbol.kind != ATTRIBUTE:
            continue
        try:
            value = ast.literal_eval(symbol.value) if symbol.value else None
        except (ValueError, SyntaxError, RecursionError, MemoryError):
            value = None
        if isinstance(value, str):
            found[field] = (value,)
        elif value is None and symbol.value == "None":
            unnamed.add(field)
    assigned: dict[str, list[str]] = {}
    for method in sorted(methods, key=lambda symbol: symbol.line):
        node = ctx.refs.definition(method)
        for inner in ast.walk(node) if node is not None else ():
            if not isinstance(inner, ast.Assign) or not _is_str(inner.value):
                continue
            for target in inner.targets:
                if (
                    isinstance(target, ast.Attribute)
                    and isinstance(target.value, ast.Name)
                    and target.value.id == "self"
                    and target.attr in unnamed
                    and inner.value.value not in assigned.setdefault(target.attr, [])  # type: ignore[attr-defined]
                ):
                    assigned[target.attr].append(inner.value.value)  # type: ignore[attr-defined]
    found.update({field: tuple(names) for field, names in assigned.items() if names})
    return found


def _is_str(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def _uses(
    ctx: Context,
    function: str,
    vocabulary: KeyVocabulary,
    through: str,
    defaults: dict[str, tuple[str, ...]],
    called: tuple[str, int, tuple[str, ...]] | None = None,
) -> tuple[KeyUse, ...]:
    """The keys ``function`` reads and writes in its body, by its helpers (functions of the package
    it hands them to) and in the methods it calls on ``self`` (one call deep: ``called`` is such a
    call, as (the method's name, the caller's line, the caller's conditions there))."""
    symbol = ctx.model.symbol(function)
    node = ctx.refs.definition(symbol) if symbol is not None else None
    if symbol is None or node is None:
        return ()
    rows: dict[tuple[str, str, str, int], KeyUse] = {}
    guards = _Guards(ctx.refs.source_lines(symbol.path), node)

    copies = _local_copies(node, vocabulary)
    loops = _literal_loops(node)

    def add(kind: str, key_node: ast.expr, method: str, line: int, receiver: ast.expr | None = None) -> None:
        if isinstance(key_node, ast.Name):  # ``for key in (self.tensor_keys.advantage, ...)``: each one
            for start, end, elements in loops.get(key_node.id, ()):
                if start <= line <= end:
                    for element in elements:
                        add(kind, element, method, line, receiver)
                    return
        resolved = _key(key_node, through, defaults)
        if resolved is None or resolved[0] == [("next",)]:  # (``td.get("next")``: the nested data, no entry)
            return
        keys, fields = resolved
        how = method + (f" via {through}.{', '.join(fields)}" if fields else "")
        if _on_copy(copies, receiver, line):
            how += " on a copy"
        if len(keys) > 1:
            how += f" (the default name set when the {through} are made)"
        if called is not None:
            how += f", in {called[0]}"
        shown = ctx.refs.line_text(symbol.path, line).strip()[:120] or keys[0][-1]  # the line's code names it
        anchor = ctx.refs.anchor(shown, symbol.path, line)
        named = " or ".join(format_key(key) for key in keys)
        conditions = guards.at(line)
        order = (line, 0)
        if called is not None:
            conditions = (*called[2], *conditions)
            order = (called[1], line)
        rows.setdefault((kind, named, how, line), KeyUse(kind, named, how, anchor, "", order, conditions))

    helpers = _HelperCalls(ctx, function, vocabulary)
    found_rows: list[KeyUse] = []
    for inner in ast.walk(node):
        if isinstance(inner, ast.Call):
            for helped, argument, through_helper in helpers.accesses(inner):
                add(helped, argument, through_helper, inner.lineno)
            if called is None:
                for method in helpers.own_methods(inner, function):
                    at = (method.rsplit(".", 1)[-1], inner.lineno, guards.at(inner.lineno))
                    found_rows.extend(_uses(ctx, method, vocabulary, through, defaults, at))
        if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute):
            method = inner.func.attr
            found = vocabulary.methods.get(method)
            if found in (READ, WRITE) and inner.args and not _plain(inner.func.value, vocabulary):
                add(found, inner.args[0], method, inner.lineno, inner.func.value)
        elif isinstance(inner, ast.Subscript) and not _plain(inner.value, vocabulary):
            kind = WRITE if isinstance(inner.ctx, ast.Store) else READ
            add(kind, inner.slice, "[]", inner.lineno, inner.value)
    return tuple(sorted([*rows.values(), *found_rows], key=lambda use: (use.order, use.kind, use.key)))


def _literal_loops(node: ast.AST) -> dict[str, list[tuple[int, int, list[ast.expr]]]]:
    """Each name a ``for`` loop binds to the elements of a literal tuple or list, with the lines
    of the loop's body and those elements: ``for key in (self.tensor_keys.advantage, ...)``."""
    loops: dict[str, list[tuple[int, int, list[ast.expr]]]] = {}
    for inner in ast.walk(node):
        if (
            isinstance(inner, ast.For)
            and isinstance(inner.target, ast.Name)
            and isinstance(inner.iter, (ast.Tuple, ast.List))
            and inner.iter.elts
            and not any(isinstance(element, ast.Starred) for element in inner.iter.elts)
        ):
            end = inner.body[-1].end_lineno or inner.body[-1].lineno
            loops.setdefault(inner.target.id, []).append((inner.body[0].lineno, end, list(inner.iter.elts)))
    return loops


def _local_copies(node: ast.AST, vocabulary: KeyVocabulary) -> dict[str, list[tuple[int, bool]]]:
    """Each local name's assignments in the function, in line order: (line, whether it binds a new
    container made from another: ``x = td.select(...)``, ``td = td.copy()``).  What is written into
    such a container does not reach the tensordict it came from."""
    assigned: dict[str, list[tuple[int, bool]]] = {}
    for inner in ast.walk(node):
        if isinstance(inner, ast.Assign) and len(inner.targets) == 1 and isinstance(inner.targets[0], ast.Name):
            value = inner.value
            copy = (
                isinstance(value, ast.Call)
                and isinstance(value.func, ast.Attribute)
                and value.func.attr in vocabulary.copy_methods
            )
            assigned.setdefault(inner.targets[0].id, []).append((inner.lineno, copy))
    for lines in assigned.values():
        lines.sort()
    return assigned


def _on_copy(copies: dict[str, list[tuple[int, bool]]], receiver: ast.expr | None, line: int) -> bool:
    """Whether ``receiver`` at ``line`` is a name whose last assignment above the line made a copy
    (read in line order: a branch's assignment counts as made)."""
    if not isinstance(receiver, ast.Name):
        return False
    before = [copy for at, copy in copies.get(receiver.id, ()) if at < line]
    return bool(before) and before[-1]


class _Guards:
    """The conditions each line of a function runs under (``if x`` / ``not (x)``, loop headers),
    as the claims read them (:func:`rlmap.pages.claimcheck.statements`)."""

    def __init__(self, source: list[str], node: ast.AST) -> None:
        self._statements = statements(source, node)

    def at(self, line: int) -> tuple[str, ...]:
        """The conditions of the innermost statement holding ``line`` (none outside every one); a
        ``with`` block is no condition."""
        held = [s for s in self._statements if s.line <= line <= s.end]
        return tuple(g for g in held[-1].guards if not g.startswith("with ")) if held else ()


class _HelperCalls:
    """Keys a method hands to a function of the package that reads or writes them for it:
    ``_maybe_get_or_select(tensordict, self.tensor_keys.sample_log_prob)``, whose body does
    ``td.get(key_or_keys, ...)`` with both as its parameters.  One call deep: the function's own
    body, read with :mod:`ast`; the call is matched to what the model resolved it to."""

    def __init__(self, ctx: Context, function: str, vocabulary: KeyVocabulary) -> None:
        self._ctx, self._vocabulary = ctx, vocabulary
        self._sites: dict[tuple[int, str], tuple[str, ...]] = {}
        for site in ctx.model.call_sites(function):
            self._sites.setdefault((site.line, site.callee_text), site.targets)
        self._summaries: dict[str, tuple[list[str], dict[tuple[str, str], list[str]]]] = {}

    def own_methods(self, call: ast.Call, caller: str) -> list[str]:
        """The methods of the package a call on ``self`` (``self.value_estimate(td)``) resolves to,
        other than the caller itself."""
        func = call.func
        if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self"):
            return []
        targets = self._sites.get((call.lineno, f"self.{func.attr}"), ())
        return [t for t in targets if t != caller and self._ctx.model.node_kind(t) == METHOD]

    def accesses(self, call: ast.Call) -> list[tuple[str, ast.expr, str]]:
        """(kind, the key argument, how) for each key the call's resolved function accesses
        through a parameter."""
        text = _dotted(call.func)
        if text is None or any(isinstance(argument, ast.Starred) for argument in call.args):
            return []
        found = []
        for target in self._sites.get((call.lineno, text), ()):
            parameters, keys = self._summary(target)
            # (a function of the package: no bound self; the arguments past its parameters name none)
            given: dict[str, ast.expr] = dict(zip(parameters, call.args, strict=False))
            given.update({keyword.arg: keyword.value for keyword in call.keywords if keyword.arg})
            short = target.rsplit(".", 1)[-1]
            for (parameter, kind), methods in keys.items():
                if parameter in given:
                    found.append((kind, given[parameter], f"{'/'.join(methods)} in {short}"))
        return found

    def _summary(self, target: str) -> tuple[list[str], dict[tuple[str, str], list[str]]]:
        """A module-level function's positional parameters, and those its body uses as a key of
        another parameter ((name, kind) -> the methods, in line order); none for anything else."""
        if target in self._summaries:
            return self._summaries[target]
        summary: tuple[list[str], dict[tuple[str, str], list[str]]] = ([], {})
        symbol = self._ctx.model.symbol(target)
        node = self._ctx.refs.definition(symbol) if symbol is not None and symbol.kind == FUNCTION else None
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            arguments = node.args
            positional = [argument.arg for argument in (*arguments.posonlyargs, *arguments.args)]
            names = {*positional, *(argument.arg for argument in arguments.kwonlyargs)}
            keys: dict[tuple[str, str], list[str]] = {}
            for inner in sorted(ast.walk(node), key=lambda found: getattr(found, "lineno", 0)):
                if not (isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute) and inner.args):
                    continue
                receiver, method, first = inner.func.value, inner.func.attr, inner.args[0]
                if not (isinstance(receiver, ast.Name) and receiver.id in names):
                    continue
                kind = self._vocabulary.methods.get(method)
                if isinstance(first, ast.Starred) and method in self._vocabulary.multi_key_methods:
                    first = first.value  # ``td.select(*keys)``
                if kind in (READ, WRITE) and isinstance(first, ast.Name) and first.id in names - {receiver.id}:
                    methods = keys.setdefault((first.id, kind), [])
                    if method not in methods:
                        methods.append(method)
            summary = (positional, keys)
        self._summaries[target] = summary
        return summary


def _dotted(node: ast.expr) -> str | None:
    """``a.b.c`` as written; ``None`` for any other callee."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id, *reversed(parts)])


def _plain(receiver: ast.expr, vocabulary: KeyVocabulary) -> bool:
    name = (
        receiver.attr if isinstance(receiver, ast.Attribute) else receiver.id if isinstance(receiver, ast.Name) else ""
    )
    return bool(name) and vocabulary.is_plain_receiver(name)


def _key(
    node: ast.expr, through: str, defaults: dict[str, tuple[str, ...]]
) -> tuple[list[tuple[str, ...]], tuple[str, ...]] | None:
    """A key as (each of its default names' parts, the key-name fields it went through); None when
    not a key.  A field with more than one default name gives one key per name."""
    keys: list[tuple[str, ...]] = [()]
    fields: list[str] = []
    for element in node.elts if isinstance(node, ast.Tuple) else [node]:
        if isinstance(element, ast.Constant) and isinstance(element.value, str):
            keys = [(*key, element.value) for key in keys]
            continue
        field = _field(element, through)
        if field is None or field not in defaults:
            return None
        keys = [(*key, name) for key in keys for name in defaults[field]]
        fields.append(field)
    return (keys, tuple(fields)) if keys[0] else None


def _field(node: ast.expr, through: str) -> str | None:
    """``self.tensor_keys.reward`` -> ``reward``."""
    if (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Attribute)
        and node.value.attr == through
        and isinstance(node.value.value, ast.Name)
        and node.value.value.id == "self"
    ):
        return node.attr
    return None
