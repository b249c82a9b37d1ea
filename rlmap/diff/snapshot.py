"""A package at one version, read statically: its symbols, each class's members and the attributes
its methods write, each function's calls and guards.

Sources come from a directory or from a git revision (``git ls-tree`` / ``git cat-file``: the
revision is read, never checked out, from the checkout :mod:`rlmap.gitread` finds); every file is
parsed with ``ast`` and never run.  A file
that does not parse is a diagnostic, not an error.
"""

from __future__ import annotations

import ast
import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from rlmap.errors import UsageError
from rlmap.gitread import GIT_MISSING, find_checkout, run_git
from rlmap.index.indexer import MAX_FILE_BYTES, read_file
from rlmap.index.records import Diagnostic
from rlmap.index.source import SourceTree
from rlmap.literals import safe_repr, unparse
from rlmap.terminal import has_control

if TYPE_CHECKING:
    from rlmap.index.indexer import Progress


@dataclass(frozen=True, slots=True)
class SymbolFacts:
    qualname: str
    kind: str  # "module", "class", "function"
    path: str
    line: int
    body: str  # a hash of the body (docstring left out): equal bodies were not edited
    members: frozenset[str] = frozenset()  # classes: names defined in the class body
    attributes: dict[str, frozenset[str]] = field(default_factory=dict)  # classes: self.X -> writing methods
    calls: frozenset[str] = frozenset()  # functions: the callee expressions, as written
    guards: frozenset[str] = frozenset()  # functions: the conditions of if/elif/while, as written


@dataclass(frozen=True, slots=True)
class Snapshot:
    label: str
    symbols: dict[str, SymbolFacts]
    diagnostics: tuple[Diagnostic, ...] = ()


def from_directory(
    package_dir: Path, label: str, progress: Progress | None = None, package: bool | None = None
) -> Snapshot:
    """The package in ``package_dir`` (its folder name is the package's name); a folder that is no
    package is a directory of modules named by their path under it, as ``--source`` names them
    (``src/mypkg/core.py`` is ``mypkg.core``, not ``src.mypkg.core``).  ``package``: whether the
    folder is the package (a namespace package has no ``__init__.py``); ``None``: whether it
    holds an ``__init__.py``."""
    if not package_dir.is_dir():
        raise UsageError(f"'{package_dir}' is not a directory", "pass a package directory, a checkout, or a revision")
    # walked as the indexer walks a package: links inside it followed, none out of it nor around
    # a loop, no FIFO or device read, names with a control character left out; each entry
    # skipped (and each file that cannot be read) is a diagnostic
    if package if package is not None else (package_dir / "__init__.py").is_file():
        tree = SourceTree(package_dir.parent, package_dir.name, "", "", "")
    else:
        tree = SourceTree(package_dir, package_dir.name, "", "", "", tops=(".",))
    files, skipped = tree.scan_files()
    diagnostics = [Diagnostic(path, 1, why) for path, why in skipped]
    sources: dict[str, bytes] = {}
    for path in files:
        relative = tree.relpath(path)
        data, problem = read_file(relative, path)
        if data is not None:
            sources[relative] = data
        elif problem is not None:
            diagnostics.append(problem)
    if not sources:  # compared with it, every symbol would read as removed
        raise UsageError(f"no Python file under '{label}'", "pass a package directory or a checkout holding it")
    return build(sources, label, progress, diagnostics)


