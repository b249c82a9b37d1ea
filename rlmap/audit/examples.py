"""The names a page's Python examples take from packages: imports and dotted names, read with ``ast``.

An example is parsed, never run.  Its imports bind names (``import torchrl.envs as envs``,
``from torchrl.collectors import Collector``); every import and every dotted name rooted at a
bound name (``envs.GymEnv``, ``Collector.rollout``) is one :class:`ExampleName`, with the full
dotted path it means and where it is written on the page.  Bindings hold for the rest of the
page (doctests import in one block and use the name in the next).  Relative imports and names
bound any other way are not followed.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass, replace

from rlmap.audit.pageparts import CodeBlock

_PROMPTS = (">>> ", "... ")


@dataclass(frozen=True, slots=True)
class ExampleName:
    dotted: str  # the full path the code means (aliases followed)
    written: str  # the text as written
    line: int  # page line
    column: int  # page column (1-based) of the written text
    is_import: bool
    # ``from m import Name``, the only name of its statement: ``m import Name`` as written on one
    # line, and its page column (what ``--fix`` rewrites when ``m.Name`` moved or was renamed)
    clause: str = ""
    clause_column: int = 0
    aliased: bool = False  # ``from m import Name as other``: the code below does not use ``Name``


def example_names(blocks: list[CodeBlock]) -> list[ExampleName]:
    """Every package name the page's code examples use, in page order."""
    bound: dict[str, str] = {}
    found: list[ExampleName] = []
    for block in blocks:
        for code, line, column in _chunks(block):
            try:
                tree = ast.parse(code)
            except (SyntaxError, ValueError, MemoryError, RecursionError):
                continue
            lines = code.split("\n")
            found.extend(_Names(bound, lines, line, column).names(tree))
    return found


def _chunks(block: CodeBlock) -> Iterator[tuple[str, int, int]]:
    """(code, page line of its first line, page column of its text): the block, or each doctest statement."""
    lines = block.code.split("\n")
    if not any(line.lstrip().startswith(">>>") for line in lines):
        yield block.code, block.line, block.column
        return
    current: list[str] = []
    start = 0
    indent = 0
    for number, line in enumerate(lines):
        stripped = line.lstrip()
        if stripped.startswith(">>>"):
            if current:
                yield "\n".join(current), block.line + start, block.column + indent + 4
            current, start, indent = [stripped[4:]], number, len(line) - len(stripped)
        elif stripped.startswith("...") and current:
            current.append(stripped[4:])
        elif current:
            yield "\n".join(current), block.line + start, block.column + indent + 4
            current = []
    if current:
        yield "\n".join(current), block.line + start, block.column + indent + 4


class _Names:
    def __init__(self, bound: dict[str, str], lines: list[str], line: int, column: int) -> None:
        self.bound, self.lines, self.line, self.column = bound, lines, line, column

    def at(self, node: ast.expr | ast.alias | ast.stmt, dotted: str, written: str, is_import: bool) -> ExampleName:
        lineno = getattr(node, "lineno", 1)
        characters = self.characters(lineno, getattr(node, "col_offset", 0))
        return ExampleName(dotted, written, self.line + lineno - 1, self.column + characters, is_import)

    def text(self, lineno: int) -> str:
        return self.lines[lineno - 1] if 0 < lineno <= len(self.lines) else ""

    def characters(self, lineno: int, offset: int) -> int:
        """ast columns count UTF-8 bytes: the page needs characters."""
        return len(self.text(lineno).encode("utf-8")[:offset].decode("utf-8", errors="ignore"))

    def clause(self, node: ast.ImportFrom, module: str, alias: ast.alias) -> tuple[str, int]:
        """``m import Name`` as written (one line, one name), and its column in the chunk; ("", 0) else."""
        if len(node.names) != 1 or alias.lineno != node.lineno:
            return "", 0
        text = self.text(node.lineno)
        start = self.characters(node.lineno, node.col_offset)
        keyword = re.compile(r"from\s+").match(text, start)
        end = self.characters(alias.lineno, alias.col_offset) + len(alias.name)
        if keyword is None or not text.startswith(module, keyword.end()):
            return "", 0
        clause = text[keyword.end() : end]
        shape = rf"{re.escape(module)}\s+import\s+(?:\(\s*)?{re.escape(alias.name)}"  # unambiguous: linear
        return (clause, keyword.end()) if re.fullmatch(shape, clause) else ("", 0)

    def names(self, tree: ast.Module) -> Iterator[ExampleName]:
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                yield from self.imported(node)
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                yield from self.imported_from(node, node.module)
        inner = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and id(node) not in inner:
                yield from self.dotted(node)

    def imported(self, node: ast.Import) -> Iterator[ExampleName]:
        for alias in node.names:
            if alias.asname:
                self.bound[alias.asname] = alias.name
            else:
                self.bound[alias.name.split(".")[0]] = alias.name.split(".")[0]
            yield self.at(alias, alias.name, alias.name, True)

    def imported_from(self, node: ast.ImportFrom, module: str) -> Iterator[ExampleName]:
        for alias in node.names:
            if alias.name == "*":
                yield self.at(node, module, module, True)
                continue
            self.bound[alias.asname or alias.name] = f"{module}.{alias.name}"
            name = self.at(alias, f"{module}.{alias.name}", alias.name, True)
            clause, column = self.clause(node, module, alias)
            if clause:
                name = replace(name, clause=clause, clause_column=self.column + column, aliased=bool(alias.asname))
            yield name

    def dotted(self, node: ast.Attribute) -> Iterator[ExampleName]:
        """The chain of names ending at ``node`` (``a.b.c``; ``a.b(x).c`` has none) if its root is bound."""
        parts: list[str] = []
        current: ast.expr = node
        while isinstance(current, ast.Attribute):
            parts.append(current.attr)
            current = current.value
        if isinstance(current, ast.Name) and current.id in self.bound:
            parts.append(current.id)
            written = ".".join(reversed(parts))
            yield self.at(current, f"{self.bound[current.id]}.{written.partition('.')[2]}", written, False)
