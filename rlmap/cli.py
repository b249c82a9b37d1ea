"""The ``rlmap`` command line: the only module that prints or exits.

Each command builds its inputs, calls the library, prints the result and returns an exit
code from :class:`rlmap.errors.ExitCode`; every :class:`rlmap.errors.RlmapError` and every
usage error becomes ``rlmap: error: ...`` on stderr, never a traceback.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer

from rlmap import __version__
from rlmap.errors import ExitCode, RlmapError, UsageError
from rlmap.index.cache import Cache, default_cache_dir
from rlmap.index.records import Diagnostic
from rlmap.terminal import inert

app = typer.Typer(
    name="rlmap",
    help="Internals documentation for TorchRL, generated from its source (never imported).",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # help text is literal: "[tool.rlmap]" must not be read as markup
)

SourceOption = Annotated[
    Path | None,
    typer.Option(
        "--source",
        help="A checkout holding torchrl/, or the torchrl package directory. Default: the installed torchrl.",
        show_default=False,
    ),
]
CacheDirOption = Annotated[
    Path | None,
    typer.Option("--cache-dir", help="Where parsed files are cached. Default: ~/.cache/rlmap.", show_default=False),
]
NoCacheOption = Annotated[bool, typer.Option("--no-cache", help="Parse everything; read and write no cache.")]
JobsOption = Annotated[
    int | None, typer.Option("--jobs", "-j", min=1, help="Parser processes. Default: one per core.", show_default=False)
]
QuietOption = Annotated[bool, typer.Option("--quiet", "-q", help="No progress display.")]
PackageOption = Annotated[
    str | None,
    typer.Option(
        "--package",
        help="Top-level package to document. Default: [tool.rlmap] package, else torchrl.",
        rich_help_panel="Advanced",
        show_default=False,
    ),
]
ProfileOption = Annotated[
    Path | None,
    typer.Option(
        "--profile",
        help="A profile (a TOML file, or a directory holding profile.toml): pages, prose, glossary, extensions. "
        "Default: [tool.rlmap] profile, else the built-in one for the package.",
        show_default=False,
    ),
]
ConfigOption = Annotated[
    Path | None,
    typer.Option("--config", help="A TOML file with [tool.rlmap]. Default: ./pyproject.toml.", show_default=False),
]


def terminal_safe(text: str) -> str:
    """``text`` with every control character (tab and newline aside) made visible and inert."""
    return inert(text, keep_newlines=True)


def _echo(text: str, err: bool = False, nl: bool = True) -> None:
    typer.echo(terminal_safe(text), err=err, nl=nl)


def _error(message: str) -> None:
    _echo(f"rlmap: error: {message}", err=True)


def _warn(message: str) -> None:
    _echo(f"rlmap: warning: {message}", err=True)


def _note(message: str) -> None:
    _echo(f"rlmap: note: {message}", err=True)


@contextmanager
def _progress(quiet: bool) -> Iterator[Callable[[int, int], None] | None]:
    """A progress bar on stderr while files are parsed; nothing when quiet or not a terminal."""
    if quiet or not sys.stderr.isatty():
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(
        TextColumn("indexing"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    ) as bar:
        task = bar.add_task("index", total=None)

        def update(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield update


def _load(
    source: Path | None,
    package: str,
    cache_dir: Path | None,
    no_cache: bool,
    jobs: int | None,
    quiet: bool,
    repo_url: str | None = None,
    extensions: tuple[str, ...] = (),
) -> Any:
    """The resolved model of the source, with key accesses under the profile's ``extensions``."""
    from rlmap.index.source import locate_source
    from rlmap.model.session import load_model

    tree = locate_source(source, package=package, repo_url=repo_url)
    for warning in tree.warnings:
        _warn(warning)
    if not tree.version and not tree.commit and tree.repo_url:
        _warn(
            f"no version or git commit found for {tree.package} at {tree.root}; permalinks will point at 'main', "
            "which moves - document a checkout or an installed release"
        )
    cores = os.cpu_count() or 1
    if jobs is not None and jobs > cores:
        _note(f"--jobs {jobs} is more than the {cores} CPU(s) here; using {cores}")
        jobs = cores
    cache = Cache.disabled() if no_cache else Cache.at(cache_dir or default_cache_dir())
    with _progress(quiet) as progress:
        loaded = load_model(tree, cache, jobs=jobs, progress=progress, extensions=extensions)
    if cache.write_failed:
        _warn(f"could not write to the cache in {cache.directory}; the next run will parse again")
    if cache.rejected:
        _note(
            f"ignored {cache.rejected} unusable cache entr{'y' if cache.rejected == 1 else 'ies'} in {cache.directory} "
            "(corrupt, truncated or not written by this rlmap) and rebuilt them"
        )
    return loaded


