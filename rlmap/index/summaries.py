"""A module's value-flow summary: its statements in three-address form, for the whole-program solver.

Flow-insensitive: what a module *can* do with values, not in what order.  Every expression that
may carry a function, a class, an instance, a module or a container is lowered to a variable
(``scope.name`` for a name, ``scope.$N`` for an intermediate value), and each statement becomes
one :class:`~rlmap.index.records.Flow` (stored as the tuple of its fields):

=============  ===========================================================================
op             meaning
=============  ===========================================================================
value          ``target`` may hold the abstract value ``source`` (``fn:Q``, ``cls:Q``, ``new:id``)
ref            ``target`` may hold what the dotted name ``source`` denotes (an import, a global)
copy           ``target`` may hold whatever ``source`` holds
load           ``target`` may hold attribute ``name`` of what ``source`` holds
store          attribute ``name`` of what ``target`` holds may hold what ``source`` holds
elem_load      ``target`` may hold an element (at constant key ``name``, or any) of ``source``
elem_store     an element (at key ``name``) of what ``target`` holds may hold ``source``
call           ``target`` may hold the result of calling ``source`` with ``args`` (in ``scope``)
params         function ``target`` takes the parameters ``args`` (``*a``, ``**k``, ``kw:p`` marked)
decorated      ``target`` may hold what decorating ``name`` gave (``source``), or ``name`` itself
=============  ===========================================================================

Call arguments are variables, ``k=var`` for a keyword, ``*var`` and ``**var`` for unpacking
(``var`` holds the sequence or the mapping: the solver reads it by position or by name) and
``=s:text`` for a string literal (``getattr(obj, "name")``).  Nothing is resolved here: names
that are neither local nor assigned at module level are ``ref`` facts, resolved by the model.
The ``ast`` tree is walked (the summary needs no source text); lambdas are functions named
``<lambdaN>`` in their scope, as PyCG names them.
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass, field

from rlmap.index.records import FlowRow
from rlmap.literals import safe_repr

RETURN = "<return>"
_RECURSION = 6000  # nesting is capped at 500 levels before this runs (rlmap.index.decode)
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)
# The fields holding expressions of the operations whose value carries nothing to follow, in
# the order ``ast.iter_child_nodes`` reads them (the order the variables are numbered in).
_OPERANDS: dict[type, tuple[str, ...]] = {
    ast.Compare: ("left", "comparators"),
    ast.BinOp: ("left", "right"),
    ast.UnaryOp: ("operand",),
    ast.JoinedStr: ("values",),
    ast.FormattedValue: ("value", "format_spec"),
    ast.Slice: ("lower", "upper", "step"),
}


@dataclass
class _Scope:
    qualname: str
    kind: str  # module / class / function
    local: set[str] = field(default_factory=set)
    globals: set[str] = field(default_factory=set)
    nonlocals: set[str] = field(default_factory=set)
    lambdas: int = 0
    caller: str = ""  # :meth:`_Summary.caller` inside this scope (set by :meth:`_Summary.enter`)


METACLASS = "<metaclass>"  # the variable holding a class's ``metaclass=``: ``pkg.mod.C.<metaclass>``


def summarize(tree: ast.Module, module: str, is_package: bool) -> tuple[FlowRow, ...]:
    """The value-flow statements of one parsed module, as :class:`~rlmap.index.records.Flow` rows
    (empty when it nests too deep to walk)."""
    summary = _Summary(module)
    summary.is_package = is_package
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, _RECURSION))
    try:
        summary.module(tree)
    except RecursionError:
        return ()
    finally:
        sys.setrecursionlimit(limit)
    return tuple(summary.facts)


def _bound_names(body: list[ast.stmt], args: ast.arguments | None = None) -> tuple[set[str], set[str], set[str]]:
    """(locals, globals, nonlocals) of a scope: every name its own statements bind.

    Statements only, and of expressions only assignment targets: a walrus deep in an
    expression is not seen (its name is then read as a global), which keeps this walk a
    fraction of the tree.
    """
    local: set[str] = set()
    declared_global: set[str] = set()
    declared_nonlocal: set[str] = set()
    if args is not None:
        local.update(arg.arg for arg in _all_args(args))
    stack: list[ast.AST] = list(body)
    targets: list[ast.expr] = []
    while stack:
        node = stack.pop()
        kind = type(node)
        if kind in _SCOPES:
            local.add(node.name)  # type: ignore[attr-defined]
            continue
        if kind is ast.Assign:
            targets.extend(node.targets)  # type: ignore[attr-defined]
        elif kind in _ONE_TARGET:
            targets.append(node.target)  # type: ignore[attr-defined]
        elif kind in _WITH:
            targets.extend(item.optional_vars for item in node.items if item.optional_vars is not None)  # type: ignore[attr-defined]
        elif kind is ast.Global:
            declared_global.update(node.names)  # type: ignore[attr-defined]
        elif kind is ast.Nonlocal:
            declared_nonlocal.update(node.names)  # type: ignore[attr-defined]
        elif kind in _IMPORTS:
            for alias in node.names:  # type: ignore[attr-defined]
                if alias.name != "*":
                    local.add(alias.asname or alias.name.split(".")[0])
        elif kind in _NAMED and node.name:  # type: ignore[attr-defined]
            local.add(node.name)  # type: ignore[attr-defined]
        for name in _BODIES.get(kind, ()):
            inner = getattr(node, name)  # a list of statements or patterns, or one pattern (or None)
            if type(inner) is list:
                stack.extend(inner)
            elif inner is not None:
                stack.append(inner)
    while targets:
        target = targets.pop()
        if type(target) is ast.Name:
            local.add(target.id)
        elif type(target) in (ast.Tuple, ast.List):
            targets.extend(target.elts)  # type: ignore[attr-defined]
        elif type(target) is ast.Starred:
            targets.append(target.value)  # type: ignore[attr-defined]
    return local - declared_global - declared_nonlocal, declared_global, declared_nonlocal


# Builtins whose value and result carry no function, class or container the solver follows.
_INERT_BUILTINS = frozenset(
    {
        "len",
        "isinstance",
        "issubclass",
        "hasattr",
        "callable",
        "int",
        "float",
        "str",
        "bool",
        "bytes",
        "repr",
        "hash",
        "id",
        "abs",
        "round",
        "sum",
        "any",
        "all",
        "range",
        "print",
        "format",
        "ord",
        "chr",
        "hex",
        "bin",
        "oct",
        "divmod",
        "pow",
        "type",
        "object",
        "None",
        "True",
        "False",
        "NotImplemented",
        "ValueError",
        "TypeError",
        "KeyError",
        "RuntimeError",
        "AttributeError",
        "IndexError",
        "NotImplementedError",
        "AssertionError",
        "StopIteration",
        "Exception",
        "ImportError",
        "slice",
        "Ellipsis",
        "vars",
        "dir",
        "open",
        "globals",
        "locals",
        "bytearray",
        "memoryview",
        "complex",
    }
)


def _target_names(target: ast.expr) -> list[str]:
    return [node.id for node in ast.walk(target) if isinstance(node, ast.Name)]


_SCOPES = frozenset({ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef})
_ONE_TARGET = frozenset({ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor})
_WITH = frozenset({ast.With, ast.AsyncWith})
_IMPORTS = frozenset({ast.Import, ast.ImportFrom})
_NAMED = frozenset({ast.ExceptHandler, ast.MatchAs, ast.MatchStar})
# The statement lists inside each compound statement (and a ``match``'s patterns, which bind names).
_BODIES: dict[type, tuple[str, ...]] = {
    ast.If: ("body", "orelse"),
    ast.For: ("body", "orelse"),
    ast.AsyncFor: ("body", "orelse"),
    ast.While: ("body", "orelse"),
    ast.With: ("body",),
    ast.AsyncWith: ("body",),
    ast.Try: ("body", "handlers", "orelse", "finalbody"),
    ast.TryStar: ("body", "handlers", "orelse", "finalbody"),
    ast.ExceptHandler: ("body",),
    ast.Match: ("cases",),
    ast.match_case: ("pattern", "body"),
    ast.MatchAs: ("pattern",),
    ast.MatchOr: ("patterns",),
    ast.MatchSequence: ("patterns",),
    ast.MatchMapping: ("patterns",),
    ast.MatchClass: ("patterns", "kwd_patterns"),
}


def _all_args(args: ast.arguments) -> list[ast.arg]:
    found = [*args.posonlyargs, *args.args]
    if args.vararg is not None:
        found.append(args.vararg)
    found.extend(args.kwonlyargs)
    if args.kwarg is not None:
        found.append(args.kwarg)
    return found


def dotted(node: ast.expr) -> tuple[str, ...]:
    """``a.b.c`` -> ``("a", "b", "c")``; ``super().m`` -> ``("super()", "m")``; else ``()``."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super":
        parts.append("super()")
    else:
        return ()
    parts.reverse()
    return tuple(parts)


