"""``rlmap diff A B``: symbols renamed, moved or removed, attributes renamed, calls and guards changed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Literal

import typer

from rlmap.cli import common

DiffFormat = Literal["text", "json"]


@common.app.command()
def diff(
    old: Annotated[str, typer.Argument(help="A package directory, a checkout, or a git revision.")],
    new: Annotated[str, typer.Argument(help="The same, for the newer version.")],
    package: Annotated[str, typer.Option("--package", help="The package's name (its folder).")] = "torchrl",
    repository: Annotated[
        Path, typer.Option("--repo", help="The checkout whose revisions A and B name.", show_default=False)
    ] = Path(),
    scope: Annotated[
        list[str] | None,
        typer.Option("--scope", help="Calls and guards only under this prefix (repeatable).", show_default=False),
    ] = None,
    all_functions: Annotated[
        bool,
        typer.Option(
            "--all-functions", help="Compare calls and guards in every function, not only the profile's flows."
        ),
    ] = False,
    profile: common.ProfileOption = None,
    output_format: Annotated[DiffFormat, typer.Option("--format", help="The report's format.")] = "text",
) -> None:
    """What changed in the internals between two versions (read statically; nothing is checked out).

    With a profile (--profile, or rlmap's own for the package), calls and guards are compared in
    the functions its flow sections document."""
    from rlmap.diff.compare import compare, render_text

    flows = () if all_functions else documented_flows(common.profile_of(profile, package))
    before, after = _snapshot(old, package, repository), _snapshot(new, package, repository)
    result = compare(before, after, tuple(scope or ()), flows)
    if output_format == "json":
        payload = {
            "old": result.old,
            "new": result.new,
            "flows": list(result.flows),
            "changes": [c.as_json() for c in result.changes],
        }
        common.say(json.dumps(payload, indent=2, sort_keys=True))
    else:
        common.say(render_text(result), nl=False)
    raise typer.Exit(int(common.report_diagnostics(before.diagnostics + after.diagnostics)))


def _snapshot(given: str, package: str, repository: Path) -> Any:
    """A package directory, a checkout holding ``package/``, or a revision of ``repository``."""
    from rlmap.diff.snapshot import from_directory, from_git

    path = Path(given)
    if path.is_dir():
        inside = path / package
        return from_directory(inside if inside.is_dir() else path, given)
    return from_git(repository, given, package)


def documented_flows(profile: Any) -> tuple[str, ...]:
    """The functions the profile's flow sections document (none without a profile)."""
    if profile is None:
        return ()
    return tuple(
        sorted({s.spec.function for page in profile.pages.values() for s in page.sections if s.kind == "flow"})
    )