def _settings(config: Path | None, source: Path | None, package: str | None, profile: Path | None = None) -> Any:
    """``[tool.rlmap]`` (or ``--config``) with the command line's values on top."""
    from rlmap.config import load_config

    return load_config(config).override(source=source, package=package, profile=profile)


def _report_diagnostics(diagnostics: tuple[Diagnostic, ...]) -> int:
    """Print what could not be read; the exit code that reflects it."""
    if not diagnostics:
        return ExitCode.OK
    for diagnostic in diagnostics:
        _warn(str(diagnostic))
    files = len({diagnostic.path for diagnostic in diagnostics})
    _error(
        f"{files} file(s) could not be read or indexed and were skipped - "
        "fix or exclude them; everything else was processed"
    )
    return ExitCode.INCOMPLETE_INPUT


@app.command()
def show(
    name: Annotated[
        str,
        typer.Argument(
            help="A symbol (Collector.rollout, Collector._carrier) or a tensordict key (is_init, collector.traj_ids)."
        ),
    ],
    source: SourceOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
    key: Annotated[bool, typer.Option("--key", help="Look NAME up as a tensordict key only.")] = False,
    cache_dir: CacheDirOption = None,
    no_cache: NoCacheOption = False,
    jobs: JobsOption = None,
    quiet: QuietOption = False,
    package: PackageOption = None,
    profile: ProfileOption = None,
    config: ConfigOption = None,
) -> None:
    """Where a symbol is defined, who calls it, what it calls; every write and read of an attribute or key."""
    from rlmap.errors import SymbolNotFound
    from rlmap.query.lookup import describe, describe_key, find_key, format_description

    settings = _settings(config, source, package, profile)
    package = settings.package
    chosen = _profile(settings.profile, package)
    extensions = chosen.extensions if chosen is not None else ()
    loaded = _load(settings.source, package, cache_dir, no_cache, jobs, quiet, settings.repo_url, extensions)
    model = loaded.model
    if key:
        found = find_key(model, name)
        if found is None:
            raise SymbolNotFound(
                f"no tensordict key '{name}' is read or written in {model.source.stamp()}",
                "check the spelling; nested keys are written collector.traj_ids or ('collector', 'traj_ids')"
                if extensions
                else 'keys are read only under a profile with extensions = ["tensordict"] (pass --profile)',
            )
        result = describe_key(model, found)
        result["query"] = name
    else:
        result = describe(model, name, chosen.glossary if chosen is not None else ())
    if as_json:
        typer.echo(json.dumps(result, indent=2, sort_keys=True))
    else:
        _echo(format_description(result))
    code = _report_diagnostics(model.diagnostics)
    if "ambiguous" in result:
        _error(f"'{name}' is ambiguous ({len(result['ambiguous'])} symbols) - pass a longer suffix or the full name")
        code = max(code, ExitCode.USAGE)
    raise typer.Exit(int(code))


def _profile(profile: Path | None, package: str) -> Any:
    """The profile to use: the one configured or passed, else rlmap's own for ``package``, else None."""
    from rlmap.pages.profile import builtin_profile_path, load_profile

    if profile is not None:
        return load_profile(profile)
    path = builtin_profile_path(package)
    return load_profile(path, f"rlmap/profiles/{package}/{path.name}", builtin=True) if path is not None else None