def from_git(
    repository: Path, revision: str, package: str, progress: Progress | None = None, name: str | None = None
) -> Snapshot:
    """The package as committed at ``revision`` of ``repository`` (read with git, never checked out).

    ``package`` is the package's folder relative to the repository's top (``torchrl``, ``src/pkg``),
    ``.`` for a package that is the checkout itself: its modules are then named under ``name``
    (default: the checkout's folder name), as :func:`from_directory` names them; a folder with no
    ``__init__.py`` is a directory of modules, named by their path under it.
    """
    if revision.startswith("-"):
        raise UsageError(f"'{revision}' is not a revision", "pass a commit, branch or tag")
    top = checkout_of(repository)
    folder = package.strip("/")
    # module names start at the package's own folder; a package that is the checkout gets its name
    above = folder.rpartition("/")[0]
    prefix = f"{name or top.name}/" if folder in ("", ".") else ""
    listing = _git(top, "ls-tree", "-r", "-z", "-l", revision, "--", folder)
    top_init = False  # whether the listing holds the checkout's own __init__.py
    wanted: list[tuple[str, bytes, int]] = []  # (path, blob id, size)
    skipped: list[tuple[str, str]] = []  # (path, why): each a diagnostic, as indexing says it

    for entry in filter(None, listing.split(b"\0")):
        head, _, listed = entry.partition(b"\t")
        mode, kind, blob, length = head.split()
        try:
            path = listed.decode("utf-8")
        except UnicodeDecodeError:  # shown escaped, and skipped as a working tree's file is
            path = listed.decode("utf-8", errors="backslashreplace")
            if kind == b"blob" and path.endswith(".py"):
                skipped.append((path, "name is not valid UTF-8; skipped"))
            continue
        top_init = top_init or path == "__init__.py"  # (a link too)
        if kind == b"blob" and not length.isdigit():  # "-" or "BAD": an object the repository lacks
            raise UsageError(
                f"git cannot read {path} at '{revision}' (no size for its object)", "check the repository with git fsck"
            )
        if kind != b"blob" or not path.endswith(".py"):
            continue
        if has_control(path):  # (a module named with a newline would print a line of its own)
            skipped.append((path, "name holds a control character; skipped"))
        elif mode == b"120000":  # a symbolic link: its text is a path, which a revision does not follow
            skipped.append((path, "symbolic link; not followed at a revision, skipped"))
        elif int(length) > MAX_FILE_BYTES:
            skipped.append((path, f"file too large ({int(length) / (1024 * 1024):.0f} MB); file skipped"))
        else:
            wanted.append((path, blob, int(length)))
    if not wanted:
        raise UsageError(
            f"no {package}/ package at revision '{revision}' of {repository}", "check the revision and --package"
        )
    at_top = folder in ("", ".")
    # the checkout's top is a package when it holds an ``__init__.py`` (a link counts, as it does in a
    # working tree); any other folder was named as the package; a top that is no package is a
    # directory of modules, named by their path under it, as from_directory names them
    is_package = not at_top or top_init

    def shown(path: str) -> str:
        if not is_package:
            return path if at_top else path[len(folder) + 1 :]
        return prefix + (path[len(above) + 1 :] if above else path)

    # every file in one git process (one ``git show`` per file took seconds on torchrl)
    batch = _git(top, "cat-file", "--batch", stdin=b"".join(blob + b"\n" for _, blob, _ in wanted))
    sources: dict[str, bytes] = {}
    at = 0
    for path, blob, size in wanted:
        end = batch.index(b"\n", at)
        if batch[at:end] != b"%s blob %d" % (blob, size):
            raise UsageError(f"git cat-file gave something else for {path}", "check the repository with git fsck")
        sources[shown(path)] = batch[end + 1 : end + 1 + size]
        at = end + 1 + size + 1  # the content, then a newline
    return build(sources, revision, progress, [Diagnostic(shown(path), 1, why) for path, why in skipped])


_NO_CHECKOUT = "pass --repo a checkout, or two package directories"  # (diff's options)


def package_in_repository(package_dir: Path, hint: str = _NO_CHECKOUT) -> tuple[Path, str]:
    """The checkout holding ``package_dir`` and the package's folder relative to its top
    (``hint``: what to do when there is none)."""
    top = checkout_of(package_dir, hint=hint)
    return top, package_dir.resolve().relative_to(top).as_posix()


def checkout_of(path: Path, problem: str = "", hint: str = _NO_CHECKOUT) -> Path:
    """The top of the git checkout holding ``path`` (found by rlmap, not by git: see
    :mod:`rlmap.gitread`); a :class:`UsageError` saying ``problem`` (default: that ``path`` is in
    no checkout) and ``hint`` when there is none."""
    top = find_checkout(path)
    if top is None:
        raise UsageError(problem or f"'{path}' is not inside a git checkout", hint)
    return top


def is_revision(repository: Path, name: str) -> bool:
    """Whether ``name`` names a commit of the checkout holding ``repository``."""
    top = find_checkout(repository)
    if top is None or name.startswith("-"):
        return False
    return run_git(top, "rev-parse", "--verify", "--quiet", f"{name}^{{commit}}").ok


def _git(top: Path, *args: str, stdin: bytes | None = None) -> bytes:
    done = run_git(top, *args, stdin=stdin)
    if not done.ok:
        if done.problem == GIT_MISSING:
            hint = "install git, or pass two package directories"
        elif "promisor" in done.problem:  # a partial clone: rlmap never fetches
            hint = "the checkout lacks that revision's files (a partial clone): fetch them with git, then run again"
        else:
            hint = "check the revision"
        raise UsageError(f"git {args[0]} failed: {done.problem}", hint)
    return done.stdout


