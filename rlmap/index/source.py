"""Locate the source tree to document, its version and commit, and turn locations into links.

Never imports anything: the installed copy is found by looking for its directory in each
``sys.path`` entry (no finder, no ``find_spec``, which would import a dotted name's parents),
versions are read from files or distribution metadata, and the commit from ``.git`` files.
What is read is validated before it can reach a page: a version must look like a version, a
commit like a commit, a repository URL like one; anything else is dropped with a warning.
"""

from __future__ import annotations

import os
import re
import stat
import sys
from dataclasses import dataclass
from pathlib import Path

from rlmap.errors import SourceError
from rlmap.terminal import has_control

DEFAULT_PACKAGE = "torchrl"
DEFAULT_REPO_URL = "https://github.com/pytorch/rl"
# The packages indexed with a documented package when the configuration names none: torchrl's
# classes derive from tensordict's and call into it, so calls and inherited members resolve there.
DEFAULT_COMPANIONS = {"torchrl": ("tensordict",)}
# Where a companion's files are linked (at its ``v<version>`` tag); a companion not named here
# gets no links.
COMPANION_REPO_URLS = {"tensordict": "https://github.com/pytorch/tensordict"}

_VERSION_ASSIGN = re.compile(r"""^__version__\s*(?::\s*str\s*)?=\s*['"]([^'"\n]{1,200})['"]""", re.M)
# PEP 440 and the looser spellings of local builds (``0.14.1+cpu``, ``2.1.0a0+git1a2b``): no
# spaces, no markup characters, bounded.  A version file may come from a hostile branch.
_VERSION = re.compile(r"[0-9A-Za-z][0-9A-Za-z.+!_-]{0,63}")
_COMMIT = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")
_PACKAGE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,99}(?:\.[A-Za-z_][A-Za-z0-9_]{0,99}){0,9}")
REPO_URL = re.compile(r"https://[A-Za-z0-9.-]{1,100}(?::[0-9]{1,5})?(?:/[A-Za-z0-9._~-]{1,100}){0,10}")
_SMALL_FILE = 64 * 1024  # version and git files are tiny; read no more than this of them


