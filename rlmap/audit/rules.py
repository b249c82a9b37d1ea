"""``rlmap audit``: where hand-written docs, docstrings and code disagree, and what nobody documents.

Every rule is a function ``(context) -> findings``; :data:`RULES` holds its id, severity, summary
and VALID / INVALID examples (the latter double as tests and as ``rlmap audit --explain``).
Resolution follows Sphinx's Python domain: ``currentmodule``, ``~``/``!`` prefixes, explicit
titles, re-exports through ``__init__`` and inherited members.

Cost is linear in the docs and the code: every source file is read and parsed at most once,
every index (names, exports, files, definitions by line) is built once, and the spelling
search behind "did you mean" suggestions is exact but bounded by :data:`SPELLING_BUDGET`
candidate comparisons per run (past it, findings carry the generic hint).
"""

from __future__ import annotations

import ast
import builtins
import difflib
import hashlib
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from rlmap.audit.docscan import DocsScan, printable_path
from rlmap.index.records import ATTRIBUTE, CLASS, FUNCTION, METHOD, MODULE, PROPERTY, Symbol
from rlmap.model.codemodel import CodeModel
from rlmap.pages.curated import Term

ERROR = "error"
WARNING = "warning"
NOTE = "note"

EXTERNAL_PREFIX = "external:"  # a name a module re-exports from another package: it exists
ORPHAN_MIN_CALLERS = 3
ORPHAN_MIN_ACCESSES = 10
_ROLE_KINDS: dict[str, tuple[str, ...]] = {
    "mod": (MODULE,),
    "class": (CLASS,),
    "exc": (CLASS,),
    "func": (FUNCTION,),
    "meth": (METHOD, PROPERTY),
    "attr": (ATTRIBUTE, PROPERTY),
    "data": (ATTRIBUTE, "variable"),
}
_CODE_ROLES = frozenset({"class", "meth", "func", "attr", "mod", "data", "obj", "exc"})
_SPHINX_LABELS = frozenset({"genindex", "modindex", "search", "py-modindex"})
_BUILTINS = frozenset(dir(builtins))
SPELLING_BUDGET = 250_000  # candidate comparisons for "did you mean", per run (at most a second or two)
_MAX_PARTS = 64  # a dotted reference with more parts names nothing (no package nests that deep)
_DEFINITIONS = (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)


class Speller:
    """``difflib.get_close_matches`` over a fixed set of words, indexed by length once.

    Exact: a word whose length alone rules it out (difflib's ``real_quick_ratio``) is never
    compared.  Memoized per query; all queries of one run share ``budget`` comparisons, after
    which a query that would exceed it answers nothing.
    """

    def __init__(self, words: Iterable[str], cutoff: float, budget: list[int]) -> None:
        self.cutoff = cutoff
        self.budget = budget  # one shared, mutable counter
        self.by_length: dict[int, list[str]] = defaultdict(list)
        for word in sorted(set(words)):
            self.by_length[len(word)].append(word)
        self.memo: dict[tuple[str, int], list[str]] = {}

    def close(self, word: str, n: int) -> list[str]:
        key = (word, n)
        if key not in self.memo:
            size = len(word)
            buckets = [
                words
                for length, words in self.by_length.items()
                if length + size and 2.0 * min(length, size) / (length + size) >= self.cutoff
            ]
            cost = sum(map(len, buckets))
            if cost > self.budget[0]:
                self.memo[key] = []
            else:
                self.budget[0] -= cost
                pool = [candidate for words in buckets for candidate in words]
                self.memo[key] = difflib.get_close_matches(word, pool, n=n, cutoff=self.cutoff)
        return self.memo[key]


@dataclass(frozen=True, slots=True)
class Finding:
    rule: str
    severity: str
    path: str
    line: int
    name: str  # what the finding is about: the fingerprint survives line moves
    message: str
    suggestion: str = ""

    @property
    def fingerprint(self) -> str:
        return hashlib.sha256(f"{self.rule}|{self.path}|{self.name}".encode()).hexdigest()[:20]

    def sort_key(self) -> tuple[str, int, str, str]:
        return (self.path, self.line, self.rule, self.name)


