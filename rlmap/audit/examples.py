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
from collections.abc import Iterator
from dataclasses import dataclass

from rlmap.audit.pageparts import CodeBlock

_PROMPTS = (">>> ", "... ")


@dataclass(frozen=True, slots=True)
class ExampleName:
    dotted: str  # the full path the code means (aliases followed)
    written: str  # the text as written
    line: int  # page line
    column: int  # page column (1-based) of the written text
    is_import: bool


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
        text = self.lines[lineno - 1] if 0 < lineno <= len(self.lines) else ""
        # ast columns count UTF-8 bytes: the page needs characters
        characters = len(text.encode("utf-8")[: getattr(node, "col_offset", 0)].decode("utf-8", errors="ignore"))
        return ExampleName(dotted, written, self.line + lineno - 1, self.column + characters, is_import)

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
            yield self.at(alias, f"{module}.{alias.name}", alias.name, True)

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