@dataclass(frozen=True, slots=True)
class SourceTree:
    """A package to document: where it is, what version, and how to link into it."""

    root: Path  # directory holding the package directory (a checkout, or site-packages)
    package: str
    version: str  # "" when unknown
    commit: str  # "" when not a git checkout
    repo_url: str  # "" when no permalinks should be made
    warnings: tuple[str, ...] = ()  # what was read but rejected (a malformed version, ...)
    # What is indexed, relative to ``root``: package directories (``torchrl``, ``tensordict``), or
    # ``.`` for every module and package under ``root`` (a plain source directory).  Empty: the
    # package alone.
    tops: tuple[str, ...] = ()
    # The other packages indexed with it (resolved into, never documented): (package, the
    # directory holding it).  Their files are named relative to that directory
    # (``tensordict/base.py``), so names never collide with the documented package's.
    companions: tuple[tuple[str, Path], ...] = ()

    @property
    def package_dir(self) -> Path:
        return self.root.joinpath(*self.package.split("."))

    @property
    def is_directory(self) -> bool:
        """Whether the whole directory is indexed (modules named by their path under it)."""
        return "." in self.tops

    def top_dirs(self) -> list[Path]:
        """The directories walked: the package's, each extra package's, or the root; then the
        companions'."""
        own = (
            [self.package_dir]
            if not self.tops
            else [self.root if top == "." else self.root.joinpath(*top.split(".")) for top in self.tops]
        )
        return own + [root.joinpath(*name.split(".")) for name, root in self.companions]

    @property
    def companion_names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.companions)

    def companion_links(self) -> tuple[tuple[str, str, str], ...]:
        """(name, version, repository URL) of each companion: its files link to ``v<version>``
        of that repository (``""`` when either is unknown: no links)."""
        found = []
        for name, root in self.companions:
            version = _detect_version(root, name)
            if not _VERSION.fullmatch(version):
                version = ""
            found.append((name, version, COMPANION_REPO_URLS.get(name, "")))
        return tuple(found)

    def is_companion_path(self, relative: str) -> bool:
        """Whether a repo-relative path is a companion package's file (indexed, not documented)."""
        return companion_path(self.companion_names, relative)

    def absolute(self, relative: str) -> Path:
        """The file a repo-relative path names (a companion's lives under its own directory)."""
        for name, root in self.companions:
            if companion_path((name,), relative):
                return root / relative
        return self.root / relative

    @property
    def is_checkout(self) -> bool:
        return bool(self.commit) or (self.root / ".git").exists()

    @property
    def ref(self) -> str:
        """The git ref permalinks point at: the commit, else the version tag."""
        return git_ref(self.commit, self.version)

    def python_files(self) -> list[Path]:
        """Every ``.py`` file of the documented package that can be read, sorted by repo-relative
        path (not the companions': see :meth:`scan_files`).

        Only regular files inside the package tree: what :meth:`scan_files` skips is left out,
        so that reading every returned path terminates.
        """
        return [path for path in self.scan_files()[0] if not self.is_companion_path(self.relpath(path))]

    def scan_files(self) -> tuple[list[Path], list[tuple[str, str]]]:
        """The readable ``.py`` files, and ``(repo-relative path, why)`` of every entry that may
        hold code but is not read, in one walk of the tree.

        The walk lists each directory once, never follows a symbolic link out of the package
        (nor around a loop), and keeps a ``*.py`` entry only when it is a regular file whose
        name is valid UTF-8: a FIFO, a device, ``/dev/zero`` behind a link would block or
        never end.  ``__pycache__`` directories are not walked.
        """
        files: list[Path] = []
        skipped: list[tuple[str, str]] = []
        for start in self.top_dirs():
            self._scan_tree(start, files, skipped)
        files.sort(key=self.relpath)
        skipped.sort()
        return files, skipped

    def _scan_tree(self, start: Path, files: list[Path], skipped: list[tuple[str, str]]) -> None:
        """Walk one top directory into ``files`` and ``skipped`` (see :meth:`scan_files`)."""
        top = os.path.realpath(start)
        pending: list[tuple[Path, frozenset[str], str]] = [(start, frozenset({top}), top)]
        while pending:
            directory, ancestors, real_directory = pending.pop()
            try:
                with os.scandir(directory) as listing:
                    entries = sorted(listing, key=lambda entry: entry.name)
            except OSError as error:
                why = f"cannot list directory: {error.strerror or error}; directory skipped"
                skipped.append((self._shown(directory), why))
                continue
            for entry in entries:
                why = self._scan_entry(entry, top, (ancestors, real_directory), files, pending)
                if why:
                    skipped.append((self._shown(Path(entry.path)), why))

    def _scan_entry(
        self,
        entry: os.DirEntry[str],
        top: str,
        within: tuple[frozenset[str], str],
        files: list[Path],
        pending: list[tuple[Path, frozenset[str], str]],
    ) -> str:
        """Keep one directory entry (a file in ``files``, a directory in ``pending``), or say why not.

        ``within`` is the real paths of the directories above the entry, and of its own
        directory.  ``""`` when the entry is kept or is no code at all.
        """
        ancestors, real_directory = within
        path = Path(entry.path)
        try:
            is_link = entry.is_symlink()
            is_dir = entry.is_dir()  # follows a link
        except OSError as error:
            return f"cannot read entry: {error.strerror or error}; skipped"
        dangling = is_link and not os.path.exists(path)
        name = entry.name
        if name == "__pycache__" or not (is_dir or name.endswith(".py") or (dangling and "." not in name)):
            return ""  # not code (a dangling link without a suffix may have been a package)
        # not a link: its real path is its name in its directory's (no system call to resolve it)
        real = os.path.realpath(path) if is_link else os.path.join(real_directory, name)
        why = self._refused_name_or_link(name, dangling, is_link and os.path.commonpath((real, top)) != top)
        if why:
            return why
        if is_dir:
            if real in ancestors:
                return "symbolic link loop; directory skipped"
            pending.append((path, ancestors | {real}, real))
            return ""
        # a regular file by its directory entry's type, else stat says what it is
        why = "" if not is_link and entry.is_file(follow_symlinks=False) else self._not_regular(path)
        if not why:
            files.append(path)
        return why

    def _refused_name_or_link(self, name: str, dangling: bool, outside: bool) -> str:
        """Why an entry is not followed for its name or link alone; ``""`` when it may be."""
        if not self._is_utf8(name):
            return "name is not valid UTF-8; skipped"
        if has_control(name):  # a newline in a module's name would start a line of a log or a page
            return "name holds a control character; skipped"
        if dangling:
            return "broken symbolic link; skipped"
        if outside:
            return "symbolic link to outside the package; not followed, skipped"
        return ""

    def _not_regular(self, path: Path) -> str:
        """Why a ``*.py`` entry is not read: not a regular file, or not statable; ``""`` when it is read."""
        try:
            mode = os.stat(path).st_mode
        except OSError as error:
            return f"cannot read file: {error.strerror or error}; file skipped"
        if not stat.S_ISREG(mode):
            return f"not a regular file ({self._file_kind(mode)}); file skipped"
        return ""

    def _shown(self, path: Path) -> str:
        """The repo-relative path as text that can be printed, even from a non-UTF-8 name."""
        return os.fsencode(self.relpath(path)).decode("utf-8", errors="backslashreplace")

    @staticmethod
    def _is_utf8(name: str) -> bool:
        """Whether a name read from the file system was valid UTF-8 (else it holds surrogates)."""
        try:
            name.encode("utf-8")
        except UnicodeEncodeError:
            return False
        return True

    @staticmethod
    def _file_kind(mode: int) -> str:
        kinds = (
            (stat.S_ISFIFO, "a FIFO"),
            (stat.S_ISCHR, "a character device"),
            (stat.S_ISBLK, "a block device"),
            (stat.S_ISSOCK, "a socket"),
        )
        return next((kind for test, kind in kinds if test(mode)), "not a file")

    def relpath(self, path: Path) -> str:
        """``path`` relative to the directory holding its package, ``/``-separated.

        Compared as text (``Path.is_relative_to`` compares parts, ten times slower, and every
        run asks this of every file twice); a path outside the tree raises ``ValueError``.
        """
        text = os.fspath(path)
        for name, root in self.companions:
            if root != self.root:
                base = _with_separator(root)
                package = base + name.replace(".", os.sep)
                if text == package or text.startswith(package + os.sep):
                    return _posix(text[len(base) :])
        base = _with_separator(self.root)
        if text.startswith(base):
            return _posix(text[len(base) :])
        return path.relative_to(self.root).as_posix()  # the root itself (``.``), or a ValueError

    def permalink(self, path: str, line: int | None = None) -> str:
        return permalink_url(self.repo_url, self.ref, path, line)

    def stamp(self) -> str:
        """``torchrl 0.14.1`` or ``torchrl 0.14.1 @ 1a2b3c4d5e6f``."""
        return source_stamp(self.package, self.version, self.commit)


