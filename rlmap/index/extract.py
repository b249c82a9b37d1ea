"""Extract plain records from one module: the index stage's driver and its public entry point.

``extract_module(source, path, extensions=...)`` admits the bytes (:mod:`rlmap.index.decode`),
parses them with libcst once, walks the tree with :class:`Extractor` (the visitor assembled from
:mod:`~rlmap.index.definitions`, :mod:`~rlmap.index.statements`, :mod:`~rlmap.index.accesses` and
:mod:`~rlmap.index.keys`) and returns a :class:`~rlmap.index.records.ModuleIndex`.  Line numbers
come from the paired ``ast`` tree (:mod:`rlmap.index.lines`), or from libcst's
``PositionProvider`` when the two trees disagree.  A file that cannot be decoded or parsed
becomes a diagnostic; key accesses are recorded only under an enabled extension
(:mod:`rlmap.index.vocabulary`).
"""

from __future__ import annotations

import ast
import dataclasses
import re
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from rlmap.index import lines as L
from rlmap.index.decode import Skip, ast_index, decode_source, too_deep
from rlmap.index.keys import key_literal
from rlmap.index.records import Diagnostic, FlowRow, ModuleIndex, slot_init
from rlmap.index.statements import StatementVisitor
from rlmap.index.summaries import summarize
from rlmap.index.syntax import all_params, compact_text, dotted_parts, node_types, walked_types
from rlmap.index.vocabulary import KeyVocabulary, vocabulary_for

__all__ = [
    "Extractor",
    "compact_text",
    "decode_source",
    "dotted_parts",
    "extract_module",
    "internal_error",
    "key_literal",
    "module_name_for",
]

_REPORTED_TEXT = 200

# libcst holds ~3 KB per token of a parsed module (measured: torch's largest file, 268,000 tokens
# in 1.4 MB, takes 730 MB; 400,000 ``1,`` in one list 745 MB), so a file of simple statements a
# branch adds could take tens of GB within the size limit.  A file with more tokens than this is
# skipped; they are counted only in files larger than ``_COUNT_FROM`` bytes (a token takes at
# least one byte: a smaller file cannot pass the limit by much).
MAX_TOKENS = 600_000
_COUNT_FROM = 512 * 1024
_TOKEN = re.compile(rb"\w+|[^\s\w]")


class Extractor(StatementVisitor):
    """The whole visitor: every handler of the mixins, dispatched by node type."""


Extractor.handlers = {
    cst.Module: Extractor.visit_module,
    cst.ClassDef: Extractor.visit_class,
    cst.FunctionDef: Extractor.visit_function,
    cst.If: Extractor.visit_if,
    cst.While: Extractor.visit_while,
    cst.For: Extractor.visit_for,
    cst.CompFor: Extractor.visit_comp_for,
    cst.ExceptHandler: Extractor.visit_except,
    cst.ExceptStarHandler: Extractor.visit_except,
    cst.Import: Extractor.visit_import,
    cst.ImportFrom: Extractor.visit_import_from,
    cst.Assign: Extractor.visit_assign,
    cst.AnnAssign: Extractor.visit_ann_assign,
    cst.AugAssign: Extractor.visit_aug_assign,
    cst.Del: Extractor.visit_del,
    cst.Return: Extractor.visit_return,
    cst.Yield: Extractor.visit_yield,
    cst.NamedExpr: Extractor.visit_named_expr,
    cst.WithItem: Extractor.visit_with_item,
    cst.Global: Extractor.visit_global,
    cst.Nonlocal: Extractor.visit_global,
    cst.IndentedBlock: Extractor.visit_block,
    cst.SimpleStatementLine: Extractor.visit_simple_statements,
    cst.SimpleStatementSuite: Extractor.visit_simple_statements,
    cst.Attribute: Extractor.visit_attribute,
    cst.Call: Extractor.visit_call,
    cst.Subscript: Extractor.visit_subscript,
    cst.Comparison: Extractor.visit_comparison,
}
Extractor.walked = walked_types(Extractor.handlers)
Extractor.dispatch = {kind: Extractor.handlers.get(kind, Extractor.walk_children) for kind in Extractor.walked}