@app.command()
def graph(
    source: SourceOption = None,
    scope: Annotated[
        list[str] | None,
        typer.Option(
            "--scope", help="Keep callers whose qualified name starts with PREFIX (repeatable).", show_default=False
        ),
    ] = None,
    output_format: Annotated[str, typer.Option("--format", help="json or dot.")] = "json",
    cache_dir: CacheDirOption = None,
    no_cache: NoCacheOption = False,
    jobs: JobsOption = None,
    quiet: QuietOption = False,
    package: PackageOption = None,
    profile: ProfileOption = None,
    config: ConfigOption = None,
) -> None:
    """The resolved call graph: nodes (qualname, kind, path, line, documented) and edges (lines, how resolved)."""
    from rlmap.query.graphdump import graph_dot, graph_json

    if output_format not in ("json", "dot"):
        raise UsageError(f"unknown --format '{output_format}'", "use --format json or --format dot")
    settings = _settings(config, source, package, profile)
    chosen = _profile(settings.profile, settings.package)
    extensions = chosen.extensions if chosen is not None else ()
    loaded = _load(settings.source, settings.package, cache_dir, no_cache, jobs, quiet, settings.repo_url, extensions)
    scopes = tuple(scope or ())
    if output_format == "json":
        typer.echo(json.dumps(graph_json(loaded.model, scopes), indent=1, sort_keys=True))
    else:
        typer.echo(graph_dot(loaded.model, scopes), nl=False)
    raise typer.Exit(int(_report_diagnostics(loaded.model.diagnostics)))


@app.command()
def generate(
    source: SourceOption = None,
    out: Annotated[
        Path | None, typer.Option("--out", help="Output directory. Default: generated_docs.", show_default=False)
    ] = None,
    formats: Annotated[
        str | None, typer.Option("--format", help="Comma-separated: rst, md. Default: rst,md.", show_default=False)
    ] = None,
    templates: Annotated[
        Path | None,
        typer.Option(
            "--templates", help="A directory of templates that override the shipped ones.", show_default=False
        ),
    ] = None,
    profile: ProfileOption = None,
    config: Annotated[
        Path | None,
        typer.Option("--config", help="A TOML file with [tool.rlmap]. Default: ./pyproject.toml.", show_default=False),
    ] = None,
    render_svg: Annotated[bool, typer.Option("--render-svg", help="Also run dot to write an SVG per diagram.")] = False,
    check: Annotated[
        bool, typer.Option("--check", help="Write nothing; exit 1 with a diff when the pages are stale.")
    ] = False,
    cache_dir: CacheDirOption = None,
    no_cache: NoCacheOption = False,
    jobs: JobsOption = None,
    quiet: QuietOption = False,
    package: Annotated[
        str | None, typer.Option("--package", help="Top-level package to document.", rich_help_panel="Advanced")
    ] = None,
) -> None:
    """Write the internals pages (rst and Markdown) for the source, or --check that they are up to date."""
    from rlmap.config import load_config, validate_formats
    from rlmap.output.generate import build_output_isolated, check_output, find_dot, render_svgs, write_output

    settings = load_config(config).override(
        source=source,
        out=out,
        formats=tuple(part.strip() for part in formats.split(",") if part.strip()) if formats is not None else None,
        templates=templates,
        profile=profile,
        package=package,
    )
    validate_formats(settings.formats, "--format" if formats is not None else settings.origin)
    if settings.templates is not None and not settings.templates.is_dir():
        raise UsageError(f"templates directory '{settings.templates}' does not exist", "pass --templates a directory")
    topic_profile = _profile(settings.profile, settings.package)
    if topic_profile is None:
        raise UsageError(
            f"no built-in profile for '{settings.package}'",
            "pass --profile FILE_OR_DIR, or set [tool.rlmap] profile (see rlmap/profiles/torchrl/)",
        )
    dot = find_dot() if render_svg and not check else None
    extensions = topic_profile.extensions
    loaded = _load(settings.source, settings.package, cache_dir, no_cache, jobs, quiet, settings.repo_url, extensions)
    try:
        output = build_output_isolated(loaded.model, loaded.source, topic_profile, settings.formats, settings.templates)
    except RlmapError:
        # a name the profile uses may be missing because its file could not be read: say that first
        _report_diagnostics(loaded.model.diagnostics)
        raise
    incomplete = _report_diagnostics(loaded.model.diagnostics)
    command = _regenerate_command(
        source=source, out=out, formats=formats, templates=templates, profile=profile, config=config, package=package
    )
    if check:
        result = check_output(settings.out, output)
        if result.diff:
            typer.echo(result.diff, nl=False)
            _error(
                f"{len(result.stale) + len(result.obsolete)} generated file(s) in {settings.out} are stale - "
                f"run '{command}' and commit the result"
            )
            raise typer.Exit(int(ExitCode.FINDINGS))
        if not quiet:
            typer.echo(f"rlmap: {len(output.files)} generated files in {settings.out} are up to date", err=True)
        raise typer.Exit(int(incomplete))
    svgs = render_svgs(output) if dot is not None else None
    changed = write_output(settings.out, output, svgs)
    if not quiet:
        typer.echo(
            f"rlmap: wrote {len(changed)} of {len(output.files)} files in {settings.out} ({loaded.source.stamp()})",
            err=True,
        )
    raise typer.Exit(int(incomplete))