def _with_separator(directory: Path) -> str:
    text = os.fspath(directory)
    return text if text.endswith(os.sep) else text + os.sep


def _posix(relative: str) -> str:
    return relative if os.sep == "/" else relative.replace(os.sep, "/")


# What a page may say about its source, from plain fields: shared with the model's SourceInfo.
def git_ref(commit: str, version: str) -> str:
    """The git ref permalinks point at: the commit, else the version tag, else ``main``."""
    if commit:
        return commit
    return f"v{version}" if version else "main"


def permalink_url(repo_url: str, ref: str, path: str, line: int | None = None) -> str:
    """``<repo_url>/blob/<ref>/<path>#L<line>``; ``""`` when there is no repository URL."""
    if not repo_url:
        return ""
    anchor = f"#L{line}" if line else ""
    return f"{repo_url}/blob/{ref}/{path}{anchor}"


def source_stamp(package: str, version: str, commit: str) -> str:
    """``torchrl 0.14.1``: what pages and messages say they describe.

    Never the commit: the pages' header would then change with every commit of the repository,
    whatever it touched (the links carry the commits that matter, see :mod:`rlmap.index.history`).
    """
    del commit
    return f"{package} {version or '(unknown version)'}"


def companion_path(companions: tuple[str, ...], relative: str) -> bool:
    """Whether ``relative`` (a repo-relative path) is in one of the ``companions`` packages."""
    return any(relative.startswith(name.replace(".", "/") + "/") for name in companions)


