"""Acceptance: TorchRL's real docs tree, with rlmap's pages and a page of rlmap.sphinx directives in
it, builds with Sphinx; rlmap causes no warning, and every Python role on its pages links.

The tree is ``../shared/torchrl-docs/docs/source`` (TorchRL's sources at a pinned commit, see its
SOURCE.md), copied to a temporary directory. Its real ``conf.py`` is kept, trimmed only of what
cannot run here (each trim is in ``TRIMS`` with its reason, and fails the test loudly if TorchRL's
conf.py no longer has the text it removes):

- ``pytorch_sphinx_theme2`` (import, ``templates_path`` entry, ``html_theme``/``html_theme_path``,
  ``get_theme_variables()``, and ``html_theme_options``, which only that theme knows): every release
  pins ``Sphinx<=7.2.6`` and ``docutils 0.20``, so installing it would downgrade the Sphinx 9 and
  myst-parser 5 the rest of the suite runs on. Sphinx's default theme renders the same doctrees; a
  theme changes the look, not which references resolve.
- ``sphinx_gallery.gen_gallery``: it runs TorchRL's tutorials (downloads, Gym/MuJoCo/Atari, a GPU for
  some), whose scripts are not in the snapshot anyway; ``sphinx_gallery_conf`` stays, unused.
- The ``content_generation`` block: that module (and ``knowledge_base/``-to-rst, ``tutorials/``
  outside ``docs/source``) is not in the snapshot; it writes stubs that only TorchRL's pages use.
- ``sphinxcontrib.aafig``: TorchRL installs a git fork (not on PyPI); PyPI's 1.2.0 crashes the build
  (``RuntimeError: dictionary changed size during iteration``) on the ``aafig`` in
  ``ActorCriticOperator``'s docstring. Without it, that directive is one of TorchRL's own errors.
- ``intersphinx_mapping`` is emptied: it downloads five inventories from the network. Links to torch
  and tensordict are then unresolved on TorchRL's pages, which this test does not judge.

Kept as they are: autodoc/autosummary importing torchrl 0.14.1 (tests may import it),
``myst_parser``, ``sphinx_design`` and ``hydra-core`` (both PyPI, in the ``test`` extra; without hydra,
autosummary crashes on ``torchrl.trainers.algorithms.configs``), napoleon, viewcode, doctest,
mathjax. Added: ``rlmap.sphinx`` and ``sphinx.ext.graphviz`` to ``extensions``, ``rlmap_cache_dir``
(the session's cache).

The tree is trimmed for time (``DROPPED_PAGES``): built whole it takes 11.5 minutes on 2 cores;
without the reference pages nothing of rlmap's links to (checkpoint, config, knowledge_base,
services*, trainers*, utils, vla) and with ``-j 2``, about 6.5.

rlmap's pages are generated as the README says (``rlmap generate --format rst --docs <source>`` into
``reference/rlmap``) against the installed torchrl and listed in ``reference/index``'s toctree, with
the directive example ``tests/fixtures/sphinx/torchrl/collectors_internals.rst`` beside TorchRL's own
page of that name as ``reference/collectors_internals_live`` (two edits, see ``add_directive_page``).

The build is ``sphinx-build -W --keep-going`` in a subprocess (TorchRL's conf.py changes the
process: warning filters, ``builtins``, ``os.environ``, ``sys.path``); TorchRL's own pages are not
required to be warning-free, so the warnings go to a file and are sorted by where they come from.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import time
import zlib
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import FIXTURES

TORCHRL_DOCS = Path(__file__).parents[2].parent / "shared" / "torchrl-docs"
DIRECTIVE_EXAMPLE = FIXTURES / "sphinx" / "torchrl" / "collectors_internals.rst"
DIRECTIVE_PAGE = "reference/collectors_internals_live"  # beside TorchRL's collectors_internals
RLMAP_OUT = "reference/rlmap"  # --out, as the README places the pages
# Where the pages land: generate writes each format into its own subfolder of --out (see the
# report on README's "list rlmap/internals_index in a toctree", which names rlmap/ without rst/).
RLMAP_PAGES = f"{RLMAP_OUT}/rst"

pytestmark = [
    pytest.mark.torchrl,
    pytest.mark.skipif(not TORCHRL_DOCS.is_dir(), reason=f"TorchRL's docs tree is not at {TORCHRL_DOCS}"),
]


@dataclass(frozen=True, slots=True)
class Trim:
    """One change to TorchRL's conf.py: the exact text removed or replaced, and why."""

    old: str
    new: str
    why: str


