"""What a Sphinx docs tree documents, read statically: Python objects and glossary terms.

Pages link code with Sphinx roles and terms with ``:term:``; both resolve against the docs tree
the pages are dropped into.  A role resolves only when that tree documents the exact dotted path
(``torchrl.envs.transforms.InitTracker``, not the re-export ``torchrl.envs.InitTracker``), and a
glossary term may be defined once in the whole tree.  This module reads the rst sources (no
Sphinx, no import of the documented code), or a built ``objects.inv``:

- ``.. currentmodule::`` / ``.. module::`` set the module that names are relative to (``module``
  also documents it);
- ``.. autosummary::`` entries, ``.. autoclass::``, ``.. autofunction::``, ``.. autodata::``,
  ``.. automethod::``, ``.. autoattribute::`` and their ``py:`` twins document one object each;
- a class documented by ``.. autoclass::`` with ``:members:`` documents its public members as
  autodoc does: those it defines itself (also those it inherits with ``:inherited-members:``),
  and of those only the ones with a docstring (any with ``:undoc-members:``); which members have
  one is the model's to say (:func:`rlmap.pages.refs.links`).  An autosummary entry with
  ``:toctree:`` takes the options of the ``.. autoclass::`` in its ``:template:`` (read from a
  ``_templates`` folder of the tree; a template whose directive is ``.. autofunction::`` or another
  that is not a class's documents no member), or of the tree's ``_templates/autosummary/class.rst``;
  Sphinx's own class template documents no member.  A template the tree does not hold is taken to say
  ``:members:``;
- ``.. automodule:: m`` with ``:members:`` documents the public names of ``m`` (and theirs), and
  names that follow it are relative to ``m``, as after ``.. currentmodule:: m``;
- ``.. glossary::`` blocks define terms (their first-level lines, aliases included).

Docs come from pull requests: a file over :data:`MAX_DOC_BYTES`, anything that is not a
regular file, and a symlink out of the tree are skipped with a diagnostic; an ``objects.inv`` is
decompressed to at most :data:`MAX_INVENTORY_BYTES`.
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass, field
from pathlib import Path

from rlmap.errors import RlmapError
from rlmap.index.records import Diagnostic
from rlmap.output.write import MANIFEST, read_manifest
from rlmap.readfile import GREW, IRREGULAR, LARGE, Unread, read_regular, walk_files

MAX_DOC_BYTES = 4 * 1024 * 1024
MAX_INVENTORY_BYTES = 64 * 1024 * 1024
MAX_FILES = 20_000

_DIRECTIVE = re.compile(r"^(?P<indent>\s*)\.\.\s+(?:py:)?(?P<name>[a-z]+)::[ \t]*(?P<arg>.*)$")
_OPTION = re.compile(r"^\s*:[\w-]+:")
_NAME = re.compile(r"[~!]?[A-Za-z_][\w.]*")
_OBJECT_DIRECTIVES = frozenset(
    {
        "autoclass",
        "autoexception",
        "autofunction",
        "autodata",
        "automethod",
        "autoattribute",
        "autoproperty",
        "class",
        "exception",
        "function",
        "data",
        "method",
        "attribute",
        "property",
    }
)
MEMBERS, INHERITED, UNDOCUMENTED = "members", "inherited-members", "undoc-members"
_MEMBER_OPTIONS = re.compile(r"^\s*:(members|inherited-members|undoc-members):")
_DEFAULT_TEMPLATE = "autosummary/class.rst"
_INVENTORY_PY = re.compile(r"^(?P<name>\S+)\s+py:(?P<role>\w+)\s+-?\d+\s")


class DocsTreeError(RlmapError):
    """The docs tree given to link against does not exist or cannot be read."""


@dataclass(frozen=True, slots=True)
class DocsTree:
    """The Python objects and glossary terms one docs tree documents (plain data)."""

    objects: frozenset[str] = frozenset()  # dotted paths documented themselves
    with_members: frozenset[str] = frozenset()  # classes/modules whose public members are documented too
    inherited: frozenset[str] = frozenset()  # of those, the ones whose inherited members are too
    undocumented: frozenset[str] = frozenset()  # of those, the ones whose members without a docstring are too
    terms: dict[str, str] = field(default_factory=dict)  # lower-cased term or alias -> as written
    term_document: str = ""  # the document defining the first term (``reference/glossary``)
    diagnostics: tuple[Diagnostic, ...] = ()

    def documents(self, dotted: str) -> bool:
        """Whether a role with this exact target links in the tree."""
        if dotted in self.objects:
            return True
        owner, _, member = dotted.rpartition(".")
        if not owner or (member.startswith("_") and not member.startswith("__")):
            return False
        if owner in self.with_members:
            return True
        # a member of a public class of an ``automodule :members:`` module
        module, _, cls = owner.rpartition(".")
        return bool(module) and module in self.with_members and not cls.startswith("_")

    def term(self, name: str) -> str:
        """The tree's own spelling of a glossary term or alias, ``""`` when it defines none."""
        return self.terms.get(name.lower(), "")