class _Provided:
    """Positions from libcst's ``PositionProvider`` (the exact, slow fallback)."""

    def __init__(self, module: cst.Module, positions: Any) -> None:
        self.module = module
        self.positions = positions

    def take(
        self,
        node: cst.CSTNode,
        category: str,  # noqa: ARG002 - positions come from the node itself
        check: str | None = None,  # noqa: ARG002
    ) -> tuple[int, int, tuple[Any, ...]]:
        target = node.name if isinstance(node, (cst.FunctionDef, cst.ClassDef)) else node
        start = self.positions[target].start.line
        end = self.positions[node].end.line
        return start, end, self.texts(node)

    def statement(self, node: cst.CSTNode) -> bool:  # noqa: ARG002 - every node has its own position
        """Never a one-line statement whose expressions go unpaired: every node is looked up."""
        return False

    def text(self, node: cst.CSTNode | None) -> str:
        return L.shorten(self.module.code_for_node(node)) if node is not None else ""

    def texts(self, node: cst.CSTNode) -> tuple[Any, ...]:
        """The same texts :func:`rlmap.index.lines.index_ast` gives, by code generation."""
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
            return (lambda: text(node.func), self.positions[node.func].end.line)
        if isinstance(node, cst.FunctionDef):
            params = all_params(node.params)
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


def extract_module(
    source: bytes,
    path: str,
    *,
    extensions: Sequence[str] = (),
    position_provider: bool = False,
    library: bool = False,
) -> ModuleIndex:
    """Index one file's bytes; ``path`` is repo-relative (``torchrl/collectors/_single.py``).

    Never raises on any input: a file that cannot be decoded, parsed or walked, and any bug
    met on the way, become the index's diagnostic (``path:line: why``).  ``extensions`` names
    the key vocabularies to record accesses of (``("tensordict",)``); with none, no key access
    is recorded.  An unknown name raises :class:`~rlmap.errors.ConfigError` before any work.

    ``position_provider=True`` takes lines from libcst's ``PositionProvider`` instead of the
    paired ``ast`` tree (the slow path; the tests use it to check that both agree).

    ``library=True`` for a file of a companion package (tensordict beside torchrl): the model
    reads its definitions, calls, attributes, imports, locals and returns, never its value-flow
    summary (its bodies are library code: ``rlmap.model.assemble.resolve_sites``) nor its key
    accesses (``group_keys``), so neither is extracted.
    """
    vocabulary = vocabulary_for(extensions)
    module_name, is_package = module_name_for(path)
    try:
        with warnings.catch_warnings():
            # ``ast.parse`` and libcst's ``evaluated_value`` warn on ``"\\d"``; under ``-W error``
            # the warning would be raised in the middle of the walk
            warnings.simplefilter("ignore")
            return _extract(source, path, vocabulary, position_provider, library)
    except Skip as skip:
        return ModuleIndex(module_name, path, is_package, diagnostics=(Diagnostic(path, skip.line, skip.message),))
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as error:  # libcst's native parser panics with a BaseException (pyo3)
        return internal_error(path, error)


def _extract(
    source: bytes, path: str, vocabulary: KeyVocabulary | None, position_provider: bool, library: bool = False
) -> ModuleIndex:
    module_name, is_package = module_name_for(path)
    text = decode_source(source)
    positions, deepest_line, tree = ast_index(text, path)
    if len(source) > _COUNT_FROM:
        # every line is a node of libcst's too (16 MB of blank lines took 5.5 GB): counted as a token
        tokens = sum(1 for _ in _TOKEN.finditer(source)) + source.count(b"\n")
        if tokens > MAX_TOKENS:
            raise Skip(1, f"too many tokens to index ({tokens:,}, limit {MAX_TOKENS:,}); file skipped")
    try:
        with unvalidated_nodes():
            module = cst.parse_module(text)
    except cst.ParserSyntaxError as error:
        raise Skip(error.raw_line, f"libcst cannot parse: {error.message}; file skipped") from None
    except RecursionError:
        raise too_deep(deepest_line()) from None
    line_count = max(1, text.count("\n") + (0 if text.endswith("\n") else 1))
    lines = text.split("\n")  # the line numbering ast uses (splitlines also splits on \f, \v, ...)
    try:
        if position_provider:
            raise L.PositionMismatch("requested")
        extractor = Extractor(module, module_name, path, L.PairedPositions(positions), vocabulary)
        return _finished(_run(extractor, is_package, line_count, lines), tree, library)
    except L.PositionMismatch:
        pass
    except RecursionError:
        raise too_deep(deepest_line()) from None
    try:
        wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
        provided = _Provided(wrapper.module, wrapper.resolve(PositionProvider))
        extractor = Extractor(wrapper.module, module_name, path, provided, vocabulary)
        return _finished(_run(extractor, is_package, line_count, lines), tree, library)
    except RecursionError:
        raise too_deep(deepest_line()) from None


