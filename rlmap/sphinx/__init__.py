"""A Sphinx extension: ``extensions = ["rlmap.sphinx"]`` puts live facts from the code into
hand-written pages, read statically (the documented package is never imported).

Configuration (``conf.py``): ``rlmap_source`` (a checkout or the package directory; default the
installed package, found by looking on ``sys.path``), ``rlmap_package`` (``"torchrl"``),
``rlmap_profile`` (a profile file or directory; default rlmap's built-in profile for the package,
used for its extensions and glossary), ``rlmap_repo_url`` (where permalinks point; default
``https://github.com/pytorch/rl`` for torchrl, none for another package), ``rlmap_cache_dir``
(default ``~/.cache/rlmap``; ``None`` parses everything and caches nothing).
Relative paths are relative to ``conf.py``.

The model is loaded once per build (``builder-inited``); a page that shows facts from it is read
again whenever a source file changed (see :mod:`rlmap.sphinx.state`).
"""

from __future__ import annotations

from typing import Any

from rlmap import __version__
from rlmap.index.cache import default_cache_dir
from rlmap.sphinx.directives import DIRECTIVES, SymbolRole
from rlmap.sphinx.state import load_state, merge_pages, outdated_pages, purge_page


def _default_cache_dir(config: Any) -> str:
    del config
    return str(default_cache_dir())


def setup(app: Any) -> dict[str, Any]:
    app.add_config_value("rlmap_source", None, "env", types=(str, type(None)))
    app.add_config_value("rlmap_package", "torchrl", "env", types=(str,))
    app.add_config_value("rlmap_repo_url", None, "env", types=(str, type(None)))
    app.add_config_value("rlmap_profile", None, "env", types=(str, type(None)))
    app.add_config_value("rlmap_cache_dir", _default_cache_dir, "", types=(str, type(None)))
    for name, directive in DIRECTIVES.items():
        app.add_directive(name, directive)
    app.add_role("rlmap", SymbolRole())
    app.connect("builder-inited", load_state)
    app.connect("env-get-outdated", outdated_pages)
    app.connect("env-purge-doc", purge_page)
    app.connect("env-merge-info", merge_pages)
    return {"version": __version__, "parallel_read_safe": True, "parallel_write_safe": True, "env_version": 1}