def load_docs_tree(paths: tuple[Path, ...] | list[Path]) -> DocsTree | None:
    """The union of what ``paths`` document (directories of rst, rst files, ``objects.inv`` files).

    ``None`` when no path is given: the pages then link every public path, as without a tree.
    """
    if not paths:
        return None
    reader = DocsReader()
    for path in paths:
        if not path.exists():
            raise DocsTreeError(
                f"docs tree '{path}' does not exist",
                "pass --docs (or [tool.rlmap] docs) an existing docs source directory or objects.inv",
            )
        if path.is_file() and path.name.endswith(".inv"):
            reader.inventory(path)
        elif path.is_file():
            reader.rst(path, path.parent)
        else:
            root = path.resolve()
            # rlmap's own pages (those its manifest lists: ``out`` inside the docs, as the README
            # sets TorchRL up) are not the tree's: their glossary read back as TorchRL's would
            # leave its terms out of the next run's, and --check would never pass
            # (a folder named ``x.rst`` is a folder: its files are met on their own)
            found, unlisted = walk_files(root, lambda name: name.endswith(".rst") or name == MANIFEST)
            for folder, why in unlisted:
                reader.diagnostics.append(Diagnostic(_shown(folder, root), 1, f"{why}; skipped"))
            generated = _generated_pages([file for file in found if file.name == MANIFEST])
            files = [file for file in found if file.name != MANIFEST and file not in generated]
            for file in files[:MAX_FILES]:
                reader.rst(file, root)
    return reader.tree()


def _generated_pages(manifests: list[Path]) -> set[Path]:
    """The files that these manifests of rlmap's list (a hand-written page beside them, or the
    docs tree itself when it is ``out``, stays the tree's)."""
    found: set[Path] = set()
    for manifest in manifests:
        listed = read_manifest(manifest.parent)
        if listed is not None:
            found.update(manifest.parent / name for name in listed.files)
    return found


