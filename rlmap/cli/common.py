"""What every command shares: the typer app, the options, terminal output, and loading the
model, the configuration and the profile.  Only the modules of :mod:`rlmap.cli` print or exit."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer

from rlmap.errors import ExitCode
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


def echo_safe(text: str, err: bool = False, nl: bool = True) -> None:
    typer.echo(terminal_safe(text), err=err, nl=nl)


def say_error(message: str) -> None:
    echo_safe(f"rlmap: error: {message}", err=True)


def say_warning(message: str) -> None:
    echo_safe(f"rlmap: warning: {message}", err=True)


def say_note(message: str) -> None:
    echo_safe(f"rlmap: note: {message}", err=True)


@contextmanager
def progress_display(quiet: bool) -> Iterator[Callable[[int, int], None] | None]:
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


def load_model_of(
    settings: Any,
    profile: Any,
    cache_dir: Path | None,
    no_cache: bool,
    jobs: int | None,
    quiet: bool,
    pin_links: bool = False,
) -> Any:
    """The resolved model of the configured source, with key accesses under the profile's extensions.

    ``pin_links`` (for committed pages): in a git checkout, link each file at the last commit that
    changed it, and not at all when the worktree changed it (see :mod:`rlmap.index.history`).
    """
    from rlmap.index.source import locate_source
    from rlmap.model.session import load_model

    extensions = profile.extensions if profile is not None else ()
    tree = locate_source(settings.source, package=settings.package, repo_url=settings.repo_url)
    for warning in tree.warnings:
        say_warning(warning)
    if not tree.version and not tree.commit and tree.repo_url:
        say_warning(
            f"no version or git commit found for {tree.package} at {tree.root}; permalinks will point at 'main', "
            "which moves - document a checkout or an installed release"
        )
    cores = os.cpu_count() or 1
    if jobs is not None and jobs > cores:
        say_note(f"--jobs {jobs} is more than the {cores} CPU(s) here; using {cores}")
        jobs = cores
    cache = Cache.disabled() if no_cache else Cache.at(cache_dir or default_cache_dir())
    with progress_display(quiet) as progress:
        loaded = load_model(tree, cache, jobs=jobs, progress=progress, extensions=extensions)
    if cache.write_failed:
        say_warning(f"could not write to the cache in {cache.directory}; the next run will parse again")
    if cache.rejected:
        say_note(
            f"ignored {cache.rejected} unusable cache entr{'y' if cache.rejected == 1 else 'ies'} in {cache.directory} "
            "(corrupt, truncated or not written by this rlmap) and rebuilt them"
        )
    if pin_links and tree.commit and tree.repo_url:
        pin_permalinks(loaded)
    return loaded


def settings_of(config: Path | None, source: Path | None, package: str | None, profile: Path | None = None) -> Any:
    """``[tool.rlmap]`` (or ``--config``) with the command line's values on top."""
    from rlmap.config import load_config

    return load_config(config).override(source=source, package=package, profile=profile)


def report_diagnostics(diagnostics: tuple[Diagnostic, ...]) -> int:
    """Print what could not be read; the exit code that reflects it."""
    if not diagnostics:
        return ExitCode.OK
    for diagnostic in diagnostics:
        say_warning(str(diagnostic))
    files = len({diagnostic.path for diagnostic in diagnostics})
    say_error(
        f"{files} file(s) could not be read or indexed and were skipped - "
        "fix or exclude them; everything else was processed"
    )
    return ExitCode.INCOMPLETE_INPUT


def profile_of(profile: Path | None, package: str) -> Any:
    """The profile to use: the one configured or passed, else rlmap's own for ``package``, else None."""
    from rlmap.pages.profile import builtin_profile_path, load_profile

    if profile is not None:
        return load_profile(profile)
    path = builtin_profile_path(package)
    return load_profile(path, f"rlmap/profiles/{package}/{path.name}", builtin=True) if path is not None else None


def pin_permalinks(loaded: Any) -> None:
    """Pin the model's links per file; say which files get none, and when pinning is impossible."""
    from dataclasses import replace

    from rlmap.index.history import pin_files

    tree = loaded.source
    files = {}
    for path in tree.python_files():
        try:
            files[tree.relpath(path)] = path.read_bytes()
        except OSError:
            continue  # the indexer has reported it
    pins = pin_files(tree.root, files)
    if pins.problem:
        say_warning(f"links point at HEAD ({tree.commit[:12]}), so every commit changes them: {pins.problem}")
        return
    loaded.model.source = replace(loaded.model.source, pins=pins.refs, unlinked=pins.unlinked)
    if pins.unlinked:
        shown = ", ".join(sorted(pins.unlinked)[:5]) + (", ..." if len(pins.unlinked) > 5 else "")
        say_warning(
            f"{len(pins.unlinked)} file(s) differ from their last commit ({shown}): their lines are shown "
            "without a link - commit them for links that stay right"
        )