def callee_text(node: ast.expr) -> str:
    """The callee as the index's call sites write it (dotted, or compacted: ``f(...).g``)."""
    parts = dotted(node)
    if parts:
        return ".".join(parts)
    return _compact(node)


def _compact(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_compact(node.value)}.{node.attr}"
    if isinstance(node, ast.Call):
        return f"{_compact(node.func)}(...)"
    if isinstance(node, ast.Subscript):
        return f"{_compact(node.value)}[...]"
    return "<expression>"


def _key(node: ast.expr) -> str:
    """A constant subscript or dict key as text (``"a"``, ``0``); ``""`` for any other."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (str, int)) and not isinstance(node.value, bool):
        return safe_repr(node.value)
    return ""


class _Summary:
    """One walk over one module's ``ast`` tree, appending :class:`Flow` facts."""

    def __init__(self, module: str) -> None:
        self.module_name = module
        self.facts: list[FlowRow] = []
        self.scopes: list[_Scope] = []
        self.temps = 0
        self.made: dict[tuple[int, int], int] = {}  # a container's position -> its number (made_at)
        # names a comprehension binds (its own scope in Python 3): name -> (scope depth, variable)
        self.comprehended: list[dict[str, tuple[int, str]]] = []

    # -- facts -------------------------------------------------------------------------------
    def emit(
        self, op: str, target: str, source: str = "", name: str = "", args: tuple[str, ...] = (), line: int = 0
    ) -> None:
        self.facts.append((op, target, source, name, args, line, self.caller()))

    def made_at(self, node: ast.expr) -> int:
        """The number of the container or comprehension written at ``node``'s position, given in
        the order positions are first met: a value's name holds no line, so that moving code (a
        line added above it) changes no fact but their lines (see :mod:`rlmap.model.relabel`)."""
        position = (node.lineno, node.col_offset)
        number = self.made.get(position)
        if number is None:
            number = self.made[position] = len(self.made) + 1
        return number

    def temp(self) -> str:
        """A fresh intermediate variable, unique in the whole program (``pkg.mod.$7``)."""
        self.temps += 1
        return f"{self.module_name}.${self.temps}"

    @property
    def scope(self) -> _Scope:
        return self.scopes[-1]

    def caller(self) -> str:
        """The function (or module) a call made here is attributed to (class bodies: the module)."""
        return self.scopes[-1].caller if self.scopes else self.module_name

    def enter(self, scope: _Scope) -> None:
        """Push ``scope``; a class body's calls are its enclosing function's (or the module's)."""
        scope.caller = self.caller() if scope.kind == "class" else scope.qualname
        self.scopes.append(scope)

    def variable(self, name: str) -> str | None:
        """The variable ``name`` reads here; ``None`` when the model must resolve it (a ``ref``)."""
        scopes = self.scopes
        current = scopes[-1]
        bound = self._comprehended(name)
        if bound is not None and not (name in current.local and len(scopes) > bound[0]):
            return bound[1]
        if name in current.globals:
            return f"{self.module_name}.{name}" if name in scopes[0].local else None
        if name in current.local:
            return f"{current.qualname}.{name}"
        for scope in reversed(scopes[1:-1]):
            if scope.kind == "function" and name in scope.local:
                return f"{scope.qualname}.{name}"
        return f"{self.module_name}.{name}" if name in scopes[0].local else None

    def _comprehended(self, name: str) -> tuple[int, str] | None:
        for names in reversed(self.comprehended):
            if name in names:
                return names[name]
        return None

    def assigned(self, name: str) -> str:
        """The variable an assignment to ``name`` here writes."""
        bound = self._comprehended(name)
        if bound is not None and bound[0] == len(self.scopes):
            return bound[1]
        current = self.scope
        if name in current.globals or len(self.scopes) == 1:
            return f"{self.module_name}.{name}"
        if name in current.nonlocals:
            for scope in reversed(self.scopes[1:-1]):
                if scope.kind == "function" and name in scope.local:
                    return f"{scope.qualname}.{name}"
        return f"{current.qualname}.{name}"

    # -- scopes ------------------------------------------------------------------------------
    def module(self, tree: ast.Module) -> None:
        local = _bound_names(tree.body)[0]
        self.enter(_Scope(self.module_name, "module", local))
        self.statements(tree.body)

    def function(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda, qualname: str) -> None:
        args = node.args
        self.parameters(qualname, args)
        declared_global: set[str] = set()
        declared_nonlocal: set[str] = set()
        if isinstance(node, ast.Lambda):
            local = {arg.arg for arg in _all_args(args)}
        else:
            local, declared_global, declared_nonlocal = _bound_names(node.body, args)
        self.enter(_Scope(qualname, "function", local, declared_global, declared_nonlocal))
        try:
            if isinstance(node, ast.Lambda):
                value = self.expression(node.body)
                if value:
                    self.emit("copy", f"{qualname}.{RETURN}", value)
            else:
                self.statements(node.body)
        finally:
            self.scopes.pop()

    def parameters(self, qualname: str, args: ast.arguments) -> None:
        """``params`` of a function, its defaults (evaluated in the enclosing scope), ``*a``/``**k``."""
        names = [arg.arg for arg in [*args.posonlyargs, *args.args]]
        if args.vararg is not None:
            names.append("*" + args.vararg.arg)
            self.emit("value", f"{qualname}.{args.vararg.arg}", f"new:{qualname}.<*{args.vararg.arg}>")
        names.extend("kw:" + arg.arg for arg in args.kwonlyargs)
        if args.kwarg is not None:
            names.append("**" + args.kwarg.arg)
            self.emit("value", f"{qualname}.{args.kwarg.arg}", f"new:{qualname}.<**{args.kwarg.arg}>")
        self.emit("params", qualname, args=tuple(names))
        positional = [*args.posonlyargs, *args.args]
        for arg, default in zip(positional[len(positional) - len(args.defaults) :], args.defaults, strict=True):
            self.bind_default(qualname, arg.arg, default)
        for arg, kw_default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
            if kw_default is not None:
                self.bind_default(qualname, arg.arg, kw_default)

    def bind_default(self, qualname: str, name: str, default: ast.expr) -> None:
        value = self.expression(default)
        if value:
            self.emit("copy", f"{qualname}.{name}", value)

    def define_function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        qualname = f"{self.scope.qualname}.{node.name}"
        decorators = [self.expression(decorator) for decorator in node.decorator_list]
        self.function(node, qualname)
        self.decorate(node, decorators, f"fn:{qualname}")

    def decorate(
        self,
        node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef,
        decorators: list[str | None],
        value: str,
    ) -> None:
        """``name = d1(d2(f))``: each decorator called on the one below it, innermost first."""
        target = self.assigned(node.name)
        if not decorators:
            self.emit("value", target, value)
            return
        current = self.temp()
        self.emit("value", current, value)
        original = current
        for decorator, expression in zip(reversed(decorators), reversed(node.decorator_list), strict=True):
            result = self.temp()
            line = getattr(expression, "end_lineno", None) or node.lineno
            text = callee_text(expression.func if isinstance(expression, ast.Call) else expression)
            self.emit("call", result, decorator or "", "@" + text, (current,), line)
            current = result
        if current == original:
            self.emit("copy", target, current)
        else:
            self.emit("decorated", target, current, value)

    def define_class(self, node: ast.ClassDef) -> None:
        qualname = f"{self.scope.qualname}.{node.name}"
        for base in node.bases:
            self.expression(base)
        for keyword in node.keywords:
            value = self.expression(keyword.value)
            if keyword.arg == "metaclass" and value:  # what ``C(...)`` runs first: the metaclass's ``__call__``
                self.emit("copy", f"{qualname}.{METACLASS}", value)
        decorators = [self.expression(decorator) for decorator in node.decorator_list]
        local = _bound_names(node.body)[0]
        self.enter(_Scope(qualname, "class", local))
        try:
            self.statements(node.body)
        finally:
            self.scopes.pop()
        self.decorate(node, decorators, f"cls:{qualname}")

    # -- statements --------------------------------------------------------------------------
    def statements(self, body: list[ast.stmt]) -> None:
        for statement in body:
            self.statement(statement)

    def statement(self, node: ast.stmt) -> None:
        if isinstance(node, _FUNCTIONS):
            self.define_function(node)
        elif isinstance(node, ast.ClassDef):
            self.define_class(node)
        elif isinstance(node, ast.Assign):
            value = self.expression(node.value)
            for target in node.targets:
                self.assign(target, value)
        elif isinstance(node, ast.AnnAssign):
            value = self.expression(node.value) if node.value is not None else None
            if node.value is not None:
                self.assign(node.target, value)
        elif isinstance(node, ast.AugAssign):
            value = self.expression(node.value)
            if isinstance(node.target, ast.Name):
                self.assign(node.target, value)
            else:
                self.expression(node.target)
        elif isinstance(node, ast.Return):
            value = self.expression(node.value) if node.value is not None else None
            if value:
                self.emit("copy", f"{self.caller()}.{RETURN}", value)
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            iterable = self.expression(node.iter)
            self.assign(node.target, self.element(iterable, node.iter))
            self.statements(node.body)
            self.statements(node.orelse)
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                manager = self.expression(item.context_expr)
                entered = self.implicit(manager, "__enter__", item.context_expr)
                self.implicit(manager, "__exit__", item.context_expr)
                if item.optional_vars is not None:
                    self.assign(item.optional_vars, entered)
            self.statements(node.body)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            self.import_(node)
        elif isinstance(node, ast.Raise):
            raised = self.expression(node.exc)
            self.expression(node.cause)
            if raised and node.exc is not None:  # ``raise C``: Python makes the instance
                self.emit("call", self.temp(), raised, "!raise", line=node.exc.end_lineno or node.lineno)
        elif isinstance(node, ast.Expr):
            self.expression(node.value)
        else:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.stmt):
                    self.statement(child)
                elif isinstance(child, ast.expr):
                    self.expression(child)
                elif isinstance(child, ast.ExceptHandler):
                    if child.type is not None:
                        self.expression(child.type)
                    self.statements(child.body)
                elif isinstance(child, ast.match_case):
                    self.statements(child.body)

    def import_(self, node: ast.Import | ast.ImportFrom) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    self.emit("ref", self.assigned(alias.asname), alias.name)
                else:
                    head = alias.name.split(".")[0]
                    self.emit("ref", self.assigned(head), head)
            return
        base = self.relative_base(node.level, node.module)
        for alias in node.names:
            if alias.name == "*":
                continue
            self.emit("ref", self.assigned(alias.asname or alias.name), f"{base}.{alias.name}" if base else alias.name)

    def relative_base(self, level: int, module: str | None) -> str:
        if level == 0:
            return module or ""
        parts = self.module_name.split(".")
        package = parts if self.is_package else parts[:-1]
        base = package[: len(package) - (level - 1)] if level > 1 else package
        return ".".join([*base, module] if module else base)

    is_package = False

    def assign(self, target: ast.expr, value: str | None) -> None:
        if isinstance(target, ast.Name):
            if value:
                self.emit("copy", self.assigned(target.id), value)
        elif isinstance(target, (ast.Tuple, ast.List)):
            starred = False
            for position, element in enumerate(target.elts):
                if isinstance(element, ast.Starred):
                    starred = True
                    self.assign(element.value, value)  # the rest, as the same container (approximately)
                elif value:
                    part = self.temp()
                    self.emit("elem_load", part, value, "" if starred else str(position))
                    self.assign(element, part)
                else:
                    self.assign(element, None)
        elif isinstance(target, ast.Attribute):
            obj = self.expression(target.value)
            if obj:  # even a constant: the store may run a setter or ``__setattr__``
                self.emit("store", obj, value or "", target.attr, line=target.end_lineno or target.lineno)
        elif isinstance(target, ast.Subscript):
            obj = self.expression(target.value)
            self.expression(target.slice)
            if obj and value:
                self.emit("elem_store", obj, value, _key(target.slice))
        elif isinstance(target, ast.Starred):
            self.assign(target.value, value)

    def element(self, container: str | None, node: ast.expr) -> str | None:
        """An element of what ``container`` holds (iteration): its elements, or what the
        ``__next__`` of its ``__iter__`` returns when it is an object."""
        if not container:
            return None
        iterator = self.implicit(container, "__iter__", node)
        following = self.implicit(iterator, "__next__", node)
        found = self.temp()
        self.emit("elem_load", found, container, "")
        return self.union([found, following])

    def implicit(self, obj: str | None, method: str, node: ast.expr) -> str | None:
        """A call Python makes by itself (``__enter__``, ``__iter__``): an edge only to a known method."""
        if not obj:
            return None
        result = self.temp()
        self.emit("call", result, obj, "." + method, line=getattr(node, "end_lineno", None) or node.lineno)
        return result

    # -- expressions -------------------------------------------------------------------------
    def expression(self, node: ast.expr | None) -> str | None:
        """The variable holding what ``node`` evaluates to; ``None`` when it holds nothing to follow."""
        if node is None:
            return None
        kind = type(node)
        if kind is ast.Name:
            return self.name(node.id)  # type: ignore[attr-defined]
        if kind is ast.Constant:  # a literal (a fifth of all expressions): nothing to follow, nothing inside
            return None
        operands = _OPERANDS.get(kind)
        if operands is not None:  # an operation: its operands are walked, its result holds nothing
            for field_name in operands:
                value = getattr(node, field_name)
                if value.__class__ is list:
                    for child in value:
                        self.expression(child)
                elif value is not None:
                    self.expression(value)
            return None
        if isinstance(node, ast.Attribute):
            obj = self.expression(node.value)
            if not obj:
                return None
            found = self.temp()
            self.emit("load", found, obj, node.attr, line=node.end_lineno or node.lineno)
            return found
        if isinstance(node, ast.Call):
            return self.call(node)
        if isinstance(node, ast.Subscript):
            obj = self.expression(node.value)
            self.expression(node.slice)
            if not obj:
                return None
            found = self.temp()
            self.emit("elem_load", found, obj, _key(node.slice))
            return found
        if isinstance(node, ast.Tuple) and all(type(element) is ast.Constant for element in node.elts):
            return None  # ``(1, 2)``: an immutable container of constants carries nothing
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            # an element's index is known up to the first ``*xs`` (after it, any index)
            starred = next((i for i, e in enumerate(node.elts) if isinstance(e, ast.Starred)), len(node.elts))
            return self.container(
                node,
                [(str(i) if i < starred and not isinstance(node, ast.Set) else "", e) for i, e in enumerate(node.elts)],
            )
        if isinstance(node, ast.Dict):
            return self.dictionary(node)
        if isinstance(node, ast.Lambda):
            self.scope.lambdas += 1
            qualname = f"{self.scope.qualname}.<lambda{self.scope.lambdas}>"
            self.function(node, qualname)
            found = self.temp()
            self.emit("value", found, f"fn:{qualname}")
            return found
        if isinstance(node, _COMPREHENSIONS):
            return self.comprehension(node)
        if isinstance(node, (ast.BoolOp, ast.IfExp)):
            parts = node.values if isinstance(node, ast.BoolOp) else [node.body, node.orelse]
            if isinstance(node, ast.IfExp):
                self.expression(node.test)
            return self.union([self.expression(part) for part in parts])
        if isinstance(node, ast.NamedExpr):
            value = self.expression(node.value)
            self.assign(node.target, value)
            return value
        if isinstance(node, (ast.Await, ast.YieldFrom)):
            inner = self.expression(node.value)
            if isinstance(node, ast.YieldFrom):
                self.yielded(self.element(inner, node.value))
            return inner if isinstance(node, ast.Await) else None
        if isinstance(node, ast.Yield):
            self.yielded(self.expression(node.value))
            return None
        if isinstance(node, ast.Starred):
            return self.expression(node.value)
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                self.expression(child)
            elif isinstance(child, ast.comprehension):  # pragma: no cover - comprehensions handled above
                self.expression(child.iter)
        return None

    def yielded(self, value: str | None) -> None:
        """A ``yield``: the function returns a generator, whose elements are what it yields."""
        generator = f"new:{self.caller()}.<generator>"
        self.emit("value", f"{self.caller()}.{RETURN}", generator)
        if value:
            holder = self.temp()
            self.emit("value", holder, generator)
            self.emit("elem_store", holder, value, "")

    def name(self, name: str) -> str | None:
        variable = self.variable(name)
        if variable is not None:
            return variable
        if name in _INERT_BUILTINS:
            return None  # ``len``, ``isinstance``: nothing to follow (a module shadowing one binds it)
        found = self.temp()
        self.emit("ref", found, f"{self.module_name}.{name}", name)
        return found

    def union(self, values: list[str | None]) -> str | None:
        present = [value for value in values if value]
        if len(present) <= 1:
            return present[0] if present else None
        found = self.temp()
        for value in present:
            self.emit("copy", found, value)
        return found

    def container(self, node: ast.expr, elements: list[tuple[str, ast.expr]]) -> str:
        found = self.temp()
        self.emit("value", found, f"new:{self.module_name}:{self.made_at(node)}")
        for key, element in elements:
            if isinstance(element, ast.Starred):
                inner = self.expression(element.value)
                if inner:
                    part = self.temp()
                    self.emit("elem_load", part, inner, "")
                    self.emit("elem_store", found, part, "")
                continue
            value = self.expression(element)
            if value:
                self.emit("elem_store", found, value, key)
        return found

    def dictionary(self, node: ast.Dict) -> str:
        found = self.temp()
        self.emit("value", found, f"new:{self.module_name}:{self.made_at(node)}")
        for key, element in zip(node.keys, node.values, strict=True):
            value = self.expression(element)
            if key is None:  # ``**other``
                if value:
                    part = self.temp()
                    self.emit("elem_load", part, value, "")
                    self.emit("elem_store", found, part, "")
                continue
            self.expression(key)
            if value:
                self.emit("elem_store", found, value, _key(key))
        return found

    def comprehension(self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp) -> str:
        """A comprehension's targets are its own variables (``<name>@N``, the comprehension's
        number): two comprehensions of one function reusing ``x`` do not share it, nor does the
        function's own ``x``."""
        owner = self.scope.qualname if len(self.scopes) > 1 else self.module_name
        number = self.made_at(node)
        names: dict[str, tuple[int, str]] = {}
        self.comprehended.append(names)
        try:
            for generator in node.generators:
                iterable = self.expression(generator.iter)
                for name in _target_names(generator.target):
                    names[name] = (len(self.scopes), f"{owner}.{name}@{number}")
                self.assign(generator.target, self.element(iterable, generator.iter))
                for condition in generator.ifs:
                    self.expression(condition)
            found = self.temp()
            self.emit("value", found, f"new:{self.module_name}:{number}")
            results = [node.value] if isinstance(node, ast.DictComp) else [node.elt]
            if isinstance(node, ast.DictComp):
                self.expression(node.key)
            for result in results:
                value = self.expression(result)
                if value:
                    self.emit("elem_store", found, value, "")
        finally:
            self.comprehended.pop()
        return found

    def call(self, node: ast.Call) -> str | None:
        func = self.expression(node.func)
        args: list[str] = []
        for arg in node.args:
            if isinstance(arg, ast.Starred):  # ``*xs``: the sequence itself (read by position)
                args.append("*" + (self.expression(arg.value) or ""))
            elif isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                args.append("=s:" + arg.value)
            else:
                args.append(self.expression(arg) or "")
        for keyword in node.keywords:
            value = self.expression(keyword.value) or ""
            if keyword.arg is None:  # ``**d``: the mapping itself (the solver reads it by each name)
                args.append("**" + value)
            else:
                args.append(f"{keyword.arg}={value}")
        if not func:
            return None  # a callee that holds nothing the solver follows: no call to record
        found = self.temp()
        line = node.func.end_lineno or node.lineno
        self.emit("call", found, func, callee_text(node.func), tuple(args), line)
        return found