@app.command()
def audit(
    source: SourceOption = None,
    docs: Annotated[
        list[Path] | None,
        typer.Option(
            "--docs",
            help="A docs directory or file (rst, md); repeatable. Default: [tool.rlmap] docs.",
            show_default=False,
        ),
    ] = None,
    output_format: Annotated[str, typer.Option("--format", help="text, json, sarif or github.")] = "text",
    baseline: Annotated[
        Path | None, typer.Option("--baseline", help="Findings recorded here are known.", show_default=False)
    ] = None,
    write_baseline: Annotated[
        Path | None, typer.Option("--write-baseline", help="Record the current findings here.", show_default=False)
    ] = None,
    fail_on: Annotated[str, typer.Option("--fail-on", help="any, new (not in the baseline) or none.")] = "any",
    rule: Annotated[
        list[str] | None, typer.Option("--rule", help="Only this rule (repeatable).", show_default=False)
    ] = None,
    explain_rule: Annotated[
        str | None, typer.Option("--explain", help="Describe a rule with examples, then exit.", show_default=False)
    ] = None,
    profile: ProfileOption = None,
    config: Annotated[
        Path | None, typer.Option("--config", help="A TOML file with [tool.rlmap].", show_default=False)
    ] = None,
    cache_dir: CacheDirOption = None,
    no_cache: NoCacheOption = False,
    jobs: JobsOption = None,
    quiet: QuietOption = False,
    package: Annotated[
        str | None, typer.Option("--package", help="Top-level package to audit.", rich_help_panel="Advanced")
    ] = None,
) -> None:
    """Stale references in docs and docstrings, and central code nobody documents."""
    from rlmap.audit.docscan import report_root, scan_docs
    from rlmap.audit.report import (
        REPORT_FORMATS,
        check_baseline_target,
        explain,
        load_baseline,
        render_github,
        render_json,
        render_sarif,
        render_text,
        save_baseline,
    )
    from rlmap.audit.rules import NOTE, RULES, AuditContext, run_audit
    from rlmap.config import load_config

    if explain_rule is not None:
        typer.echo(explain(explain_rule), nl=False)
        raise typer.Exit(0)
    if output_format not in REPORT_FORMATS:
        raise UsageError(f"unknown --format '{output_format}'", f"use one of {', '.join(REPORT_FORMATS)}")
    if fail_on not in ("any", "new", "none"):
        raise UsageError(f"unknown --fail-on '{fail_on}'", "use any, new or none")
    for rule_id in rule or ():
        if rule_id not in RULES:
            raise UsageError(f"unknown --rule '{rule_id}'", f"rules are {', '.join(RULES)}")
    settings = load_config(config).override(source=source, profile=profile, package=package)
    roots = list(docs) if docs else list(settings.docs)
    for root in roots:
        if not root.exists():
            raise UsageError(f"docs path '{root}' does not exist", "pass --docs an existing directory or file")
    known = load_baseline(baseline).fingerprints if baseline is not None else frozenset()
    if write_baseline is not None:
        check_baseline_target(write_baseline)  # fail before the audit, not after it
    topic_profile = _profile(settings.profile, settings.package)
    extensions = topic_profile.extensions if topic_profile is not None else ()
    loaded = _load(settings.source, settings.package, cache_dir, no_cache, jobs, quiet, settings.repo_url, extensions)
    # One root for every path in the report, whatever the working directory: see report_root.
    root = report_root(roots or [loaded.source.root])
    scan = scan_docs(roots, root)
    source_root = loaded.source.root.resolve()
    code_prefix = source_root.relative_to(root).as_posix() + "/" if source_root.is_relative_to(root) else ""
    focus = (topic_profile.focus if topic_profile is not None else ()) or (settings.package,)
    context = AuditContext(
        model=loaded.model,
        docs=scan,
        root=loaded.source.root,
        package=settings.package,
        focus=focus,
        terms=topic_profile.glossary if topic_profile is not None else (),
        is_checkout=loaded.source.is_checkout,
        min_callers=settings.audit_min_callers,
        min_accesses=settings.audit_min_accesses,
        code_prefix="" if code_prefix == "./" else code_prefix,
    )
    findings = run_audit(context, rule or ())
    if output_format == "text":
        typer.echo(render_text(findings, known), nl=False)
    elif output_format == "json":
        typer.echo(render_json(findings, known, loaded.source.stamp()), nl=False)
    elif output_format == "sarif":
        typer.echo(render_sarif(findings, known), nl=False)
    else:
        typer.echo(render_github(findings, known), nl=False)
    if write_baseline is not None:
        save_baseline(write_baseline, findings)
    failing = [f for f in findings if f.severity != NOTE and (fail_on == "any" or f.fingerprint not in known)]
    incomplete = _report_diagnostics(tuple(loaded.model.diagnostics) + scan.diagnostics)
    if write_baseline is not None:  # the job was to record the findings, and they are recorded
        _note(f"recorded {len(findings)} finding(s) in {write_baseline}")
        raise typer.Exit(int(incomplete))
    if fail_on != "none" and failing:
        raise typer.Exit(int(ExitCode.FINDINGS))
    raise typer.Exit(int(incomplete))


