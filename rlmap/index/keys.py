"""Key accesses: ``td.get("k")``, ``td["k"] = v``, ``in_keys=[...]``, ``"k" in td.keys()``.

What counts as a key access is the enabled :class:`~rlmap.index.vocabulary.KeyVocabulary`
(an extension a profile turns on); with none enabled, :class:`KeyVisitor` records nothing but
still walks every node and takes every position, so the rest of the index is the same.
"""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

from rlmap.index import lines as L
from rlmap.index.records import CHECK, CLASS, HANDED, ON_COPY, READ, RESULT_HANDED, WRITE, KeyAccess, LocalBinding
from rlmap.index.syntax import compact_text, dotted_parts, literal_strings, quoted, string_value
from rlmap.index.walker import Walker


def key_literal(node: cst.BaseExpression) -> tuple[str, ...] | None:
    """A key written as a literal: ``"k"`` or ``("a", "b")``."""
    text = string_value(node)
    if text is not None:
        return (text,)
    if isinstance(node, cst.Tuple) and node.elements:
        return literal_strings(node)
    return None


def key_list(node: cst.BaseExpression) -> list[tuple[str, ...]]:
    """Keys in an ``in_keys=`` value: one key, or a list/tuple of keys."""
    single = key_literal(node)
    if single is not None and (len(single) == 1 or not isinstance(node, cst.Tuple)):
        return [single]
    if isinstance(node, (cst.List, cst.Tuple)):
        keys = []
        for element in node.elements:
            if isinstance(element, cst.Element):
                key = key_literal(element.value)
                if key is not None:
                    keys.append(key)
        if keys:
            return keys
    return [single] if single is not None else []


_CALL_ARGUMENTS = 4  # a call with more arguments is no key builder the model follows


def source_given(node: cst.Call) -> cst.BaseExpression | None:
    """What a constructor call is made from: its first positional argument, or ``source=``."""
    given = next((arg.value for arg in node.args if arg.keyword is None and not arg.star), None)
    for arg in node.args:
        if arg.keyword is not None and arg.keyword.value == "source":
            given = arg.value
    return given


def dict_given(node: cst.BaseExpression) -> cst.Dict | None:
    """The dict literal a constructor call is given (:func:`source_given`), if it is one."""
    given = source_given(node) if isinstance(node, cst.Call) else None
    return given if isinstance(given, cst.Dict) else None


def _builds_from_keywords(func: cst.BaseExpression) -> bool:
    """Whether a call's ``**d`` may become the fields or keys of what it makes: a class, by its
    CapWords name (``Composite``, ``History``), or ``cls``; not a function (``f(**kwargs)``) nor
    ``type(self)(**kwargs)``, which rebuilds an object from its constructor's arguments."""
    parts = dotted_parts(func)
    return bool(parts) and (parts[-1] == "cls" or parts[-1][:1].isupper())


def _names_one_key(node: cst.BaseExpression) -> bool:
    """Whether an index is a name, or ``self``'s attribute, named for one key (``traj_key``,
    ``self.done_key``, ``key``)."""
    parts = dotted_parts(node)
    return bool(parts) and (parts[-1] == "key" or parts[-1].endswith("_key"))


def _raw_key(key: tuple[str, ...]) -> str:
    """What a key's line holds for sure: its last string (``traj_ids`` of the tuple key)."""
    return key[-1]


def _receiver_text(node: cst.BaseExpression) -> str:
    """The object a key is accessed on, short: ``td``, ``self.td``, ``out["next"]`` -> ``out[...]``;
    any other expression (``(td or other)``) is ``<expression>``: never empty, which only a
    declared key is (``in_keys = [...]``)."""
    return compact_text(node, "<expression>")


