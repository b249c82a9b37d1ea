"""Constant values of tensordict key expressions: the keys ``init_key``, ``self.done_key`` or
``self.out_keys[1]`` can hold.

:class:`KeyConstants` is the layer of :class:`rlmap.model.resolve.Resolver` that turns a key written
as an expression into the key constants that reach it.  It evaluates, with :mod:`ast` and never
running anything, the expressions that build keys and key lists:

- string literals and tuples of them (``("next", "recurrent_state_h")`` is one key), and tuples
  of strings and names (``(prefix, "traj_ids")``: one nested key per string the names hold);
- lists and tuples of keys, with ``*`` splices and ``+`` (``[in_key, *self.DEFAULT_IN_KEYS]``),
  the position of each element kept while it is known, so that ``self.in_keys[1]`` is the key
  at index 1;
- locals bound to such values, loops over them (``for key, default in zip(self.in_keys, d)``,
  comprehensions included), ``x if c else y`` and ``x or y``;
- ``self.<attr>`` and ``cls.<attr>``: every value assigned to the attribute (in any method) or
  declared in the class body, searched along the class hierarchy (C3 order);
- the functions that give back the keys they are given (``unravel_key_list``, ``list``; the
  vocabulary's ``key_functions``), and a call to a function of the package that builds its
  result from its parameters: each ``return`` evaluated with the arguments' keys, under
  ``if isinstance(key, str)`` (or its ``else``) only for the keys that fit, when they are known
  (``_replace_last(("next", "truncated"), "done")`` is ``("next", "done")``).

Flow-insensitive: a name holds every value any of its assignments gives it.  An element at an
unknown position (after a splice of an unknown list) is still one of the list's keys, but no
index reaches it.  A parameter without a default, or anything else, holds nothing known.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from collections.abc import Iterable, Iterator
from typing import Any

from rlmap.index.records import ATTRIBUTE, FUNCTION, ITEMS, ModuleIndex, ReturnSite
from rlmap.index.summaries import dotted
from rlmap.index.syntax import MAPPINGS
from rlmap.index.vocabulary import EXTENSIONS
from rlmap.literals import unparse
from rlmap.model.mro import first_in_mro
from rlmap.model.symbols import SymbolTable

Key = tuple[str, ...]
Element = tuple[Key, ...]  # the keys one position of a list may hold, sorted; () when unknown
# ("key", key) or ("seq", known prefix (one Element per position), keys at unknown positions, closed)
Value = tuple[Any, ...]

_ALTERNATIVES = 8  # list values kept per expression (the first in sorted order)
_DEPTH = 16  # expressions nested deeper than this hold nothing known
_ROUNDS = 3  # rounds of a local that refers to itself (each may grow its lists)
_KEY_FUNCTIONS = frozenset(name for vocabulary in EXTENSIONS.values() for name in vocabulary.key_functions)
_CLASS_RECEIVERS = ("cls", "type(self)", "self.__class__")


class KeyConstants(SymbolTable):
    """Key constants of key expressions, from literals, key lists and ``self.<attr>`` assignments."""

    def __init__(self, modules: Iterable[ModuleIndex]) -> None:
        super().__init__(modules)
        self._attribute_memo: dict[str, dict[str, Any]] = defaultdict(dict)
        self._active: set[tuple[str, str]] = set()
        self._partial: dict[tuple[str, str], tuple[Value, ...]] = {}
        self._parsed: dict[str, ast.expr | None] = {}
        self._returns_memo: dict[str, tuple[ReturnSite, ...]] = {}
        self._loops: tuple[str, ...] = ()  # the guards of the access whose key is evaluated (key_values)

    def key_values(self, function: str, expression: str, guards: tuple[str, ...] = ()) -> tuple[Key, ...]:
        """The keys a key expression (``init_key``, ``self.done_key``, ``self.out_keys[1]``) can
        hold, in an access under ``guards`` (a name looped over a literal list holds its elements
        only under that loop)."""
        node = self._parse(expression)
        if node is None:
            return ()
        keys: set[Key] = set()
        self._loops = guards
        try:
            for value in self._evaluate(node, function, 0):
                keys.update(members(value))
        finally:
            self._loops = ()
        return tuple(sorted(keys))

    # -- expressions ---------------------------------------------------------------------
    def _parse(self, text: str) -> ast.expr | None:
        if text not in self._parsed:
            try:
                self._parsed[text] = ast.parse(text, mode="eval").body
            except (SyntaxError, ValueError, MemoryError, RecursionError):
                self._parsed[text] = None
        return self._parsed[text]

    def _evaluate(self, node: ast.expr, function: str, depth: int) -> tuple[Value, ...]:
        """The values ``node`` may hold inside ``function``, sorted, at most ``_ALTERNATIVES`` lists."""
        if depth > _DEPTH:
            return ()
        found = set(self._values(node, function, depth + 1))
        keys = sorted(value for value in found if value[0] == "key")
        lists = sorted(value for value in found if value[0] == "seq")[:_ALTERNATIVES]
        return (*keys, *lists)

    def _values(self, node: ast.expr, function: str, depth: int) -> Iterator[Value]:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield ("key", (node.value,))
        elif isinstance(node, ast.Tuple) and node.elts and all(_is_string(element) for element in node.elts):
            yield ("key", tuple(element.value for element in node.elts))  # type: ignore[attr-defined]
        elif isinstance(node, ast.Tuple) and any(_is_string(element) for element in node.elts):
            yield from self._nested(node.elts, function, depth)
        elif isinstance(node, (ast.List, ast.Tuple)):
            yield from self._sequence(node.elts, function, depth)
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            lefts = [value for value in self._evaluate(node.left, function, depth) if value[0] == "seq"]
            rights = [value for value in self._evaluate(node.right, function, depth) if value[0] == "seq"]
            for left in lefts:
                for right in rights:
                    yield concatenate(left, right)
        elif isinstance(node, ast.Name):
            yield from self._name(node.id, function, depth)
        elif isinstance(node, ast.Attribute):
            cls = self._receiver_class(node.value, function) or self._holder_class(node.value, function)
            if cls:
                yield from self.attribute_values(cls, node.attr)
        elif isinstance(node, ast.Subscript):
            yield from self._subscript(node, function, depth)
        elif isinstance(node, ast.Call):
            if _callee_name(node.func) in _KEY_FUNCTIONS and len(node.args) == 1 and not node.keywords:
                yield from self._evaluate(node.args[0], function, depth)
            else:
                yield from self._returned_keys(node, function, depth)
        elif isinstance(node, ast.IfExp):
            yield from self._evaluate(node.body, function, depth)
            yield from self._evaluate(node.orelse, function, depth)
        elif isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or):
            for operand in node.values:
                yield from self._evaluate(operand, function, depth)

    def plain_mapping(self, function: str, receiver: str) -> bool:
        """Whether ``receiver`` is, in ``function``, a local or parameter declared or made as a
        plain mapping (``info: dict``, ``d = dict(...)``): its items are no tensordict's keys."""
        binding = self.locals.get(function, {}).get(receiver)
        if binding is None or binding[1] not in ("annotation", "assignment") or not binding[0]:
            return False
        text = binding[0][-1] if binding[1] == "assignment" else binding[0][0]
        head = text.split("[", 1)[0].strip().rsplit(".", 1)[-1]
        return head in MAPPINGS

    def _returned_keys(self, call: ast.Call, function: str, depth: int) -> Iterator[Value]:
        """The keys ``call`` gives back when its callee, a function of the package, builds its
        result from its arguments: each ``return`` evaluated with the parameters bound to the
        keys of the arguments (``_replace_last(key, new)``: ``new`` where ``key`` is a string,
        ``key[:-1] + (new,)`` where it is not, so ``("next", "truncated")`` gives
        ``("next", "done")``).  A ``return`` under ``if isinstance(p, str)`` (or its ``else``)
        takes only the one-part (or only the nested) keys of ``p``, when they are known."""
        parts = dotted(call.func)
        if not parts:
            return
        callee = self.resolve_dotted(self.module_of(function), function, parts)
        symbol = self.symbols.get(callee) if callee else None
        if symbol is None or symbol.kind != FUNCTION or any(n.startswith("*") for n, _ in symbol.params):
            return
        if any(isinstance(argument, ast.Starred) for argument in call.args) or any(
            keyword.arg is None for keyword in call.keywords
        ):
            return
        names = [name for name, _ in symbol.params]
        given: dict[str, ast.expr] = dict(zip(names, call.args, strict=False))
        given.update((keyword.arg, keyword.value) for keyword in call.keywords if keyword.arg in names)
        bound: dict[str, tuple[Key, ...]] = {}
        for site in self._returns_of(symbol.qualname):
            node = self._parse(site.value) if site.value else None
            if node is None:
                continue
            needed = _names_in(node) & set(names)
            tests = [(name, one_part) for name, one_part in _string_tests(site.guards) if name in given]
            if not needed or not needed <= set(given):
                continue
            for name in (needed | {name for name, _ in tests}) - set(bound):
                found = {key for value in self._evaluate(given[name], function, depth) for key in members(value)}
                bound[name] = tuple(sorted(found))
            environment = dict(bound)
            # a branch for a string (or not) is taken only by such keys, when the keys are known
            # (``for done_key in self.done_keys``, not known: ``_replace_last(done_key, "is_init")``
            # may still be ``"is_init"``)
            tests = [(name, one_part) for name, one_part in tests if environment[name]]
            for name, one_part in tests:
                environment[name] = tuple(key for key in environment[name] if (len(key) == 1) == one_part)
            if any(not environment[name] for name, _ in tests):
                continue
            for key in _built(node, environment):
                yield ("key", key)

    def _returns_of(self, qualname: str) -> tuple[ReturnSite, ...]:
        if qualname not in self._returns_memo:
            module = self.modules.get(self.module_of(qualname))
            self._returns_memo[qualname] = (
                tuple(site for site in module.returns if site.function == qualname) if module else ()
            )
        return self._returns_memo[qualname]

    def _nested(self, elements: list[ast.expr], function: str, depth: int) -> Iterator[Value]:
        """``(prefix, "traj_ids")``, ``("next", self.reward_key)``: a tuple of a string and names is
        one nested key, a name standing for each one-part key it holds (every combination, the
        first ``_ALTERNATIVES``).  A name holding anything else (a list, a nested key, nothing
        known) leaves the key unknown: never the tuple's parts taken as keys of their own."""
        built: list[Key] = [()]
        for element in elements:
            if _is_string(element):
                parts: list[str] = [element.value]  # type: ignore[attr-defined]
            else:
                values = self._evaluate(element, function, depth)
                if not values or any(value[0] != "key" or len(value[1]) != 1 for value in values):
                    return
                parts = sorted(value[1][0] for value in values)
            built = sorted({(*head, part) for head in built for part in parts})[:_ALTERNATIVES]
        for key in built:
            yield ("key", key)

    def _sequence(self, elements: list[ast.expr], function: str, depth: int) -> Iterator[Value]:
        """``[a, *b, c]``: one list value per combination of the spliced lists' values."""
        built: list[Value] = [("seq", (), (), True)]
        for element in elements:
            if isinstance(element, ast.Starred):
                spliced = [value for value in self._evaluate(element.value, function, depth) if value[0] == "seq"]
                tail = spliced or [("seq", (), (), False)]  # an unknown list: what follows has no known index
                built = sorted({concatenate(head, part) for head in built for part in tail})[:_ALTERNATIVES]
            else:
                keys = {value[1] for value in self._evaluate(element, function, depth) if value[0] == "key"}
                held = tuple(sorted(keys))
                built = [concatenate(head, ("seq", (held,), (), True)) for head in built]
        yield from built

    def _subscript(self, node: ast.Subscript, function: str, depth: int) -> Iterator[Value]:
        index = node.slice
        negative = isinstance(index, ast.UnaryOp) and isinstance(index.op, ast.USub)
        if negative:
            index = index.operand  # type: ignore[attr-defined]
        if not (isinstance(index, ast.Constant) and type(index.value) is int):
            return
        position = -index.value if negative else index.value
        for value in self._evaluate(node.value, function, depth):
            if value[0] == "seq":
                for key in element_at(value, position):
                    yield ("key", key)

    def _name(self, name: str, function: str, depth: int) -> Iterator[Value]:
        """The values of a local: its bindings, to a fixed point when one refers to the local
        itself (``in_keys = in_keys + ["is_init"]``), in at most ``_ROUNDS`` rounds."""
        guard = (function, name)
        if guard in self._partial:
            yield from self._partial[guard]  # inside its own binding: what is known so far
            return
        self._partial[guard] = ()
        try:
            for _ in range(_ROUNDS):
                found = self._bound_values(name, function, depth)
                if found == self._partial[guard]:
                    break
                self._partial[guard] = found
            yield from self._partial[guard]
        finally:
            del self._partial[guard]

    def _bound_values(self, name: str, function: str, depth: int) -> tuple[Value, ...]:
        cls = self.self_name(function)[1]
        found: set[Value] = set()
        for binding in self.key_bindings.get(function, {}).get(name, ()):
            if binding.how == "literal":
                found.add(("key", (binding.parts[0],)))
            elif binding.how == "alias" and cls:
                found.update(self.attribute_values(cls, binding.parts[1]))
            elif binding.how == "loop" and cls:
                found.update(self._loop_values(cls, binding.parts[1]))
            elif binding.how == "each" and len(binding.parts) == 1:
                for value in self._name(binding.parts[0], function, depth + 1):
                    found.update(("key", key) for key in members(value))
            elif binding.how == ITEMS and (not binding.parts[1] or binding.parts[1] in self._loops):
                node = self._parse(binding.parts[0])  # (a loop's own list, in the accesses under it)
                for value in self._evaluate(node, function, depth + 1) if node is not None else ():
                    found.update(("key", key) for key in members(value))
            elif binding.how == "each":
                found.update(self._zipped(binding.parts[0], int(binding.parts[1]), function, depth))
            elif binding.how == "value":
                node = self._parse(binding.parts[0])
                if node is not None:
                    found.update(self._evaluate(node, function, depth))
        keys = sorted(value for value in found if value[0] == "key")
        return (*keys, *sorted(value for value in found if value[0] == "seq")[:_ALTERNATIVES])

    def _zipped(self, text: str, position: int, function: str, depth: int) -> Iterator[Value]:
        """The keys at ``position`` of ``zip(a, b, ...)``'s items: the elements of that argument,
        as far as the shortest argument of known length goes."""
        node = self._parse(text)
        if not isinstance(node, ast.Call) or position >= len(node.args):
            return
        arguments = [self._evaluate(argument, function, depth) for argument in node.args]
        bounds = []  # an argument's length is at most its longest value's, when every length is known
        for values in arguments:
            sizes = [length(value) for value in values if value[0] == "seq"]
            if sizes and None not in sizes:
                bounds.append(max(size for size in sizes if size is not None))
        limit = min(bounds) if bounds else None  # zip stops at the shortest argument
        for value in arguments[position]:
            if value[0] != "seq":
                continue
            _, prefix, rest, _ = value
            kept = prefix if limit is None else prefix[:limit]
            yield from (("key", key) for element in kept for key in element)
            if limit is None or limit > len(prefix):
                yield from (("key", key) for key in rest)

    def _loop_values(self, cls: str, attribute: str) -> Iterator[Value]:
        """``for init_key in self.init_keys``: the keys of ``init_keys``, else of ``init_key``."""
        found = [("key", key) for value in self.attribute_values(cls, attribute) for key in members(value)]
        if not found and attribute.endswith("s"):
            found = list(self.attribute_values(cls, attribute[:-1]))  # init_keys built from init_key
        yield from found

    def _receiver_class(self, node: ast.expr, function: str) -> str:
        """The class whose attribute ``self.x`` / ``cls.x`` / ``type(self).x`` reads inside ``function``."""
        self_name, cls = self.self_name(function)
        if not cls:
            return ""
        if isinstance(node, ast.Name) and node.id in (self_name, "cls"):
            return cls
        return cls if unparse(node) in _CLASS_RECEIVERS else ""

    def _holder_class(self, node: ast.expr, function: str) -> str:
        """The class of the object ``self.x`` holds, for a key read from it (``self.tensor_keys.reward``:
        ``tensor_keys`` holds a key-name object whose fields declare the default names)."""
        if not isinstance(node, ast.Attribute):
            return ""
        cls = self._receiver_class(node.value, function)
        return self.held_class(cls, node.attr) if cls else ""

    def held_class(self, cls: str, attribute: str) -> str:
        """The class of the package whose instance ``self.<attribute>`` holds in ``cls`` (the
        resolver's type inference: :meth:`rlmap.model.resolve.Resolver.held_class`); ``""`` here."""
        del cls, attribute
        return ""

    # -- attributes ----------------------------------------------------------------------
    def attribute_values(self, cls: str, attribute: str) -> tuple[Value, ...]:
        """Values assigned to ``self.<attribute>`` (or declared in the class body), first owner in C3 order."""
        guard = (cls, "." + attribute)
        if guard in self._active:
            return ()
        self._active.add(guard)
        try:
            found = first_in_mro(
                self.bases, cls, self._attribute_memo[attribute], lambda owner: self._own_values(owner, attribute)
            )
        finally:
            self._active.discard(guard)
        return found or ()

    def _own_values(self, owner: str, attribute: str) -> tuple[Value, ...] | None:
        """The values ``owner`` itself gives ``attribute``; ``None`` when it assigns none known."""
        values: set[Value] = set()
        declared = self.members.get(owner, {}).get(attribute)
        if declared is not None and declared.kind == ATTRIBUTE and declared.value:
            node = self._parse(declared.value)
            if node is not None:
                values.update(self._evaluate(node, owner, 0))
        for access in self.attribute_writes.get((owner, attribute), ()):
            node = self._parse(access.value) if access.value else None
            if node is not None:
                values.update(self._evaluate(node, access.function, 0))
        return tuple(sorted(values)) if values else None