@dataclass(slots=True)
class DocsReader:
    """Collects what the documents it is shown document (``rlmap audit`` feeds it the pages it scans)."""

    objects: set[str] = field(default_factory=set)
    # documented path -> its members' options (:data:`MEMBERS`, ...), or the autosummary template
    # that gives them (a name, resolved in :meth:`tree`: a page may come before its template)
    members: dict[str, frozenset[str] | str] = field(default_factory=dict)
    templates: dict[str, frozenset[str]] = field(default_factory=dict)  # name -> its autoclass options
    terms: dict[str, str] = field(default_factory=dict)
    term_document: str = ""
    diagnostics: list[Diagnostic] = field(default_factory=list)

    def tree(self) -> DocsTree:
        """What was read so far."""
        options = {path: self._options(given) for path, given in self.members.items()}
        return DocsTree(
            frozenset(self.objects),
            frozenset(path for path, found in options.items() if MEMBERS in found),
            frozenset(path for path, found in options.items() if MEMBERS in found and INHERITED in found),
            frozenset(path for path, found in options.items() if MEMBERS in found and UNDOCUMENTED in found),
            dict(sorted(self.terms.items())),
            self.term_document,
            tuple(self.diagnostics),
        )

    def _options(self, given: frozenset[str] | str) -> frozenset[str]:
        if not isinstance(given, str):
            return given
        if given:  # a template the tree does not hold: as TorchRL's say
            return self.templates.get(given, frozenset({MEMBERS}))
        return self.templates.get(_DEFAULT_TEMPLATE, frozenset())  # Sphinx's own: no member

    def rst(self, path: Path, root: Path) -> None:
        shown = _shown(path, root)
        data = _read(path, root, shown, MAX_DOC_BYTES, self.diagnostics)
        if data is None:
            return
        try:  # skipped as the audit skips it: a page read with replacement characters is not the page
            text = data.decode("utf-8")
        except UnicodeDecodeError as error:
            line = data[: error.start].count(b"\n") + 1
            self.diagnostics.append(Diagnostic(shown, line, f"not valid UTF-8 ({error.reason}); file skipped"))
            return
        scan_rst(text, self, Path(shown).with_suffix("").as_posix())

    def inventory(self, path: Path) -> None:
        data = _read(path, path.parent, path.name, MAX_INVENTORY_BYTES, self.diagnostics)
        if data is None:
            return
        header, rest = _split_header(data)
        if not header.startswith(b"# Sphinx inventory version 2"):
            self.diagnostics.append(Diagnostic(path.name, 1, "not a Sphinx inventory (version 2); file skipped"))
            return
        inflater = zlib.decompressobj()
        try:
            body = inflater.decompress(rest, MAX_INVENTORY_BYTES)
        except zlib.error:
            self.diagnostics.append(Diagnostic(path.name, 1, "corrupt compressed inventory; file skipped"))
            return
        if inflater.unconsumed_tail:
            self.diagnostics.append(Diagnostic(path.name, 1, "inventory larger than the limit; the rest skipped"))
        for line in body.decode("utf-8", errors="replace").splitlines():
            match = _INVENTORY_PY.match(line)
            if match:
                self.objects.add(match.group("name"))
            elif " std:term " in line:
                name = line.split(" std:term ", 1)[0]
                self.terms.setdefault(name.lower(), name)


def _split_header(data: bytes) -> tuple[bytes, bytes]:
    """The four comment lines of an inventory, and the compressed body after them."""
    lines = data.split(b"\n", 4)
    return b"\n".join(lines[:4]), lines[4] if len(lines) > 4 else b""


def scan_rst(text: str, reader: DocsReader, document: str) -> None:
    """Record what one rst document documents and defines (a document under a ``_templates``
    folder is an autosummary template: the options of its ``.. autoclass::``)."""
    lines = text.split("\n")
    template = _template_name(document)
    module = ""
    index = 0
    while index < len(lines):
        match = _DIRECTIVE.match(lines[index])
        index += 1
        if match is None:
            continue
        name, arg, indent = match.group("name"), match.group("arg").strip(), len(match.group("indent"))
        body, index = _block(lines, index, indent)
        if template and name in _OBJECT_DIRECTIVES and name.startswith("auto"):
            # ``.. autofunction:: {{ name }}`` (TorchRL's ``rl_template_fun.rst``, used for classes
            # too) documents no member, whatever it is given
            reader.templates.setdefault(template, _member_options(body) if name in _CLASSES else frozenset())
        elif name in ("currentmodule", "module"):
            module = "" if arg == "None" else arg
            if name == "module" and module:
                reader.objects.add(module)  # ``.. module::`` is a target for :mod:, ``currentmodule`` is not
        elif name == "autosummary":
            # without ``:toctree:`` no page is made: the entries are documented elsewhere, or not at all
            if any(re.match(r"\s*:toctree:", line) for line in body):
                used = next((line.split(":template:", 1)[1].strip() for line in body if ":template:" in line), "")
                for entry in body:
                    if entry.strip() and not _OPTION.match(entry):
                        _documented(reader, module, entry.strip(), used)
        elif name in _OBJECT_DIRECTIVES and arg:
            written = arg.split("(", 1)[0].strip()
            options = _member_options(body) if name in _CLASSES else frozenset()
            _documented(reader, module, written, options)
            if name in ("class", "exception"):  # written by hand: the members it holds, each its own directive
                for line in body:
                    nested = _DIRECTIVE.match(line)
                    if nested and nested.group("name") in _OBJECT_DIRECTIVES and nested.group("arg").strip():
                        member = nested.group("arg").split("(", 1)[0].strip()
                        _documented(reader, module, f"{written}.{member}", frozenset())
        elif name == "automodule" and arg:
            reader.objects.add(arg)
            reader.members.setdefault(arg, _member_options(body))
            module = arg  # autodoc's ``py:module``: names after it are relative to it
        elif name == "glossary":
            _terms(reader, body, document)


