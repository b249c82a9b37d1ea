"""Stand-ins: a function or class defined where the import of the same name fails.

``try: from torch.compiler import cudagraph_mark_step_begin`` / ``except ImportError: def
cudagraph_mark_step_begin(): raise NotImplementedError(...)``: the model resolves a call of the
name to the function the package defines, which runs only when the import fails; what runs on
an installed dependency that has the name is the import.  Pages name the import in its place
(:meth:`rlmap.pages.refs.Refs.fallback_of`) and ``rlmap show`` says so beside the stand-in.
Read from the file's ``ast`` (never run).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from rlmap.index.records import CLASS, FUNCTION, MODULE, Symbol
from rlmap.literals import unparse

if TYPE_CHECKING:
    from rlmap.model.codemodel import CodeModel

# The fields of a node that hold statements (an ``except`` clause and a ``case`` hold them too).
_BODIES = ("body", "orelse", "finalbody", "handlers", "cases")
_IMPORT_ERRORS = ("ImportError", "ModuleNotFoundError")


def statements(tree: ast.Module) -> Iterator[ast.AST]:
    """Every statement of ``tree``, nested ones too, and no expression: a definition or a
    ``try`` is a statement, and walking only these is a fraction of walking every node."""
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.stmt):
            yield node
        for field in _BODIES:
            stack.extend(getattr(node, field, ()))


def import_fallbacks(tree: ast.Module) -> dict[int, str]:
    """Line of each function or class defined in an ``except ImportError`` branch -> the dotted
    name its ``try`` imports under the same name."""
    found: dict[int, str] = {}
    for node in statements(tree):
        if not isinstance(node, ast.Try):
            continue
        imported = {}
        for statement in node.body:
            if isinstance(statement, ast.ImportFrom) and statement.module and not statement.level:
                imported.update(
                    {alias.asname or alias.name: f"{statement.module}.{alias.name}" for alias in statement.names}
                )
        for handler in node.handlers:
            caught = unparse(handler.type) if handler.type is not None else ""
            if not any(name in caught for name in _IMPORT_ERRORS):
                continue
            for statement in handler.body:
                if (
                    isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
                    and statement.name in imported
                ):
                    found[statement.lineno] = imported[statement.name]
    return found


class StandIns:
    """Which import each symbol stands in for, read through a reader's ``line`` (a file's line,
    by path and number) and ``tree`` (a file's syntax tree): a file is parsed only for a
    module-level definition on an indented line, and once."""

    def __init__(self, model: CodeModel, line: Callable[[str, int], str], tree: Callable[[str], ast.Module]) -> None:
        self._model, self._line, self._tree = model, line, tree
        self._found: dict[str, dict[int, str]] = {}

    def of(self, symbol: Symbol) -> str:
        """``torch.compiler.cudagraph_mark_step_begin`` when ``symbol`` is a stand-in defined in
        the ``except ImportError`` branch of a ``try`` that imports the same name; else ``""``."""
        if symbol.kind not in (FUNCTION, CLASS) or not symbol.path:
            return ""
        if self._model.node_kind(symbol.qualname.rpartition(".")[0]) != MODULE:
            return ""  # a stand-in is defined at module level ...
        if not self._line(symbol.path, symbol.line)[:1].isspace():
            return ""  # ... inside an ``except`` block, so indented: the rest need no parse
        if symbol.path not in self._found:
            self._found[symbol.path] = import_fallbacks(self._tree(symbol.path))
        return self._found[symbol.path].get(symbol.line, "")