def locate_source(
    path: Path | None = None,
    package: str = DEFAULT_PACKAGE,
    repo_url: str | None = None,
    packages: tuple[str, ...] | None = None,
) -> SourceTree:
    """Find the tree to document, and the packages indexed with it.

    ``path`` may be a checkout (a directory holding ``<package>/``), the package directory
    itself, or ``None`` for the installed package.  ``package`` may be dotted (``a.b``).
    ``packages`` lists the packages indexed together (the documented one is always among them);
    ``None`` for the default (:data:`DEFAULT_COMPANIONS`), where a companion that is not found
    is a warning, not an error.
    """
    if not _PACKAGE.fullmatch(package):
        raise SourceError(f"'{package}' is not a package name", "pass --package a dotted Python name, e.g. torchrl")
    warnings: list[str] = []
    tops: tuple[str, ...] = ()
    if path is None:
        root = _installed_root(package)
    else:
        root, package, tops = _root_from_path(path, package)
    # (after the package is known: a package directory passed as the source names its own, and
    # only TorchRL's code lives at TorchRL's repository)
    url = DEFAULT_REPO_URL if repo_url is None and package == DEFAULT_PACKAGE else (repo_url or "")
    if url and not REPO_URL.fullmatch(url):
        warnings.append(f"repository URL {url[:80]!r} is not a plain https URL; no permalinks are made")
        url = ""
    version = _detect_version(root, package) if not tops else ""
    if version and not _VERSION.fullmatch(version):
        warnings.append(f"ignored a version that does not look like one: {version[:40]!r}")
        version = ""
    commit = _detect_commit(root)
    if commit and not _COMMIT.fullmatch(commit):
        warnings.append(f"ignored a git HEAD that is not a commit id: {commit[:40]!r}")
        commit = ""
    companions = _locate_companions(root, package, packages, warnings, whole=bool(tops))
    return SourceTree(
        root=root,
        package=package,
        version=version,
        commit=commit,
        repo_url=url if not tops else (repo_url or ""),
        warnings=tuple(warnings),
        tops=tops,
        companions=companions,
    )


