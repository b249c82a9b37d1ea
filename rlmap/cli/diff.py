"""``rlmap diff A B``: symbols renamed, moved or removed, attributes renamed, calls and guards changed."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal

import typer

from rlmap.cli import common
from rlmap.errors import ExitCode, UsageError, did_you_mean

DiffFormat = Literal["text", "json"]


@common.app.command(
    cls=common.Command,
    short_help="What changed in the internals between two versions.",
    epilog=common.exit_codes("changes, under --exit-code"),
)
def diff(
    old: Annotated[str, typer.Argument(metavar="A", help="A package directory, a checkout, or a git revision.")],
    new: Annotated[str, typer.Argument(metavar="B", help="The same, for the newer version.")],
    package: common.PackageOption = None,
    repository: Annotated[
        Path,
        typer.Option("--repo", metavar="DIR", help="The checkout whose revisions A and B name.", show_default=False),
    ] = Path(),
    scope: Annotated[
        list[str] | None,
        typer.Option(
            "--scope",
            metavar="PREFIX",
            help="Calls and guards only in PREFIX, a dotted prefix: a module, a class (repeatable).",
            show_default=False,
        ),
    ] = None,
    all_functions: Annotated[
        bool,
        typer.Option(
            "--all-functions", help="Compare calls and guards in every function, not only the profile's flows."
        ),
    ] = False,
    profile: common.ProfileOption = None,
    config: common.ConfigOption = None,
    output_format: Annotated[DiffFormat, typer.Option("--format", help="The report's format.")] = "text",
    exit_code: Annotated[
        bool,
        typer.Option("--exit-code", help="Exit 1 when anything changed (as git diff --exit-code), to gate a CI job."),
    ] = False,
    quiet: common.QuietOption = False,
) -> None:
    """What changed in the internals between two versions (read statically; nothing is checked out).

    With a profile (--profile, [tool.rlmap] profile, or rlmap's own for the package), calls and
    guards are compared in the functions its flow sections document."""
    from rlmap.diff.compare import compare, render_text

    settings = common.settings_of(config, None, package, profile)
    package = settings.package
    flows = () if all_functions else documented_flows(common.profile_of(settings.profile, package))
    read_old = _reader(old, package, repository)  # both checked before either is read
    read_new = _reader(new, package, repository)
    with common.progress_display(quiet, first="read") as progress:
        before = read_old(_labelled(progress, old))
        after = read_new(_labelled(progress, new))
    _check_scopes(tuple(scope or ()), before, after)
    if settings.profile is None and not any(
        name == package or name.startswith(package + ".") for snapshot in (before, after) for name in snapshot.symbols
    ):
        flows = ()  # rlmap's own profile for the package, and two versions of other code: it does not apply
    result = compare(before, after, tuple(scope or ()), flows)
    if output_format == "json":
        payload = {
            "old": result.old,
            "new": result.new,
            "flows": list(result.flows),
            "missing_flows": list(result.missing_flows),
            "changes": [c.as_json() for c in result.changes],
        }
        common.say(json.dumps(payload, indent=2, sort_keys=True))
    else:
        common.say(render_text(result), nl=False)
    code = common.report_diagnostics(_said_in(before) + _said_in(after))
    if exit_code and result.changes:
        code = max(code, ExitCode.FINDINGS)
    raise typer.Exit(int(code))


def _said_in(snapshot: Any) -> tuple[Any, ...]:
    """A version's diagnostics, each saying which version it is of (a file may be in both)."""
    from rlmap.index.records import Diagnostic

    return tuple(Diagnostic(d.path, d.line, f"{d.message} (in {snapshot.label})") for d in snapshot.diagnostics)


def _labelled(progress: common.Progress | None, label: str) -> common.Progress | None:
    """``progress`` with the version read named in the phase (``read v0.14.0``)."""
    if progress is None:
        return None
    shown = label if len(label) <= 40 else "..." + label[-37:]
    return lambda phase, done, total: progress(f"{phase} {shown}", done, total)


def _check_scopes(scopes: tuple[str, ...], *snapshots: Any) -> None:
    """A ``--scope`` under which neither version defines anything is a usage error, not a diff
    that says nothing changed."""
    from rlmap.scopes import in_scope

    common.refuse_empty_scopes(scopes)
    names = sorted({name for snapshot in snapshots for name in snapshot.symbols})
    for prefix in scopes:
        if not any(in_scope(name, (prefix,)) for name in names):
            meant = _meant(prefix, names)
            raise UsageError(
                f"--scope '{prefix}' names no package, module, class or function of either version",
                did_you_mean(meant)
                if meant
                else "pass a dotted prefix of full qualified names, e.g. torchrl.collectors",
            )


def _meant(prefix: str, names: list[str]) -> list[str]:
    """The full names a ``--scope`` may mean, as ``graph --scope`` offers them: those it is the
    last parts of (``Collector`` -> ``torchrl.collectors._single.Collector``), else the prefixes of
    as many parts spelled like it (``torchrl.colectors`` -> ``torchrl.collectors``)."""
    import difflib

    suffixed = [name for name in names if name.endswith("." + prefix)]
    if suffixed:
        return suffixed[:3]
    depth = prefix.count(".") + 1
    prefixes = sorted({".".join(name.split(".")[:depth]) for name in names if name.count(".") + 1 >= depth})
    return difflib.get_close_matches(prefix, prefixes, n=3, cutoff=0.8)


def _reader(given: str, package: str, repository: Path) -> Callable[[common.Progress | None], Any]:
    """What reads a package directory, a checkout holding ``package/``, or a revision of
    ``repository``: ``given`` is checked now (a usage error before any work), read when called."""
    from rlmap.diff.snapshot import checkout_of, from_directory, from_git, is_revision

    if not given.strip():  # (``Path("")`` is the working directory: an empty argument is a slip, not ``.``)
        raise UsageError("an empty version to compare", "pass a package directory, a checkout, or a revision")
    path = Path(given)
    written_as_path = given.startswith(("./", "../", "/")) or path.is_absolute()
    revision = not written_as_path and is_revision(repository, given)  # (asked once)
    if path.is_dir():
        if revision:  # a folder a pull request adds (``HEAD/``, ``origin/main/``) must not stand in for it
            raise UsageError(
                f"'{given}' is both a directory and a revision of {repository}",
                f"write ./{given} for the directory, or the commit's id for the revision",
            )
        inside = path / package
        if package.strip("/") not in ("", ".") and inside.is_dir():  # a checkout holding the package
            return lambda progress: from_directory(inside, given, progress, package=True)
        # the package's own folder (a namespace package has no __init__.py), or a folder of modules
        named = path.resolve().name == package.rpartition(".")[2]
        return lambda progress: from_directory(path, given, progress, package=True if named else None)
    if revision:  # (a file named like a revision is no package: the revision is meant)
        return lambda progress: from_git(repository, given, package, progress)
    if path.exists() or path.is_symlink():
        raise UsageError(f"'{given}' is not a directory", "pass a package directory, a checkout, or a revision")
    if written_as_path:  # (a path, not a revision: only its absence to say)
        raise UsageError(f"'{given}' does not exist", "pass an existing package directory or checkout")
    checkout_of(  # (no checkout: said as such, not as a revision it lacks)
        repository,
        f"'{given}' is not a directory, and '{repository}' is not inside a git checkout to read a revision from",
        "pass an existing package directory, or --repo the checkout whose revision it names",
    )
    raise UsageError(
        f"'{given}' is neither a directory nor a revision of the checkout at {repository}",
        "pass a package directory, a checkout, or a commit, branch or tag (--repo names the checkout)",
    )


def documented_flows(profile: Any) -> tuple[str, ...]:
    """The functions the profile's flow sections document (none without a profile)."""
    if profile is None:
        return ()
    return tuple(
        sorted({s.spec.function for page in profile.pages.values() for s in page.sections if s.kind == "flow"})
    )