THEME = "pytorch_sphinx_theme2 pins Sphinx<=7.2.6 / docutils 0.20: it would downgrade the suite's Sphinx"
TRIMS = (
    Trim("import pytorch_sphinx_theme2\n", "", THEME),
    Trim('    os.path.join(os.path.dirname(pytorch_sphinx_theme2.__file__), "templates"),\n', "", THEME),
    Trim(
        'html_theme = "pytorch_sphinx_theme2"\nhtml_theme_path = [pytorch_sphinx_theme2.get_html_theme_path()]\n',
        "",
        THEME,
    ),
    Trim(
        "theme_variables = pytorch_sphinx_theme2.get_theme_variables()\n",
        "theme_variables = {}\n",
        THEME,
    ),
    Trim(
        '    "sphinx_gallery.gen_gallery",\n',
        "",
        "sphinx-gallery executes TorchRL's tutorials (network, simulators, GPU); they are not in the snapshot",
    ),
    Trim(
        '    "sphinxcontrib.aafig",\n',
        "",
        "TorchRL installs a git fork of aafig; PyPI's sphinxcontrib-aafig 1.2.0 crashes the build "
        "(RuntimeError: dictionary changed size during iteration, on ActorCriticOperator's aafig)",
    ),
    Trim(
        "sys.path.append(current_path)\nfrom content_generation import (\n"
        "    generate_knowledge_base_references,\n    generate_tutorial_references,\n)\n\n"
        'generate_knowledge_base_references("../../knowledge_base")\n'
        'generate_tutorial_references("../../tutorials/sphinx-tutorials/", "tutorial")\n'
        '# generate_tutorial_references("../../tutorials/src/", "src")\n'
        'generate_tutorial_references("../../tutorials/media/", "media")\n',
        "",
        "content_generation.py and the tutorials/ it reads are not in the snapshot",
    ),
)
ADDED = """
# -- rlmap's acceptance test (tests/output/test_torchrl_docs.py) -------------
intersphinx_mapping = {{}}  # the five inventories are downloaded: no network here
html_theme_options = {{}}  # pytorch_sphinx_theme2's options; Sphinx's default theme knows none of them
extensions += ["rlmap.sphinx", "sphinx.ext.graphviz"]
rlmap_cache_dir = {cache!r}
"""


def trimmed_conf(conf: str, cache: Path) -> str:
    """TorchRL's conf.py with ``TRIMS`` applied (each must match exactly once) and rlmap added."""
    for trim in TRIMS:
        count = conf.count(trim.old)
        assert count == 1, f"TorchRL's conf.py changed: {trim.old!r} occurs {count} times; revisit TRIMS"
        conf = conf.replace(trim.old, trim.new)
    return conf + ADDED.format(cache=str(cache))


def add_to_toctree(index: Path, entries: list[str]) -> None:
    """Append ``entries`` to the first toctree of ``index`` (TorchRL's list of reference pages)."""
    text = index.read_text(encoding="utf-8")
    block = re.search(r"^\.\. toctree::\n(?:[ \t]+:.*\n)*\n(?P<indent>[ \t]+)\S.*\n(?:(?P=indent)\S.*\n)*", text, re.M)
    assert block, f"no toctree with entries in {index}"
    added = "".join(f"{block['indent']}{entry}\n" for entry in entries)
    index.write_text(text[: block.end()] + added + text[block.end() :], encoding="utf-8")


# The whole tree takes 11.5 minutes on 2 cores (autosummary imports and autodocs ~1,500 objects, viewcode
# highlights their modules); these reference pages (and their sub-pages) are none of what rlmap's pages
# and the directive page link to, so they go, with their lines in the toctrees that list them.
DROPPED_PAGES = ("checkpoint", "config", "knowledge_base", "services", "trainers", "utils", "vla")


