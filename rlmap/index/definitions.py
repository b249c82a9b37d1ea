"""Definitions and bindings: the module, classes, functions, imports, and what names are bound to.

Records :class:`~rlmap.index.records.Symbol` (with docstring, decorators, bases, signature),
:class:`~rlmap.index.records.ImportRecord`, ``__all__`` and the
:class:`~rlmap.index.records.LocalBinding` facts the model resolves names through (literals,
``self`` aliases, annotations, loops over ``self`` attributes).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import libcst as cst

from rlmap.index import lines as L
from rlmap.index.records import (
    ATTRIBUTE,
    CLASS,
    FUNCTION,
    ITEMS,
    METHOD,
    MODULE,
    PROPERTY,
    VARIABLE,
    ImportRecord,
    LocalBinding,
    Symbol,
)
from rlmap.index.syntax import (
    all_params,
    docstring,
    dotted_parts,
    first_line,
    is_property,
    literal_strings,
    mapping_annotation,
    positional_names,
    string_value,
    tuple_text,
)
from rlmap.index.walker import Scope, Walker


class DefinitionVisitor(Walker):
    """Handlers for ``module``, ``class``, ``def``, ``import``, and the bindings of names."""

    def add_definition(self, node: cst.Module | cst.ClassDef | cst.FunctionDef, **fields: Any) -> None:
        """A symbol for a definition node, with its docstring's presence and first line."""
        text = docstring(node)
        self.symbols.append(Symbol(path=self.path, has_docstring=bool(text), doc_first_line=first_line(text), **fields))

    def visit_module(self, node: cst.Module) -> None:
        self.add_definition(node, qualname=self.module_name, kind=MODULE, line=1, end_line=self.line_count)
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
        self.add_definition(
            node,
            qualname=qualname,
            kind=CLASS,
            line=line,
            end_line=end_line,
            decorators=decorators,
            bases=tuple(bases),
        )
        self.walk_in_scope(Scope(qualname, CLASS, owner=qualname), node.body)

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
        kind, self_name = _function_kind(enclosing, decorators, positional_names(node.params))
        annotations = tuple(
            (param.name.value, annotation)
            for param, annotation in zip(all_params(node.params), texts[2:], strict=False)
        )
        self.add_definition(
            node,
            qualname=qualname,
            kind=kind,
            line=line,
            end_line=end_line,
            signature=texts[0],
            decorators=decorators,
            params=annotations,
            returns=texts[1],
        )
        self.record_parameters(qualname, node.params, annotations)
        plain_result = node.name.value in _PLAIN_RESULTS or mapping_annotation(texts[1])
        scope = Scope(qualname, FUNCTION, owner=enclosing.owner, self_name=self_name, plain_result=plain_result)
        self.walk_in_scope(scope, node.body)

    def record_parameters(
        self, qualname: str, params: cst.Parameters, annotations: tuple[tuple[str, str], ...]
    ) -> None:
        """What a parameter is bound to before the body runs: its annotation, a string default, a
        default tuple of strings for a parameter named for one key (a nested key:
        ``truncated_key=("next", "truncated")``; ``pixel_keys=("pixels",)`` is a list of keys)."""
        for name, annotation in annotations:
            if annotation:
                self.locals.append(LocalBinding(qualname, name, (annotation,), "annotation"))
        for param in all_params(params):
            self.bind_local(param.name.value, False, qualname)  # (a caller's object, whatever the body binds)
            default = string_value(param.default) if param.default is not None else None
            if default is not None:
                self.locals.append(LocalBinding(qualname, param.name.value, (default,), "literal"))
            elif isinstance(param.default, cst.Tuple) and param.default.elements and _names_a_key(param.name.value):
                strings = literal_strings(param.default)
                if strings:
                    self.locals.append(LocalBinding(qualname, param.name.value, (tuple_text(strings),), "value"))

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

    def record_loop(self, target: cst.BaseExpression, iterable: cst.BaseExpression, guard: str = "") -> None:
        """``for k in self.keys``, ``for k in keys``, ``for k in ("a", self.b_key)`` and
        ``for a, b in zip(x, y)``: key-value bindings.  ``guard``: the loop's guard, as the accesses
        in its body have it (a ``for`` statement's; a comprehension has none)."""
        scope = self.scope
        if scope.kind != FUNCTION:
            return
        for name in _target_names(target):  # (rebound by each turn of the loop)
            self.bind_local(name, False)
        if self.vocabulary is not None and self.record_zip(target, iterable):
            return
        for name_node, source in _loop_pairs(target, iterable) if scope.self_name else ():
            parts = dotted_parts(source)
            if isinstance(name_node, cst.Name) and len(parts) == 2 and parts[0] == scope.self_name:
                self.locals.append(LocalBinding(scope.qualname, name_node.value, ("self", parts[1]), "loop"))
        if self.vocabulary is not None and isinstance(target, cst.Name):  # (a function without self too)
            parts = dotted_parts(iterable)
            if len(parts) == 1:  # ``for key in in_keys``: the elements of a local key list
                self.locals.append(LocalBinding(scope.qualname, target.value, (parts[0],), "each"))
            elif isinstance(iterable, (cst.Tuple, cst.List)) and iterable.elements:
                # ``for key in (self.tensor_keys.advantage, "value_target")``: each element in turn,
                # in the accesses under this loop (a name looped over two literals holds each one's
                # elements in its own loop)
                texts = [self.key_text(element.value) for element in iterable.elements]
                if all(texts) and not any(isinstance(element, cst.StarredElement) for element in iterable.elements):
                    listed = f"[{', '.join(texts)}]"
                    self.locals.append(LocalBinding(scope.qualname, target.value, (listed, guard), ITEMS))

    def record_zip(self, target: cst.BaseExpression, iterable: cst.BaseExpression) -> bool:
        """``for key, default in zip(self.in_keys, defaults)``: each name is bound to the elements
        of its argument, as far as the shortest argument goes (``parts``: the zip, the position)."""
        if not (
            isinstance(target, cst.Tuple)
            and isinstance(iterable, cst.Call)
            and dotted_parts(iterable.func) == ("zip",)
            and len(iterable.args) == len(target.elements)
            and all(arg.keyword is None and not arg.star for arg in iterable.args)
        ):
            return False
        texts = [".".join(dotted_parts(arg.value)) for arg in iterable.args]
        if not all(texts):
            return False
        zipped = f"zip({', '.join(texts)})"
        function = self.scope.qualname
        for position, element in enumerate(target.elements):
            if isinstance(element.value, cst.Name):
                self.locals.append(LocalBinding(function, element.value.value, (zipped, str(position)), "each"))
        return True

    def holds_keys(self, value: cst.BaseExpression) -> bool:
        """Whether a local's value is worth keeping as text: it may build a key list."""
        return self.vocabulary is not None and _key_shaped(value, self.vocabulary.key_functions)

    def record_binding(
        self,
        target: cst.BaseExpression,
        value: cst.BaseExpression | None,
        line: int,
        value_text: str,
        annotation: str,
    ) -> None:
        """``name = value``: a module variable or class attribute symbol, or a local binding."""
        if type(target) is not cst.Name:
            return
        scope = self.scope
        if scope.kind in (MODULE, CLASS):
            self.record_variable(scope, target.value, value, line, value_text, annotation)
        else:
            self.record_local(scope, target.value, value, annotation, value_text)

    def record_variable(
        self,
        scope: Scope,
        name: str,
        value: cst.BaseExpression | None,
        line: int,
        value_text: str,
        annotation: str,
    ) -> None:
        if scope.kind == MODULE and name == "__all__" and value is not None:
            self.exports = literal_strings(value)
        documentation = self.attribute_documentation(line) if scope.kind in (MODULE, CLASS) else ""
        self.symbols.append(
            Symbol(
                qualname=f"{scope.qualname}.{name}",
                kind=VARIABLE if scope.kind == MODULE else ATTRIBUTE,
                path=self.path,
                line=line,
                end_line=line,
                value=value_text,
                annotation=annotation,
                has_docstring=bool(documentation),
                doc_first_line=documentation,
            )
        )

    def attribute_documentation(self, line: int) -> str:
        """The first line of what documents a module or class variable for autodoc: ``#:``
        comments right above its assignment (or one after it on its line); ``""`` when none.
        (A string literal after it documents it too; that one is not read.)"""
        lines = self.source_lines
        if not 0 < line <= len(lines):
            return ""
        own = lines[line - 1]
        if "#:" in own:
            code, _, comment = own.rpartition("#:")
            if comment.strip() and code.count('"') % 2 == 0 and code.count("'") % 2 == 0:  # (not in a string)
                return comment.strip()
        above = line - 1
        found = ""
        while above >= 1 and lines[above - 1].lstrip().startswith("#:"):
            found = lines[above - 1].lstrip()[2:].strip() or found
            above -= 1
        return found

    def record_local(
        self, scope: Scope, name: str, value: cst.BaseExpression | None, annotation: str, value_text: str = ""
    ) -> None:
        if self.vocabulary is not None:
            copies = self.copies.setdefault(scope.qualname, set())
            is_copy = (
                type(value) is cst.Call
                and type(value.func) is cst.Attribute  # type: ignore[union-attr]
                and value.func.attr.value in self.vocabulary.copy_methods  # type: ignore[union-attr]
            )
            (copies.add if is_copy else copies.discard)(name)
            self.bind_local(name, _makes_plain_dict(value))
        if value is not None:
            literal = string_value(value)
            parts = dotted_parts(value)
            if literal is not None:
                self.locals.append(LocalBinding(scope.qualname, name, (literal,), "literal"))
            elif len(parts) == 2 and scope.self_name and parts[0] == scope.self_name:
                self.locals.append(LocalBinding(scope.qualname, name, ("self", parts[1]), "alias"))
            elif value_text and self.holds_keys(value):
                self.locals.append(LocalBinding(scope.qualname, name, (value_text,), "value"))
        if annotation:
            self.locals.append(LocalBinding(scope.qualname, name, (annotation,), "annotation"))
        elif type(value) is cst.Call:
            parts = dotted_parts(value.func)  # type: ignore[union-attr]
            if parts:
                self.locals.append(LocalBinding(scope.qualname, name, parts, "assignment"))