def _locate_companions(
    root: Path, package: str, packages: tuple[str, ...] | None, warnings: list[str], whole: bool = False
) -> tuple[tuple[str, Path], ...]:
    """(name, directory holding it) of every package indexed beside ``package``: in the same
    directory as it (a checkout holding both), else installed (found by looking, never by importing).

    A package named in the configuration that is not found is an error; a default one, a warning.
    """
    explicit = packages is not None
    wanted = packages if packages is not None else DEFAULT_COMPANIONS.get(package, ())
    found: list[tuple[str, Path]] = []
    for name in dict.fromkeys(wanted):
        if not _PACKAGE.fullmatch(name):
            raise SourceError(
                f"'{name}' in packages is not a package name", "list dotted Python names in [tool.rlmap] packages"
            )
        if name == package:
            continue
        if name.startswith(package + ".") or package.startswith(name + "."):
            raise SourceError(
                f"packages lists '{name}', which contains or is inside the documented package '{package}'",
                "list top-level packages other than the documented one",
            )
        if (root.joinpath(*name.split(".")) / "__init__.py").is_file():
            if not whole:  # a plain source directory indexes it already
                found.append((name, root))
            continue
        try:
            found.append((name, _installed_root(name)))
        except SourceError:
            if explicit:
                raise SourceError(
                    f"package '{name}' (listed in packages) was not found beside {package} nor installed",
                    f"install it (pip install {name.split('.')[0]}) or remove it from [tool.rlmap] packages",
                ) from None
            warnings.append(
                f"{name} is not installed: calls into it stay unresolved - install it, "
                f'or set [tool.rlmap] packages = ["{package}"] to index {package} alone'
            )
    return tuple(found)


def _installed_root(package: str) -> Path:
    """The ``sys.path`` entry holding ``package``'s directory, found by looking, never by importing."""
    parts = package.split(".")
    for entry in sys.path:
        base = Path(entry or ".")
        candidate = base.joinpath(*parts)
        try:
            if (candidate / "__init__.py").is_file() and all(
                (base.joinpath(*parts[:depth]) / "__init__.py").is_file() for depth in range(1, len(parts))
            ):
                return base.resolve()
        except OSError:  # an unreadable path entry is no place to look
            continue
    raise SourceError(f"no installed package '{package}' was found on this Python's path", _not_installed_hint(parts))


def _not_installed_hint(parts: list[str]) -> str:
    """What to do about a package not found: its top-level name may be a module (``os``), or a
    package installed without that subpackage, else not installed at all."""
    top = parts[0]
    for entry in sys.path:
        base = Path(entry or ".")
        try:
            if (base / f"{top}.py").is_file():
                return f"'{top}' is a module, not a package directory: pass --package a package, or --source PATH"
            if len(parts) > 1 and (base / top / "__init__.py").is_file():
                return f"'{top}' is installed, but holds no package '{'.'.join(parts)}': check the name"
        except OSError:
            continue
    return (
        f"install it (pip install {top}) or pass --source PATH to a checkout; "
        "an editable install is found through --source"
    )


def _root_from_path(path: Path, package: str) -> tuple[Path, str, tuple[str, ...]]:
    """(root, package, tops) for ``--source PATH``: a checkout, a package directory, or any
    directory of Python modules (every module under it, named by its path: ``tops == (".",)``)."""
    path = path.expanduser()
    if not path.exists():
        raise SourceError(
            f"source path '{path}' does not exist",
            f"pass --source a checkout holding '{package}/' or the '{package}' package directory",
        )
    path = path.resolve()
    if not path.is_dir():
        raise SourceError(
            f"source path '{path}' is {'a file' if path.is_file() else 'not a directory'}",
            f"pass --source the folder: a checkout holding '{package.replace('.', '/')}/', the package directory, "
            "or a directory of Python modules",
        )
    nested = path.joinpath(*package.split("."))
    if (nested / "__init__.py").is_file():
        if not nested.resolve().is_relative_to(path):  # a package folder committed as a link out
            raise SourceError(
                f"'{nested}' is a link to a folder outside '{path}'",
                "document the folder it points to with --source, or replace the link with the package",
            )
        return path, package, ()
    if (path / "__init__.py").is_file():
        if package != DEFAULT_PACKAGE and path.name != package.rpartition(".")[2]:
            raise SourceError(
                f"'{path}' is the package '{path.name}', not '{package}'",
                f"pass --package {path.name}, or --source a checkout holding '{package.replace('.', '/')}/'",
            )
        return path.parent, path.name, ()
    if path.is_dir() and _holds_python(path):
        if package != DEFAULT_PACKAGE:  # a package asked for by name, not in the folder: not dropped unsaid
            held = _packages_in(path)
            raise SourceError(
                f"'{path}' holds no package '{package}'"
                + (f" (it holds {', '.join(held[:5])}{' and more' if len(held) > 5 else ''})" if held else ""),
                (f"pass --package {held[0]}, or " if len(held) == 1 else "pass --package one of its packages, or ")
                + f"leave --package out to read '{path.name}' as a folder of modules",
            )
        name = path.name if _PACKAGE.fullmatch(path.name) else "source"
        return path, name, (".",)
    raise SourceError(
        f"'{path}' is neither a checkout holding '{package.replace('.', '/')}/__init__.py' nor a package directory",
        f"pass --source a checkout holding '{package.replace('.', '/')}/', the package directory, "
        "or a directory of Python modules",
    )