def drop_pages(source: Path) -> None:
    """Remove ``DROPPED_PAGES`` (``reference/trainers*.rst`` too) and their toctree entries."""
    reference = source / "reference"
    for name in DROPPED_PAGES:
        pages = [reference / f"{name}.rst", *reference.glob(f"{name}_*.rst")]
        assert pages[0].is_file(), f"TorchRL's tree has no reference/{name}.rst any more: revisit DROPPED_PAGES"
        for page in pages:
            page.unlink()
    entry = re.compile(rf"^[ \t]+(?:reference/)?(?:{'|'.join(DROPPED_PAGES)})(?:_\w+)?[ \t]*\n", re.MULTILINE)
    for index in (source / "index.rst", reference / "index.rst"):
        index.write_text(entry.sub("", index.read_text(encoding="utf-8")), encoding="utf-8")


def add_directive_page(source: Path) -> None:
    """The directive example beside TorchRL's hand page of the same subject, with two edits to the
    words it keeps from that page: its label renamed, so as not to collide with the page's, and a
    title given to its ``:ref:`ref_collectors```, which points at a label before a paragraph, not
    a title, and so warns (TorchRL's own page warns there too)."""
    text = DIRECTIVE_EXAMPLE.read_text(encoding="utf-8")
    label = ".. _ref_collectors_internals:\n"
    assert text.count(label) == 1, f"{DIRECTIVE_EXAMPLE} no longer defines {label.strip()}"
    untitled = ":ref:`ref_collectors`"
    assert text.count(untitled) == 1, f"{DIRECTIVE_EXAMPLE} no longer has {untitled}: revisit this edit"
    text = text.replace(untitled, ":ref:`Collectors <ref_collectors>`")
    page = source / f"{DIRECTIVE_PAGE}.rst"
    assert not page.exists(), f"{DIRECTIVE_PAGE} collides with a page of TorchRL's tree"
    page.write_text(text.replace(label, ".. _ref_collectors_internals_live:\n"), encoding="utf-8")


@dataclass(frozen=True, slots=True)
class SphinxWarning:
    """One warning of the build: where (as Sphinx printed it, the tree's path made relative) and what."""

    location: str
    message: str

    def from_rlmap(self) -> bool:
        """Located on rlmap's pages (under ``reference/rlmap/``) or the directive page, or naming
        rlmap anywhere (its extension, its labels ``rlmap_*``, a path of its pages)."""
        return self.location.startswith(f"{DIRECTIVE_PAGE}.rst") or "rlmap" in str(self).lower()

    def __str__(self) -> str:
        return f"{self.location}: {self.message}" if self.location else self.message


WARNING_START = re.compile(r"^(?:(?P<location>\S.*?): )?(?:WARNING|ERROR|CRITICAL|SEVERE): ", re.MULTILINE)


def parse_warnings(text: str, source: Path) -> list[SphinxWarning]:
    """Sphinx's warning file, one entry per warning (continuation lines kept with their warning)."""
    starts = list(WARNING_START.finditer(text))
    found = []
    for start, end in zip(starts, [*starts[1:], None], strict=True):
        location = (start["location"] or "").removeprefix(f"{source}/")
        message = text[start.end() : end.start() if end else len(text)].strip()
        found.append(SphinxWarning(location, message))
    return found


@dataclass(frozen=True, slots=True)
class Build:
    source: Path
    html: Path
    returncode: int
    warnings: tuple[SphinxWarning, ...]
    seconds: float


