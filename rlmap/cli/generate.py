"""``rlmap generate``: write the pages, or ``--check`` that the committed ones are current."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Annotated, Any

import typer

from rlmap.cli import common
from rlmap.errors import ExitCode, RlmapError, UsageError
from rlmap.terminal import inert


@common.app.command(
    cls=common.Command,
    short_help="Write the internals pages (rst, Markdown); with --check, say whether they are stale.",
    epilog=common.exit_codes("stale pages under --check"),
)
def generate(
    source: common.SourceOption = None,
    out: Annotated[
        Path | None,
        typer.Option("--out", metavar="DIR", help="Output directory. Default: generated_docs.", show_default=False),
    ] = None,
    formats: Annotated[
        list[str] | None,
        typer.Option(
            "--format",
            metavar="rst,md",
            help="rst, md: comma-separated or repeated. Default: rst,md.",
            show_default=False,
        ),
    ] = None,
    templates: Annotated[
        Path | None,
        typer.Option(
            "--templates",
            metavar="DIR",
            help="A directory of templates that override the shipped ones.",
            show_default=False,
        ),
    ] = None,
    profile: common.ProfileOption = None,
    config: common.ConfigOption = None,
    render_svg: Annotated[bool, typer.Option("--render-svg", help="Also run dot to write an SVG per diagram.")] = False,
    check: Annotated[
        bool, typer.Option("--check", help="Write nothing; exit 1 with a diff when the pages are stale.")
    ] = False,
    docs: Annotated[
        list[Path] | None,
        typer.Option(
            "--docs",
            metavar="PATH",
            help="The docs tree the pages link into (its source directory, or an objects.inv); repeatable. "
            "Roles then target the paths it documents, and its glossary terms are not defined again. "
            "Default: [tool.rlmap] docs.",
            show_default=False,
        ),
    ] = None,
    cache_dir: common.CacheDirOption = None,
    no_cache: common.NoCacheOption = False,
    jobs: common.JobsOption = None,
    quiet: common.QuietOption = False,
    package: common.PackageOption = None,
) -> None:
    """Write the internals pages (rst and Markdown) for the source, or --check that they are up to date."""
    from rlmap.config import validate_formats
    from rlmap.output.generate import Job, build_output_isolated, find_dot
    from rlmap.output.write import refuse_unmakeable
    from rlmap.pages.docstree import load_docs_tree
    from rlmap.pages.header import builtin_profile_folder

    settings = common.read_config(config).override(
        source=source,
        out=out,
        formats=_formats(formats),
        templates=templates,
        profile=profile,
        package=package,
    )
    validate_formats(
        settings.formats, "--format" if formats is not None else f"{settings.origin}: [tool.rlmap].formats"
    )
    if settings.templates is not None and not settings.templates.is_dir():
        what = "is not a directory" if settings.templates.exists() else "does not exist"
        raise UsageError(f"templates directory '{settings.templates}' {what}", "pass --templates a directory")
    if not check:  # (said before the source is looked at: the source may not exist either)
        refuse_unmakeable(settings.out, probe=True)
    documented = common.documented_package(settings)
    topic_profile = common.profile_of(settings.profile, documented)
    if topic_profile is None:
        raise UsageError(
            f"no built-in profile for '{documented}': the pages are declared in a profile",
            f"pass --profile FILE_OR_DIR, or set [tool.rlmap] profile (TorchRL's, to start from: "
            f"{builtin_profile_folder('torchrl')})",
        )
    dot = find_dot() if render_svg and not check else None
    docs_tree = load_docs_tree(list(docs) if docs else list(settings.docs))
    with common.progress_display(quiet) as progress:
        loaded = common.load_model_of(
            settings, topic_profile, cache_dir, no_cache, jobs, quiet, pin_links=True, progress=progress
        )
        if progress:
            progress("build", 0, 0)  # (the sections are counted once the profile is read)
        try:
            job = Job(
                loaded.model,
                loaded.source,
                topic_profile,
                settings.formats,
                settings.templates,
                docs_tree,
                loaded.cache,
            )
            output = build_output_isolated(job, progress)
        except RlmapError:
            # a name the profile uses may be missing because its file could not be read: say that first
            common.report_diagnostics(loaded.model.diagnostics)
            raise
        written = _write(settings.out, output, dot, progress) if not check else None
    incomplete = common.report_diagnostics(
        tuple(loaded.model.diagnostics) + (docs_tree.diagnostics if docs_tree is not None else ())
    )
    command = _regenerate_command(
        source=source,
        out=out,
        formats=",".join(_formats(formats) or ()) if formats else None,
        templates=templates,
        profile=profile,
        config=config,
        package=package,
    )
    command += "".join(f" --docs {shlex.quote(str(path))}" for path in docs or ())
    if check:
        _check(settings.out, output, command + (" --render-svg" if render_svg else ""), quiet, render_svg)
        raise typer.Exit(int(incomplete))
    if not quiet and written is not None:
        changed, drawn_now, removed = written
        gone = f", removed {removed} obsolete" if removed else ""
        drawn = f" and {drawn_now} of {len(output.diagrams)} SVG diagram(s)" if dot is not None else ""
        same = len(output.files) - changed
        if not same:
            kept = ""
        elif changed:
            kept = f": the other {same} were up to date"
        else:  # (with diagrams drawn anew, "all" would say they were up to date too)
            kept = ": the files were up to date" if dot is not None and drawn_now else ": all were up to date"
        common.echo_safe(
            f"rlmap: wrote {changed} of {len(output.files)} files{drawn}{gone} in {settings.out} "
            f"({loaded.source.stamp()}){kept}",
            err=True,
        )
    raise typer.Exit(int(incomplete))


def _write(out: Path, output: Any, dot: str | None, progress: common.Progress | None) -> tuple[int, int, int]:
    """Write the pages (and their SVGs when ``dot`` was found); how many of the pages changed, how
    many SVGs, and how many files of an earlier run were removed (SVGs and the manifest not counted)."""
    from rlmap.output.generate import render_svgs, write_output
    from rlmap.output.write import MANIFEST

    if progress:
        progress("write", 0, len(output.files))
    svgs = render_svgs(output, dot) if dot is not None else None
    changed = write_output(out, output, svgs)
    if progress:
        progress("write", len(output.files), len(output.files))
    pages = sum(path in output.files for path in changed)
    drawn = sum(path in (svgs or {}) for path in changed)
    removed = sum(path not in output.files and path not in (svgs or {}) and path != MANIFEST for path in changed)
    return pages, drawn, removed


def _check(out: Path, output: Any, command: str, quiet: bool, svgs: bool = False) -> None:
    """``--check``: exit 1 with a diff when what the pages say is stale; a note when only links are.
    With ``svgs`` (``--render-svg``), exit 1 too when a diagram has no SVG (their layouts, which
    depend on graphviz's version, are not compared)."""
    from rlmap.output.check import check_output
    from rlmap.output.generate import svg_names

    result = check_output(out, output)
    missing = [name for name in svg_names(output) if not (out / name).is_file()] if svgs else []
    if missing and not result.diff:
        common.say_error(
            f"{len(missing)} diagram(s) have no SVG in {_shown(out)} ({missing[0]}...) - run '{command}' "
            "and commit the result"
        )
        raise typer.Exit(int(ExitCode.FINDINGS))
    # a directory that does not exist, or holds neither a generated file nor the manifest: a wrong
    # --out or out = is likelier than pages never generated
    blank = "does not exist" if not out.exists() else "holds no generated file" if _blank(out, output.files) else ""
    wrong_out = (
        f"{_shown(out)} {blank}: {len(output.files)} generated files and their manifest would be "
        f"written there - check --out (or out in [tool.rlmap]), or run '{command}' and commit the result"
    )
    if result.diff and blank and common.on_terminal():
        # on a terminal no diff of every file as new (into a pipe or a log it is printed: ``git
        # apply`` makes the pages)
        common.say_error(wrong_out)
        raise typer.Exit(int(ExitCode.FINDINGS))
    if result.diff:
        # exact bytes into a file or a pipe (``git apply`` takes them); control characters from
        # the files on disk made inert on a terminal
        common.say(inert(result.diff, keep_newlines=True) if common.on_terminal() else result.diff, nl=False)
        if blank:
            common.say_error(wrong_out)
            raise typer.Exit(int(ExitCode.FINDINGS))
        common.say_error(
            f"{len(result.stale) + len(result.obsolete)} generated file(s) in {_shown(out)} are stale - "
            f"run '{command}' and commit the result (or apply this diff from {result.applies_from} with git apply)"
        )
        raise typer.Exit(int(ExitCode.FINDINGS))
    if result.links_only:  # always said, even with -q: the pages are right, their links are not the newest
        common.say_note(
            f"{len(result.links_only)} generated file(s) say what the code says but link other commits "
            f"(or none, for files that were uncommitted); '{command}' refreshes the links"
        )
    if not quiet:
        common.echo_safe(
            f"rlmap: {len(output.files)} generated files and their manifest in {_shown(out)} are up to date", err=True
        )  # (a stale count counts the manifest among the files)


def _shown(path: Path) -> str:
    """A path for a message: relative to the working directory when it is below it."""
    try:
        return path.resolve().relative_to(Path.cwd().resolve()).as_posix() or "."
    except ValueError:
        return str(path)


def _formats(given: list[str] | None) -> tuple[str, ...] | None:
    """The formats of every ``--format`` (each comma-separated), in order, once each."""
    if given is None:
        return None
    return tuple(dict.fromkeys(part.strip() for value in given for part in value.split(",") if part.strip()))


def _regenerate_command(**given: Any) -> str:
    """``rlmap generate`` with the options this run was given (``--check`` left out)."""
    parts = ["rlmap", "generate"]
    for option, value in given.items():
        if value is not None:
            parts += [f"--{option.replace('_', '-')}" if option != "formats" else "--format", shlex.quote(str(value))]
    return " ".join(parts)


def _blank(out: Path, files: Any) -> bool:
    """Whether ``out`` holds neither the manifest nor any file of the page set (read through no link)."""
    from rlmap.output.write import MANIFEST, is_file_inside

    return not any(is_file_inside(out, relative) for relative in (MANIFEST, *files))
