"""``rlmap show`` and ``rlmap graph``: answers from the model for a debugger, on the spot."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from rlmap.cli import common
from rlmap.errors import ExitCode, UsageError


@common.app.command()
def show(
    name: Annotated[
        str,
        typer.Argument(
            help="A symbol (Collector.rollout, Collector._carrier) or a tensordict key (is_init, collector.traj_ids)."
        ),
    ],
    source: common.SourceOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
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
    from rlmap.query.lookup import describe, describe_key, find_key, format_description

    settings = common.settings_of(config, source, package, profile)
    package = settings.package
    chosen = common.profile_of(settings.profile, package)
    loaded = common.load_model_of(settings, chosen, cache_dir, no_cache, jobs, quiet)
    model = loaded.model
    if key:
        found = find_key(model, name)
        if found is None:
            raise SymbolNotFound(
                f"no tensordict key '{name}' is read or written in {model.source.stamp()}",
                "check the spelling; nested keys are written collector.traj_ids or ('collector', 'traj_ids')"
                if chosen is not None and chosen.extensions
                else 'keys are read only under a profile with extensions = ["tensordict"] (pass --profile)',
            )
        result = describe_key(model, found)
        result["query"] = name
    else:
        result = describe(model, name, chosen.glossary if chosen is not None else ())
    if as_json:
        typer.echo(json.dumps(result, indent=2, sort_keys=True))
    else:
        common.echo_safe(format_description(result))
    code = common.report_diagnostics(model.diagnostics)
    if "ambiguous" in result:
        common.say_error(
            f"'{name}' is ambiguous ({len(result['ambiguous'])} symbols) - pass a longer suffix or the full name"
        )
        code = max(code, ExitCode.USAGE)
    raise typer.Exit(int(code))


@common.app.command()
def graph(
    source: common.SourceOption = None,
    scope: Annotated[
        list[str] | None,
        typer.Option(
            "--scope", help="Keep callers whose qualified name starts with PREFIX (repeatable).", show_default=False
        ),
    ] = None,
    output_format: Annotated[
        str, typer.Option("--format", help="json, dot, or pycg (PyCG's {caller: [callees]} JSON).")
    ] = "json",
    cache_dir: common.CacheDirOption = None,
    no_cache: common.NoCacheOption = False,
    jobs: common.JobsOption = None,
    quiet: common.QuietOption = False,
    package: common.PackageOption = None,
    profile: common.ProfileOption = None,
    config: common.ConfigOption = None,
) -> None:
    """The resolved call graph: nodes (qualname, kind, path, line, documented) and edges (lines, how resolved)."""
    from rlmap.query.graphdump import graph_dot, graph_json, graph_pycg

    if output_format not in ("json", "dot", "pycg"):
        raise UsageError(f"unknown --format '{output_format}'", "use --format json, dot or pycg")
    settings = common.settings_of(config, source, package, profile)
    chosen = common.profile_of(settings.profile, settings.package)
    loaded = common.load_model_of(settings, chosen, cache_dir, no_cache, jobs, quiet)
    scopes = tuple(scope or ())
    if output_format == "json":
        typer.echo(json.dumps(graph_json(loaded.model, scopes), indent=1, sort_keys=True))
    elif output_format == "pycg":
        typer.echo(json.dumps(graph_pycg(loaded.model, scopes), indent=1, sort_keys=True))
    else:
        typer.echo(graph_dot(loaded.model, scopes), nl=False)
    raise typer.Exit(int(common.report_diagnostics(loaded.model.diagnostics)))
