"""Which of the value flow's callees agree with what a call site says about its receiver.

The value flow is flow- and context-insensitive: a generic wrapper (``CloudpickleWrapper``,
``EnvCreator``) called with an environment in one place and a tensordict in another hands both
to every caller, and a method call on a tensordict then "reaches" a method of an environment.
Two facts written at the site itself say which receivers are possible, and the flow's callees
that contradict them are dropped (the resolver's own targets are never dropped here):

- **the receiver's type**, when the resolver found the called method (a ``def``, not a property
  or an attribute, whose value is what is called) on a class through an annotation, an
  assignment, ``self`` or an ``isinstance`` narrowing: a callee is kept if it is a method of that
  class or of one of its subclasses;
- **an enclosing ``isinstance`` guard** on the receiver (``if isinstance(self.lstm, nn.LSTM):``
  keeps the methods of ``nn.LSTM``'s subclasses; its ``else`` drops them).  A class outside the
  source is compared by name along the bases as the source writes them.

Nothing is run; a guard that does not parse, or names a class that does not resolve, narrows
nothing.
"""

from __future__ import annotations

import ast
from functools import lru_cache
from typing import TYPE_CHECKING

from rlmap.index.records import CLASS, METHOD, CallSite
from rlmap.index.summaries import dotted
from rlmap.literals import unparse
from rlmap.model.mro import derives_from
from rlmap.model.target import Target

if TYPE_CHECKING:
    from rlmap.model.resolve import Resolver

# How the resolver found a method on a class of known type (``unique-name`` is a guess by name).
TYPED = frozenset({"annotation", "assignment", "narrowed", "self", "override", "subclass", "super"})
Fact = tuple[str, frozenset[str], bool]  # subject text, class texts, whether it is an instance of one


def admitted(resolver: Resolver, site: CallSite, targets: list[Target], found: list[Target]) -> list[Target]:
    """The flow's callees ``found`` at ``site`` that agree with the resolver's ``targets`` and the
    site's ``isinstance`` guards."""
    if not found:
        return found
    kept = found
    anchors = _typed_owners(resolver, targets)
    if anchors:
        kept = [target for target in kept if _agrees(resolver, target, anchors, True)]
    method_receiver = site.callee_text.rpartition(".")[0]
    for subject, names, positive in guard_facts(site.guards):
        if subject == site.callee_text:  # the object called: its ``__call__``/``forward``
            affected = {"implicit"}
        elif subject == method_receiver:
            affected = {"flow", "implicit"}
        else:
            continue
        classes = _resolve_classes(resolver, site.caller, names)
        if classes is None:
            continue
        kept = [target for target in kept if target.how not in affected or _agrees(resolver, target, classes, positive)]
    return kept


def _typed_owners(resolver: Resolver, targets: list[Target]) -> frozenset[str]:
    """The classes whose method the resolver found through the receiver's known type."""
    owners = set()
    for target in targets:
        if target.how not in TYPED or target.external:
            continue
        symbol = resolver.symbols.get(target.qualname)
        if symbol is None or symbol.kind != METHOD:  # a property's value is what is called
            continue
        owner = target.qualname.rpartition(".")[0]
        if resolver.is_kind(owner, CLASS):
            owners.add(owner)
    return frozenset(owners)


def _agrees(resolver: Resolver, target: Target, classes: frozenset[str], positive: bool) -> bool:
    """Whether ``target`` may run: a method of a class that is (``positive``) or is not one of
    ``classes`` or a subclass; anything that is not a method of a class is left alone."""
    owner = target.qualname.rpartition(".")[0]
    if not resolver.is_kind(owner, CLASS):
        return True
    return derives_from(resolver.bases, owner, classes) == positive


def _resolve_classes(resolver: Resolver, scope: str, names: frozenset[str]) -> frozenset[str] | None:
    """Each class text as a qualname of the source or a dotted name outside it; ``None`` if one
    does not resolve."""
    module = resolver.module_of(scope)
    found = set()
    for name in names:
        parts = tuple(name.split("."))
        qualname = resolver.resolve_dotted(module, scope, parts)
        if qualname is not None:
            if not resolver.is_kind(qualname, CLASS):
                return None
            found.add(qualname)
            continue
        outside = resolver.external_name(module, scope, parts)
        if outside is None:
            return None
        found.add(outside)
    return frozenset(found)


def guard_facts(guards: tuple[str, ...]) -> list[Fact]:
    """What the guards in force say of ``isinstance``: (subject, classes, holds) for each test
    that is certain where the site runs (a conjunct of a test that held, or a test that failed)."""
    facts: list[Fact] = []
    for guard in guards:
        if "isinstance" not in guard:  # no test of it to find: not worth parsing
            continue
        facts.extend(_guard_facts(guard))
    return facts


@lru_cache(maxsize=4096)
def _guard_facts(guard: str) -> tuple[Fact, ...]:
    """What one guard says (a function of its text: parsed once for every site under it)."""
    expression, positive = _test(guard)
    if expression is None:
        return ()
    facts: list[Fact] = []
    _collect(expression, positive, facts)
    return tuple(facts)


def _test(guard: str) -> tuple[ast.expr | None, bool]:
    for prefix, positive in (
        ("if ", True),
        ("elif ", True),
        ("while ", True),
        ("not (", False),
        ("else (not (", False),
    ):
        if guard.startswith(prefix):
            text = guard[len(prefix) :]
            if not positive:
                text = text[: -(prefix.count("("))] if text.endswith(")" * prefix.count("(")) else ""
            try:
                return ast.parse(text.strip(), mode="eval").body, positive
            except (SyntaxError, ValueError):
                return None, True
    return None, True


def _collect(node: ast.expr, positive: bool, facts: list[Fact]) -> None:
    """``isinstance`` tests that hold (``positive``) or fail, read through ``not``, ``and`` (when
    the whole held) and ``or`` (when the whole failed)."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        _collect(node.operand, not positive, facts)
    elif isinstance(node, ast.BoolOp):
        if isinstance(node.op, ast.And) == positive:  # every operand has the whole's value
            for value in node.values:
                _collect(value, positive, facts)
    elif (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "isinstance"
        and len(node.args) == 2
        and not node.keywords
    ):
        names = _class_names(node.args[1])
        if names:
            facts.append((unparse(node.args[0]), names, positive))


def _class_names(node: ast.expr) -> frozenset[str]:
    elements = node.elts if isinstance(node, ast.Tuple) else [node]
    names = set()
    for element in elements:
        name = ".".join(dotted(element))
        if not name:
            return frozenset()
        names.add(name)
    return frozenset(names)
