"""Locate the source tree to document, its version and commit, and turn locations into links.

Never imports the package: the installed copy is found with ``importlib.util.find_spec`` on the
top-level name (which does not execute it) and versions are read from files or metadata.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import re
from dataclasses import dataclass
from pathlib import Path

from rlmap.errors import SourceError

DEFAULT_PACKAGE = "torchrl"
DEFAULT_REPO_URL = "https://github.com/pytorch/rl"

_VERSION_ASSIGN = re.compile(r"""^__version__\s*(?::\s*str\s*)?=\s*['"]([^'"]+)['"]""", re.M)


@dataclass(frozen=True, slots=True)
class SourceTree:
    """A package to document: where it is, what version, and how to link into it."""

    root: Path  # directory holding the package directory (a checkout, or site-packages)
    package: str
    version: str  # "" when unknown
    commit: str  # "" when not a git checkout
    repo_url: str  # "" when no permalinks should be made

    @property
    def package_dir(self) -> Path:
        return self.root / self.package

    @property
    def is_checkout(self) -> bool:
        return bool(self.commit) or (self.root / ".git").exists()

    @property
    def ref(self) -> str:
        """The git ref permalinks point at: the commit, else the version tag."""
        if self.commit:
            return self.commit
        return f"v{self.version}" if self.version else "main"

    def python_files(self) -> list[Path]:
        """Every ``.py`` file of the package, sorted by repo-relative path."""
        found = [
            path for path in self.package_dir.rglob("*.py") if "__pycache__" not in path.relative_to(self.root).parts
        ]
        return sorted(found, key=self.relpath)

    def relpath(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix()

    def permalink(self, path: str, line: int | None = None) -> str:
        if not self.repo_url:
            return ""
        anchor = f"#L{line}" if line else ""
        return f"{self.repo_url}/blob/{self.ref}/{path}{anchor}"

    def stamp(self) -> str:
        """``torchrl 0.14.1`` or ``torchrl 0.14.1 @ 1a2b3c4d5e6f``."""
        text = f"{self.package} {self.version or '(unknown version)'}"
        return f"{text} @ {self.commit[:12]}" if self.commit else text


def locate_source(
    path: Path | None = None,
    package: str = DEFAULT_PACKAGE,
    repo_url: str | None = None,
) -> SourceTree:
    """Find the tree to document.

    ``path`` may be a checkout (a directory holding ``<package>/``), the package directory
    itself, or ``None`` for the installed package.
    """
    url = DEFAULT_REPO_URL if repo_url is None and package == DEFAULT_PACKAGE else (repo_url or "")
    if path is None:
        root = _installed_root(package)
    else:
        root, package = _root_from_path(path, package)
    return SourceTree(
        root=root,
        package=package,
        version=_detect_version(root, package),
        commit=_detect_commit(root),
        repo_url=url,
    )


def _installed_root(package: str) -> Path:
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        spec = None
    locations = list(spec.submodule_search_locations or []) if spec else []
    if not locations:
        raise SourceError(
            f"no installed package '{package}' was found on this Python's path",
            f"install it (pip install {package}) or pass --source PATH to a checkout",
        )
    package_dir = Path(locations[0]).resolve()
    return package_dir.parent


def _root_from_path(path: Path, package: str) -> tuple[Path, str]:
    path = path.expanduser()
    if not path.exists():
        raise SourceError(
            f"source path '{path}' does not exist",
            f"pass --source a checkout holding '{package}/' or the '{package}' package directory",
        )
    path = path.resolve()
    if (path / package / "__init__.py").is_file():
        return path, package
    if (path / "__init__.py").is_file():
        return path.parent, path.name
    raise SourceError(
        f"'{path}' is neither a checkout holding '{package}/__init__.py' nor a package directory",
        f"pass --source a checkout holding '{package}/' or the '{package}' package directory",
    )


def _detect_version(root: Path, package: str) -> str:
    for candidate in (root / package / "version.py", root / package / "_version.py"):
        if candidate.is_file():
            match = _VERSION_ASSIGN.search(candidate.read_text(encoding="utf-8", errors="replace"))
            if match:
                return match.group(1)
    version_txt = root / "version.txt"
    if version_txt.is_file():
        return version_txt.read_text(encoding="utf-8", errors="replace").strip()
    try:
        dist = importlib.metadata.distribution(package)
    except importlib.metadata.PackageNotFoundError:
        return ""
    located = Path(str(dist.locate_file(package))).resolve()
    return dist.version if located == (root / package).resolve() else ""


def _detect_commit(root: Path) -> str:
    """Read HEAD's commit from ``.git`` without running git."""
    git_dir = root / ".git"
    if git_dir.is_file():  # a worktree: "gitdir: <path>"
        text = git_dir.read_text(encoding="utf-8").strip()
        if text.startswith("gitdir:"):
            git_dir = (root / text.split(":", 1)[1].strip()).resolve()
    head = git_dir / "HEAD"
    if not head.is_file():
        return ""
    content = head.read_text(encoding="utf-8").strip()
    if not content.startswith("ref:"):
        return content
    ref = content.split(":", 1)[1].strip()
    for base in (git_dir, _common_dir(git_dir)):
        ref_file = base / ref
        if ref_file.is_file():
            return ref_file.read_text(encoding="utf-8").strip()
        packed = base / "packed-refs"
        if packed.is_file():
            for line in packed.read_text(encoding="utf-8").splitlines():
                if line.endswith(" " + ref):
                    return line.split(" ", 1)[0]
    return ""


def _common_dir(git_dir: Path) -> Path:
    common = git_dir / "commondir"
    if common.is_file():
        return (git_dir / common.read_text(encoding="utf-8").strip()).resolve()
    return git_dir