# the methods whose result is a plain mapping: the state pickled (Python's protocol) or loaded
# (PyTorch's ``state_dict``)
_PLAIN_RESULTS = frozenset({"__getstate__", "state_dict"})
# the calls that make a plain dict (``dataclasses.asdict``, ``vars``, ``dict``, ``collections``' two)
_DICT_MAKERS = frozenset({"dict", "asdict", "vars", "OrderedDict", "defaultdict"})


def _makes_plain_dict(value: cst.BaseExpression | None) -> bool:
    """Whether ``value`` makes a new plain dict: ``{...}``, a dict comprehension, a call of
    :data:`_DICT_MAKERS`, or ``x.__dict__.copy()``."""
    kind = type(value)
    if kind is cst.Dict or kind is cst.DictComp:
        return True
    if kind is not cst.Call:
        return False
    parts = dotted_parts(value.func)  # type: ignore[union-attr]
    return bool(parts) and (parts[-1] in _DICT_MAKERS or parts[-2:] == ("__dict__", "copy"))


def _target_names(target: cst.BaseExpression) -> list[str]:
    """The names a loop's target binds: ``k``, ``k, v``, ``(i, (k, v))``."""
    kind = type(target)
    if kind is cst.Name:
        return [target.value]  # type: ignore[attr-defined]
    if kind is cst.Tuple or kind is cst.List:
        return [name for element in target.elements for name in _target_names(element.value)]  # type: ignore[attr-defined]
    if kind is cst.StarredElement:
        return _target_names(target.value)  # type: ignore[attr-defined]
    return []