def _skip_validation(self: cst.CSTNode) -> None:
    """What a libcst node's constructor runs after it is built, instead of its ``_validate``."""


def _quick_init(kind: type) -> Callable[..., None] | None:
    """:func:`~rlmap.index.records.slot_init`'s constructor for the libcst node class ``kind``:
    the same node less the validation and ``object.__setattr__`` for each field (which costs as
    much again: a sixth of ``parse_module``).  ``None`` for a class with a ``__post_init__`` of
    its own, which may do more than check, or that is not a slotted dataclass of plain fields."""
    if any("__post_init__" in klass.__dict__ for klass in kind.__mro__ if klass is not cst.CSTNode):
        return None
    return slot_init(kind)


_QUICK_INITS: list[tuple[type, Callable[..., None], Callable[..., None]]] = []


def _quick_inits() -> list[tuple[type, Callable[..., None], Callable[..., None]]]:
    """(class, its constructor, :func:`_quick_init`'s) for every libcst node class that has one."""
    if not _QUICK_INITS:
        for kind in sorted(node_types(), key=lambda kind: (kind.__module__, kind.__qualname__)):
            quick = _quick_init(kind)
            if quick is not None:
                _QUICK_INITS.append((kind, kind.__dict__["__init__"], quick))
    return _QUICK_INITS


def prepare_parser() -> None:
    """Build what every parse uses (libcst's quick constructors), ahead of the first file: a
    process that forks its parser workers after calling it builds them once for all."""
    _quick_inits()


@contextmanager
def unvalidated_nodes() -> Iterator[None]:
    """libcst nodes built in the block skip their constructor's validation.

    Every node's ``__post_init__`` checks its own fields (whitespace, parentheses, operators),
    which costs a sixth of ``parse_module``; libcst's own comment there notes that parsing
    would not need it.  The nodes the parser builds come from text that ``ast.parse`` has
    already accepted, so every check would pass.  Each node class's constructor is also swapped
    for :func:`_quick_init`'s, which builds the same node for less.  Both are restored on
    leaving, so that nodes built later (by ``with_changes``) are built and checked as usual.
    """
    base = cst.CSTNode
    saved = base.__dict__.get("__post_init__")
    if saved is None:  # a libcst that validates elsewhere: parse as it does
        yield
        return
    quick = _quick_inits()
    base.__post_init__ = _skip_validation  # type: ignore[method-assign]
    try:
        for kind, _, init in quick:
            kind.__init__ = init  # type: ignore[misc]
        yield
    finally:
        for kind, own, _ in quick:
            kind.__init__ = own  # type: ignore[misc]
        base.__post_init__ = saved  # type: ignore[method-assign]


def _finished(index: ModuleIndex, tree: ast.Module, library: bool) -> ModuleIndex:
    """The walk's records with the value-flow summary; a companion's with neither it nor its keys."""
    if library:
        return dataclasses.replace(index, keys=())
    return dataclasses.replace(index, flow=_flow(tree, index.path))


def _flow(tree: ast.Module, path: str) -> tuple[FlowRow, ...]:
    """The module's value-flow summary (:mod:`rlmap.index.summaries`), from its ``ast`` tree."""
    module_name, is_package = module_name_for(path)
    return summarize(tree, module_name, is_package)


def _run(extractor: Extractor, is_package: bool, line_count: int, source_lines: list[str]) -> ModuleIndex:
    extractor.line_count = line_count
    extractor.source_lines = source_lines
    extractor.walk(extractor.module)
    positions = extractor.positions
    if isinstance(positions, L.PairedPositions):
        positions.verify_exhausted()
    return ModuleIndex(
        module=extractor.module_name,
        path=extractor.path,
        is_package=is_package,
        symbols=tuple(extractor.symbols),
        calls=tuple(extractor.calls),
        attributes=tuple(extractor.attributes),
        keys=tuple(extractor.keys),
        imports=tuple(extractor.imports),
        locals=(*extractor.locals, *extractor.plain_dicts()),
        returns=tuple(extractor.returns),
        exports=extractor.exports,
        position_fallback=not isinstance(positions, L.PairedPositions),
    )
