"""The audit's view of the code: symbols resolved as Sphinx would, and each source file read and parsed once.

Resolution follows Sphinx's Python domain: ``currentmodule``, ``~``/``!`` prefixes, explicit
titles, re-exports through ``__init__`` and inherited members.  Every index (names, exports,
files, definitions by line) is built once per run, so the audit's cost is linear in the docs
and the code.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from rlmap.audit.docscan import DocsScan, printable_path
from rlmap.audit.spelling import SPELLING_BUDGET, Speller
from rlmap.index.cache import Cache
from rlmap.index.records import CLASS, MODULE, Symbol
from rlmap.index.source import SourceTree
from rlmap.model.codemodel import CodeModel
from rlmap.pages.curated import Term
from rlmap.pages.refs import links, public_paths, read_source

CODE_REF_KINDS = frozenset(
    {"class", "meth", "func", "attr", "mod", "data", "obj", "exc", "literal", "example", "autodoc"}
)
EXTERNAL_PREFIX = "external:"  # a name a module re-exports from another package: it exists
ORPHAN_MIN_CALLERS = 3
ORPHAN_MIN_ACCESSES = 10
_MAX_PARTS = 64  # a dotted reference with more parts names nothing (no package nests that deep)
_DEFINITIONS = (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)


def is_private(dotted: str) -> bool:
    """Whether a dotted name passes through a ``_private`` part (dunder names are public)."""
    return any(part.startswith("_") and not part.startswith("__") for part in dotted.split("."))


@dataclass(slots=True)
class AuditContext:
    model: CodeModel
    docs: DocsScan
    root: Path  # the source tree's root
    package: str
    focus: tuple[str, ...]
    terms: tuple[Term, ...] = ()
    is_checkout: bool = False
    min_callers: int = ORPHAN_MIN_CALLERS
    min_accesses: int = ORPHAN_MIN_ACCESSES
    code_prefix: str = ""  # the source root relative to the report root ("" when it is outside)
    spelling_budget: int = SPELLING_BUDGET
    _exported_as: dict[str, list[str]] = field(default_factory=dict)
    _public: dict[str, str] = field(default_factory=dict)
    _names: dict[str, list[str]] = field(default_factory=dict)
    _sources: dict[str, bytes | None] = field(default_factory=dict)
    _lines: dict[str, list[str] | None] = field(default_factory=dict)
    _trees: dict[str, ast.Module | None] = field(default_factory=dict)
    _definitions: dict[str, dict[int, list[ast.AST]]] = field(default_factory=dict)
    _speller: dict[str, Speller] = field(default_factory=dict)
    _budget: list[int] = field(default_factory=list)
    _files: dict[str, list[str]] | None = None
    _anchor_files: dict[str, list[str]] = field(default_factory=dict)
    _at: dict[tuple[str, str], Symbol] | None = None
    _sorted_names: dict[str, list[str]] = field(default_factory=dict)
    _public_paths: dict[str, list[str]] | None = None
    report_root: Path = Path()  # where docs paths in findings are relative to
    history: dict[str, str] = field(default_factory=dict)  # old qualified name -> new one (--since)
    history_rev: str = ""
    cache: Cache | None = None  # parsed docstring pages (rlmap.audit.pagecache); None: parse them all
    rules: frozenset[str] = frozenset()  # the rules asked for (empty: all), set by run_audit
    source_tree: SourceTree | None = None  # where the model's files are read from (None: under ``root``)
    _members_used: dict[str, set[str]] | None = None
    _classes: list[str] | None = None
    _modules_by_path: dict[str, str] | None = None

    def __post_init__(self) -> None:
        packages = {}  # a re-export is a package's (``torchrl/envs/__init__.py``): a module that only
        # imports a name for its own use (``from shop.pricing import apply_discount``) is no path to it
        for module, name, target in self.model.exports():
            if module not in packages:
                symbol = self.model.symbol(module)
                packages[module] = symbol is not None and symbol.path.endswith("__init__.py")
            if packages[module] and self.model.bound(module, name) == target:  # (the first binding of the name)
                self._exported_as.setdefault(target, []).append(f"{module}.{name}")
        for qualname in self.model.qualnames():
            self._names.setdefault(qualname.rsplit(".", 1)[-1], []).append(qualname)
        self._budget.append(self.spelling_budget)

    def code_path(self, path: str) -> str:
        """A source file's path as findings show it: relative to the report root when inside it."""
        return printable_path(f"{self.code_prefix}{path}") if path else path

    def close_matches(self, pool: str, word: str, n: int, cutoff: float) -> list[str]:
        """Close spellings of ``word`` among the names (``pool="names"``) or the labels (``"labels"``)."""
        if pool not in self._speller:
            words = self._names if pool == "names" else self.docs.labels
            self._speller[pool] = Speller(words, cutoff, self._budget)
        return self._speller[pool].close(word, n)

    # -- resolution ------------------------------------------------------------------------
    def resolve(self, dotted: str) -> str | None:
        """The symbol a reference names (:meth:`CodeModel.follow`: through imports and
        inheritance), or another package's object a module re-exports (``external:...``), or a
        name a module's ``__getattr__`` imports lazily; ``None``: it names nothing."""
        if self.model.has_symbol(dotted):
            return dotted
        if dotted.count(".") >= _MAX_PARTS:
            return None
        return self.model.follow(dotted, self.member)

    def member(self, owner: str, name: str) -> str | None:
        """:meth:`CodeModel.member_of`, or another package's object a module binds ``name`` to."""
        if owner.startswith(EXTERNAL_PREFIX):
            return owner  # a member of another package's object: it is not ours to check
        found = self.model.member_of(owner, name)
        if found is None and self.model.node_kind(owner) == MODULE:
            outside = self.model.bound_outside(owner, name)
            return f"{EXTERNAL_PREFIX}{outside}" if outside else None
        return found

    def named(self, name: str) -> list[str]:
        found = self._sorted_names.get(name)
        if found is None:
            found = sorted(self._names.get(name, ()))
            self._sorted_names[name] = found
        return list(found)

    def public_or_qualname(self, qualname: str) -> str:
        """The shortest public path to a symbol (a package's re-exports followed, members under their class)."""
        if qualname in self._public:
            return self._public[qualname]
        best = qualname
        for dotted in self._exported_as.get(qualname, ()):
            if not is_private(dotted) and len(dotted) < len(best):
                best = dotted
        owner, _, member = qualname.rpartition(".")
        if best == qualname and self.model.node_kind(owner) == CLASS:
            best = f"{self.public_or_qualname(owner)}.{member}"
        self._public[qualname] = best
        return best

    def documented_path(self, qualname: str) -> str:
        """The shortest public path to a symbol that the scanned docs document (``""``: none does)."""
        tree = self.docs.tree
        if tree is None:
            return ""
        if self._public_paths is None:
            self._public_paths = public_paths(self.model)
        paths = self._public_paths.get(qualname, ())
        return next((path for path in paths if links(tree, path, self.model, qualname)), "")

    # -- what the docs use, for rename inference ---------------------------------------------
    def code_references(self) -> list[str]:
        """Every reference to code in the docs, fully qualified as Sphinx would try it first."""
        found = []
        for ref in self.docs.refs:
            if ref.kind not in CODE_REF_KINDS:
                continue
            target = ref.text.lstrip(".")
            if target == self.package or target.startswith(self.package + "."):
                found.append(target)
            elif ref.kind != "literal" and ref.module.startswith(self.package) and target:
                found.append(f"{ref.module}.{target}")
        return found

    def members_used(self, name: str) -> set[str]:
        """The members the docs use on the vanished name ``name`` (``Old.rollout`` -> rollout)."""
        if self._members_used is None:
            from rlmap.audit.renames import referenced_members

            self._members_used = referenced_members(self)
        return self._members_used.get(name, set())

    def module_of(self, qualname: str) -> str:
        """The module that defines ``qualname``."""
        parts = qualname.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            module = ".".join(parts[:cut])
            if self.model.node_kind(module) == MODULE:
                return module
        return parts[0]

    def module_of_path(self, path: str) -> str:
        """The module defined by the source file ``path``."""
        if self._modules_by_path is None:
            self._modules_by_path = {s.path: s.qualname for s in self.model.symbols() if s.kind == MODULE}
        return self._modules_by_path.get(path, self.package)

    def classes(self) -> list[str]:
        if self._classes is None:
            self._classes = sorted(q for q in self.model.qualnames() if self.model.node_kind(q) == CLASS)
        return self._classes

    # -- source: each file read once, parsed once, its definitions indexed by line once ----
    def source(self, path: str) -> bytes | None:
        if path not in self._sources:
            self._sources[path] = read_source(self.source_tree or self.root, path)
        return self._sources[path]

    def lines(self, path: str) -> list[str] | None:
        if path not in self._lines:
            data = self.source(path)
            try:
                self._lines[path] = data.decode("utf-8").split("\n") if data is not None else None
            except UnicodeDecodeError:
                self._lines[path] = None
        return self._lines[path]

    def tree(self, path: str) -> ast.Module | None:
        if path not in self._trees:
            data = self.source(path)
            try:
                self._trees[path] = ast.parse(data) if data is not None else None
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                self._trees[path] = None
        return self._trees[path]

    def definitions(self, path: str, line: int) -> list[ast.AST]:
        """The classes and functions whose ``def`` is on ``line`` of ``path``, in ``ast.walk`` order."""
        if path not in self._definitions:
            index: dict[int, list[ast.AST]] = defaultdict(list)
            tree = self.tree(path)
            for node in ast.walk(tree) if tree is not None else ():
                if isinstance(node, _DEFINITIONS):
                    index[node.lineno].append(node)
            self._definitions[path] = dict(index)
        return self._definitions[path].get(line, [])

    def anchor_files(self, written: str) -> list[str]:
        """The package files a ``path.py:N`` anchor can mean (its path, or a suffix of one)."""
        if written not in self._anchor_files:
            tail = "/" + written.lstrip("./")
            self._anchor_files[written] = [
                path for path in self.files_named(tail.rsplit("/", 1)[-1]) if path == written or path.endswith(tail)
            ]
        return self._anchor_files[written]

    def in_package(self, written: str) -> bool:
        """Whether an anchor's path names a file of the analysed package (``torchrl/...``)."""
        return written.lstrip("./").startswith(f"{self.package}/")

    def files_named(self, name: str) -> list[str]:
        """The package files of that file name (``_single.py``), sorted."""
        if self._files is None:
            self._files = defaultdict(list)
            for symbol in self.model.symbols():
                if symbol.kind == MODULE:
                    self._files[symbol.path.rsplit("/", 1)[-1]].append(symbol.path)
            for paths in self._files.values():
                paths.sort()
        return list(self._files.get(name, ()))

    def defined_in(self, path: str, name: str) -> Symbol | None:
        """The first symbol named ``name`` (last component) defined in ``path``."""
        if self._at is None:
            self._at = {}
            for symbol in self.model.symbols():
                self._at.setdefault((symbol.path, symbol.qualname.rsplit(".", 1)[-1]), symbol)
        return self._at.get((path, name))