@dataclass(frozen=True, slots=True)
class Rule:
    id: str
    severity: str
    summary: str
    valid: str  # an example that is not a finding
    invalid: str  # an example that is


RULES: dict[str, Rule] = {
    rule.id: rule
    for rule in (
        Rule(
            "stale-ref",
            ERROR,
            "A reference to code (Sphinx role or double-backtick dotted name) that resolves to nothing.",
            ".. currentmodule:: torchrl.record.loggers\n\n:class:`TensorboardLogger`",
            ".. currentmodule:: torchrl.record.loggers\n\n:class:`TensorBoardLogger`",
        ),
        Rule(
            "unlinkable-ref",
            WARNING,
            "A role whose target exists but that Sphinx cannot link (private or under-qualified): "
            "readers see plain text.",
            ":meth:`torchrl.collectors.Collector.rollout`",
            ":meth:`torchrl.collectors.Collector._make_carrier`",
        ),
        Rule(
            "stale-docstring-ref",
            ERROR,
            "A docstring that lists a method or parameter that no longer exists, or a method that now only raises.",
            "class M:\n    '''Methods:\n        forward: runs it.\n    '''\n    def forward(self): ...",
            "class M:\n    '''Methods:\n        set_mode: sets it.\n    '''\n"
            "    def set_mode(self):\n        raise RuntimeError('removed')",
        ),
        Rule(
            "stale-line-anchor",
            ERROR,
            "A path.py:LINE reference whose line no longer holds the symbol named beside it.",
            "``rollout`` (torchrl/collectors/_single.py:2030)",
            "``rollout`` (torchrl/collectors/_single.py:1638)",
        ),
        Rule(
            "broken-label",
            ERROR,
            "A :ref: label or :doc: target that exists nowhere in the docs tree.",
            ".. _ref_data_layout:\n\n:ref:`ref_data_layout`",
            ":ref:`ref_data_layout` (no such label anywhere)",
        ),
        Rule(
            "missing-path",
            ERROR,
            "A repository file path named in the docs that does not exist (checkouts only).",
            "examples/collectors/collector.py (exists)",
            "examples/collectors/gone.py",
        ),
        Rule(
            "stale-alias",
            WARNING,
            "An old name still used in code after the glossary declares it replaced.",
            "self._carrier = env.reset()",
            "self._shuttle = env.reset()  # glossary: shuttle -> carrier",
        ),
        Rule(
            "orphaned-symbol",
            WARNING,
            "A central private helper or attribute with no docstring that no doc page mentions.",
            "def _make_carrier(self):\n    '''Create the carrier.'''",
            "def _update_traj_ids(self, out):  # 5 callers, no docstring, in no doc",
        ),
        Rule(
            "undocumented-helper",
            NOTE,
            "A private function without a docstring in the focus subsystems, ranked by callers.",
            "def _helper():\n    '''Does this.'''",
            "def _helper():\n    return 1",
        ),
    )
}