@pytest.fixture(scope="module")
def torchrl_docs(tmp_path_factory: pytest.TempPathFactory, torchrl_cache: Path) -> Build:
    """TorchRL's tree with rlmap's pages and the directive page, built to HTML once."""
    from rlmap.cli import main

    root = tmp_path_factory.mktemp("torchrl-docs")
    source = root / "source"
    shutil.copytree(TORCHRL_DOCS / "docs" / "source", source)
    for path in [source, *source.rglob("*")]:  # the shared snapshot is read-only
        path.chmod(path.stat().st_mode | 0o200)
    drop_pages(source)
    conf = source / "conf.py"
    conf.write_text(trimmed_conf(conf.read_text(encoding="utf-8"), torchrl_cache), encoding="utf-8")

    out = source / RLMAP_OUT
    args = ["generate", "--out", str(out), "--format", "rst", "--docs", str(source)]
    assert main([*args, "--cache-dir", str(torchrl_cache), "-q"]) == 0, "rlmap generate failed; see above"
    assert (source / RLMAP_PAGES / "internals_index.rst").is_file()
    add_directive_page(source)
    add_to_toctree(
        source / "reference" / "index.rst",
        [f"{RLMAP_PAGES.removeprefix('reference/')}/internals_index", DIRECTIVE_PAGE.removeprefix("reference/")],
    )

    html, warnings = root / "html", root / "warnings.txt"
    command = [sys.executable, "-m", "sphinx", "-b", "html", "-W", "--keep-going", "-q", "-j", "2"]
    command += ["-w", str(warnings)]
    started = time.monotonic()
    done = subprocess.run([*command, str(source), str(html)], capture_output=True, text=True, timeout=1800, check=False)
    seconds = time.monotonic() - started
    assert (html / "objects.inv").is_file(), f"sphinx-build wrote no HTML:\n{done.stderr[-4000:]}"
    found = parse_warnings(warnings.read_text(encoding="utf-8"), source)
    return Build(source, html, done.returncode, tuple(found), seconds)


# -- what rlmap's pages refer to, and what the tree documents ------------------------------------

PY_ROLE = re.compile(r":(?:py:)?(?P<role>class|meth|func|attr|data|mod|obj|exc|const):`(?P<body>[^`]+)`")


@dataclass(frozen=True, slots=True)
class Role:
    page: str
    role: str
    target: str

    def __str__(self) -> str:
        return f"{self.page}: :{self.role}:`{self.target}`"


def python_roles(pages: Path) -> list[Role]:
    """Every Python-domain role on the generated rst pages, its target as Sphinx looks it up."""
    assert not any(".. currentmodule::" in page.read_text(encoding="utf-8") for page in pages.glob("*.rst")), (
        "a currentmodule on rlmap's pages would make targets relative: resolve them here as Sphinx does"
    )
    roles = []
    for page in sorted(pages.glob("*.rst")):
        for match in PY_ROLE.finditer(page.read_text(encoding="utf-8")):
            body = match["body"]
            target = body[body.rindex("<") + 1 : -1] if body.endswith(">") else body
            roles.append(Role(page.name, match["role"], target.lstrip("~!").removesuffix("()")))
    return roles


def python_inventory(inventory: Path) -> dict[str, str]:
    """The Python objects an ``objects.inv`` (version 2) lists: name -> object type."""
    header, _, body = inventory.read_bytes().partition(b"\n")
    assert header == b"# Sphinx inventory version 2", f"unexpected inventory header {header!r}"
    lines = body.split(b"\n", 3)
    assert lines[2].startswith(b"# The remainder of this file is compressed"), lines[:3]
    objects = {}
    for line in zlib.decompress(lines[3]).decode("utf-8").splitlines():
        entry = re.match(r"(?P<name>.+?)\s+(?P<domain>\w+):(?P<type>\w+)\s+-?\d+\s", line)
        if entry and entry["domain"] == "py":
            objects[entry["name"]] = entry["type"]
    return objects


XREF = re.compile(
    r'(?P<link><a class="reference internal"[^>]*>)?<code class="xref py py-(?P<role>\w+)[^"]*">(?P<text>.*?)</code>'
)


def unlinked_python_xrefs(html: str) -> list[str]:
    """The Python cross-references Sphinx left as bare literals (target not found) on one HTML
    page, by the text shown (``()`` dropped)."""
    return [
        re.sub(r"<[^>]+>", "", match["text"]).removesuffix("()") for match in XREF.finditer(html) if not match["link"]
    ]


def shown_text(role: str) -> str:
    """What Sphinx shows for a hand-written role: its title, or its target (``~`` keeps the last part)."""
    body = role[role.index("`") + 1 : -1]
    if body.endswith(">"):
        return body[: body.rindex("<")].strip()
    return body.rpartition(".")[2] if body.startswith("~") else body.lstrip("!").removesuffix("()")


