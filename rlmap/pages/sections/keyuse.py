"""Keys a class's methods read and write, names held by a key-name object resolved to their defaults.

Losses and value estimators name their keys through an attribute (``self.tensor_keys.reward``)
whose fields are declared, with their default names, on a nested class (``_AcceptedKeys``).
This section reads those defaults from the class and the accesses from each method's source
(parsed with :mod:`ast`, never run): ``td.get(self.tensor_keys.reward)``,
``td.set(("next", self.tensor_keys.value), v)``, ``td["shifted_valid"]`` and so on.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rlmap.index.records import ATTRIBUTE, READ, WRITE, format_key
from rlmap.index.vocabulary import KeyVocabulary, vocabulary_for
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
            uses = _uses(ctx, function, vocabulary, spec.through, defaults)
            members.append(MemberKeys(ctx.ref(function), uses))
        classes.append(ClassKeys(ctx.ref(cls), tuple(members)))
    return KeyUseBody(tuple(classes))


def _defaults(ctx: Context, cls: str, nested: str) -> dict[str, str]:
    """Field -> default key name, from the nested class (its own, or a base's)."""
    holder = ctx.model.find_member(cls, nested)
    if holder is None:
        raise ctx.fail(f"defaults: {cls} has no '{nested}'")
    found: dict[str, str] = {}
    prefix = f"{holder}."
    for symbol in ctx.model.symbols():
        if symbol.kind != ATTRIBUTE or not symbol.qualname.startswith(prefix):
            continue
        field = symbol.qualname[len(prefix) :]
        if "." not in field:
            try:
                value = ast.literal_eval(symbol.value) if symbol.value else None
            except (ValueError, SyntaxError, RecursionError, MemoryError):
                value = None
            if isinstance(value, str):
                found[field] = value
    return found


def _uses(
    ctx: Context, function: str, vocabulary: KeyVocabulary, through: str, defaults: dict[str, str]
) -> tuple[KeyUse, ...]:
    symbol = ctx.model.symbol(function)
    node = ctx.refs.definition(symbol) if symbol is not None else None
    if symbol is None or node is None:
        return ()
    rows: dict[tuple[str, str, str, int], KeyUse] = {}

    def add(kind: str, key_node: ast.expr, method: str, line: int) -> None:
        resolved = _key(key_node, through, defaults)
        if resolved is None:
            return
        key, fields = resolved
        how = method + (f" via {through}.{', '.join(fields)}" if fields else "")
        shown = ctx.refs.line_text(symbol.path, line).strip()[:120] or key[-1]  # the line's code names it
        anchor = ctx.refs.anchor(shown, symbol.path, line)
        rows.setdefault((kind, format_key(key), how, line), KeyUse(kind, format_key(key), how, anchor))

    for inner in ast.walk(node):
        if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute):
            method = inner.func.attr
            kind = vocabulary.methods.get(method)
            if kind in (READ, WRITE) and inner.args and not _plain(inner.func.value, vocabulary):
                add(kind, inner.args[0], method, inner.lineno)
        elif isinstance(inner, ast.Subscript) and not _plain(inner.value, vocabulary):
            kind = WRITE if isinstance(inner.ctx, ast.Store) else READ
            add(kind, inner.slice, "[]", inner.lineno)
    return tuple(sorted(rows.values(), key=lambda use: (use.anchor.line if use.anchor else 0, use.kind, use.key)))


def _plain(receiver: ast.expr, vocabulary: KeyVocabulary) -> bool:
    name = (
        receiver.attr if isinstance(receiver, ast.Attribute) else receiver.id if isinstance(receiver, ast.Name) else ""
    )
    return bool(name) and vocabulary.is_plain_receiver(name)


def _key(node: ast.expr, through: str, defaults: dict[str, str]) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """A key as (its default name parts, the key-name fields it went through); None when not a key."""
    parts: list[str] = []
    fields: list[str] = []
    for element in node.elts if isinstance(node, ast.Tuple) else [node]:
        if isinstance(element, ast.Constant) and isinstance(element.value, str):
            parts.append(element.value)
            continue
        field = _field(element, through)
        if field is None or field not in defaults:
            return None
        parts.append(defaults[field])
        fields.append(field)
    return (tuple(parts), tuple(fields)) if parts else None


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
