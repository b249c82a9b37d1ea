"""References to code for the pages: symbols, anchors, public names and source lines.

Every location a page shows is an :class:`Anchor` computed here from the model, and every
symbol mention a :class:`Ref`: curated prose names code only through :meth:`Refs.lookup`,
which fails loudly when a name no longer resolves.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from rlmap.errors import RlmapError, did_you_mean
from rlmap.index.cache import Cache
from rlmap.index.decode import Skip, decode_source
from rlmap.index.indexer import MAX_FILE_BYTES
from rlmap.index.records import ATTRIBUTE, CLASS, FUNCTION, METHOD, MODULE, PROPERTY, VARIABLE, Symbol
from rlmap.index.source import SourceTree
from rlmap.model.codemodel import CodeModel
from rlmap.model.mro import mro
from rlmap.pages.docstree import DocsTree
from rlmap.pages.flows import Flows
from rlmap.query.lookup import find_symbols
from rlmap.query.standins import StandIns, statements
from rlmap.readfile import read_regular

_ROLES = {
    CLASS: "class",
    METHOD: "meth",
    FUNCTION: "func",
    PROPERTY: "attr",
    ATTRIBUTE: "attr",
    VARIABLE: "data",
    MODULE: "mod",
}


class UnknownSymbol(RlmapError):
    """A page or profile names code that does not (or no longer) exist."""


@dataclass(frozen=True, slots=True)
class Anchor:
    """``path:line`` with its permalink; ``name`` is what the line holds (checked by tests)."""

    name: str
    path: str
    line: int
    url: str

    @property
    def location(self) -> str:
        return f"{self.path}:{self.line}"


@dataclass(frozen=True, slots=True)
class Ref:
    """A symbol as a page shows it: a Sphinx role when public, always a source anchor."""

    qualname: str
    display: str  # ``Collector.rollout``
    kind: str
    role: str  # Sphinx role name, "" when Sphinx cannot link it (private, or undocumented in the docs tree)
    target: str  # the public dotted path for the role (the one the docs tree documents, when one is given)
    anchor: Anchor | None
    documented: bool
    summary: str  # first docstring line
    # a call's target that is a decorator's wrapper (``_check_start.decorated_fun``): the
    # decorator's name and the methods of the call it is wrapped around (see Context.targets)
    decorator: str = ""
    wraps: tuple[Ref, ...] = ()


def source_file(tree: SourceTree | Path, path: str) -> Path:
    """The file a path of the model names.  Under a :class:`SourceTree`, a companion package's
    file (``tensordict/base.py`` beside torchrl) is found in the directory that package is
    installed in, wherever that is (:meth:`SourceTree.absolute`); under a bare directory, below it."""
    return tree.absolute(path) if isinstance(tree, SourceTree) else tree / path


def read_source(tree: SourceTree | Path, path: str) -> bytes | None:
    """The bytes of the file a path of the model names, read as the indexer reads a source: every
    reader of the model's source files (pages, claim checks, the audit) goes through here.

    The model may come from the cache, which a hostile branch can fill, so its paths are not
    trusted: only a relative path of plain parts below the tree is read (never ``..``, never an
    absolute path), and only a regular file of at most :data:`MAX_FILE_BYTES` (never a FIFO or
    a device, which would hold the run up).  ``None`` for any other, and for a file not read."""
    parts = PurePosixPath(path).parts
    if (
        not parts
        or path.startswith("/")
        or ":" in parts[0]  # (``C:/...``: a drive, out of the tree where there are drives)
        or any(part in ("..", ".") or "\\" in part or "\0" in part for part in parts)
    ):
        return None
    found = read_regular(source_file(tree, path), MAX_FILE_BYTES)
    return found if isinstance(found, bytes) else None


class Refs:
    """Builds :class:`Ref` and :class:`Anchor` values for one model and source tree.

    With a docs tree (:mod:`rlmap.pages.docstree`), a role targets the public path that tree
    documents, and a symbol it documents under no path gets no role (its literal name and source
    link only): Sphinx would render such a role without a link.  Without one, a role targets the
    shortest public path.
    """

    def __init__(
        self, model: CodeModel, root: SourceTree | Path, docs: DocsTree | None = None, cache: Cache | None = None
    ) -> None:
        self.model = model
        self.root = root  # the source tree (or a directory) the model's files are read from
        self.docs = docs
        self.flows = Flows(cache)  # each function's control flow, kept in ``cache``
        self._lines: dict[str, list[str]] = {}
        self._stand_ins = StandIns(model, self.line_text, self._tree)
        self._publics: tuple[dict[str, str], dict[str, str]] | None = None  # see _public, _by_public
        self._definitions: dict[str, dict[int, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef]] = {}
        self._trees: dict[str, ast.Module] = {}  # see _tree
        self._own: dict[tuple[str, int], ast.AST | None] = {}  # see _own_definition

    # -- symbols ---------------------------------------------------------------------------
    @property
    def _public(self) -> dict[str, str]:
        """qualname -> the public path a role targets (see :func:`_linked_names`)."""
        return self._public_paths()[0]

    @property
    def _by_public(self) -> dict[str, str]:
        """public dotted path -> qualname: a profile may name code the way its users import it."""
        return self._public_paths()[1]

    def _public_paths(self) -> tuple[dict[str, str], dict[str, str]]:
        """Both tables, made when first asked (``show KEY`` checks claims by qualname, and never
        makes a role: a fifth of a second of torchrl's public paths not spent)."""
        if self._publics is None:
            paths = public_paths(self.model)
            by_public = {path: qualname for qualname, found in paths.items() for path in found}
            self._publics = (_linked_names(paths, self.docs, self.model), by_public)
        return self._publics

    def lookup(self, name: str, origin: str) -> str:
        """The qualname for a curated name (full name, unique suffix, or public path);
        ``origin`` names the caller."""
        matches = find_symbols(self.model, name)
        if len(matches) == 1:
            return matches[0]
        public = self._public_lookup(name)
        if public is not None:
            return public
        if not matches:
            from rlmap.query.lookup import similar_names  # (only on the way to an error)

            close = similar_names(self.model, name)
            meant = f"{did_you_mean(close)} " if close else ""
            raise UnknownSymbol(
                f"{origin}: '{name}' names no symbol of {self.model.source.stamp()}",
                f"{meant}the name is misspelt, or the code was renamed, moved or removed: update the name in that file",
            )
        raise UnknownSymbol(
            f"{origin}: '{name}' is ambiguous ({', '.join(matches[:4])}{', ...' if len(matches) > 4 else ''})",
            "use a longer suffix or the full qualified name",
        )

    def _public_lookup(self, name: str) -> str | None:
        """``torchrl.data.SliceSampler`` (a public path, stable when the code moves inside the
        package) or ``torchrl.collectors.Collector._make_carrier`` (a member of one)."""
        if name in self._by_public:
            return self._by_public[name]
        owner, _, member = name.rpartition(".")
        cls = self._by_public.get(owner)
        return self.model.find_member(cls, member) if cls and member else None

    def ref(self, qualname: str) -> Ref:
        symbol = self.model.symbol(qualname)
        if symbol is None:
            raise UnknownSymbol(f"'{qualname}' is not a symbol of {self.model.source.stamp()}", "check the profile")
        public = self._public.get(qualname, "")
        imported = self.fallback_of(symbol)
        if imported:  # a stand-in for when an import fails: the code calls the imported one
            return Ref(qualname, imported, symbol.kind, "", "", None, symbol.has_docstring, symbol.doc_first_line)
        return Ref(
            qualname=qualname,
            display=display_name(self.model, symbol),
            kind=symbol.kind,
            role=_ROLES.get(symbol.kind, "obj") if public else "",
            target=public,
            anchor=self.anchor(display_name(self.model, symbol).rsplit(".", 1)[-1], symbol.path, symbol.line),
            documented=symbol.has_docstring,
            summary=symbol.doc_first_line,
        )

    def anchor(self, name: str, path: str, line: int) -> Anchor | None:
        if not path or not line:
            return None
        return Anchor(name=name, path=path, line=line, url=self.model.source.permalink(path, line))

    # -- source ----------------------------------------------------------------------------
    def source_lines(self, path: str) -> list[str]:
        if path not in self._lines:
            try:
                # decoded as the index decoded it (and Python does): a byte-order mark or a PEP 263
                # ``coding`` cookie, ``\r\n`` and ``\r`` as newlines, so line N is the index's line N
                data = read_source(self.root, path)
                text = decode_source(data) if data is not None else ""
            except Skip:
                text = ""
            self._lines[path] = text.split("\n")
        return self._lines[path]

    def line_text(self, path: str, line: int) -> str:
        lines = self.source_lines(path)
        return lines[line - 1] if 0 < line <= len(lines) else ""

    def docstring(self, symbol: Symbol) -> str:
        """The full docstring of a class or function, read from its file (never imported)."""
        node = self._definition(symbol)
        return (ast.get_docstring(node) or "") if node is not None else ""

    def docstring_lines(self, symbol: Symbol) -> range:
        """The lines the docstring of a class or function spans (empty when it has none)."""
        node = self._definition(symbol)
        if node is None or not node.body:
            return range(0)
        first = node.body[0]
        if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
            return range(first.lineno, (first.end_lineno or first.lineno) + 1)
        return range(0)

    def fallback_of(self, symbol: Symbol) -> str:
        """What ``symbol`` stands in for (:class:`rlmap.query.standins.StandIns`); ``""`` for most."""
        return self._stand_ins.of(symbol)

    def definition(self, symbol: Symbol) -> ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef | None:
        """The class or function node defined on the symbol's line, parsed from its file (never run)."""
        return self._definition(symbol)

    def _definition(self, symbol: Symbol) -> ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef | None:
        """The class or function defined on the symbol's line.

        An undecorated definition is parsed from its own lines (a page reads a few functions of
        a 2,000-line file); a decorated one (its decorators are above its line), or one whose
        lines do not parse alone, from its file: each file is parsed once and its definitions
        indexed by line once, so looking up every symbol of a file costs the file once.
        """
        if symbol.path not in self._definitions and not symbol.decorators:
            found = self._own_definition(symbol)
            if found is not _UNPARSED:
                return found  # type: ignore[return-value]
        if symbol.path not in self._definitions:
            index: dict[int, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef] = {}
            for node in statements(self._tree(symbol.path)):
                if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                    index.setdefault(node.lineno, node)
            self._definitions[symbol.path] = index
        return self._definitions[symbol.path].get(symbol.line)

    def _own_definition(self, symbol: Symbol) -> ast.AST | None:
        """The definition on the symbol's line parsed from its lines alone, as the file's parse
        has it (the same nodes, lines and columns: an indented one parses under ``if 1:``);
        :data:`_UNPARSED` when they do not hold it."""
        key = (symbol.path, symbol.line)
        if key not in self._own:
            lines = self.source_lines(symbol.path)[symbol.line - 1 : symbol.end_line]
            text = "\n".join(lines)
            indented = text[:1].isspace()
            found: ast.AST | None = _UNPARSED
            try:
                module = ast.parse("if 1:\n" + text if indented else text)
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                module = None
            if module is not None and len(module.body) == 1:
                node = module.body[0].body[0] if indented and isinstance(module.body[0], ast.If) else module.body[0]
                if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and not node.decorator_list:
                    found = ast.increment_lineno(node, symbol.line - node.lineno)
            self._own[key] = found
        return self._own[key]

    def _tree(self, path: str) -> ast.Module:
        """The file's syntax tree, parsed once (never run); empty when it does not parse."""
        tree = self._trees.get(path)
        if tree is None:
            try:
                tree = ast.parse("\n".join(self.source_lines(path)))
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                tree = ast.Module(body=[], type_ignores=[])
            self._trees[path] = tree
        return tree


_UNPARSED = ast.Pass()  # (see Refs._own_definition)


def display_name(model: CodeModel, symbol: Symbol) -> str:
    """The qualname without its module: ``Collector.rollout``, ``_split_and_pad_for_reset``."""
    module = symbol.qualname
    while module and (model.node_kind(module) != MODULE):
        module = module.rpartition(".")[0]
    if not module or module == symbol.qualname:
        return symbol.qualname
    return symbol.qualname[len(module) + 1 :]


def _is_package(model: CodeModel, module: str) -> bool:
    symbol = model.symbol(module)
    return symbol is not None and symbol.path.endswith("/__init__.py")


def _is_public_path(dotted: str) -> bool:
    return not any(part.startswith("_") and not part.startswith("__") for part in dotted.split("."))


def public_paths(model: CodeModel) -> dict[str, list[str]]:
    """Qualname -> every public dotted path that reaches it (its own, and packages' re-exports,
    those a package's ``__getattr__`` serves lazily too), shortest first.

    A member of a class is public under each public path of its class, when its own name is public.
    """
    exported: dict[str, list[str]] = {}
    for module, name, target in model.exports():
        dotted = f"{module}.{name}"
        # a package's ``__init__`` re-exports; a module that imports a name merely uses it
        # (``torchrl.objectives.cql.ValueEstimatorBase`` is no path Sphinx documents)
        if _is_public_path(dotted) and _is_package(model, module):
            exported.setdefault(target, []).append(dotted)
    for module, names in sorted(model.lazy_exports().items()):  # served by the package's ``__getattr__``
        for name in names:
            dotted = f"{module}.{name}"
            served = model.member_of(module, name) if _is_public_path(dotted) and _is_package(model, module) else None
            if served is not None and dotted not in exported.get(served, ()):
                exported.setdefault(served, []).append(dotted)
    public: dict[str, list[str]] = {}
    for name in sorted(model.qualnames(), key=lambda qualname: (qualname.count("."), qualname)):
        owner, _, member = name.rpartition(".")
        if model.node_kind(owner) == CLASS:
            if owner in public and not (member.startswith("_") and not member.startswith("__")):
                public[name] = [f"{path}.{member}" for path in public[owner]]
            continue
        candidates = set(exported.get(name, ()))
        if _is_public_path(name):
            candidates.add(name)
        if candidates:
            public[name] = sorted(candidates, key=lambda dotted: (len(dotted), dotted))
    return public


def _linked_names(paths: dict[str, list[str]], docs: DocsTree | None, model: CodeModel) -> dict[str, str]:
    """Qualname -> the path a role targets: the shortest public one, or with a docs tree the
    shortest one it documents (no entry when it documents none)."""
    if docs is None:
        return {qualname: candidates[0] for qualname, candidates in paths.items()}
    linked: dict[str, str] = {}
    for qualname, candidates in paths.items():
        documented = next((path for path in candidates if links(docs, path, model, qualname)), "")
        if documented:
            linked[qualname] = documented
    return linked


def links(docs: DocsTree, path: str, model: CodeModel, qualname: str) -> bool:
    """Whether a role to ``path``, which names the symbol ``qualname``, links in ``docs``: the tree
    names it itself, or it is a member autodoc's ``:members:`` shows (:mod:`rlmap.pages.docstree`):
    defined in the class the path names (or inherited, under ``:inherited-members:``), with a
    docstring (its own, or the one autodoc takes from the same member of a base) or under
    ``:undoc-members:``; never ``__init__``, nor an attribute only assigned in a method, which
    autodoc does not see."""
    return not unlinked_because(docs, path, model, qualname)


# Why a role does not link (:func:`unlinked_because`); the last two name a member its class's
# autodoc leaves out, which the audit words on its own.
NOT_DOCUMENTED = "not documented"
NOT_SHOWN = "not shown by autodoc"
INHERITED_LEFT_OUT = "inherited, and its class is documented without :inherited-members:"
UNDOCUMENTED_LEFT_OUT = "without a docstring, which autodoc's :members: leaves out (without :undoc-members:)"


def unlinked_because(docs: DocsTree, path: str, model: CodeModel, qualname: str) -> str:
    """Why a role to ``path`` (naming ``qualname``) does not link in ``docs``, one of the reasons
    above; ``""`` when it does (see :func:`links`)."""
    if path in docs.objects:
        return ""
    if not docs.documents(path):
        return NOT_DOCUMENTED
    symbol = model.symbol(qualname)
    if symbol is None or qualname.endswith(".__init__"):
        return NOT_SHOWN
    if symbol.kind in (CLASS, MODULE):
        return ""
    owner = path.rpartition(".")[0]
    options = owner if owner in docs.with_members else owner.rpartition(".")[0]  # (a class of an automodule)
    defined_in = qualname.rpartition(".")[0]
    cls = model.follow(owner) if model.node_kind(defined_in) == CLASS else None
    if cls is not None and defined_in != cls and options not in docs.inherited:
        return INHERITED_LEFT_OUT
    if options in docs.undocumented or _has_docstring(model, cls, symbol):
        return ""
    return UNDOCUMENTED_LEFT_OUT


def _has_docstring(model: CodeModel, cls: str | None, symbol: Symbol) -> bool:
    """Whether autodoc finds a docstring for ``symbol`` read through ``cls``: its own, else that
    of the first class of ``cls``'s MRO whose member of that name has one (``inspect.getdoc``)."""
    if symbol.has_docstring:
        return True
    if cls is None or symbol.kind not in (FUNCTION, METHOD, PROPERTY):
        return False
    name = symbol.qualname.rpartition(".")[2]
    for base in mro(model.bases, cls):
        found = model.symbol(f"{base}.{name}")
        if found is not None and found.has_docstring:
            return True
    return False