@dataclass(slots=True)
class AuditContext:
    model: CodeModel
    docs: DocsScan
    root: Path  # the source tree's root (files are read from here)
    package: str
    focus: tuple[str, ...]
    terms: tuple[Term, ...] = ()
    is_checkout: bool = False
    min_callers: int = ORPHAN_MIN_CALLERS
    min_accesses: int = ORPHAN_MIN_ACCESSES
    code_prefix: str = ""  # the source root relative to the report root ("" when it is outside)
    spelling_budget: int = SPELLING_BUDGET
    _exports: dict[tuple[str, str], str] = field(default_factory=dict)
    _exported_as: dict[str, list[str]] = field(default_factory=dict)
    _outside: dict[tuple[str, str], str] = field(default_factory=dict)
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

    def __post_init__(self) -> None:
        for module, name, target in self.model.exports():
            if (module, name) not in self._exports:
                self._exports[(module, name)] = target
                self._exported_as.setdefault(target, []).append(f"{module}.{name}")
        for module, name, target in self.model.external_exports():
            self._outside.setdefault((module, name), target)
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
        if self.model.has_symbol(dotted):
            return dotted
        parts = dotted.split(".")
        if len(parts) > _MAX_PARTS:
            return None
        for cut in range(len(parts) - 1, 0, -1):
            module = ".".join(parts[:cut])
            if self.model.node_kind(module) == MODULE:
                current = module
                for part in parts[cut:]:
                    found = self.member(current, part)
                    if found is None:
                        return None
                    current = found
                return current
        return None

    def member(self, owner: str, name: str) -> str | None:
        kind = self.model.node_kind(owner)
        if kind == MODULE:
            if self.model.has_symbol(f"{owner}.{name}"):
                return f"{owner}.{name}"
            target = self._exports.get((owner, name))
            if target is not None and self.model.has_symbol(target):
                return target
            outside = self._outside.get((owner, name))
            if outside:
                return f"{EXTERNAL_PREFIX}{outside}"
            if self.model.has_symbol(f"{owner}.__getattr__"):
                # a module-level __getattr__ imports names lazily: take a definition below the module
                lazy = [
                    q
                    for q in self.named(name)
                    if q.startswith(owner + ".") and self.model.node_kind(q) in (CLASS, FUNCTION)
                ]
                return lazy[0] if lazy else None
            return None
        if kind == CLASS:
            return self.model.find_member(owner, name)
        return None

    def named(self, name: str) -> list[str]:
        found = self._sorted_names.get(name)
        if found is None:
            found = sorted(self._names.get(name, ()))
            self._sorted_names[name] = found
        return list(found)

    def suggest(self, dotted: str) -> str:
        """A likely replacement: the same name elsewhere, else the closest names."""
        last = dotted.rsplit(".", 1)[-1]
        same = [q for q in self.named(last) if self.model.node_kind(q) in (CLASS, FUNCTION, METHOD, PROPERTY)]
        if len(same) > 1:
            same.sort(
                key=lambda q: (
                    -_shared_prefix(self.public_or_qualname(q), dotted),
                    -len(self.model.subclasses_of(q.rpartition(".")[0])),  # the defining base first
                    len(self.public_or_qualname(q)),
                    q,
                )
            )
        if same:
            return "the name exists as " + ", ".join(self.public_or_qualname(q) for q in same[:3])
        close = self.close_matches("names", last, 3, 0.75)
        candidates = [q for name in close for q in self.named(name)][:3]
        if candidates:
            return "did you mean " + " or ".join(self.public_or_qualname(q) for q in candidates) + "?"
        return "remove the reference or point it at the code that replaced it"

    def public_or_qualname(self, qualname: str) -> str:
        """The shortest public path to a symbol (re-exports followed, members under their class)."""
        if qualname in self._public:
            return self._public[qualname]
        best = qualname
        for dotted in self._exported_as.get(qualname, ()):
            if not _is_private(dotted) and len(dotted) < len(best):
                best = dotted
        owner, _, member = qualname.rpartition(".")
        if best == qualname and self.model.node_kind(owner) == CLASS:
            best = f"{self.public_or_qualname(owner)}.{member}"
        self._public[qualname] = best
        return best

    # -- source: each file read once, parsed once, its definitions indexed by line once ----
    def source(self, path: str) -> bytes | None:
        if path not in self._sources:
            try:
                self._sources[path] = (self.root / path).read_bytes()
            except OSError:
                self._sources[path] = None
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
        if self._files is None:
            self._files = defaultdict(list)
            for symbol in self.model.symbols():
                if symbol.kind == MODULE:
                    self._files[symbol.path.rsplit("/", 1)[-1]].append(symbol.path)
        if written not in self._anchor_files:
            tail = "/" + written.lstrip("./")
            self._anchor_files[written] = [
                path for path in self._files.get(tail.rsplit("/", 1)[-1], ()) if path == written or path.endswith(tail)
            ]
        return self._anchor_files[written]

    def defined_in(self, path: str, name: str) -> Symbol | None:
        """The first symbol named ``name`` (last component) defined in ``path``."""
        if self._at is None:
            self._at = {}
            for symbol in self.model.symbols():
                self._at.setdefault((symbol.path, symbol.qualname.rsplit(".", 1)[-1]), symbol)
        return self._at.get((path, name))