_STRING_TEST = re.compile(r"^(?:(?:if|elif) isinstance\((\w+), str\)|else \(not \(isinstance\((\w+), str\)\)\))$")


def _string_tests(guards: tuple[str, ...]) -> Iterator[tuple[str, bool]]:
    """(parameter, whether it is a string) for each guard ``if isinstance(p, str)`` (or its ``else``)."""
    for guard in guards:
        match = _STRING_TEST.match(guard)
        if match:
            yield (match.group(1), True) if match.group(1) else (match.group(2), False)


def _names_in(node: ast.expr) -> set[str]:
    return {child.id for child in ast.walk(node) if isinstance(child, ast.Name)}


def _built(node: ast.expr, environment: dict[str, tuple[Key, ...]], depth: int = 0) -> list[Key]:
    """The keys a ``return`` expression builds from its parameters' keys: a parameter, a string,
    a tuple of them (one nested key), ``p[:-1]`` / ``p[-1]`` of a key, and ``+`` of two (tuples
    joined; two strings joined into one); ``[]`` for anything else (at most ``_ALTERNATIVES``)."""
    if depth > _DEPTH:
        return []
    if isinstance(node, ast.Name):
        return list(environment.get(node.id, ()))
    if _is_string(node):
        return [(node.value,)]  # type: ignore[attr-defined]
    if isinstance(node, ast.Tuple) and node.elts:
        built: list[Key] = [()]
        for element in node.elts:
            parts = _built(element, environment, depth + 1)
            if not parts:
                return []
            built = sorted({(*head, *part) for head in built for part in parts})[:_ALTERNATIVES]
        return built
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
        keys = environment.get(node.value.id, ())
        index = node.slice
        if isinstance(index, ast.Slice) and index.lower is None and index.step is None:
            cut = _negative(index.upper)
            return sorted({key[:-cut] for key in keys if cut and len(key) > cut})
        position = _negative(index)
        return sorted({(key[-position],) for key in keys if position and position <= len(key)})
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        lefts, rights = _built(node.left, environment, depth + 1), _built(node.right, environment, depth + 1)
        sliced = isinstance(node.left, ast.Subscript) and isinstance(node.left.slice, ast.Slice)
        joined_as_tuples = isinstance(node.right, ast.Tuple) or isinstance(node.left, ast.Tuple) or sliced
        if joined_as_tuples:
            return sorted({(*left, *right) for left in lefts for right in rights})[:_ALTERNATIVES]
        joined: set[Key] = {(left[0] + right[0],) for left in lefts for right in rights if len(left) == len(right) == 1}
        return sorted(joined)[:_ALTERNATIVES]
    return []