class KeyVisitor(Walker):
    """Records key accesses under ``self.vocabulary``; handles subscripts and comparisons."""

    def add_key(
        self, key: tuple[str, ...], kind: str, line: int, how: str, expression: str = "", receiver: str = ""
    ) -> None:
        function = self.function_scope()
        self.keys.append(KeyAccess(key, kind, function, line, how, tuple(self.guards), expression, receiver))

    def on_copy(self, receiver: Sequence[str], how: str) -> str:
        """``how`` of a write into a local bound to a copy (``x = td.select(...)``): said so."""
        if len(receiver) == 1 and receiver[0] in self.copies.get(self.function_scope(), ()):
            return how + ON_COPY
        return how

    def add_symbolic_key(self, node: cst.BaseExpression, kind: str, line: int, how: str, receiver: str = "") -> None:
        """A key held by a local name or a ``self`` attribute, or an element of one at a constant
        index (``self.out_keys[1]``), or a nested key of strings and such names (``("next",
        prefix)``): resolved later by the model."""
        nested = self.nested_expression(node) if isinstance(node, cst.Tuple) else ""
        if nested:
            self.add_key((), kind, line, how, nested, receiver)
            return
        called = self.call_expression(node) if isinstance(node, cst.Call) else ""
        if called:  # ``td.get(_replace_last(key, "done"))``: what the function builds, the model says
            self.add_key((), kind, line, how, called, receiver)
            return
        index = ""
        if isinstance(node, cst.Subscript) and len(node.slice) == 1:
            element = node.slice[0].slice
            number = element.value if isinstance(element, cst.Index) else None
            sign = ""
            if isinstance(number, cst.UnaryOperation) and isinstance(number.operator, cst.Minus):
                sign, number = "-", number.expression
            if not isinstance(number, cst.Integer):
                return
            index = f"[{sign}{number.value}]"
            node = node.value
        parts = dotted_parts(node)
        if self.resolvable(parts):
            self.add_key((), kind, line, how, ".".join(parts) + index, receiver)

    def nested_expression(self, node: cst.Tuple | Sequence[cst.BaseExpression]) -> str:
        """``("next", prefix)`` as text, when the tuple holds a string and the rest are strings or
        names the model can resolve (a local, ``self.x``); ``""`` otherwise."""
        elements = [element.value for element in node.elements] if isinstance(node, cst.Tuple) else list(node)
        texts = []
        for element in elements:
            text = string_value(element)
            if text is not None:
                texts.append(quoted(text))
                continue
            called = self.call_expression(element) if isinstance(element, cst.Call) else ""
            if called:  # ``("next", _replace_last(key, "done"))``
                texts.append(called)
                continue
            parts = dotted_parts(element)
            if not self.resolvable(parts):
                return ""
            texts.append(".".join(parts))
        strings = [text[:1] in "'\"" for text in texts]
        if len(elements) < 2 or all(strings) or not any(strings):
            return ""
        return f"({', '.join(texts)})"

    def is_dict_constructor(self, node: cst.BaseExpression) -> bool:
        """Whether ``node`` calls one of the vocabulary's ``dict_constructors`` (``TensorDict(...)``)."""
        if not isinstance(node, cst.Call) or self.vocabulary is None:
            return False
        called = dotted_parts(node.func)
        return bool(called) and called[-1] in self.vocabulary.dict_constructors

    def call_expression(self, node: cst.Call) -> str:
        """``_replace_last(key, "done")`` as text, when the function is named (``f``, ``m.f``) and
        each argument is a string, a tuple of strings, or a name the model can resolve (a local,
        ``self.x``), positional or by keyword; ``""`` otherwise.  The model evaluates what the
        function returns for them (:mod:`rlmap.model.constants`)."""
        called = dotted_parts(node.func)
        if not called or len(node.args) > _CALL_ARGUMENTS:
            return ""
        texts = []
        for arg in node.args:
            if arg.star:
                return ""
            shown = self.key_text(arg.value)
            if not shown:
                return ""
            texts.append(f"{arg.keyword.value}={shown}" if arg.keyword is not None else shown)
        return f"{'.'.join(called)}({', '.join(texts)})"

    def record_declared_keys(self, target: cst.BaseExpression, value: cst.BaseExpression, line: int) -> None:
        """``in_keys = [...]``, ``self.out_keys = [...]``, ``DEFAULT_IN_KEYS = [...]``: declared keys."""
        parts = dotted_parts(target)
        if self.vocabulary is None or not parts:
            return
        kind = self.vocabulary.declared_kind(parts[-1])
        if kind:
            owner = self.scope.qualname if self.scope.kind == CLASS else self.function_scope()
            for key in key_list(value):
                self.keys.append(KeyAccess(key, kind, owner, line, parts[-1], tuple(self.guards)))

    def record_call_keys(self, node: cst.Call, line: int, start: int, end: int) -> None:
        """Keys a call names: the key arguments of ``td.get(...)``, and ``in_keys=`` keywords."""
        vocabulary = self.vocabulary
        if vocabulary is None:
            return
        func = node.func
        if type(func) is cst.Attribute and func.attr.value in vocabulary.methods:  # type: ignore[attr-defined]
            self.key_method(func, node.args, line, start, end, self.changed_in_place(node))
        for arg in node.args:
            keyword = arg.keyword.value if arg.keyword is not None else ""
            kind = vocabulary.keywords.get(keyword)
            if kind is not None:
                for key in key_list(arg.value):
                    self.add_key(key, kind, self.line_holding(_raw_key(key), start, end), keyword)
        if self.is_dict_constructor(node):
            self.constructor_keys(node, dotted_parts(func)[-1], start, end)
            self.record_handed(source_given(node), dotted_parts(func)[-1])
        for arg in node.args:
            # ``f(**kwargs)`` reads the dict's items as arguments; a class may keep them as its
            # fields or keys (``Composite(**specs)``, a tensorclass's ``cls(**fields)``)
            if arg.star != "**" or _builds_from_keywords(func):
                self.let_escape(arg.value)

    def record_handed(self, given: cst.BaseExpression | None, how: str) -> None:
        """The locals a tensordict is made from: ``TensorDict(obs_dict, ...)``, or spread into the
        dict it is given (``TensorDict({**obs, "done": d})``).  The items written into them are
        the tensordict's keys, even where they are plain dicts (see
        :meth:`rlmap.model.resolve.Resolver.plain_container`).  (Not ``x.update(d)``: most often
        ``self.__dict__.update(state)`` or a dict of keyword arguments.)"""
        names: list[cst.BaseExpression] = [given] if given is not None else []
        if isinstance(given, cst.Dict):
            names = [element.value for element in given.elements if isinstance(element, cst.StarredDictElement)]
        for name in names:
            if isinstance(name, cst.Name):
                self.locals.append(LocalBinding(self.function_scope(), name.value, (how,), HANDED))
            elif isinstance(name, cst.Call) and dotted_parts(name.func):
                # ``TensorDict(self._obs_dict(), ...)``: the dict the function called returns
                called = dotted_parts(name.func)
                self.locals.append(LocalBinding(self.function_scope(), called[-1], (how, *called), RESULT_HANDED))

    def constructor_keys(self, node: cst.Call, name: str, start: int, end: int) -> None:
        """``TensorDict({"is_init": x, "next": {"done": d}}, batch)``: each string key of the dict
        given (first positional, or ``source=``) written into the new container; a nested dict's
        keys as nested keys (``("next", "done")``)."""
        if id(node) in self.nested_constructors:  # made inside another's dict: its keys are nested there
            return
        given = dict_given(node)
        if given is None:
            return
        how = f"{name}({{...}})"
        stack: list[tuple[tuple[str, ...], cst.Dict]] = [((), given)]
        found: list[tuple[str, ...]] = []
        while stack:
            prefix, entries = stack.pop()
            for element in entries.elements:
                text = string_value(element.key) if isinstance(element, cst.DictElement) else None
                if text is None:
                    continue
                assert isinstance(element, cst.DictElement)
                value = element.value
                inner = dict_given(value) if self.is_dict_constructor(value) else None
                if inner is not None:  # ``TensorDict({"params": TensorDict({...})})``: under "params"
                    self.nested_constructors.add(id(value))
                    value = inner
                if isinstance(value, cst.Dict) and value.elements:
                    stack.append(((*prefix, text), value))
                else:
                    found.append((*prefix, text))
        placed = [(self.line_holding(_raw_key(key), start, end), key) for key in found]
        placed.sort(key=lambda pair: pair[0])  # (by line only: keys on one line keep their order)
        for key_line, key in placed:
            self.add_key(key, WRITE, key_line, how, receiver=name)

    def changed_in_place(self, node: cst.CSTNode) -> str:
        """How the value ``node`` gives is changed in place (``td["k"][i] = v``: ``[]=``;
        ``td.get("k").copy_(x)``: ``copy_``), when it is; ``""`` otherwise.  Taken once."""
        if self.mutated is not None and self.mutated[0] is node:
            operation, self.mutated = self.mutated[1], None
            # an entry is a tensor (or a tensordict): torch's trailing underscore says in place; on a
            # tensor a container's mutator (``add``) gives a new one (a nested ``update`` is missed)
            return operation if operation in ("[]=", "del []") or operation.endswith("_") else ""
        return ""

    def key_method(
        self, func: cst.Attribute, args: Sequence[cst.Arg], line: int, start: int, end: int, changed: str = ""
    ) -> None:
        assert self.vocabulary is not None
        receiver = dotted_parts(func.value)
        if receiver and self.vocabulary.is_plain_receiver(receiver[-1]):
            return
        method = func.attr.value
        kind = self.vocabulary.methods[method]
        multi = method in self.vocabulary.multi_key_methods
        positional = [arg for arg in args if arg.keyword is None and (not arg.star or (multi and arg.star == "*"))]
        candidates = positional if multi else positional[:1]
        if changed and kind == READ and not multi:  # the entry read, then changed in place: a write
            kind, method = WRITE, f"{method} changed in place by {changed}"
        how = self.on_copy(receiver, method) if kind != READ else method
        held_by = _receiver_text(func.value)
        for arg in candidates:
            key = None if arg.star else key_literal(arg.value)
            if key is not None:
                self.add_key(key, kind, self.line_holding(_raw_key(key), start, end), how, receiver=held_by)
            else:
                held = arg.value.value if isinstance(arg.value, cst.Subscript) else arg.value
                if isinstance(held, cst.Tuple) and held.elements:  # ``("next", self.tensor_keys.reward)``
                    held = held.elements[-1].value  # (its last part names the key: its line, in a spread call)
                parts = string_value(held) or ".".join(dotted_parts(held))
                key_line = self.line_holding(parts.rsplit(".", 1)[-1], start, end) if parts else line
                self.add_symbolic_key(arg.value, kind, key_line, how, held_by)

    def visit_subscript(self, node: cst.Subscript, kind: str = READ) -> None:
        line, _, _ = self.position(node, L.SUBSCRIPT)
        changed = self.changed_in_place(node) if kind == READ else ""
        if self.vocabulary is not None and len(node.slice) == 1:
            self.subscript_key(node, WRITE if changed else kind, line, changed)
        elif self.vocabulary is not None and len(node.slice) > 1:
            self.nested_subscript_key(node, WRITE if changed else kind, line, changed)
        self.walk(node.value)
        for element in node.slice:
            self.walk(element)

    def subscript_key(self, node: cst.Subscript, kind: str, line: int, changed: str = "") -> None:
        """``td["k"]`` (any kind) and ``td[name] = v`` (writes only) on a receiver that is not plain;
        ``changed``: how the entry read is then changed in place (a write)."""
        assert self.vocabulary is not None
        receiver = dotted_parts(node.value)
        index = node.slice[0].slice
        if (receiver and self.vocabulary.is_plain_receiver(receiver[-1])) or not isinstance(index, cst.Index):
            return
        key = key_literal(index.value)
        how = self.subscript_how(receiver, kind, changed)
        held_by = _receiver_text(node.value)
        if key is not None:
            self.add_key(key, kind, line, how, receiver=held_by)
        elif (
            kind != READ
            or _names_one_key(index.value)
            or (isinstance(index.value, cst.Tuple) and self.nested_expression(index.value))
        ):
            # reads through ``x[name]`` are mostly lists and dicts; writes are kept, and so are
            # reads of a nested key (``td[("next", prefix)]``) and through a name that says it
            # holds one (``storage[:][self.traj_key]``, ``td[done_key]``)
            self.add_symbolic_key(index.value, kind, line, how, held_by)

    def subscript_how(self, receiver: Sequence[str], kind: str, changed: str) -> str:
        """``how`` of a subscript's key access: ``[]``; a write ``[] changed in place by op`` when
        the entry read is then changed, said to be on a copy where it is."""
        if kind == READ:
            return "[]"
        return self.on_copy(receiver, f"[] changed in place by {changed}" if changed else "[]")

    def nested_subscript_key(self, node: cst.Subscript, kind: str, line: int, changed: str = "") -> None:
        """``td["collector", "traj_ids"]``: a nested key written without its parentheses."""
        assert self.vocabulary is not None
        receiver = dotted_parts(node.value)
        if receiver and self.vocabulary.is_plain_receiver(receiver[-1]):
            return
        parts = []
        for element in node.slice:
            text = string_value(element.slice.value) if isinstance(element.slice, cst.Index) else None
            if text is None:  # ``td["next", prefix]``: a nested key the model resolves, if it can
                indexes = [e.slice.value for e in node.slice if isinstance(e.slice, cst.Index)]
                nested = self.nested_expression(indexes) if len(indexes) == len(node.slice) else ""
                if nested:
                    how = self.subscript_how(receiver, kind, changed)
                    self.add_key((), kind, line, how, nested, _receiver_text(node.value))
                return
            parts.append(text)
        how = self.subscript_how(receiver, kind, changed)
        self.add_key(tuple(parts), kind, line, how, receiver=_receiver_text(node.value))

    def visit_comparison(self, node: cst.Comparison) -> None:
        line, _, _ = self.position(node, L.COMPARE)
        if self.vocabulary is not None:
            left = node.left
            for target in node.comparisons:
                if type(target.operator) is cst.In or type(target.operator) is cst.NotIn:
                    self.membership_key(left, target.comparator, line)
                left = target.comparator
        self.walk(node.left)
        for target in node.comparisons:
            self.walk(target.comparator)

    def membership_key(self, left: cst.BaseExpression, container: cst.BaseExpression, line: int) -> None:
        """``"k" in td.keys()``: a check of the key (``init_key in td.keys(True)``: of the keys
        the name holds, resolved by the model)."""
        assert self.vocabulary is not None
        if not (
            isinstance(container, cst.Call)
            and isinstance(container.func, cst.Attribute)
            and container.func.attr.value in self.vocabulary.membership_methods
        ):
            return
        how = f"in {container.func.attr.value}()"
        receiver = _receiver_text(container.func.value)
        key = key_literal(left)
        if key is not None:
            self.add_key(key, CHECK, line, how, receiver=receiver)
        else:
            self.add_symbolic_key(left, CHECK, line, how, receiver)
