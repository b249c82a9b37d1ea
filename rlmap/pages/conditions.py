"""Conditions from the code, evaluated under a configuration: does this branch run?

A configuration (declared in the profile) gives *facts*: the values of a few expressions as
the code writes them (``self.policy_device = None``, ``self.replay_buffer = ...``).  Everything
else an attribute of ``self`` holds is *derived* from where the code assigns it: each write of
the attribute whose own condition does not evaluate to false is evaluated in turn, and the
attribute is known when they all agree (``self._cast_to_policy_device = self.policy_device !=
self.env_device`` is False when both devices are None).  The answer is three-valued: True,
False, or :data:`UNKNOWN` ("depends"), never a guess.

Expressions are parsed with :mod:`ast` and only read: nothing is evaluated by Python.  Supported:
constants, names and attribute chains and calls looked up as facts, ``not``/``and``/``or``,
``is``/``is not``/``==``/``!=`` and orderings between known values, and truthiness.  A fact
written ``...`` stands for "an object": not None, true, equal to nothing else that is known.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from rlmap.index.records import WRITE
from rlmap.literals import unparse
from rlmap.model.codemodel import CodeModel


class _Unknown:
    __slots__ = ()

    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN: Any = _Unknown()
AN_OBJECT: Any = Ellipsis
_MAX_DEPTH = 8
_UNORDERED = 1 << 30  # the time of the writes ``__init__`` does not reach
_AFTER = 1 << 31  # the time a condition is evaluated: after every write


def normalize(text: str) -> str:
    """An expression's canonical spelling (``ast.unparse``), so facts match however they are spaced."""
    try:
        return unparse(ast.parse(text.strip(), mode="eval").body)
    except SyntaxError:
        return " ".join(text.split())


def parse_fact(text: str) -> Any:
    """A fact's value as written in the profile: a Python literal (``None``, ``True``, ``0``,
    ``'cpu'``, ``()``), ``...`` for an object, or ``?`` for a value the configuration does not
    decide (an inherited fact withdrawn: what depends on it "depends"); ``ValueError`` otherwise."""
    if text.strip() == "?":
        return UNKNOWN
    return ast.literal_eval(text.strip())


@dataclass(frozen=True, slots=True)
class Derivation:
    """Where a derived attribute's value came from: the writes that agree on it."""

    expression: str  # ``self._cast_to_env_device``
    value: Any
    writes: tuple[tuple[str, int, str], ...]  # (function, line, assigned expression)


