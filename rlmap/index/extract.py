"""Extract plain records from one module's libcst tree (the index stage's visitor).

``extract_module(source, ...)`` parses the bytes with libcst once, walks the tree in source
order with a hand-rolled walker (libcst's generic visitor rebuilds every node it passes and
costs four times more), and returns a :class:`~rlmap.index.records.ModuleIndex`.  Line numbers come
from :mod:`rlmap.index.lines`.  A file that cannot be decoded or parsed becomes a diagnostic.
"""

from __future__ import annotations

import ast
import dataclasses
import io
import re
import tokenize
import warnings
from collections.abc import Iterator, Sequence
from typing import Any

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from rlmap.index import lines as L
from rlmap.index.records import (
    ATTRIBUTE,
    AUGMENTED,
    CHECK,
    CLASS,
    DELETE,
    FUNCTION,
    METHOD,
    MODULE,
    PROPERTY,
    READ,
    VARIABLE,
    WRITE,
    AttributeAccess,
    CallSite,
    Diagnostic,
    ImportRecord,
    KeyAccess,
    LocalBinding,
    ModuleIndex,
    ReturnSite,
    Symbol,
)

# Fields that never hold anything the index reads: punctuation and whitespace.
_SKIPPED_FIELDS = frozenset(
    {
        "lpar",
        "rpar",
        "comma",
        "semicolon",
        "leading_lines",
        "lines_after_decorators",
        "trailing_whitespace",
        "header",
        "footer",
        "equal",
        "colon",
        "dot",
        "star",
        "asynchronous",
        "operator",
        "whitespace_after_at",
        "lbracket",
        "rbracket",
        "lbrace",
        "rbrace",
        "first_line",
        "empty_lines",
        "indent",
        "newline",
    }
)
# Node types whose declared field order differs from source order.
_FIELD_ORDER: dict[type, tuple[str, ...]] = {
    cst.FunctionDef: ("decorators", "name", "params", "returns", "body"),
    cst.ClassDef: ("decorators", "name", "bases", "keywords", "body"),
    cst.IfExp: ("body", "test", "orelse"),
    cst.Parameters: ("posonly_params", "params", "star_arg", "kwonly_params", "star_kwarg"),
}
_FIELDS_CACHE: dict[type, tuple[str, ...]] = {}

# Receivers whose string subscripts and ``.get`` are plain dicts, not tensordicts.
_NOT_TENSORDICT = frozenset(
    {
        "kwargs",
        "kw",
        "environ",
        "config",
        "cfg",
        "__dict__",
        "state_dict",
        "os",
        "sys",
        "modules",
        "globals",
        "locals",
        "json",
        "headers",
        "params",
        "options",
        "extra_kwargs",
    }
)


def _not_tensordict(name: str) -> bool:
    """Receivers whose string keys are not tensordict entries: plain dicts and specs (``*_spec``)."""
    return name in _NOT_TENSORDICT or name == "spec" or name.endswith("_spec")


_KEY_METHODS = {
    "get": READ,
    "get_at": READ,
    "pop": READ,
    "select": READ,
    "set": WRITE,
    "set_": WRITE,
    "set_at_": WRITE,
    "setdefault": WRITE,
    "exclude": DELETE,
    "del_": DELETE,
}
_MULTI_KEY_METHODS = frozenset({"select", "exclude"})
_KEY_KEYWORDS = {"in_keys": READ, "in_key": READ, "out_keys": WRITE, "out_key": WRITE}


def _fields(node_type: type) -> tuple[str, ...]:
    names = _FIELDS_CACHE.get(node_type)
    if names is None:
        names = _FIELD_ORDER.get(node_type) or tuple(
            field.name
            for field in dataclasses.fields(node_type)
            if not field.name.startswith("whitespace") and field.name not in _SKIPPED_FIELDS
        )
        _FIELDS_CACHE[node_type] = names
    return names


