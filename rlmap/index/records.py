"""Plain, frozen data extracted from one source file: what every later stage works on.

Nothing here knows about libcst; the index stage converts syntax trees into these records
and no syntax node ever leaves it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple, TypeVar

from rlmap.terminal import inert

_Record = TypeVar("_Record")
_NO_VALUE = object()  # a field with a default factory not given to the constructor


def slot_init(cls: type) -> Callable[..., None] | None:
    """An ``__init__`` for the slotted dataclass ``cls`` that fills each field's slot through its
    own descriptor: the same signature, defaults and default factories as the generated one,
    which reaches every field through ``object.__setattr__`` and costs twice as much, and no
    ``__post_init__``.  ``None`` for a class that is not a slotted dataclass of plain fields.
    The code run is built here from the class's own field names."""
    if not dataclasses.is_dataclass(cls) or "__init__" not in cls.__dict__:
        return None
    scope: dict[str, Any] = {"_NO_VALUE": _NO_VALUE}
    params, lines = [], []
    for field in dataclasses.fields(cls):
        name = field.name
        slot = next((klass.__dict__[name] for klass in cls.__mro__ if name in klass.__dict__), None)
        if not field.init or field.kw_only or type(slot).__name__ != "member_descriptor":
            return None
        if field.default is not dataclasses.MISSING:
            scope[f"_default_{name}"] = field.default
            params.append(f"{name}=_default_{name}")
        elif field.default_factory is not dataclasses.MISSING:
            scope[f"_factory_{name}"] = field.default_factory
            params.append(f"{name}=_NO_VALUE")
            lines.append(f"    if {name} is _NO_VALUE:\n        {name} = _factory_{name}()\n")
        else:
            params.append(name)
        scope[f"_set_{name}"] = slot.__set__  # type: ignore[union-attr]
        lines.append(f"    _set_{name}(self, {name})\n")
    exec(f"def __init__(self, {', '.join(params)}):\n{''.join(lines)}    return None\n", scope)
    init: Callable[..., None] = scope["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    return init


def _quick_init(cls: type[_Record]) -> type[_Record]:
    """A record class with :func:`slot_init`'s constructor (the index builds a few hundred
    thousand records per package)."""
    init = slot_init(cls)
    if init is None:
        raise TypeError(f"{cls.__name__}: only a slotted dataclass of plain fields is supported")
    cls.__init__ = init  # type: ignore[misc,method-assign]
    return cls


# Symbol kinds, as DESIGN.md names them.
MODULE = "module"
CLASS = "class"
FUNCTION = "function"
METHOD = "method"
PROPERTY = "property"
ATTRIBUTE = "attribute"
VARIABLE = "variable"  # a module-level assignment

# Attribute access kinds.
READ = "read"
WRITE = "write"
AUGMENTED = "augmented"
DELETE = "delete"
MUTATE = "mutate"  # attributes only: changed in place (``self.x.update(...)``, ``self.x[k] = v``)
CHECK = "check"  # tensordict keys only: membership test


@_quick_init
@dataclass(frozen=True, slots=True)
class Symbol:
    """A definition: module, class, function, method, property, class attribute or module variable."""

    qualname: str
    kind: str
    path: str  # repo-relative, ``/``-separated
    line: int  # the ``def``/``class`` line, never a decorator line
    end_line: int
    signature: str = ""
    has_docstring: bool = False
    doc_first_line: str = ""
    decorators: tuple[str, ...] = ()
    bases: tuple[str, ...] = ()  # classes: base expressions as written
    value: str = ""  # variables and class attributes: the assigned expression
    annotation: str = ""  # variables and class attributes: the annotation, if any
    params: tuple[tuple[str, str], ...] = ()  # functions: (name, annotation text)
    returns: str = ""  # functions: the return annotation text


@_quick_init
@dataclass(frozen=True, slots=True)
class CallSite:
    """One call expression (or attribute read), as written, inside ``caller`` (a function or module)."""

    caller: str
    callee_text: str
    parts: tuple[str, ...]  # dotted chain when the callee is ``name(.attr)*``; ``("super()", m)``
    line: int
    guards: tuple[str, ...] = ()
    # An attribute read (``self.env.batch_size``, ``env.device``), not a call: it becomes an
    # edge only when it resolves to a property getter.
    attribute_read: bool = False


@_quick_init
@dataclass(frozen=True, slots=True)
class AttributeAccess:
    """One ``self.<attr>`` (or ``cls.<attr>``) access inside a method of ``owner``."""

    owner: str  # class qualname
    attribute: str
    kind: str  # read / write / augmented / delete / mutate
    function: str  # qualname of the enclosing function
    line: int
    guards: tuple[str, ...] = ()
    value: str = ""  # writes: the assigned expression text
    value_parts: tuple[str, ...] = ()  # writes: dotted value, or the callee of a call value
    value_is_call: bool = False
    annotation: str = ""  # ``self.x: T = ...``
    operation: str = ""  # mutations: the method (``update``) or ``[]=`` / ``del []``


@_quick_init
@dataclass(frozen=True, slots=True)
class ReturnSite:
    """A ``return`` statement: what a function gives back on each branch."""

    function: str
    line: int
    value: str  # "" for a bare return
    guards: tuple[str, ...] = ()


ON_COPY = " on a copy"  # ends the ``how`` of a write into a local bound to a copy (``td.select(...)``)


@_quick_init
@dataclass(frozen=True, slots=True)
class KeyAccess:
    """One tensordict key literal read, written, deleted or tested."""

    key: tuple[str, ...]  # ``("is_init",)`` or ``("collector", "traj_ids")``
    kind: str  # read / write / delete / check
    function: str
    line: int
    how: str  # get, set, [], in_keys, out_keys, in keys(), pop, exclude, ...
    guards: tuple[str, ...] = ()
    # A key passed through a name (``td.set(init_key, v)``, ``td.get(self.done_key)``): the
    # expression as written.  The index records it with ``key == ()``; the model resolves it
    # to the constant values it can hold and keeps the expression to show how.
    expression: str = ""
    # The object the key is read from or written to, as written (``next_td`` of
    # ``next_td.get("k")``, ``data["k"]``, ``"k" in data.keys()``); ``""`` for declared keys.
    receiver: str = ""


@_quick_init
@dataclass(frozen=True, slots=True)
class ImportRecord:
    """A name bound by an import statement in ``scope`` (a module or function qualname)."""

    scope: str
    name: str  # the local name bound; ``*`` for a star import
    target: str  # absolute dotted target
    line: int


@_quick_init
@dataclass(frozen=True, slots=True)
class LocalBinding:
    """A local name whose type or constant value can be inferred.

    Types: ``x = Cls(...)`` (assignment), ``x: T`` or a parameter annotation (annotation).
    Key values: ``k = "is_init"`` or a parameter default (literal), ``k = self.attr`` (alias),
    ``for k in self.attrs`` (loop), ``for k in keys`` (each: ``parts`` is the local's name),
    ``keys = [k, *self.DEFAULTS]`` (value: ``parts`` is the expression's text, evaluated by the model).
    ``for k in ("a", self.b_key)`` (:data:`ITEMS`: ``parts`` is the list's text and the loop's guard).
    A local a tensordict is made from, ``TensorDict(d, ...)`` (:data:`HANDED`: ``parts`` is the
    constructor's name); a local that is a plain dict which stays in its function, ``kwargs = {}``
    (:data:`PLAIN`: ``parts`` is ``("dict",)``); a function's name whose result a tensordict is made from,
    ``TensorDict(self._obs_dict(), ...)`` (:data:`RESULT_HANDED`: ``parts`` is the constructor's
    name, then the called name's parts).
    """

    function: str
    name: str
    parts: tuple[str, ...]  # dotted class expression; a string value; ("self", attr)
    # "assignment" / "annotation" (types); "literal" / "alias" / "loop" / "each" / "value" / ITEMS (keys); HANDED; PLAIN
    how: str


HANDED = "handed"  # LocalBinding.how of a local handed to a tensordict (its items are keys)
PLAIN = "plain"  # LocalBinding.how of a local that is a plain dict in its function (its items are no keys)
RESULT_HANDED = "result handed"  # LocalBinding.how of a function's name whose result a tensordict is made from
ITEMS = "items"  # LocalBinding.how of a loop variable over a literal list of keys (in that loop's body)


class Flow(NamedTuple):
    """One statement of a module's value-flow summary (see :mod:`rlmap.index.summaries`).  A
    named tuple: the solve makes hundreds of thousands, several times faster than a dataclass."""

    op: str
    target: str
    source: str = ""
    name: str = ""
    args: tuple[str, ...] = ()
    line: int = 0
    scope: str = ""  # the function (or module) it is written in: a call's caller


FlowRow = tuple[str, str, str, str, tuple[str, ...], int, str]  # a Flow's fields, in order


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """A file that could not be (fully) read; reported as ``path:line: message``."""

    path: str
    line: int
    message: str

    def __str__(self) -> str:
        # one line whatever the file is called: a name holding a newline could otherwise start a
        # line of its own in a CI log (``::error file=...::``, a workflow command)
        return inert(f"{self.path}:{self.line}: {self.message}")


@dataclass(frozen=True, slots=True)
class ModuleIndex:
    """Everything extracted from one module."""

    module: str  # dotted module name
    path: str
    is_package: bool
    symbols: tuple[Symbol, ...] = ()
    calls: tuple[CallSite, ...] = ()
    attributes: tuple[AttributeAccess, ...] = ()
    keys: tuple[KeyAccess, ...] = ()
    imports: tuple[ImportRecord, ...] = ()
    locals: tuple[LocalBinding, ...] = ()
    returns: tuple[ReturnSite, ...] = ()
    exports: tuple[str, ...] | None = None  # ``__all__`` when it is a literal list
    diagnostics: tuple[Diagnostic, ...] = ()
    position_fallback: bool = False  # lines came from libcst's PositionProvider
    # The value-flow summary (rlmap.index.summaries): each :class:`Flow` as the tuple of its fields,
    # which crosses process boundaries and the cache ten times faster than the records would.
    flow: tuple[FlowRow, ...] = ()


def key_of(raw: str | list[str]) -> tuple[str, ...]:
    """A key as a profile writes it (``"is_init"``, ``["collector", "traj_ids"]``), as a tuple."""
    return tuple(raw) if isinstance(raw, list) else (raw,)


def format_key(key: tuple[str, ...]) -> str:
    """``("is_init",)`` -> ``is_init``; ``("collector", "traj_ids")`` -> ``("collector", "traj_ids")``."""
    if len(key) == 1:
        return key[0]
    return "(" + ", ".join(f'"{part}"' for part in key) + ")"