def _negative(node: ast.expr | None) -> int:
    """``n`` of a literal ``-n`` (a positive integer), else 0."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
        value = node.operand.value
        return value if type(value) is int and value > 0 else 0
    return 0


def _is_string(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def _callee_name(node: ast.expr) -> str:
    return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""


def members(value: Value) -> tuple[Key, ...]:
    """Every key a value holds: the key itself, or each key of a list (at any position)."""
    if value[0] == "key":
        return (value[1],)
    _, prefix, rest, _ = value
    return tuple(sorted({key for element in prefix for key in element} | set(rest)))


def concatenate(left: Value, right: Value) -> Value:
    """``left + right`` for two list values: positions stay known while ``left`` is closed."""
    _, prefix, rest, closed = left
    _, right_prefix, right_rest, right_closed = right
    if closed:
        return ("seq", prefix + right_prefix, right_rest, right_closed)
    moved = {key for element in right_prefix for key in element}
    return ("seq", prefix, tuple(sorted(set(rest) | moved | set(right_rest))), False)


def length(value: Value) -> int | None:
    """How many elements a list value has, when every position is known."""
    _, prefix, rest, closed = value
    return len(prefix) if closed and not rest else None


def element_at(value: Value, position: int) -> Element:
    """The keys at ``position`` of a list value; () when the position is not known."""
    _, prefix, rest, closed = value
    if 0 <= position < len(prefix):
        return prefix[position]  # type: ignore[no-any-return]
    if position < 0 and closed and not rest and -position <= len(prefix):
        return prefix[position]  # type: ignore[no-any-return]
    return ()
