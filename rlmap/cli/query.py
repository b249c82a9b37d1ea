"""``rlmap show`` and ``rlmap graph``: answers from the model for a debugger, on the spot."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import typer

from rlmap.cli import common
from rlmap.errors import ExitCode, UsageError, did_you_mean

# The options completion reads, by their spelling on the command line (their parameter's name).
_COMPLETION_OPTIONS = {
    "--source": "source",
    "--package": "package",
    "--cache-dir": "cache_dir",
    "--config": "config",
    "--profile": "profile",
}


def _typed_after_the_word() -> dict[str, Any]:
    """The options the command line gives after the word being completed (``rlmap show Coll
    --source X``: click reads only the words before it).  Bash hands the whole line
    (``COMP_WORDS``, ``COMP_CWORD``); the other shells hand the words up to the cursor, which
    click has read already."""
    import shlex

    try:
        words = shlex.split(os.environ.get("COMP_WORDS", ""))
        after = words[int(os.environ.get("COMP_CWORD", "")) + 1 :]
    except ValueError:
        return {}
    found: dict[str, Any] = {}
    for place, word in enumerate(after):
        name, equals, value = word.partition("=")
        if name in _COMPLETION_OPTIONS:
            if not equals:
                if place + 1 >= len(after):
                    continue
                value = after[place + 1]
            found[_COMPLETION_OPTIONS[name]] = value
        elif word == "--key":
            found["key"] = True
    return found


def _complete_name(ctx: typer.Context, incomplete: str) -> list[str]:
    """Shell completion of NAME from the cached model of the source the command line names (or
    the configured one): ``Collector.ro`` -> ``Collector.rollout``.  Nothing when no model is
    cached: completion never parses."""
    from rlmap.index.cache import Cache, default_cache_dir
    from rlmap.index.source import locate_source
    from rlmap.model.session import cached_model
    from rlmap.pages.header import analysis_of
    from rlmap.query.lookup import completions

    params = dict(getattr(ctx, "params", None) or {})
    for name, value in _typed_after_the_word().items():  # (click gives an option not yet read as None)
        if params.get(name) in (None, False):
            params[name] = value

    def path(name: str) -> Path | None:  # while completing, typer may hand over the raw text
        value = params.get(name)
        return Path(value) if value is not None else None

    try:
        settings = common.settings_of(path("config"), path("source"), params.get("package"), quiet=True)
        tree = locate_source(
            settings.source, package=settings.package, repo_url=settings.repo_url, packages=settings.packages
        )
        chosen = common.profile_basics_of(path("profile") or settings.profile, tree.package)
        cache_dir = path("cache_dir") or default_cache_dir()
        model = cached_model(tree, Cache(cache_dir), *analysis_of(chosen))
    except Exception:  # completion must never print a traceback into the shell
        return []
    if model is None:
        return []
    terms = chosen.glossary if chosen is not None else ()
    return completions(model, incomplete, keys_only=bool(params.get("key")), terms=terms)


@common.app.command(
    cls=common.Command,
    short_help="Where a symbol is defined, its callers, callees and accesses.",
    epilog=common.exit_codes(usage="a name that is unknown or ambiguous (the names spelled like it are listed)"),
)
def show(
    name: Annotated[
        str,
        typer.Argument(
            metavar="NAME",
            autocompletion=_complete_name,
            help=(
                "A symbol (Collector.rollout, Collector._carrier, torchrl.collectors.Collector), a "
                "tensordict key (is_init, collector.traj_ids), a glossary term (carrier), a location "
                "(torchrl/collectors/_single.py:2100, or a traceback's path and line) or a name it "
                "calls outside the code (torch.stack)."
            ),
        ),
    ],
    source: common.SourceOption = None,
    output_format: Annotated[
        common.ShowFormat | None,
        typer.Option("--format", help="The report's format. Default: text.", show_default=False),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="The same as --format json.")] = False,
    key: Annotated[bool, typer.Option("--key", help="Look NAME up as a tensordict key only.")] = False,
    cache_dir: common.CacheDirOption = None,
    no_cache: common.NoCacheOption = False,
    jobs: common.JobsOption = None,
    quiet: common.QuietOption = False,
    package: common.PackageOption = None,
    profile: common.ProfileOption = None,
    config: common.ConfigOption = None,
) -> None:
    """Where a symbol is defined, who calls it, what it calls; every write and read of an attribute or key."""
    from rlmap.errors import SymbolNotFound
    from rlmap.query.graphdump import source_of
    from rlmap.query.lookup import describe, describe_key, find_key, find_symbols, similar_keys

    if as_json and output_format == "text":
        raise UsageError("--json and --format text are both given", "pass --format json (or --json), or --format text")
    as_json = as_json or output_format == "json"
    settings = common.settings_of(config, source, package, profile)
    chosen = common.profile_basics_of(settings.profile, common.documented_package(settings))
    loaded = common.load_model_of(settings, chosen, cache_dir, no_cache, jobs, quiet)
    model = loaded.model
    try:
        if key:
            found = find_key(model, name)
            if found is None:
                close = similar_keys(model, name)
                symbols = [] if close else find_symbols(model, name)
                raise SymbolNotFound(
                    f"no tensordict key '{name}' is read or written in {model.source.stamp()}",
                    did_you_mean(close)
                    if close
                    else f"'{name}' names {'a symbol' if len(symbols) == 1 else f'{len(symbols)} symbols'}: "
                    "leave out --key"
                    if symbols
                    else "check the spelling; nested keys are written collector.traj_ids or ('collector', 'traj_ids')"
                    if chosen is not None and chosen.extensions
                    else 'keys are read only under a profile with extensions = ["tensordict"] (pass --profile)',
                    tuple(close),
                )
            result = describe_key(model, found)
            result["query"] = name
        else:
            result = describe(model, name, chosen.glossary if chosen is not None else ())
            _note_stand_ins(result, model, loaded.source)
        _add_placed(result, model, loaded.source, settings, find_key(model, name))
    except SymbolNotFound as error:
        # a name defined in a file that could not be indexed is not found: say which files those are
        common.report_diagnostics(model.diagnostics)
        if as_json:  # a script reading --json gets a document whatever the answer (exit 2, as ambiguous)
            document = {"query": name, "not_found": error.message, "hint": error.hint, "suggestions": error.suggestions}
            common.say(json.dumps({**document, "source": source_of(model)}, indent=2, sort_keys=True))
        raise
    if as_json:  # (what the answer was read from, as graph's document says it)
        common.say(json.dumps({**result, "source": source_of(model)}, indent=2, sort_keys=True))
    else:
        _print_report(result)
    code = common.report_diagnostics(model.diagnostics)
    if "ambiguous" in result and not result.get("glossary"):  # (a glossary term is an answer)
        common.say_error(
            f"'{name}' is ambiguous ({len(result['ambiguous'])} symbols) - pass a longer suffix or the full name"
        )
        code = max(code, ExitCode.USAGE)
    raise typer.Exit(int(code))


def _add_placed(result: dict[str, Any], model: Any, source: Any, settings: Any, key: tuple[str, ...] | None) -> None:
    """Give each key report of ``result`` the accesses the profile's claims place for its key
    (``placed``: :mod:`rlmap.query.placed`), as the pages list them; the profile is read whole
    only when a key is shown.  A claim that no longer holds is a warning (the accesses the model
    finds are the answer still); a profile whose pages do not load adds nothing, as ``generate``
    reports them."""
    reports = [each for each in (result, result.get("key")) if isinstance(each, dict) and "accesses" in each]
    reports = [each for each in reports if each.get("kind") == "tensordict key"]
    if key is None or not reports:
        return
    from rlmap.errors import RlmapError
    from rlmap.query.placed import placed_accesses

    try:  # (a profile whose pages do not load is generate's to report: show reads its header only)
        profile = common.profile_of(settings.profile, common.documented_package(settings))
    except RlmapError:
        return
    try:
        placed = placed_accesses(model, source, profile, key) if profile is not None else []
    except RlmapError as error:
        common.say_warning(
            f"the accesses the profile's claims place for this key are not shown: {error.message}"
            + (f" - {error.hint}" if error.hint else "")
        )
        return
    for report in reports:
        report["placed"] = placed


def _note_stand_ins(result: dict[str, Any], model: Any, source: Any) -> None:
    """Mark the shown symbol, and each callee, that is a stand-in defined where the import of the
    same name fails (:mod:`rlmap.query.standins`) with what that import names (``stands_in_for``):
    ``cudagraph_mark_step_begin`` of ``torchrl.collectors._constants`` runs only without
    ``torch.compiler.cudagraph_mark_step_begin``.  The files are read and parsed, never run."""
    import ast

    from rlmap.index.decode import Skip, decode_source
    from rlmap.pages.refs import read_source
    from rlmap.query.standins import StandIns

    texts: dict[str, str] = {}

    def text(path: str) -> str:
        if path not in texts:
            data = read_source(source, path)
            try:
                texts[path] = decode_source(data) if data is not None else ""
            except Skip:
                texts[path] = ""
        return texts[path]

    def line(path: str, number: int) -> str:
        lines = text(path).split("\n", number)
        return lines[number - 1] if 0 < number <= len(lines) else ""

    def tree(path: str) -> ast.Module:
        try:
            return ast.parse(text(path))
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return ast.Module(body=[], type_ignores=[])

    stand_ins = StandIns(model, line, tree)
    for found in (result, *result.get("callees", ())):
        symbol = model.symbol(found.get("qualname") or found.get("callee") or "")
        named = stand_ins.of(symbol) if symbol is not None else ""
        if named:
            found["stands_in_for"] = named


def _print_report(result: dict[str, Any]) -> None:
    """The text of ``show``: locations as hyperlinks on a terminal that shows them, rows fitted to
    its width, a pager when it is longer than the terminal (on a terminal only); plain text,
    rows whole, into a pipe or a file."""
    import os

    from rlmap.query.lookup import format_description
    from rlmap.terminal import hyperlink, supports_hyperlinks

    on_terminal = common.on_terminal()
    links: list[tuple[str, str]] = []

    def link(text: str, url: str) -> str:
        links.append((text, url))
        return f"\ue000{len(links) - 1}\ue001"

    width = common.terminal_columns() if on_terminal else 0  # into a pipe or a file: rows stay whole
    text = format_description(result, link if supports_hyperlinks(on_terminal, dict(os.environ)) else None, width)
    text = common.terminal_safe(text.replace("\ue000", "").replace("\ue001", "") if not links else text)
    for number, (shown, url) in enumerate(links):
        text = text.replace(f"\ue000{number}\ue001", hyperlink(shown, url))
    if on_terminal and text.count("\n") + 1 > common.terminal_lines():
        common.page(text)
    else:
        common.say(text)


def _echo_chunks(chunks: Iterator[str], size: int = 1 << 20) -> None:
    """Echo the text of ``chunks`` and a newline, ~``size`` characters at a time (what one echo of
    the joined text writes, without the whole text ever held)."""
    batch: list[str] = []
    held = 0
    for chunk in chunks:
        batch.append(chunk)
        held += len(chunk)
        if held >= size:
            common.say("".join(batch), nl=False)
            batch.clear()
            held = 0
    common.say("".join(batch))


def _check_scopes(model: Any, scopes: tuple[str, ...]) -> tuple[str, ...]:
    """The scopes as full names: a ``--scope`` that is a path through an import
    (``torchrl.collectors.Collector``) or a file (``torchrl/collectors/_single.py``) is the symbol or
    module it names, as for ``show``.  One that keeps no caller is a usage error, with the full
    name it may mean (a suffix, a misspelling), not an empty graph that exits 0."""
    from rlmap.query.lookup import find_symbols, located, similar_names
    from rlmap.scopes import in_scope

    common.refuse_empty_scopes(scopes)
    names = list(model.qualnames())
    resolved = []
    for given in scopes:
        place = located(model, given) if given.endswith(".py") else None
        prefix = place[0] if place is not None else given
        if not any(in_scope(name, (prefix,)) for name in names):
            followed = model.follow(prefix)
            prefix = followed if followed is not None else prefix
        resolved.append(prefix)
        if any(in_scope(name, (prefix,)) for name in names):
            continue
        meant = find_symbols(model, prefix)[:3] or similar_names(model, prefix)
        hint = did_you_mean(meant) if meant else ""
        raise UsageError(
            f"--scope '{given}' names no package, module, class or function of {model.source.stamp()}",
            hint or "pass a dotted prefix of full qualified names, e.g. the package or a module",
        )
    return tuple(resolved)


@common.app.command(
    cls=common.Command,
    short_help="The resolved call graph, as JSON, DOT or PyCG's JSON.",
    epilog=common.exit_codes(usage="a --scope that names nothing"),
)
def graph(
    source: common.SourceOption = None,
    scope: Annotated[
        list[str] | None,
        typer.Option(
            "--scope",
            metavar="PREFIX",
            help="Keep callers in PREFIX, a dotted prefix: the package, a module, a class (repeatable).",
            show_default=False,
        ),
    ] = None,
    output_format: Annotated[
        common.GraphFormat, typer.Option("--format", help="json, dot, or pycg (PyCG's caller -> callees JSON).")
    ] = "json",
    cache_dir: common.CacheDirOption = None,
    no_cache: common.NoCacheOption = False,
    jobs: common.JobsOption = None,
    quiet: common.QuietOption = False,
    package: common.PackageOption = None,
    profile: common.ProfileOption = None,
    config: common.ConfigOption = None,
) -> None:
    """The resolved call graph: nodes (qualname, kind, path, line, end_line, documented), edges (lines, how)."""
    from rlmap.query.graphdump import graph_dot, graph_json_chunks, graph_pycg

    settings = common.settings_of(config, source, package, profile)
    chosen = common.profile_basics_of(settings.profile, common.documented_package(settings))
    loaded = common.load_model_of(settings, chosen, cache_dir, no_cache, jobs, quiet)
    scopes = _check_scopes(loaded.model, tuple(scope or ()))
    if output_format == "json":
        _echo_chunks(graph_json_chunks(loaded.model, scopes))
    elif output_format == "pycg":
        common.say(json.dumps(graph_pycg(loaded.model, scopes), indent=1, sort_keys=True))
    else:
        common.say(graph_dot(loaded.model, scopes), nl=False)
    raise typer.Exit(int(common.report_diagnostics(loaded.model.diagnostics)))