# -- rules over the docs --------------------------------------------------------------------------


def _shared_prefix(left: str, right: str) -> int:
    count = 0
    for a, b in zip(left.split("."), right.split("."), strict=False):
        if a != b:
            break
        count += 1
    return count


def _is_private(dotted: str) -> bool:
    return any(part.startswith("_") and not part.startswith("__") for part in dotted.split("."))


def rule_refs(ctx: AuditContext) -> Iterable[Finding]:
    """stale-ref and unlinkable-ref."""
    pkg = ctx.package
    for ref in ctx.docs.refs:
        if ref.kind not in _CODE_ROLES and ref.kind != "literal":
            continue
        target = ref.text.lstrip(".")
        if not target or target.split(".")[0] in _BUILTINS:
            continue
        in_package = target == pkg or target.startswith(pkg + ".")
        if ref.kind == "literal" and not in_package:
            continue  # ``env.reset`` and other instance-style literals are not references
        in_module = ref.module == pkg or ref.module.startswith(pkg + ".")
        if not in_package and not in_module:
            continue  # no way to tell what Sphinx would resolve it against
        candidates = [target] if in_package else [f"{ref.module}.{target}"]
        resolved = next((found for found in map(ctx.resolve, candidates) if found), None)
        shown = f":{ref.kind}:`{ref.text}`" if ref.kind != "literal" else f"``{ref.text}``"
        if resolved is not None:
            if ref.kind != "literal" and _is_private(candidates[0]) and not resolved.startswith(EXTERNAL_PREFIX):
                symbol = ctx.model.symbol(resolved)
                where = f"{symbol.path}:{symbol.line}" if symbol else resolved
                yield Finding(
                    "unlinkable-ref",
                    WARNING,
                    ref.path,
                    ref.line,
                    ref.text,
                    f"{shown} names a private object: Sphinx renders it as plain text, with no link",
                    f"link the source instead ({where}) or name the public API that uses it",
                )
            continue
        if not in_package:
            first = target.split(".")[0]
            head = ctx.resolve(f"{ref.module}.{first}") if "." in target else ""
            if head is None or (head and head.startswith(EXTERNAL_PREFIX)):
                continue  # ``env.reset``-style or another package's name
            if "." not in target and ref.kind in ("meth", "attr", "mod"):
                continue  # a member of the documented class, or another package: context we cannot see
            kinds = _ROLE_KINDS.get(ref.kind)
            elsewhere = [
                q
                for q in ctx.named(target.rsplit(".", 1)[-1])
                if q.endswith("." + target) and (kinds is None or ctx.model.node_kind(q) in kinds)
            ]
            if elsewhere:
                public = ctx.public_or_qualname(elsewhere[0])
                yield Finding(
                    "unlinkable-ref",
                    WARNING,
                    ref.path,
                    ref.line,
                    ref.text,
                    f"{shown} is not found from the current module {ref.module}: Sphinx cannot link it",
                    f"qualify it: :{ref.kind}:`~{public}`",
                )
                continue
        yield Finding(
            "stale-ref",
            ERROR,
            ref.path,
            ref.line,
            ref.text,
            f"{shown} resolves to nothing in {ctx.model.source.stamp()}",
            ctx.suggest(target),
        )