def _names_a_key(name: str) -> bool:
    """Whether a parameter's name says it holds one key (``key``, ``done_key``), not several."""
    return name == "key" or name.endswith("_key")


def _key_shaped(node: cst.BaseExpression, functions: frozenset[str]) -> bool:
    """Whether ``node`` may build a key list or a key: ``[a, *b]``, ``a + [...]``, ``x[1]``,
    ``unravel_key_list(x)``, or a call given a string (``_replace_last(done_key, "is_init")``:
    the model sees whether the function returns that argument as is)."""
    kind = type(node)  # libcst's node classes have no subclasses: no ``isinstance`` (ABCMeta)
    if kind is cst.List or kind is cst.Tuple or kind is cst.BinaryOperation or kind is cst.Subscript:
        return True
    if kind is cst.Call:
        call: cst.Call = node  # type: ignore[assignment]
        parts = dotted_parts(call.func)
        if len(call.args) == 1 and parts and parts[-1] in functions:
            return True
        return bool(parts) and any(
            type(arg.value) is cst.SimpleString or type(arg.value) is cst.ConcatenatedString for arg in call.args
        )
    return False


def _function_kind(enclosing: Scope, decorators: tuple[str, ...], params: list[str]) -> tuple[str, str]:
    """A ``def``'s symbol kind and the name its ``self`` goes by inside it (``""``: none)."""
    if enclosing.kind == CLASS:
        self_name = "" if "staticmethod" in decorators or not params else params[0]
        return (PROPERTY if any(is_property(name) for name in decorators) else METHOD), self_name
    self_name = enclosing.self_name if enclosing.kind == FUNCTION else ""
    if self_name in params:
        self_name = ""  # a nested function that shadows ``self``
    return FUNCTION, self_name


def _loop_pairs(
    target: cst.BaseExpression, iterable: cst.BaseExpression
) -> list[tuple[cst.BaseExpression, cst.BaseExpression]]:
    """(name, source) pairs a loop binds: the whole target, or each name of ``a, b in zip(x, y)``."""
    if isinstance(target, cst.Tuple) and isinstance(iterable, cst.Call):
        args = [arg.value for arg in iterable.args if arg.keyword is None and not arg.star]
        if len(args) == len(target.elements):
            return [(element.value, arg) for element, arg in zip(target.elements, args, strict=False)]
    return [(target, iterable)]