def _children(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    for name in _fields(type(node)):
        value = getattr(node, name)
        if isinstance(value, cst.CSTNode):
            yield value
        elif isinstance(value, (list, tuple)):
            for item in value:
                if isinstance(item, cst.CSTNode):
                    yield item


def dotted_parts(node: cst.BaseExpression) -> tuple[str, ...]:
    """``a.b.c`` -> ``("a", "b", "c")``; ``super().m`` -> ``("super()", "m")``; else ``()``."""
    parts: list[str] = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if isinstance(node, cst.Name):
        parts.append(node.value)
    elif isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "super":
        parts.append("super()")
    else:
        return ()
    parts.reverse()
    return tuple(parts)


def compact_text(node: cst.BaseExpression, fallback: str) -> str:
    """A callee expression with argument lists and subscripts elided: ``f(...).g``."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{compact_text(node.value, fallback)}.{node.attr.value}"
    if isinstance(node, cst.Call):
        return f"{compact_text(node.func, fallback)}(...)"
    if isinstance(node, cst.Subscript):
        return f"{compact_text(node.value, fallback)}[...]"
    return fallback if len(fallback) <= 40 else "<expression>"


def _string_value(node: cst.BaseExpression) -> str | None:
    if isinstance(node, (cst.SimpleString, cst.ConcatenatedString)):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    return None


def _raw_key(key: tuple[str, ...]) -> str:
    """What a key's line holds for sure: its last string (``traj_ids`` of the tuple key)."""
    return key[-1]


def key_literal(node: cst.BaseExpression) -> tuple[str, ...] | None:
    """A tensordict key written as a literal: ``"k"`` or ``("a", "b")``."""
    text = _string_value(node)
    if text is not None:
        return (text,)
    if isinstance(node, cst.Tuple) and node.elements:
        return _literal_strings(node)
    return None


def _key_list(node: cst.BaseExpression) -> list[tuple[str, ...]]:
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


@dataclasses.dataclass(slots=True)
class _Scope:
    qualname: str
    kind: str  # module / class / function
    owner: str = ""  # class whose ``self`` is in reach
    self_name: str = ""


class _Extractor:
    """One walk over one module; collects records into lists."""

    def __init__(
        self,
        module: cst.Module,
        module_name: str,
        path: str,
        positions: Any,
    ) -> None:
        self.module = module
        self.module_name = module_name
        self.path = path
        self.positions = positions
        self.scopes: list[_Scope] = [_Scope(module_name, MODULE)]
        self.guards: list[str] = []
        self.symbols: list[Symbol] = []
        self.calls: list[CallSite] = []
        self.attributes: list[AttributeAccess] = []
        self.keys: list[KeyAccess] = []
        self.imports: list[ImportRecord] = []
        self.locals: list[LocalBinding] = []
        self.returns: list[ReturnSite] = []
        self.exports: tuple[str, ...] | None = None
        self.package_parts = module_name.split(".")
        self.line_count = 1
        self.callee: cst.CSTNode | None = None
        self.exit_guard = ""
        self.call_span = (0, 0)
        self.source_lines: list[str] = []

    # -- helpers ---------------------------------------------------------------------------
    def text(self, node: cst.CSTNode) -> str:
        """Source text of a node by code generation; only for rare constructs."""
        return L.shorten(self.module.code_for_node(node))

    def name_text(self, node: cst.BaseExpression) -> str:
        parts = dotted_parts(node)
        return ".".join(parts) if parts else self.text(node)

    def position(self, node: cst.CSTNode, category: str, check: str | None = None) -> tuple[int, int, tuple[str, ...]]:
        """Line, end line and source texts (see :func:`rlmap.index.lines.ast_positions`) of ``node``."""
        return self.positions.take(node, category, check)

    @property
    def scope(self) -> _Scope:
        return self.scopes[-1]

    def function_scope(self) -> str:
        for scope in reversed(self.scopes):
            if scope.kind == FUNCTION:
                return scope.qualname
        return self.module_name

    # -- walking ---------------------------------------------------------------------------
    def walk(self, node: cst.CSTNode) -> None:
        handler = _HANDLERS.get(type(node))
        if handler is not None:
            handler(self, node)
        else:
            for child in _children(node):
                self.walk(child)

    def walk_all(self, nodes: Sequence[cst.CSTNode]) -> None:
        for node in nodes:
            self.walk(node)

    def walk_guarded(self, guard: str, body: cst.CSTNode) -> None:
        self.guards.append(guard)
        try:
            self.walk(body)
        finally:
            self.guards.pop()

    # -- definitions -----------------------------------------------------------------------
    def visit_module(self, node: cst.Module) -> None:
        docstring = node.get_docstring()
        last_line = self.line_count
        self.symbols.append(
            Symbol(
                qualname=self.module_name,
                kind=MODULE,
                path=self.path,
                line=1,
                end_line=last_line,
                has_docstring=bool(docstring),
                doc_first_line=_first_line(docstring),
            )
        )
        self.walk_all(node.body)

    def visit_class(self, node: cst.ClassDef) -> None:
        decorators = self.decorators(node.decorators)
        bases = []
        for arg in node.bases:
            self.walk(arg)
            bases.append(self.name_text(arg.value))
        for arg in node.keywords:
            self.walk(arg)
        line, end_line, _ = self.position(node, L.CLASS, node.name.value)
        qualname = f"{self.scope.qualname}.{node.name.value}"
        docstring = node.get_docstring()
        self.symbols.append(
            Symbol(
                qualname=qualname,
                kind=CLASS,
                path=self.path,
                line=line,
                end_line=end_line,
                has_docstring=bool(docstring),
                doc_first_line=_first_line(docstring),
                decorators=decorators,
                bases=tuple(bases),
            )
        )
        saved_guards, self.guards = self.guards, []
        self.scopes.append(_Scope(qualname, CLASS, owner=qualname))
        try:
            self.walk(node.body)
        finally:
            self.scopes.pop()
            self.guards = saved_guards

    def decorators(self, decorators: Sequence[cst.Decorator]) -> tuple[str, ...]:
        names = []
        for decorator in decorators:
            self.walk(decorator)
            expression = decorator.decorator
            if isinstance(expression, cst.Call):
                expression = expression.func
            names.append(self.name_text(expression))
        return tuple(names)

    def visit_function(self, node: cst.FunctionDef) -> None:
        decorators = self.decorators(node.decorators)
        line, end_line, texts = self.position(node, L.FUNC, node.name.value)
        enclosing = self.scope
        self.walk(node.params)  # defaults and annotations run in the enclosing scope
        if node.returns is not None:
            self.walk(node.returns)
        qualname = f"{enclosing.qualname}.{node.name.value}"
        params = _parameters(node.params)
        kind = FUNCTION
        self_name = enclosing.self_name if enclosing.kind == FUNCTION else ""
        owner = enclosing.owner
        if enclosing.kind == CLASS:
            kind = METHOD
            is_static = "staticmethod" in decorators
            self_name = "" if is_static or not params else params[0]
            if any(_is_property(name) for name in decorators):
                kind = PROPERTY
        elif self_name in params:
            self_name = ""  # a nested function that shadows ``self``
        docstring = node.get_docstring()
        signature, returns = texts[0], texts[1]
        annotations = tuple(
            (param.name.value, annotation)
            for param, annotation in zip(_all_params(node.params), texts[2:], strict=False)
        )
        self.symbols.append(
            Symbol(
                qualname=qualname,
                kind=kind,
                path=self.path,
                line=line,
                end_line=end_line,
                signature=signature,
                has_docstring=bool(docstring),
                doc_first_line=_first_line(docstring),
                decorators=decorators,
                params=annotations,
                returns=returns,
            )
        )
        for name, annotation in annotations:
            if annotation:
                self.locals.append(LocalBinding(qualname, name, (annotation,), "annotation"))
        for param in _all_params(node.params):
            default = _string_value(param.default) if param.default is not None else None
            if default is not None:
                self.locals.append(LocalBinding(qualname, param.name.value, (default,), "literal"))
        saved_guards, self.guards = self.guards, []
        self.scopes.append(_Scope(qualname, FUNCTION, owner=owner, self_name=self_name))
        try:
            self.walk(node.body)
        finally:
            self.scopes.pop()
            self.guards = saved_guards

    # -- statements ------------------------------------------------------------------------
    def visit_if(self, node: cst.If, keyword: str = "if") -> None:
        _, _, (test,) = self.position(node, L.IF)
        self.walk(node.test)
        self.walk_guarded(f"{keyword} {test}", node.body)
        orelse = node.orelse
        if isinstance(orelse, cst.If):
            self.guards.append(f"not ({test})")
            try:
                self.visit_if(orelse, "elif")
            finally:
                self.guards.pop()
        elif isinstance(orelse, cst.Else):
            self.walk_guarded(f"else (not ({test}))", orelse.body)
        if keyword == "if" and orelse is None and _ends_in_exit(node.body):
            self.exit_guard = f"not ({test})"  # the statements after this ``if`` run only when it failed

    def visit_block(self, node: cst.IndentedBlock) -> None:
        """A block's statements; after ``if c: return`` the rest of the block runs under ``not (c)``."""
        pushed = 0
        try:
            for statement in node.body:
                self.exit_guard = ""
                self.walk(statement)
                if self.exit_guard:
                    self.guards.append(self.exit_guard)
                    pushed += 1
                    self.exit_guard = ""
        finally:
            del self.guards[len(self.guards) - pushed :]

    def visit_while(self, node: cst.While) -> None:
        _, _, (test,) = self.position(node, L.WHILE)
        self.walk(node.test)
        self.walk_guarded(f"while {test}", node.body)
        if node.orelse is not None:
            self.walk_guarded(f"else of while {test} (no break)", node.orelse.body)

    def visit_for(self, node: cst.For) -> None:
        _, _, (target, iterable) = self.position(node, L.FOR)
        self.record_loop(node.target, node.iter)
        self.walk(node.target)
        self.walk(node.iter)
        self.walk_guarded(f"for {target} in {iterable}", node.body)
        if node.orelse is not None:
            self.walk_guarded(f"else of for {target} in {iterable} (no break)", node.orelse.body)

    def record_loop(self, target: cst.BaseExpression, iterable: cst.BaseExpression) -> None:
        """``for k in self.keys`` and ``for a, b in zip(self.x, self.y)``: key-value bindings."""
        scope = self.scope
        if scope.kind != FUNCTION or not scope.self_name:
            return
        pairs: list[tuple[cst.BaseExpression, cst.BaseExpression]] = [(target, iterable)]
        if isinstance(target, cst.Tuple) and isinstance(iterable, cst.Call):
            args = [arg.value for arg in iterable.args if arg.keyword is None and not arg.star]
            if len(args) == len(target.elements):
                pairs = [(element.value, arg) for element, arg in zip(target.elements, args, strict=False)]
        for name_node, source in pairs:
            parts = dotted_parts(source)
            if isinstance(name_node, cst.Name) and len(parts) == 2 and parts[0] == scope.self_name:
                self.locals.append(LocalBinding(scope.qualname, name_node.value, ("self", parts[1]), "loop"))

    def visit_except(self, node: cst.ExceptHandler | cst.ExceptStarHandler) -> None:
        _, _, (kind,) = self.position(node, L.EXCEPT)
        if node.type is not None:
            self.walk(node.type)
        guard = f"except {kind}" if kind else "except"
        self.walk_guarded(guard, node.body)

    def visit_import(self, node: cst.Import) -> None:
        scope = self.function_scope()
        line, _, _ = self.position(node, L.IMPORT)
        for alias in node.names:
            full = ".".join(dotted_parts(alias.name))
            if alias.asname is not None:
                local = self.name_text(alias.asname.name)  # type: ignore[arg-type]
                self.imports.append(ImportRecord(scope, local, full, line))
            else:
                head = full.split(".", 1)[0]
                self.imports.append(ImportRecord(scope, head, head, line))

    def visit_import_from(self, node: cst.ImportFrom) -> None:
        scope = self.function_scope()
        line, _, _ = self.position(node, L.IMPORT)
        base = self.resolve_relative(len(node.relative), node.module)
        if isinstance(node.names, cst.ImportStar):
            self.imports.append(ImportRecord(scope, "*", base, line))
            return
        for alias in node.names:
            name = ".".join(dotted_parts(alias.name))
            local = name
            if alias.asname is not None:
                local = self.name_text(alias.asname.name)  # type: ignore[arg-type]
            target = f"{base}.{name}" if base else name
            self.imports.append(ImportRecord(scope, local, target, line))

    def resolve_relative(self, level: int, module: cst.Attribute | cst.Name | None) -> str:
        name = ".".join(dotted_parts(module)) if module is not None else ""
        if level == 0:
            return name
        package = self.package_parts if self.is_package else self.package_parts[:-1]
        base = package[: len(package) - (level - 1)] if level > 1 else package
        return ".".join([*base, name] if name else base)

    def visit_assign(self, node: cst.Assign) -> None:
        line, _, (value_text,) = self.position(node, L.ASSIGN)
        for target in node.targets:
            self.walk_target(target.target, WRITE, node.value, value_text)
        self.walk(node.value)
        for target in node.targets:
            self.record_binding(target.target, node.value, line, value_text, "")
            self.record_declared_keys(target.target, node.value, line)

    def record_declared_keys(self, target: cst.BaseExpression, value: cst.BaseExpression, line: int) -> None:
        """``in_keys = [...]``, ``self.out_keys = [...]``, ``DEFAULT_IN_KEYS = [...]``: declared keys."""
        parts = dotted_parts(target)
        if not parts:
            return
        name = parts[-1].lower()
        kind = READ if name.endswith(("in_keys", "in_key")) else WRITE if name.endswith(("out_keys", "out_key")) else ""
        if kind:
            owner = self.scope.qualname if self.scope.kind == CLASS else self.function_scope()
            for key in _key_list(value):
                self.keys.append(KeyAccess(key, kind, owner, line, parts[-1], tuple(self.guards)))

    def visit_ann_assign(self, node: cst.AnnAssign) -> None:
        line, _, (annotation, value_text) = self.position(node, L.ANN_ASSIGN)
        if node.value is not None:
            self.walk_target(node.target, WRITE, node.value, value_text, annotation)
        else:
            self.walk_target(node.target, READ, None, "", annotation)
        self.walk(node.annotation)
        if node.value is not None:
            self.walk(node.value)
        self.record_binding(node.target, node.value, line, value_text, annotation)
        if node.value is not None:
            self.record_declared_keys(node.target, node.value, line)

    def visit_aug_assign(self, node: cst.AugAssign) -> None:
        _, _, (value_text,) = self.position(node, L.AUG_ASSIGN)
        self.walk_target(node.target, AUGMENTED, node.value, value_text)
        self.walk(node.value)

    def visit_return(self, node: cst.Return) -> None:
        line, _, (value,) = self.position(node, L.RETURN)
        self.returns.append(ReturnSite(self.function_scope(), line, value, tuple(self.guards)))
        if node.value is not None:
            self.walk(node.value)

    def visit_del(self, node: cst.Del) -> None:
        self.walk_target(node.target, DELETE, None, "")

    def record_binding(
        self,
        target: cst.BaseExpression,
        value: cst.BaseExpression | None,
        line: int,
        value_text: str,
        annotation: str,
    ) -> None:
        if not isinstance(target, cst.Name):
            return
        name = target.value
        scope = self.scope
        if scope.kind in (MODULE, CLASS):
            if scope.kind == MODULE and name == "__all__" and value is not None:
                self.exports = _literal_strings(value)
            self.symbols.append(
                Symbol(
                    qualname=f"{scope.qualname}.{name}",
                    kind=VARIABLE if scope.kind == MODULE else ATTRIBUTE,
                    path=self.path,
                    line=line,
                    end_line=line,
                    value=value_text,
                    annotation=annotation,
                )
            )
            return
        if value is not None:
            literal = _string_value(value)
            parts = dotted_parts(value)
            if literal is not None:
                self.locals.append(LocalBinding(scope.qualname, name, (literal,), "literal"))
            elif len(parts) == 2 and scope.self_name and parts[0] == scope.self_name:
                self.locals.append(LocalBinding(scope.qualname, name, ("self", parts[1]), "alias"))
        if annotation:
            self.locals.append(LocalBinding(scope.qualname, name, (annotation,), "annotation"))
        elif isinstance(value, cst.Call):
            parts = dotted_parts(value.func)
            if parts:
                self.locals.append(LocalBinding(scope.qualname, name, parts, "assignment"))

    def walk_target(
        self,
        target: cst.BaseExpression,
        kind: str,
        value: cst.BaseExpression | None,
        value_text: str,
        annotation: str = "",
    ) -> None:
        if isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self.walk_target(element.value, kind, None, "", "")
            return
        if isinstance(target, cst.StarredElement):
            self.walk_target(target.value, kind, None, "", "")
            return
        if isinstance(target, cst.Attribute):
            self.visit_attribute(target, kind, value, value_text, annotation)
            return
        if isinstance(target, cst.Subscript):
            key_kind = WRITE if kind in (WRITE, AUGMENTED) else kind
            self.visit_subscript(target, key_kind)
            return
        self.walk(target)

    # -- expressions -----------------------------------------------------------------------
    def visit_attribute(
        self,
        node: cst.Attribute,
        kind: str = READ,
        value: cst.BaseExpression | None = None,
        value_text: str = "",
        annotation: str = "",
    ) -> None:
        line, _, _ = self.position(node, L.ATTR, node.attr.value)
        scope = self.scope
        is_callee, self.callee = node is self.callee, None
        on_self = bool(scope.self_name) and isinstance(node.value, cst.Name) and node.value.value == scope.self_name
        if kind == READ and not is_callee and not on_self and scope.kind == FUNCTION:
            parts = dotted_parts(node)
            if len(parts) > 1 and parts[0] != "super()":
                self.calls.append(
                    CallSite(
                        caller=scope.qualname,
                        callee_text=".".join(parts),
                        parts=parts,
                        line=line,
                        guards=tuple(self.guards),
                        attribute_read=True,
                    )
                )
        if on_self:
            value_parts: tuple[str, ...] = ()
            is_call = False
            if value is not None:
                if isinstance(value, cst.Call):
                    value_parts, is_call = dotted_parts(value.func), True
                else:
                    value_parts = dotted_parts(value)
            self.attributes.append(
                AttributeAccess(
                    owner=scope.owner,
                    attribute=node.attr.value,
                    kind=kind,
                    function=self.function_scope(),
                    line=line,
                    guards=tuple(self.guards),
                    value=value_text,
                    value_parts=value_parts,
                    value_is_call=is_call,
                    annotation=annotation,
                )
            )
        self.walk(node.value)

    def visit_call(self, node: cst.Call) -> None:
        func = node.func
        check = (
            func.value if isinstance(func, cst.Name) else (func.attr.value if isinstance(func, cst.Attribute) else "")
        )
        start, end, (func_text, name_line) = self.position(node, L.CALL, check)
        line = int(name_line)  # a call is anchored where its callee's name is written
        parts = dotted_parts(func)
        self.calls.append(
            CallSite(
                caller=self.function_scope(),
                callee_text=".".join(parts) if parts else compact_text(func, func_text),
                parts=parts,
                line=line,
                guards=tuple(self.guards),
            )
        )
        self.call_span = (start, end)
        if isinstance(func, cst.Attribute) and func.attr.value in _KEY_METHODS:
            self.key_method(func, node.args, line)
        self.callee = func  # the attribute read that is this call's callee is not a read
        for arg in node.args:
            if arg.keyword is not None and arg.keyword.value in _KEY_KEYWORDS:
                for key in _key_list(arg.value):
                    key_line = self.line_holding(_raw_key(key), start, end)
                    self.add_key(key, _KEY_KEYWORDS[arg.keyword.value], key_line, arg.keyword.value)
        self.walk(func)
        for arg in node.args:
            self.walk(arg)

    def key_method(self, func: cst.Attribute, args: Sequence[cst.Arg], line: int) -> None:
        receiver = dotted_parts(func.value)
        if receiver and _not_tensordict(receiver[-1]):
            return
        method = func.attr.value
        positional = [arg for arg in args if arg.keyword is None and not arg.star]
        if not positional:
            return
        candidates = positional if method in _MULTI_KEY_METHODS else positional[:1]
        start, end = self.call_span
        for arg in candidates:
            key = key_literal(arg.value)
            if key is not None:
                self.add_key(key, _KEY_METHODS[method], self.line_holding(_raw_key(key), start, end), method)
            else:
                parts = ".".join(dotted_parts(arg.value))
                key_line = self.line_holding(parts.rsplit(".", 1)[-1], start, end) if parts else line
                self.add_symbolic_key(arg.value, _KEY_METHODS[method], key_line, method)

    def line_holding(self, needle: str, start: int, end: int) -> int:
        """The first line in ``start..end`` whose text holds ``needle`` (a key literal or a name)."""
        if needle and end > start:
            for number in range(start, min(end, len(self.source_lines)) + 1):
                if needle in self.source_lines[number - 1]:
                    return number
        return start

    def add_key(self, key: tuple[str, ...], kind: str, line: int, how: str, expression: str = "") -> None:
        self.keys.append(KeyAccess(key, kind, self.function_scope(), line, how, tuple(self.guards), expression))

    def add_symbolic_key(self, node: cst.BaseExpression, kind: str, line: int, how: str) -> None:
        """A key held by a local name or a ``self`` attribute: resolved later by the model."""
        parts = dotted_parts(node)
        if len(parts) == 1 or (len(parts) == 2 and parts[0] == self.scope.self_name and parts[0]):
            self.add_key((), kind, line, how, ".".join(parts))

    def visit_subscript(self, node: cst.Subscript, kind: str = READ) -> None:
        line, _, _ = self.position(node, L.SUBSCRIPT)
        receiver = dotted_parts(node.value)
        if len(node.slice) == 1 and not (receiver and _not_tensordict(receiver[-1])):
            index = node.slice[0].slice
            if isinstance(index, cst.Index):
                key = key_literal(index.value)
                if key is not None:
                    self.add_key(key, kind, line, "[]")
                elif kind != READ:
                    # reads through ``x[name]`` are mostly lists and dicts; writes are kept
                    self.add_symbolic_key(index.value, kind, line, "[]")
        self.walk(node.value)
        for element in node.slice:
            self.walk(element)

    def visit_comparison(self, node: cst.Comparison) -> None:
        line, _, _ = self.position(node, L.COMPARE)
        left = node.left
        for target in node.comparisons:
            if isinstance(target.operator, (cst.In, cst.NotIn)):
                key = key_literal(left)
                comparator = target.comparator
                if key is not None and _is_keys_call(comparator):
                    self.add_key(key, CHECK, line, "in keys()")
            left = target.comparator
        self.walk(node.left)
        for target in node.comparisons:
            self.walk(target.comparator)

    @property
    def is_package(self) -> bool:
        return self.path.endswith("/__init__.py") or self.path == "__init__.py"


_EXITS = (cst.Return, cst.Raise, cst.Continue, cst.Break)


def _ends_in_exit(body: cst.BaseSuite) -> bool:
    """Whether a suite's last statement leaves the block (return, raise, continue, break)."""
    if isinstance(body, cst.SimpleStatementSuite):
        return bool(body.body) and isinstance(body.body[-1], _EXITS)
    if isinstance(body, cst.IndentedBlock) and body.body:
        last = body.body[-1]
        return isinstance(last, cst.SimpleStatementLine) and bool(last.body) and isinstance(last.body[-1], _EXITS)
    return False


def _is_keys_call(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "keys"


def _is_property(decorator: str) -> bool:
    last = decorator.rsplit(".", 1)[-1]
    return last in {"property", "cached_property", "setter", "getter", "deleter"} or (decorator.endswith("_property"))


def _all_params(params: cst.Parameters) -> list[cst.Param]:
    found = [*params.posonly_params, *params.params]
    if isinstance(params.star_arg, cst.Param):
        found.append(params.star_arg)
    found.extend(params.kwonly_params)
    if params.star_kwarg is not None:
        found.append(params.star_kwarg)
    return found


def _parameters(params: cst.Parameters) -> list[str]:
    return [param.name.value for param in [*params.posonly_params, *params.params]]


def _first_line(docstring: str | None) -> str:
    """The first non-blank line of a docstring; ``""`` for none or a whitespace-only one."""
    lines = docstring.strip().splitlines() if docstring else []
    return lines[0].strip() if lines else ""


def _literal_strings(node: cst.BaseExpression) -> tuple[str, ...] | None:
    if not isinstance(node, (cst.List, cst.Tuple)):
        return None
    names = []
    for element in node.elements:
        if not isinstance(element, cst.Element):
            return None
        value = _string_value(element.value)
        if value is None:
            return None
        names.append(value)
    return tuple(names)


_HANDLERS: dict[type, Any] = {
    cst.Module: _Extractor.visit_module,
    cst.ClassDef: _Extractor.visit_class,
    cst.FunctionDef: _Extractor.visit_function,
    cst.If: _Extractor.visit_if,
    cst.While: _Extractor.visit_while,
    cst.For: _Extractor.visit_for,
    cst.ExceptHandler: _Extractor.visit_except,
    cst.ExceptStarHandler: _Extractor.visit_except,
    cst.Import: _Extractor.visit_import,
    cst.ImportFrom: _Extractor.visit_import_from,
    cst.Assign: _Extractor.visit_assign,
    cst.AnnAssign: _Extractor.visit_ann_assign,
    cst.AugAssign: _Extractor.visit_aug_assign,
    cst.Del: _Extractor.visit_del,
    cst.Return: _Extractor.visit_return,
    cst.IndentedBlock: _Extractor.visit_block,
    cst.Attribute: _Extractor.visit_attribute,
    cst.Call: _Extractor.visit_call,
    cst.Subscript: _Extractor.visit_subscript,
    cst.Comparison: _Extractor.visit_comparison,
}


class _Paired:
    """Positions from the paired ``ast`` tree (the fast path)."""

    def __init__(self, positions: dict[str, list[L.Position]]) -> None:
        self.paired = L.PairedPositions(positions)

    def take(
        self,
        node: cst.CSTNode,  # noqa: ARG002 - same signature as _Provided.take
        category: str,
        check: str | None,
    ) -> tuple[int, int, tuple[str, ...]]:
        return self.paired.take(category, check)


class _Provided:
    """Positions from libcst's ``PositionProvider`` (the exact, slow fallback)."""

    def __init__(self, module: cst.Module, positions: Any) -> None:
        self.module = module
        self.positions = positions

    def take(
        self,
        node: cst.CSTNode,
        category: str,  # noqa: ARG002 - positions come from the node itself
        check: str | None,  # noqa: ARG002
    ) -> tuple[int, int, tuple[str, ...]]:
        target = node.name if isinstance(node, (cst.FunctionDef, cst.ClassDef)) else node
        start = self.positions[target].start.line
        end = self.positions[node].end.line
        return start, end, self.texts(node)

    def text(self, node: cst.CSTNode | None) -> str:
        return L.shorten(self.module.code_for_node(node)) if node is not None else ""

    def texts(self, node: cst.CSTNode) -> tuple[str, ...]:
        """The same texts :func:`rlmap.index.lines.ast_positions` gives, by code generation."""
        text = self.text
        if isinstance(node, (cst.If, cst.While)):
            return (text(node.test),)
        if isinstance(node, cst.For):
            return (text(node.target), text(node.iter))
        if isinstance(node, (cst.ExceptHandler, cst.ExceptStarHandler)):
            return (text(node.type),)
        if isinstance(node, (cst.Assign, cst.AugAssign, cst.Return)):
            return (text(node.value),)
        if isinstance(node, cst.AnnAssign):
            return (text(node.annotation.annotation), text(node.value))
        if isinstance(node, cst.Call):
            return (text(node.func), str(self.positions[node.func].end.line))
        if isinstance(node, cst.FunctionDef):
            params = _all_params(node.params)
            signature = f"({text(node.params)})"
            returns = text(node.returns.annotation) if node.returns is not None else ""
            if returns:
                signature += f" -> {returns}"
            annotations = [text(p.annotation.annotation) if p.annotation else "" for p in params]
            return (signature, returns, *annotations)
        return ()


def module_name_for(path: str) -> tuple[str, bool]:
    """``torchrl/envs/__init__.py`` -> (``torchrl.envs``, True)."""
    parts = path[:-3].split("/")
    if parts[-1] == "__init__":
        return ".".join(parts[:-1]), True
    return ".".join(parts), False


# Deepest libcst tree indexed.  Real code stays far below it (torch's deepest module: 94,
# torchrl's: 27); libcst's native parser crashes the process on a few thousand levels and is
# quadratic in depth on chains (``a.b.c...``, ``a[0][0]...``), so deeper files are skipped
# before libcst sees them.
MAX_NESTING = 500
_REPORTED_TEXT = 200


class _Skip(Exception):
    """This file cannot be indexed: ``line`` and why (the diagnostic's message)."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(message)
        self.line = line
        self.message = message


def _line_of(data: bytes, offset: int) -> int:
    """1-based line of byte ``offset``, counting ``\\n``, ``\\r\\n`` and ``\\r`` as Python does."""
    head = data[:offset]
    return head.count(b"\n") + head.count(b"\r") - head.count(b"\r\n") + 1


def _cookie_line(source: bytes) -> int:
    """The line (1 or 2) of a PEP 263 coding declaration."""
    return next((number for number, text in enumerate(source.splitlines()[:2], 1) if b"coding" in text), 1)


def _display_encoding(encoding: str) -> str:
    return "UTF-8" if encoding in ("utf-8", "utf-8-sig") else encoding


def decode_source(source: bytes) -> str:
    """The text of a source file, decoded as Python decodes it, with ``\\n`` newlines.

    The encoding comes from a UTF-8 BOM or a PEP 263 ``coding`` cookie on line 1 or 2,
    else UTF-8.  Raises :class:`_Skip` for bytes Python would refuse.
    """
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(source).readline)
    except SyntaxError as error:  # no cookie and line 1/2 not UTF-8, or a bad cookie
        try:
            source.decode("utf-8")
        except UnicodeDecodeError:
            encoding = "utf-8"  # the decode below says where
        else:
            raise _Skip(_cookie_line(source), f"bad encoding declaration ({error.msg}); file skipped") from None
    try:
        text = source.decode(encoding)
    except UnicodeDecodeError as error:
        raise _Skip(
            _line_of(source, error.start),
            f"not valid {_display_encoding(encoding)} ({error.reason}); file skipped",
        ) from None
    except LookupError as error:  # a codec that does not decode bytes to text (``rot13``)
        raise _Skip(_cookie_line(source), f"bad encoding declaration ({error}); file skipped") from None
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")  # Python reads all three as newlines
    nul = text.find("\0")
    if nul != -1:
        raise _Skip(text.count("\n", 0, nul) + 1, "NUL byte in the source (Python refuses it); file skipped")
    return text


# A dotted name, ``a.b .c``; linear: possessive repeats, and it starts only at a word's start.
_DOTTED = re.compile(r"(?<!\w)\w++(?:[ \t\f]*+\.[ \t\f]*+\w++)++")


def _long_dotted_import(text: str) -> tuple[int, int]:
    """``(line, dots)`` of an import whose dotted name has more than ``MAX_NESTING`` dots, else ``(0, 0)``.

    CPython's parser joins such a name one part at a time: quadratic (``import a.a.a...``
    100,000 parts long takes 30 s), so it is caught before ``ast.parse``.  Any dotted name on
    a line holding ``import`` counts: a chain that long is too deep as an expression too.
    """
    if text.count(".") <= MAX_NESTING:
        return 0, 0
    parts: list[str] = []
    first = 1
    for number, line in enumerate(text.split("\n"), 1):
        if not parts:
            first = number
        if line.endswith("\\"):  # a continuation line: ``import a.\\`` + ``b``
            parts.append(line[:-1])
            continue
        logical = "".join([*parts, line]) if parts else line
        parts = []
        if logical.count(".") <= MAX_NESTING or "import" not in logical:
            continue
        dots = max((match.group().count(".") for match in _DOTTED.finditer(logical)), default=0)
        if dots > MAX_NESTING:
            return first, dots
    return 0, 0


def _too_deep_for_ast(text: str) -> bool:
    try:
        ast.parse(text)  # warnings are off (extract_module)
    except (RecursionError, MemoryError):
        return True
    except (SyntaxError, ValueError):
        return False
    return False


def _deepest_line(text: str) -> int:
    """The first line at which the file becomes too deep for ``ast`` (a bisection on prefixes)."""
    lines = [line + "\n" for line in text.split("\n")]  # Python's lines (splitlines also cuts at \f)
    low, high = 0, len(lines)  # the prefix of ``high`` lines is too deep; of ``low`` lines is not
    while high - low > 1:
        middle = (low + high) // 2
        if _too_deep_for_ast("".join(lines[:middle])):
            high = middle
        else:
            low = middle
    return max(high, 1)


def _too_deep(line: int, detail: str = "") -> _Skip:
    return _Skip(line, f"nesting too deep to index{detail}; file skipped")


def _reported(error: BaseException) -> str:
    text = " ".join(str(error).split())
    if len(text) > _REPORTED_TEXT:
        text = text[: _REPORTED_TEXT - 3] + "..."
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def internal_error(path: str, error: BaseException, line: int = 1) -> ModuleIndex:
    """The index of a file whose extraction failed on a bug: no records, one diagnostic."""
    module_name, is_package = module_name_for(path)
    message = f"internal error while indexing: {_reported(error)}; file skipped — please report"
    return ModuleIndex(module_name, path, is_package, diagnostics=(Diagnostic(path, line, message),))


def extract_module(source: bytes, path: str, *, position_provider: bool = False) -> ModuleIndex:
    """Index one file's bytes; ``path`` is repo-relative (``torchrl/collectors/_single.py``).

    Never raises on any input: a file that cannot be decoded, parsed or walked, and any bug
    met on the way, become the index's diagnostic (``path:line: why``).

    ``position_provider=True`` takes lines from libcst's ``PositionProvider`` instead of the
    paired ``ast`` tree (the slow path; the tests use it to check that both agree).
    """
    module_name, is_package = module_name_for(path)
    try:
        with warnings.catch_warnings():
            # ``ast.parse`` and libcst's ``evaluated_value`` warn on ``"\\d"``; under ``-W error``
            # the warning would be raised in the middle of the walk
            warnings.simplefilter("ignore")
            return _extract(source, path, module_name, is_package, position_provider)
    except _Skip as skip:
        return ModuleIndex(module_name, path, is_package, diagnostics=(Diagnostic(path, skip.line, skip.message),))
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as error:  # libcst's native parser panics with a BaseException (pyo3)
        return internal_error(path, error)


def _extract(source: bytes, path: str, module_name: str, is_package: bool, position_provider: bool) -> ModuleIndex:
    text = decode_source(source)
    line, dots = _long_dotted_import(text)
    if line:
        raise _too_deep(line, f" ({dots} dots in a dotted name, limit {MAX_NESTING})")
    try:
        tree = ast.parse(text, filename=path)
    except SyntaxError as error:
        raise _Skip(error.lineno or 1, f"syntax error: {error.msg}; file skipped") from None
    except (RecursionError, MemoryError):  # CPython's parser stops at ~3000 levels, or its stack
        raise _too_deep(_deepest_line(text), " (deeper than Python's own parser allows)") from None
    utf8 = text.encode("utf-8")
    positions, nesting = L.index_ast(tree, utf8, MAX_NESTING)
    if nesting.depth > MAX_NESTING:
        raise _too_deep(nesting.line, f" ({nesting.depth} levels, limit {MAX_NESTING})")
    try:
        module = cst.parse_module(text)
    except cst.ParserSyntaxError as error:
        raise _Skip(error.raw_line, f"libcst cannot parse: {error.message}; file skipped") from None
    except RecursionError:
        raise _too_deep(nesting.line) from None
    line_count = max(1, text.count("\n") + (0 if text.endswith("\n") else 1))
    lines = text.split("\n")  # the line numbering ast uses (splitlines also splits on \f, \v, ...)
    try:
        if position_provider:
            raise L.PositionMismatch("requested")
        return _run(module, module_name, path, is_package, _Paired(positions), False, line_count, lines)
    except L.PositionMismatch:
        pass
    except RecursionError:
        raise _too_deep(nesting.line) from None
    try:
        wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
        provided = _Provided(wrapper.module, wrapper.resolve(PositionProvider))
        return _run(wrapper.module, module_name, path, is_package, provided, True, line_count, lines)
    except RecursionError:
        raise _too_deep(nesting.line) from None


def _run(
    module: cst.Module,
    module_name: str,
    path: str,
    is_package: bool,
    positions: Any,
    fallback: bool,
    line_count: int,
    source_lines: list[str],
) -> ModuleIndex:
    extractor = _Extractor(module, module_name, path, positions)
    extractor.line_count = line_count
    extractor.source_lines = source_lines
    extractor.walk(module)
    if isinstance(positions, _Paired):
        positions.paired.verify_exhausted()
    return ModuleIndex(
        module=module_name,
        path=path,
        is_package=is_package,
        symbols=tuple(extractor.symbols),
        calls=tuple(extractor.calls),
        attributes=tuple(extractor.attributes),
        keys=tuple(extractor.keys),
        imports=tuple(extractor.imports),
        locals=tuple(extractor.locals),
        returns=tuple(extractor.returns),
        exports=extractor.exports,
        position_fallback=fallback,
    )