def _template_name(document: str) -> str:
    """``docs/source/_templates/autosummary/class`` -> ``autosummary/class.rst``; ``""`` for a page."""
    parts = document.split("/")
    if "_templates" not in parts:
        return ""
    return "/".join(parts[len(parts) - parts[::-1].index("_templates") :]) + ".rst"


def _member_options(body: list[str]) -> frozenset[str]:
    """The member options of an autodoc directive's body (``:members:``, ``:inherited-members:``,
    ``:undoc-members:``)."""
    return frozenset(found.group(1) for line in body if (found := _MEMBER_OPTIONS.match(line)))


_CLASSES = frozenset({"autoclass", "autoexception", "class", "exception"})


def _block(lines: list[str], index: int, indent: int) -> tuple[list[str], int]:
    """The lines of a directive's body (more indented than the directive, blank lines kept)."""
    body: list[str] = []
    while index < len(lines):
        line = lines[index]
        if line.strip() and len(line) - len(line.lstrip()) <= indent:
            break
        body.append(line)
        index += 1
    while body and not body[-1].strip():
        body.pop()
    return body, index


def _documented(reader: DocsReader, module: str, entry: str, members: frozenset[str] | str) -> None:
    """``entry`` documented under ``module``; ``members``: its members' options, or the name of
    the autosummary template that gives them (``""``: Sphinx's default)."""
    match = _NAME.match(entry)
    if match is None:
        return
    name = match.group().lstrip("~!").rstrip(".")
    paths = {f"{module}.{name}"} if module else set()
    if "." in name or not module:
        paths.add(name)  # autodoc tries the name as written too
    reader.objects |= paths
    for path in paths:
        if members or path not in reader.members:
            reader.members[path] = members


def _terms(reader: DocsReader, body: list[str], document: str) -> None:
    """Glossary terms: the lines at the body's first indentation (options left out)."""
    content = [line for line in body if line.strip()]
    if not content:
        return
    base = min(len(line) - len(line.lstrip()) for line in content)
    for line in content:
        if len(line) - len(line.lstrip()) != base or _OPTION.match(line):
            continue
        term = line.strip().partition(" : ")[0].strip()  # ``term : index key``
        if term:
            reader.terms.setdefault(term.lower(), term)
            reader.term_document = reader.term_document or document


def _shown(path: Path, root: Path) -> str:
    """The page's name as listed under ``root`` (a link's own name, not its target's)."""
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.name


def _read(path: Path, root: Path, shown: str, limit: int, diagnostics: list[Diagnostic]) -> bytes | None:
    """At most ``limit`` bytes of a regular file inside ``root``; else a diagnostic and ``None``."""
    try:
        path.resolve().relative_to(root.resolve())
    except (ValueError, OSError, RuntimeError):
        diagnostics.append(Diagnostic(shown, 1, "a symlink out of the docs tree; file skipped"))
        return None
    found = read_regular(path, limit)
    if isinstance(found, bytes):
        return found
    diagnostics.append(Diagnostic(shown, 1, unread_doc(found, limit)))
    return None


def unread_doc(found: Unread, limit: int) -> str:
    """Why a docs file (a page, an inventory) is skipped, in the words the audit and ``generate
    --docs`` both use."""
    if found.reason == IRREGULAR:
        return "not a regular file; skipped"
    if found.reason in (LARGE, GREW):
        return (
            f"{found.size} bytes, over the {limit // (1024 * 1024)} MiB limit for a docs file; file skipped "
            "(split it, or leave it out of --docs)"
        )
    return f"cannot read file: {found.detail}; file skipped"