def build(
    sources: dict[str, bytes], label: str, progress: Progress | None = None, skipped: list[Diagnostic] | None = None
) -> Snapshot:
    """The snapshot of ``sources`` (path -> bytes), with the ``skipped`` entries' diagnostics;
    ``progress`` is told of each file read, as phase ``read``."""
    symbols: dict[str, SymbolFacts] = {}
    diagnostics: list[Diagnostic] = list(skipped or ())
    for done, (path, data) in enumerate(sorted(sources.items())):
        if progress:
            progress("read", done, len(sources))
        module = path[: -len(".py")].replace("/", ".").removesuffix(".__init__")
        try:
            tree = ast.parse(data)
        except (SyntaxError, ValueError, RecursionError, MemoryError) as error:
            # (worded as indexing words it: the same file says the same thing in every command)
            said = f"syntax error: {error.msg}" if isinstance(error, SyntaxError) else "does not parse"
            diagnostics.append(Diagnostic(path, getattr(error, "lineno", None) or 1, f"{said}; file skipped"))
            continue
        memo: dict[int, bytes] = {}  # each node's digest, once (the tree lives on: an id stays its node's)
        symbols[module] = SymbolFacts(module, "module", path, 1, _hash(tree.body, memo))
        _visit(tree.body, module, path, symbols, memo)
    if progress:
        progress("read", len(sources), len(sources))
    return Snapshot(label, symbols, tuple(diagnostics))


def _visit(
    body: list[ast.stmt], owner: str, path: str, symbols: dict[str, SymbolFacts], memo: dict[int, bytes]
) -> None:
    for node in body:
        if isinstance(node, ast.ClassDef):
            qualname = f"{owner}.{node.name}"
            members = frozenset(_defined_names(node.body))
            digest = _hash(node.body, memo)
            symbols[qualname] = SymbolFacts(qualname, "class", path, node.lineno, digest, members, _attributes(node))
            _visit(node.body, qualname, path, symbols, memo)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            qualname = f"{owner}.{node.name}"
            calls: set[str] = set()
            guards: set[str] = set()
            for inner in ast.walk(node):  # (one walk for both)
                if isinstance(inner, ast.Call):
                    calls.add(unparse(inner.func))
                elif isinstance(inner, ast.If | ast.While | ast.IfExp):
                    guards.add(unparse(inner.test))
            symbols[qualname] = SymbolFacts(
                qualname,
                "function",
                path,
                node.lineno,
                _hash(node.body, memo),
                calls=frozenset(calls),
                guards=frozenset(guards),
            )


def _defined_names(body: list[ast.stmt]) -> list[str]:
    names = []
    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.append(node.name)
        elif isinstance(node, ast.Assign):
            names.extend(target.id for target in node.targets if isinstance(target, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.append(node.target.id)
    return names


def _attributes(cls: ast.ClassDef) -> dict[str, frozenset[str]]:
    """``self.X`` written in the class's methods -> the methods that write it."""
    writers: dict[str, set[str]] = {}
    for method in cls.body:
        if not isinstance(method, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for node in ast.walk(method):
            targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
            for target in targets:
                if (
                    isinstance(target, ast.Attribute)
                    and isinstance(target.value, ast.Name)
                    and target.value.id == "self"
                ):
                    writers.setdefault(target.attr, set()).add(method.name)
    return {name: frozenset(methods) for name, methods in sorted(writers.items())}


def _hash(body: list[ast.stmt], memo: dict[int, bytes]) -> str:
    """The digest of a body, its docstring left out: equal exactly when the statements' trees
    are (node types, fields and values, as ``ast.dump`` shows them; not their positions).
    ``memo`` holds each node's digest by id, for the tree the body is in: a class's and a
    function's digests are made of those its module's digest made (``ast.dump`` of each body
    wrote the nested ones again, level by level: half of a snapshot's time)."""
    kept = body[1:] if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) else body
    return hashlib.sha256(b"".join(_digest(node, memo) for node in kept)).hexdigest()[:16]


def _digest(node: ast.AST, memo: dict[int, bytes]) -> bytes:
    found = memo.get(id(node))
    if found is not None:
        return found
    parts = [type(node).__name__.encode(), b"("]  # then each field: D digest, [count; items, or C constant
    for name in node._fields:
        value = getattr(node, name, None)
        if isinstance(value, ast.AST):
            parts.append(b"D" + _digest(value, memo))
        elif isinstance(value, list):
            parts.append(b"[%d;" % len(value))
            parts.extend(b"D" + _digest(item, memo) if isinstance(item, ast.AST) else _constant(item) for item in value)
        else:
            parts.append(_constant(value))
    found = memo[id(node)] = hashlib.sha256(b"".join(parts)).digest()
    return found


def _constant(value: object) -> bytes:
    """A field's plain value (a name, a constant, ``None``) with its type (``1`` is not ``1.0``),
    its length first: no two values run together alike."""
    text = f"{type(value).__name__}:{safe_repr(value)}".encode("utf-8", "surrogatepass")
    return b"C%d:%s" % (len(text), text)