def _regenerate_command(**given: Any) -> str:
    """``rlmap generate`` with the options this run was given (``--check`` left out)."""
    parts = ["rlmap", "generate"]
    for option, value in given.items():
        if value is not None:
            parts += [f"--{option.replace('_', '-')}" if option != "formats" else "--format", shlex.quote(str(value))]
    return " ".join(parts)


def _version_callback(value: bool) -> None:
    if value:
        typer.echo(f"rlmap {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version_callback, is_eager=True, help="Print the version.")
    ] = False,
) -> None:
    """rlmap: generated internals documentation for TorchRL."""


def _click_exceptions() -> Any:
    """The click exception classes typer raises: vendored in recent typer, click's before."""
    try:
        from typer._click import exceptions
    except ImportError:  # typer that depends on click instead of vendoring it
        from click import exceptions  # type: ignore[no-redef]
    return exceptions


def main(argv: list[str] | None = None) -> int:
    """Entry point: run the command, map every error to a message and an exit code."""
    command = typer.main.get_command(app)
    errors = _click_exceptions()
    no_args = getattr(errors, "NoArgsIsHelpError", ())
    try:
        result = command.main(args=argv, prog_name="rlmap", standalone_mode=False)
    except RlmapError as error:
        _error(str(error))
        return int(error.exit_code)
    except no_args:  # typer has printed the help already
        return int(ExitCode.USAGE)
    except errors.UsageError as error:
        hint = f"run '{error.ctx.command_path} --help'" if error.ctx else "run 'rlmap --help'"
        _error(f"{error.format_message()} - {hint}")
        return int(ExitCode.USAGE)
    except typer.Exit as done:
        return int(done.exit_code)
    except typer.Abort:
        _error("interrupted")
        return 130
    except errors.ClickException as error:
        _error(error.format_message())
        return int(ExitCode.USAGE)
    except KeyboardInterrupt:
        _error("interrupted")
        return 130
    except BrokenPipeError:
        sys.stderr.close()  # the reader went away (``| head``): not an error worth a message
        return int(ExitCode.OK)
    except Exception as error:
        where = error.__traceback__
        while where is not None and where.tb_next is not None:
            where = where.tb_next
        origin = f" at {Path(where.tb_frame.f_code.co_filename).name}:{where.tb_lineno}" if where else ""
        _error(
            f"internal error: {type(error).__name__}: {error}{origin} - this is a bug in rlmap {__version__}; "
            "please report it with the command you ran (RLMAP_DEBUG=1 shows the traceback)"
        )
        if os.environ.get("RLMAP_DEBUG"):
            raise
        return int(ExitCode.INTERNAL)
    return int(result) if isinstance(result, int) else int(ExitCode.OK)


def run() -> None:
    sys.exit(main())
