"""The model a Sphinx build reads: loaded once on ``builder-inited`` from the configured source,
through rlmap's cache, never by importing the package; and which pages must be read again when
the code changed.

Every page that uses a directive or the role records the key of the model it was read with
(the hash of every source file, as :func:`rlmap.model.session.project_key` computes it, and the
commit permalinks point at).  On
the next build, ``env-get-outdated`` returns the pages whose key differs, so Sphinx re-reads
them even though their own text did not change.
"""

from __future__ import annotations

import re
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2
from sphinx.errors import SphinxError
from sphinx.util import logging

from rlmap.errors import ConfigError, RlmapError
from rlmap.index.cache import Cache, default_cache_dir
from rlmap.index.source import SourceTree, locate_source
from rlmap.model.codemodel import CodeModel
from rlmap.model.session import load_model, project_key
from rlmap.pages.docstree import DocsTree, load_docs_tree
from rlmap.pages.header import analysis_of
from rlmap.pages.profile import Profile, builtin_profile_path, load_profile
from rlmap.pages.refs import Refs
from rlmap.render.sandbox import make_environment

logger = logging.getLogger(__name__)

PAGES = "rlmap_pages"  # env attribute: docname -> key of the model the page was read with


class RlmapSphinxError(SphinxError):
    category = "rlmap error"


@dataclass(frozen=True, slots=True)
class BuildState:
    """What the directives read during one build."""

    model: CodeModel
    source: SourceTree
    refs: Refs
    profile: Profile | None
    key: str
    graphviz: bool  # sphinx.ext.graphviz is loaded: diagrams are drawn
    environment: jinja2.Environment
    terms: dict[str, str]


# One state per build environment (the env is pickled between builds; the model is not).
_STATES: weakref.WeakKeyDictionary[Any, BuildState] = weakref.WeakKeyDictionary()


def state_of(env: Any) -> BuildState | None:
    return _STATES.get(env)


def load_state(app: Any) -> None:
    """``builder-inited``: locate the source, load the profile and the model, keep them for the build."""
    config = app.config
    try:
        _check_types(config)
        state = _load(config, Path(app.confdir), "sphinx.ext.graphviz" in app.extensions, Path(app.srcdir))
    except RlmapError as error:
        raise RlmapSphinxError(f"rlmap: {_in_conf_terms(str(error))}") from None
    _STATES[app.env] = state
    symbols = sum(1 for _ in state.model.qualnames())
    logger.info("rlmap: %s, %d symbols (model %s)", state.source.stamp(), symbols, state.key[:12])


# conf.py's settings, and the command-line options an error's hint may name for them
_SETTINGS = {
    "rlmap_source": "--source",
    "rlmap_package": "--package",
    "rlmap_profile": "--profile",
    "rlmap_cache_dir": "--cache-dir",
}


def _check_types(config: Any) -> None:
    """Each setting a string (or unset): Sphinx only warns of another type, and a number reached
    the path code as a traceback."""
    for name in (*_SETTINGS, "rlmap_repo_url"):
        value = getattr(config, name, None)
        if value is not None and not isinstance(value, str):
            raise ConfigError(f"conf.py: {name} = {value!r} is not a string", f"set {name} to one, or leave it out")


def _in_conf_terms(message: str) -> str:
    """An error's text with the command-line options it names said as conf.py's settings."""
    for name, option in _SETTINGS.items():
        message = re.sub(rf"(?<![\w-]){re.escape(option)}(?![\w-])", name + " in conf.py", message)
    return message


def _load(config: Any, confdir: Path, graphviz: bool, srcdir: Path | None = None) -> BuildState:
    package = config.rlmap_package
    source_path = _path(config.rlmap_source, confdir)
    profile = _profile(_path(config.rlmap_profile, confdir), package)
    extensions, value_cap = analysis_of(profile)
    tree = locate_source(source_path, package=package, repo_url=config.rlmap_repo_url)
    for warning in tree.warnings:
        logger.warning("rlmap: %s", warning, type="rlmap", subtype="source")
    cache_dir = config.rlmap_cache_dir
    cache = Cache.disabled() if cache_dir is None else Cache.at(_path(cache_dir, confdir) or default_cache_dir())
    loaded = load_model(tree, cache, extensions=extensions, value_cap=value_cap)
    if loaded.model.over_cap:
        logger.info("rlmap: %s", loaded.model.cap_note())
    if cache.write_failed:
        logger.warning(
            "rlmap: could not write to the cache in %s; the next build will parse again",
            cache.directory,
            type="rlmap",
            subtype="cache",
        )
    terms = {}
    if profile is not None:
        terms = {name.lower(): term.term for term in profile.glossary for name in term.names()}
    return BuildState(
        model=loaded.model,
        source=tree,
        refs=Refs(loaded.model, tree, _documented(srcdir)),
        profile=profile,
        # the commit too: links change with it, even where the files do not
        key=f"{project_key(tree, extensions, value_cap)}@{tree.commit}",
        graphviz=graphviz,
        environment=make_environment(None, profile.templates if profile is not None else None),
        terms=terms,
    )


def _path(value: Any, confdir: Path) -> Path | None:
    """A configured path, relative to the directory of ``conf.py``; ``None``/empty stays unset."""
    if value is None or value == "":
        return None
    path = Path(value).expanduser()
    return path if path.is_absolute() else confdir / path


def _profile(path: Path | None, package: str) -> Profile | None:
    """The configured profile, else rlmap's own for ``package`` (its extensions and glossary), else none."""
    if path is not None:
        return load_profile(path)
    builtin = builtin_profile_path(package)
    if builtin is None:
        return None
    return load_profile(builtin, f"rlmap/profiles/{package}/{builtin.name}", builtin=True)


# -- which pages to read again --------------------------------------------------------------


def note_page(env: Any, key: str) -> None:
    """The page being read shows facts from the model with ``key``."""
    pages = getattr(env, PAGES, None)
    if pages is None:
        pages = {}
        setattr(env, PAGES, pages)
    pages[env.docname] = key


def outdated_pages(app: Any, env: Any, added: set[str], changed: set[str], removed: set[str]) -> list[str]:
    """``env-get-outdated``: the pages read with another model than this build's."""
    del app, added, changed
    state = state_of(env)
    if state is None:
        return []
    pages: dict[str, str] = getattr(env, PAGES, {})
    return sorted(doc for doc, key in pages.items() if key != state.key and doc not in removed)


def purge_page(app: Any, env: Any, docname: str) -> None:
    del app
    getattr(env, PAGES, {}).pop(docname, None)


def merge_pages(app: Any, env: Any, docnames: set[str], other: Any) -> None:
    """``env-merge-info`` (parallel reads): the keys recorded by a worker."""
    del app
    theirs: dict[str, str] = getattr(other, PAGES, {})
    for docname in docnames:
        if docname in theirs:
            note = getattr(env, PAGES, None)
            if note is None:
                note = {}
                setattr(env, PAGES, note)
            note[docname] = theirs[docname]


def _documented(srcdir: Path | None) -> DocsTree | None:
    """What the docs being built document (autodoc, autosummary): roles then target those paths,
    as on the generated pages; ``None`` when the tree documents no Python object (every public
    path is then a role, as without a tree)."""
    if srcdir is None:
        return None
    documented = load_docs_tree([srcdir])
    return documented if documented is not None and (documented.objects or documented.with_members) else None