# Defects of rlmap this test found, now fixed (the lists stay, empty, so a new one shows by name):
# - a member of a class documented with ``:members:`` counted as documented whatever it was, but
#   autodoc without ``:undoc-members:`` skips members with no docstring, never shows ``__init__``
#   and does not see attributes assigned in methods (15 unlinked roles; rlmap/pages/refs.py);
# - the directives linked every public name, documented or not (rlmap/sphinx/state.py: they now
#   read the tree being built, as generate --docs does).
KNOWN_UNDOCUMENTED_TARGETS: frozenset[str] = frozenset()
KNOWN_UNLINKED_ON_DIRECTIVE_PAGE: tuple[str, ...] = ()


# -- the tests ------------------------------------------------------------------------------------


def test_rlmap_causes_no_warning_in_torchrl_s_tree(torchrl_docs: Build) -> None:
    """TorchRL's own pages may warn (missing optional packages, its docstrings, the trims); nothing
    located on rlmap's pages or the directive page, or naming rlmap, may."""
    ours = [warning for warning in torchrl_docs.warnings if warning.from_rlmap()]
    assert not ours, f"{len(ours)} warnings from rlmap's output:\n" + "\n".join(map(str, ours))
    assert torchrl_docs.warnings, "TorchRL's tree built without a warning: were the warnings captured?"
    assert torchrl_docs.returncode == 1  # -W: TorchRL's own warnings fail the build, nothing crashed


def test_every_python_role_on_rlmap_s_pages_targets_an_object_the_tree_documents(torchrl_docs: Build) -> None:
    documented = python_inventory(torchrl_docs.html / "objects.inv")
    assert "torchrl.collectors.Collector" in documented  # the tree documents torchrl through autodoc
    roles = python_roles(torchrl_docs.source / RLMAP_PAGES)
    assert len(roles) > 100, "rlmap's pages lost their roles"
    missing = sorted({role.target for role in roles if role.target not in documented})
    assert set(missing) == KNOWN_UNDOCUMENTED_TARGETS, (
        "roles on rlmap's pages that target nothing the tree documents (update KNOWN_UNDOCUMENTED_TARGETS "
        "only when a defect is fixed):\n" + "\n".join(str(role) for role in roles if role.target in missing)
    )


def test_every_python_role_on_rlmap_s_pages_links_in_the_built_html(torchrl_docs: Build) -> None:
    """What Sphinx itself resolved: the Python references left as bare literals on rlmap's pages are
    exactly the roles above whose targets the tree does not document."""
    unlinked = [
        text
        for page in sorted((torchrl_docs.html / RLMAP_PAGES).glob("*.html"))
        for text in unlinked_python_xrefs(page.read_text(encoding="utf-8"))
    ]
    roles = python_roles(torchrl_docs.source / RLMAP_PAGES)
    expected = [role for role in roles if role.target in KNOWN_UNDOCUMENTED_TARGETS]
    assert len(unlinked) == len(expected), f"unlinked on rlmap's pages: {unlinked}"
    assert {text.rpartition(".")[2] for text in unlinked} == {role.target.rpartition(".")[2] for role in expected}


def test_the_directive_page_links_what_it_shows_and_keeps_torchrl_s_prose(torchrl_docs: Build) -> None:
    """On the directive page, the references the directives made link (TorchRL's own prose keeps its
    roles, private names and tensordict's classes among them, which this tree cannot link)."""
    html = (torchrl_docs.html / f"{DIRECTIVE_PAGE}.html").read_text(encoding="utf-8")
    prose = (torchrl_docs.source / f"{DIRECTIVE_PAGE}.rst").read_text(encoding="utf-8")
    written = {shown_text(match.group(0)) for match in PY_ROLE.finditer(prose)}
    from_directives = sorted(text for text in unlinked_python_xrefs(html) if text not in written)
    assert sorted(set(from_directives)) == sorted(KNOWN_UNLINKED_ON_DIRECTIVE_PAGE), from_directives
    assert re.search(r'href="https://github\.com/pytorch/rl/blob/[^"]+/torchrl/collectors/_single\.py#L\d+"', html)
    assert "Why it exists" in html  # the narrative stays
    assert (torchrl_docs.html / "reference" / "collectors_internals.html").is_file()  # TorchRL's page too