def rule_labels(ctx: AuditContext) -> Iterable[Finding]:
    documents = ctx.docs.documents
    for ref in ctx.docs.refs:
        if ref.kind == "ref" and ref.text not in ctx.docs.labels and ref.text not in _SPHINX_LABELS:
            close = ctx.close_matches("labels", ref.text, 1, 0.6)
            hint = f"did you mean {close[0]}?" if close else "define the label (.. _name:) or fix the reference"
            yield Finding(
                "broken-label",
                ERROR,
                ref.path,
                ref.line,
                ref.text,
                f":ref:`{ref.text}` names no label in the docs",
                hint,
            )
        elif ref.kind == "doc":
            target = ref.text
            folder = str(Path(ref.path).parent)
            candidates = {target.lstrip("/")}
            for part in range(len(Path(folder).parts) + 1):
                base = Path(*Path(folder).parts[part:]) if part < len(Path(folder).parts) else Path()
                candidates.add((base / target).as_posix())
            if not any(_normal(c) in documents for c in candidates):
                yield Finding(
                    "broken-label",
                    ERROR,
                    ref.path,
                    ref.line,
                    target,
                    f":doc:`{target}` names no document in the docs",
                    "fix the document name (relative to this page, or absolute from the docs root)",
                )


def _normal(path: str) -> str:
    parts: list[str] = []
    for part in path.split("/"):
        if part == "..":
            if parts:
                parts.pop()
        elif part not in ("", "."):
            parts.append(part)
    return "/".join(parts)


def rule_line_anchors(ctx: AuditContext) -> Iterable[Finding]:
    for ref in ctx.docs.refs:
        if ref.kind != "anchor":
            continue
        yield from _check_anchor(ctx, ref.path, ref.line, ref.text, ref.anchor_line, ref.beside)


def _check_anchor(
    ctx: AuditContext, where: str, line: int, written: str, target_line: int, beside: str
) -> Iterable[Finding]:
    matches = ctx.anchor_files(written)
    if len(matches) != 1:
        return
    path = matches[0]
    lines = ctx.lines(path)
    if lines is None:
        return
    name = f"{written}:{target_line}"
    if target_line > len(lines):
        yield Finding(
            "stale-line-anchor",
            ERROR,
            where,
            line,
            name,
            f"{name} is past the end of {path} ({len(lines)} lines)",
            "refer to the symbol by name instead of a line",
        )
        return
    if not beside or beside in lines[target_line - 1]:
        return
    current = ctx.defined_in(path, beside)
    if current is not None:
        public = ctx.public_or_qualname(current.qualname)
        hint = f"{beside} is now at {path}:{current.line}; better, refer to {public} by name"
    else:
        hint = f"{beside} is not defined in {path} any more; refer to code by name"
    yield Finding(
        "stale-line-anchor",
        ERROR,
        where,
        line,
        name,
        f"{name} no longer holds {beside} (it holds: {lines[target_line - 1].strip()[:60]!r})",
        hint,
    )


def rule_paths(ctx: AuditContext) -> Iterable[Finding]:
    if not ctx.is_checkout:
        return
    exists: dict[str, bool] = {}
    for ref in ctx.docs.refs:
        if ref.kind != "path":
            continue
        if ref.text not in exists:
            exists[ref.text] = (ctx.root / ref.text).exists()
        if not exists[ref.text]:
            yield Finding(
                "missing-path",
                ERROR,
                ref.path,
                ref.line,
                ref.text,
                f"{ref.text} does not exist in the checkout",
                "fix the path or remove the reference",
            )


# -- rules over the code --------------------------------------------------------------------------


def _docstring_node(ctx: AuditContext, symbol: Symbol) -> tuple[ast.AST, ast.Constant] | None:
    for node in ctx.definitions(symbol.path, symbol.line):
        body = getattr(node, "body", [])
        first = body[0] if body else None
        if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
            return node, first.value
    return None


_REMOVAL = ("removed", "deprecated", "no longer", "has been replaced")