def _packages_in(path: Path) -> list[str]:
    """The packages at the top of a directory (folders holding an ``__init__.py``), by name."""
    try:
        return sorted(child.name for child in path.iterdir() if (child / "__init__.py").is_file())
    except OSError:
        return []


def _holds_python(path: Path) -> bool:
    """Whether a directory holds a module, at its top or one level down (a package, a namespace package)."""
    try:
        return any(path.glob("*.py")) or any(path.glob("*/*.py"))
    except OSError:
        return False


def _read_small(path: Path) -> str:
    """The start of a small text file (a version file, a git ref), never more than 64 kB of it."""
    try:
        with open(path, "rb") as handle:
            return handle.read(_SMALL_FILE).decode("utf-8", errors="replace")
    except OSError:
        return ""


def _detect_version(root: Path, package: str) -> str:
    package_dir = root.joinpath(*package.split("."))
    for candidate in (package_dir / "version.py", package_dir / "_version.py"):
        if candidate.is_file():
            match = _VERSION_ASSIGN.search(_read_small(candidate))
            if match:
                return match.group(1)
    version_txt = root / "version.txt"
    if version_txt.is_file():
        return _read_small(version_txt).strip()
    for metadata in sorted(root.glob(f"{package.split('.', maxsplit=1)[0]}-*.dist-info/METADATA"))[
        :1
    ]:  # an unpacked wheel
        match = re.search(r"^Version: *(\S+)", _read_small(metadata), flags=re.MULTILINE)
        if match:
            return match.group(1)
    import importlib.metadata  # only here: the warm path reads a version.py and skips its ~20 ms import

    try:
        dist = importlib.metadata.distribution(package)
    except importlib.metadata.PackageNotFoundError:
        return ""
    located = Path(str(dist.locate_file(package))).resolve()
    return dist.version if located == package_dir.resolve() else ""


def _detect_commit(root: Path) -> str:
    """Read HEAD's commit from ``.git`` without running git."""
    git_dir = root / ".git"
    if git_dir.is_file():  # a worktree: "gitdir: <path>"
        text = _read_small(git_dir).strip()
        if text.startswith("gitdir:"):
            git_dir = (root / text.split(":", 1)[1].strip()).resolve()
    head = git_dir / "HEAD"
    if not head.is_file():
        return ""
    content = _read_small(head).strip()
    if not content.startswith("ref:"):
        return content
    ref = content.split(":", 1)[1].strip()
    for base in (git_dir, _common_dir(git_dir)):
        ref_file = base / ref
        if ref_file.is_file():
            return _read_small(ref_file).strip()
        packed = base / "packed-refs"
        if packed.is_file():
            for line in packed.read_text(encoding="utf-8", errors="replace").splitlines():
                if line.endswith(" " + ref):
                    return line.split(" ", 1)[0]
    return ""


def _common_dir(git_dir: Path) -> Path:
    common = git_dir / "commondir"
    if common.is_file():
        return (git_dir / _read_small(common).strip()).resolve()
    return git_dir