@dataclass
class Evaluator:
    """Evaluates conditions written in the methods of ``owner`` under ``facts``.

    Attributes of ``self`` are derived in time order: the writes reached from ``owner.__init__``
    (following its calls to ``self`` methods, in line order) happen in that order, each one's
    value and condition evaluated with the attributes as they were at that moment; the writes in
    methods ``__init__`` does not reach come after, in an order the code does not fix (they
    must agree).  A condition is evaluated after all of them, as a method like ``rollout`` sees it.
    """

    model: CodeModel
    owner: str  # the class whose ``self`` the conditions talk about
    facts: Mapping[str, Any]
    derived: dict[str, Derivation] = field(default_factory=dict)
    _writes: dict[str, list[tuple[int, Any]]] | None = None  # attribute -> (time, access)
    _memo: dict[tuple[str, int], Any] = field(default_factory=dict)

    def condition(self, text: str) -> Any:
        """``text``'s truth when the owner's methods run: True, False or UNKNOWN."""
        return truth(self.value(text))

    def value(self, text: str, time: int = _AFTER, depth: int = 0) -> Any:
        try:
            node = ast.parse(text.strip(), mode="eval").body
        except SyntaxError:
            return UNKNOWN
        return self._eval(node, time, depth)

    # -- the evaluation ------------------------------------------------------------------------
    def _eval(self, node: ast.expr, time: int, depth: int) -> Any:
        if depth > _MAX_DEPTH:
            return UNKNOWN
        spelled = unparse(node)
        if spelled in self.facts:
            return self.facts[spelled]
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Tuple) and not node.elts:
            return ()
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            inner = truth(self._eval(node.operand, time, depth))
            return UNKNOWN if inner is UNKNOWN else not inner
        if isinstance(node, ast.BoolOp):
            return self._bool_op(node, time, depth)
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            left = self._eval(node.left, time, depth)
            return compare(node.ops[0], left, self._eval(node.comparators[0], time, depth))
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
            return self._derive(node.attr, time, depth)
        return UNKNOWN

    def _bool_op(self, node: ast.BoolOp, time: int, depth: int) -> Any:
        stop = isinstance(node.op, ast.Or)  # the value that decides an ``or`` (True) or an ``and`` (False)
        result: Any = not stop
        for operand in node.values:
            value = truth(self._eval(operand, time, depth))
            if value is stop:
                return stop
            if value is UNKNOWN:
                result = UNKNOWN
        return result

    def _derive(self, attribute: str, time: int, depth: int) -> Any:
        """``self.<attribute>`` just before ``time``, from its writes in time order."""
        memo_key = (attribute, time)
        if memo_key in self._memo:
            return self._memo[memo_key]
        self._memo[memo_key] = UNKNOWN  # a write that reads the attribute itself: unknown
        state: Any = UNKNOWN
        later: list[tuple[Any, Any]] = []  # (held, value) of the unordered writes after __init__
        used = []
        for when, access in self.writes().get(attribute, ()):
            if when >= time:
                break
            held = self.guards(access.guards, when, depth + 1)
            if held is False:
                continue
            value = self.value(access.value, when, depth + 1) if access.value else UNKNOWN
            used.append((access.function, access.line, access.value))
            if when == _UNORDERED:
                later.append((held, value))
            elif held is True:
                state = value
            elif not _same(state, value):
                state = UNKNOWN
        if later:
            values = [value for _, value in later]
            certain = any(held is True for held, _ in later)
            state = _agreed(values if certain else [state, *values])
        self._memo[memo_key] = state
        if time == _AFTER and state is not UNKNOWN:
            self.derived[f"self.{attribute}"] = Derivation(f"self.{attribute}", state, tuple(used))
        return state

    # -- when each write happens ---------------------------------------------------------------
    def writes(self) -> dict[str, list[tuple[int, Any]]]:
        """Attribute name -> its writes in the owner's classes, with the time each happens."""
        if self._writes is None:
            classes = ancestors(self.model, self.owner)
            by_function: dict[str, list[Any]] = {}
            for qualname in self.model.attribute_names():
                if qualname.rpartition(".")[0] in classes:
                    for access in self.model.attribute_accesses(qualname):
                        if access.kind == WRITE:
                            by_function.setdefault(access.function, []).append(access)
            times: dict[tuple[str, int], int] = {}
            init = self.model.find_member(self.owner, "__init__")
            if init is not None:
                self._timeline(init, by_function, classes, times, set())
            writes: dict[str, list[tuple[int, Any]]] = {}
            for function, accesses in by_function.items():
                for access in accesses:
                    when = times.get((function, access.line), _UNORDERED)
                    writes.setdefault(access.attribute, []).append((when, access))
            for rows in writes.values():
                rows.sort(key=lambda row: (row[0], row[1].function, row[1].line))
            self._writes = writes
        return self._writes

    def _timeline(
        self,
        function: str,
        by_function: dict[str, list[Any]],
        classes: set[str],
        times: dict[tuple[str, int], int],
        seen: set[str],
    ) -> None:
        """Number the writes of ``function`` and of the ``self`` methods it calls, in the order they run."""
        seen.add(function)
        events: list[tuple[int, int, Any]] = [(access.line, 1, access) for access in by_function.get(function, ())]
        for site in self.model.call_sites(function):
            if not site.callee_text.startswith("self."):
                continue
            for target, how in zip(site.targets, site.how, strict=False):
                if how != "override" and target.rpartition(".")[0] in classes:
                    events.append((site.line, 0, target))
        for line, order, item in sorted(events, key=lambda event: (event[0], event[1])):
            if order == 1:
                times[(function, line)] = len(times)
            elif item not in seen:
                self._timeline(item, by_function, classes, times, seen)

    def guards(self, guards: Iterable[str], time: int = _AFTER, depth: int = 0) -> Any:
        """The conjunction of the index's guard strings (``if c``, ``elif c``, ``else (not (c))``,
        ``while c``); a loop header counts as true, an exception handler as false."""
        result: Any = True
        for guard in guards:
            value = self.guard(guard, time, depth)
            if value is False:
                return False
            if value is UNKNOWN:
                result = UNKNOWN
        return result

    def guard(self, guard: str, time: int = _AFTER, depth: int = 0) -> Any:
        """One guard as the index writes it: ``if c``, ``elif c``, ``while c``, ``else (not (c))``,
        ``not (c)`` (an earlier branch failed), ``for ...``, ``else of for ... (no break)``, ``except K``."""
        word, _, rest = guard.partition(" ")
        if word in ("if", "elif", "while"):
            return truth(self.value(rest, time, depth))
        if guard.startswith("else of "):
            return UNKNOWN  # a loop's ``else``: runs when no ``break`` ran
        if word == "else":
            return truth(self.value(rest, time, depth))
        if word == "except":
            return False  # the normal path: no exception
        if word == "for":
            return True
        return truth(self.value(guard, time, depth))