def _only_raises_removal(node: ast.AST) -> bool:
    """A function whose whole body raises an error saying it was removed (not NotImplementedError)."""
    body = [
        s
        for s in getattr(node, "body", [])
        if not (isinstance(s, ast.Expr) and isinstance(getattr(s, "value", None), ast.Constant))
    ]
    if len(body) != 1 or not isinstance(body[0], ast.Raise) or body[0].exc is None:
        return False
    texts = [n.value for n in ast.walk(body[0].exc) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    return any(word in text.lower() for text in texts for word in _REMOVAL)


def _section_entries(docstring: str, title: str) -> list[tuple[int, str]]:
    """(line offset, name) of the entries of a Google-style section (``Methods:``, ``Args:``)."""
    lines = docstring.split("\n")
    entries: list[tuple[int, str]] = []
    for index, line in enumerate(lines):
        if line.strip() != f"{title}:":
            continue
        header_indent = len(line) - len(line.lstrip())
        entry_indent = None
        for offset in range(index + 1, len(lines)):
            text = lines[offset]
            if not text.strip():
                continue
            indent = len(text) - len(text.lstrip())
            if indent <= header_indent:
                break
            if entry_indent is None:
                entry_indent = indent
            if indent == entry_indent:
                name = text.strip().split(":", 1)[0].split("(", 1)[0].strip().lstrip("*")
                if name.isidentifier():
                    entries.append((offset, name))
    return entries


def rule_docstrings(ctx: AuditContext) -> Iterable[Finding]:
    for symbol in ctx.model.symbols():
        if symbol.kind not in (CLASS, FUNCTION, METHOD) or not symbol.has_docstring:
            continue
        if not symbol.qualname.startswith(ctx.focus):
            continue
        found = _docstring_node(ctx, symbol)
        if found is None:
            continue
        definition, constant = found
        text = str(constant.value)
        short = symbol.qualname.rsplit(".", 1)[-1]
        if symbol.kind == CLASS:
            for offset, name in _section_entries(text, "Methods"):
                member = ctx.member(symbol.qualname, name)
                line = constant.lineno + offset
                if member is None:
                    yield Finding(
                        "stale-docstring-ref",
                        ERROR,
                        ctx.code_path(symbol.path),
                        line,
                        f"{symbol.qualname}.{name}",
                        f"the {short} docstring lists a method {name}() that no longer exists",
                        "remove it from the Methods section",
                    )
                    continue
                member_symbol = ctx.model.symbol(member)
                if member_symbol is not None:
                    node = next(
                        (
                            n
                            for n in ctx.definitions(member_symbol.path, member_symbol.line)
                            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                        ),
                        None,
                    )
                    if node is not None and _only_raises_removal(node):
                        yield Finding(
                            "stale-docstring-ref",
                            ERROR,
                            ctx.code_path(symbol.path),
                            line,
                            f"{symbol.qualname}.{name}",
                            f"the {symbol.qualname.rsplit('.', 1)[-1]} docstring lists {name}(), which now only raises "
                            f"(see {member_symbol.path}:{member_symbol.line})",
                            "remove it from the Methods section and document what replaced it",
                        )
        params_owner = ctx.model.symbol(f"{symbol.qualname}.__init__") if symbol.kind == CLASS else symbol
        if params_owner is None or "*" in params_owner.signature:
            continue  # **kwargs / *args accept names we cannot check
        if any(keyword.arg == "metaclass" for keyword in getattr(definition, "keywords", ())):
            continue  # a metaclass may take arguments __init__ never sees
        params = {name for name, _ in params_owner.params}
        owner_name = params_owner.qualname.rsplit(".", 1)[-1]
        for offset, name in _section_entries(text, "Args") + _section_entries(text, "Arguments"):
            if name not in params:
                yield Finding(
                    "stale-docstring-ref",
                    ERROR,
                    ctx.code_path(symbol.path),
                    constant.lineno + offset,
                    f"{symbol.qualname}({name})",
                    f"the docstring documents a parameter {name} that {owner_name} does not take",
                    "remove or rename the entry",
                )


def rule_aliases(ctx: AuditContext) -> Iterable[Finding]:
    for term in ctx.terms:
        for old in term.former_attributes:
            for qualname in sorted(q for q in ctx.model.attribute_names() if q.endswith("." + old)):
                accesses = ctx.model.attribute_accesses(qualname)
                if not accesses:
                    continue
                first = min(accesses, key=lambda a: a.line)
                path = ctx.model.path_of(first.function)
                yield Finding(
                    "stale-alias",
                    WARNING,
                    ctx.code_path(path),
                    first.line,
                    qualname,
                    f"{qualname.rsplit('.', 2)[-2]} still uses self.{old} ({len(accesses)} accesses); "
                    f"the glossary says the {', '.join(term.former)} is now the {term.term}",
                    f"rename self.{old} to the name the rest of the code uses for the {term.term}",
                )


def rule_orphans(ctx: AuditContext) -> Iterable[Finding]:
    """orphaned-symbol (central, undocumented, unmentioned) and undocumented-helper."""
    mentioned = ctx.docs.text_names
    former = {old for term in ctx.terms for old in term.former_attributes}  # reported as stale-alias
    for symbol in ctx.model.symbols():
        name = symbol.qualname.rsplit(".", 1)[-1]
        if not symbol.qualname.startswith(ctx.focus) or not name.startswith("_") or name.startswith("__"):
            continue
        if symbol.kind in (FUNCTION, METHOD) and not symbol.has_docstring:
            callers = {edge.caller for edge in ctx.model.callers(symbol.qualname)}
            if len(callers) >= ctx.min_callers and name not in mentioned:
                yield Finding(
                    "orphaned-symbol",
                    WARNING,
                    ctx.code_path(symbol.path),
                    symbol.line,
                    symbol.qualname,
                    f"{name} has {len(callers)} callers, no docstring, and no doc page mentions it",
                    "add a docstring (what it does, when it runs) or document it on an internals page",
                )
            elif callers:
                yield Finding(
                    "undocumented-helper",
                    NOTE,
                    ctx.code_path(symbol.path),
                    symbol.line,
                    symbol.qualname,
                    f"{name} has no docstring ({len(callers)} caller{'s' if len(callers) != 1 else ''})",
                    "add a one-line docstring",
                )
        elif symbol.kind == ATTRIBUTE and name not in former:
            accesses = ctx.model.attribute_accesses(symbol.qualname)
            if len(accesses) >= ctx.min_accesses and name not in mentioned:
                writers = len({a.function for a in accesses if a.kind == "write"})
                yield Finding(
                    "orphaned-symbol",
                    WARNING,
                    ctx.code_path(symbol.path),
                    symbol.line,
                    symbol.qualname,
                    f"self.{name} is read or written {len(accesses)} times ({writers} writing methods) "
                    "and no doc page mentions it",
                    "document what it holds and who sets it (a glossary entry or an internals page)",
                )


RULE_FUNCTIONS: tuple[Callable[[AuditContext], Iterable[Finding]], ...] = (
    rule_refs,
    rule_labels,
    rule_line_anchors,
    rule_paths,
    rule_docstrings,
    rule_aliases,
    rule_orphans,
)
# The rules each function can report: ``--rule X`` runs only the functions that report X.
_REPORTS: dict[Callable[[AuditContext], Iterable[Finding]], frozenset[str]] = {
    rule_refs: frozenset({"stale-ref", "unlinkable-ref"}),
    rule_labels: frozenset({"broken-label"}),
    rule_line_anchors: frozenset({"stale-line-anchor"}),
    rule_paths: frozenset({"missing-path"}),
    rule_docstrings: frozenset({"stale-docstring-ref"}),
    rule_aliases: frozenset({"stale-alias"}),
    rule_orphans: frozenset({"orphaned-symbol", "undocumented-helper"}),
}


def run_audit(ctx: AuditContext, rules: Iterable[str] = ()) -> list[Finding]:
    wanted = set(rules)
    found: dict[tuple[str, str, int, str], Finding] = {}
    for function in RULE_FUNCTIONS:
        if wanted and not wanted & _REPORTS.get(function, frozenset(RULES)):
            continue
        for finding in function(ctx):
            if wanted and finding.rule not in wanted:
                continue
            found.setdefault((finding.rule, finding.path, finding.line, finding.name), finding)
    return sorted(found.values(), key=Finding.sort_key)