def ancestors(model: CodeModel, cls: str) -> set[str]:
    """``cls`` and every class it inherits from, in the package."""
    found = {cls}
    stack = [cls]
    while stack:
        for base in model.bases.get(stack.pop(), ()):
            if base not in found:
                found.add(base)
                stack.append(base)
    return found


def _agreed(values: list[Any]) -> Any:
    if not values or any(value is UNKNOWN for value in values):
        return UNKNOWN
    first = values[0]
    return first if all(_same(first, value) for value in values[1:]) else UNKNOWN


def _same(a: Any, b: Any) -> bool:
    return a is not AN_OBJECT and b is not AN_OBJECT and type(a) is type(b) and a == b


def truth(value: Any) -> Any:
    """Python truthiness of a known value; ``...`` (an object) is true."""
    if value is UNKNOWN:
        return UNKNOWN
    if value is AN_OBJECT:
        return True
    try:
        return bool(value)
    except Exception:
        return UNKNOWN


def compare(op: ast.cmpop, left: Any, right: Any) -> Any:
    if left is UNKNOWN or right is UNKNOWN:
        return UNKNOWN
    if isinstance(op, (ast.Is, ast.IsNot)):
        if left is None or right is None or (isinstance(left, bool) and isinstance(right, bool)):
            same = left is right
        else:
            return UNKNOWN
        return same if isinstance(op, ast.Is) else not same
    if isinstance(op, (ast.Eq, ast.NotEq)):
        if left is AN_OBJECT or right is AN_OBJECT:
            if left is None or right is None:
                return isinstance(op, ast.NotEq)
            return UNKNOWN
        equal = left == right
        return equal if isinstance(op, ast.Eq) else not equal
    if left is AN_OBJECT or right is AN_OBJECT:
        return UNKNOWN
    operations = {ast.Lt: "__lt__", ast.LtE: "__le__", ast.Gt: "__gt__", ast.GtE: "__ge__"}
    method = operations.get(type(op))
    if method is None or type(left) is not type(right) or not isinstance(left, (int, float, str)):
        return UNKNOWN
    return getattr(left, method)(right)


# -- condition text ----------------------------------------------------------------------------


def negated(text: str) -> str:
    """``not text``, written simply: ``not x`` for a name, ``x`` for ``not x``, ``a is None`` for
    ``a is not None``."""
    try:
        node = ast.parse(text, mode="eval").body
    except SyntaxError:
        return f"not ({text})"
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return unparse(node.operand)
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        opposite = {
            ast.Is: ast.IsNot,
            ast.IsNot: ast.Is,
            ast.Eq: ast.NotEq,
            ast.NotEq: ast.Eq,
            ast.In: ast.NotIn,
            ast.NotIn: ast.In,
        }
        flipped = opposite.get(type(node.ops[0]))
        if flipped is not None:
            return unparse(ast.Compare(node.left, [flipped()], node.comparators))
    return f"not {grouped(text)}"


def grouped(text: str) -> str:
    try:
        node = ast.parse(text, mode="eval").body
    except SyntaxError:
        return f"({text})"
    return text if isinstance(node, (ast.Name, ast.Attribute, ast.Call, ast.Subscript)) else f"({text})"


def joined(*conditions: str) -> str:
    parts = [c for c in conditions if c]
    if len(parts) <= 1:
        return parts[0] if parts else ""
    return " and ".join(grouped(part) if " or " in part else part for part in parts)
