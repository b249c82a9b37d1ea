"""``rlmap audit``: stale references in docs and docstrings, and central code nobody documents."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import typer

from rlmap.cli import common
from rlmap.errors import ExitCode, UsageError


def _rule_ids(incomplete: str) -> list[str]:
    """The rules' ids, for shell completion of --rule and --explain."""
    from rlmap.audit.rules import RULES

    return [rule for rule in RULES if rule.startswith(incomplete)]


@common.app.command(
    cls=common.Command,
    short_help="Stale references in docs and docstrings; central code undocumented.",
    epilog=common.exit_codes("findings (under --fail-on), or coverage under --fail-under"),
)
def audit(
    source: common.SourceOption = None,
    docs: Annotated[
        list[Path] | None,
        typer.Option(
            "--docs",
            metavar="PATH",
            help="A docs directory or file (rst, md); repeatable. Default: [tool.rlmap] docs.",
            show_default=False,
        ),
    ] = None,
    output_format: Annotated[common.AuditFormat, typer.Option("--format", help="The report's format.")] = "text",
    baseline: Annotated[
        Path | None,
        typer.Option("--baseline", metavar="FILE", help="Findings recorded here are known.", show_default=False),
    ] = None,
    write_baseline: Annotated[
        Path | None,
        typer.Option("--write-baseline", metavar="FILE", help="Record the current findings here.", show_default=False),
    ] = None,
    fail_on: Annotated[
        common.FailOn | None,
        typer.Option(
            "--fail-on",
            help="Exit 1 on any finding, on new ones (not in the baseline), or never. "
            "Default: new with --baseline, else any.",
            show_default=False,
        ),
    ] = None,
    rule: Annotated[
        list[str] | None,
        typer.Option(
            "--rule",
            metavar="ID",
            help="Only this rule (repeatable; rlmap audit --explain ID describes it).",
            show_default=False,
            autocompletion=_rule_ids,
        ),
    ] = None,
    explain_rule: Annotated[
        str | None,
        typer.Option(
            "--explain",
            metavar="ID",
            help="Describe a rule with examples, then exit (all: list every rule).",
            show_default=False,
            autocompletion=_rule_ids,
        ),
    ] = None,
    fix: Annotated[
        bool, typer.Option("--fix", help="Apply the certain replacements (docs pages and docstrings).")
    ] = False,
    show_diff: Annotated[
        bool, typer.Option("--diff", help="Show the certain replacements as a unified diff; write nothing.")
    ] = False,
    coverage: Annotated[
        bool, typer.Option("--coverage", help="Docstring coverage of the focus subsystems, per file; then exit.")
    ] = False,
    fail_under: Annotated[
        float | None,
        typer.Option(
            "--fail-under",
            metavar="PCT",
            help="With --coverage: exit 1 below this percentage.",
            show_default=False,
            min=0,
            max=100,
        ),
    ] = None,
    exclude: Annotated[
        list[str] | None,
        typer.Option(
            "--exclude",
            metavar="GLOB",
            help="With --coverage: leave out files matching this glob (repeatable; adds to [tool.rlmap] exclude).",
            show_default=False,
        ),
    ] = None,
    since: Annotated[
        str | None,
        typer.Option(
            "--since", metavar="REV", help="Infer renames from git history since this revision.", show_default=False
        ),
    ] = None,
    profile: common.ProfileOption = None,
    config: common.ConfigOption = None,
    cache_dir: common.CacheDirOption = None,
    no_cache: common.NoCacheOption = False,
    jobs: common.JobsOption = None,
    quiet: common.QuietOption = False,
    package: common.PackageOption = None,
) -> None:
    """Stale references in docs and docstrings, and central code nobody documents."""
    from rlmap.audit.report import check_baseline_target, load_baseline, save_baseline
    from rlmap.audit.rules import NOTE, RULES, run_audit

    _check_options(explain_rule, rule or (), fix, show_diff, output_format)
    if fail_under is not None and math.isnan(fail_under):  # between 0 and 100 for click, and under nothing
        raise UsageError("--fail-under 'nan' is not a percentage", "pass a number from 0 to 100")
    if not coverage and (fail_under is not None or exclude):  # silently ignored, a CI gate would never fail
        raise UsageError("--fail-under and --exclude apply to --coverage", "add --coverage, or leave them out")
    if coverage and (fix or show_diff):
        raise UsageError("--coverage reports and exits: it fixes nothing", "run --fix or --diff without --coverage")
    if coverage:  # what only the findings read: silently ignored, a baseline would never be written
        unused = [
            option
            for option, given in (
                ("--docs", docs),
                ("--rule", rule),
                ("--baseline", baseline),
                ("--write-baseline", write_baseline),
                ("--since", since),
                ("--fail-on", fail_on),  # (--fail-under is coverage's gate)
            )
            if given
        ]
        if unused:
            raise UsageError(
                f"--coverage reports docstring coverage alone: {', '.join(unused)} apply to the findings",
                "run the audit without --coverage for them, and --coverage on its own",
            )
    settings = common.read_config(config).override(source=source, profile=profile, package=package)
    roots = list(docs) if docs else list(settings.docs)
    configured = None if docs else settings.origin  # (a path the configuration gave is fixed there)
    for root in roots if not coverage else ():  # (coverage reads no docs: a configured path is not its)
        _check_docs_root(root, configured)
    known = load_baseline(baseline).fingerprints if baseline is not None else frozenset()
    if write_baseline is not None:
        check_baseline_target(write_baseline)  # fail before the audit, not after it
    topic_profile = common.profile_of(settings.profile, common.documented_package(settings))
    if coverage:
        if output_format not in ("text", "json"):  # a table of files: no findings to annotate
            raise UsageError(f"--coverage has no {output_format} report", "pass --format text or --format json")
        loaded = common.load_model_of(settings, topic_profile, cache_dir, no_cache, jobs, quiet)
        excluded = (*settings.exclude, *(exclude or ()))
        _coverage(loaded, settings, topic_profile, output_format, fail_under, excluded)
    _check_something_to_read(roots, rule or (), settings.origin)
    loaded = common.load_model_of(settings, topic_profile, cache_dir, no_cache, jobs, quiet)
    with common.progress_display(quiet, first="read") as progress:
        scan, context = _context(settings, topic_profile, loaded, roots, _page_cache(cache_dir, no_cache), progress)
        if since is not None:
            context.history, context.history_rev = _history(loaded.source.root, settings.package, since), since
        checked = len(set(rule)) if rule else len(RULES)
        if progress is not None:
            progress("check", 0, 0)  # the rules: not counted as they go, said when they start and when done
        findings = run_audit(context, rule or ())
        if progress is not None:
            progress("check", checked, checked)
    if fix or show_diff:
        findings = _fix(findings, context, show_diff=show_diff)
    notes = tuple(loaded.model.diagnostics) + scan.diagnostics
    # the step summary first: the annotations say where the findings they leave out are listed
    summarized = _write_step_summary(findings, known) if output_format == "github" else False
    on_terminal = output_format == "text" and common.on_terminal()
    width = common.terminal_columns() if on_terminal else 0  # into a pipe or a file: lines stay whole
    if write_baseline is not None and output_format == "text":
        # the job is to record the findings: the counts say what was recorded, the file holds them
        from rlmap.audit.report import text_summary

        report = "" if quiet else text_summary(findings, known, baseline is not None) + "\n"
    else:
        report = _report(
            output_format, findings, known, loaded.source.stamp(), not notes, notes, summarized, quiet, width,
            baseline is not None,
        )  # fmt: skip
    if on_terminal and report.count("\n") > common.terminal_lines():
        common.page(report.rstrip("\n"))
    else:
        common.say(report, nl=False)
    incomplete = common.report_diagnostics(notes)  # (after the report they qualify, as show and graph say them)
    if write_baseline is not None:  # the job was to record the findings, and they are recorded
        save_baseline(write_baseline, findings)
        if not quiet:
            common.say_note(f"recorded {len(findings)} finding(s) in {write_baseline}")
        raise typer.Exit(int(incomplete))
    fail_on = fail_on or ("new" if baseline is not None else "any")  # (what a baseline is kept for)
    failing = [f for f in findings if f.severity != NOTE and (fail_on == "any" or not f.known_in(known))]
    if fail_on != "none" and failing:
        raise typer.Exit(int(ExitCode.FINDINGS))
    raise typer.Exit(int(incomplete))


def _coverage(
    loaded: Any, settings: Any, profile: Any, output_format: str, fail_under: float | None, exclude: tuple[str, ...]
) -> None:
    """Print docstring coverage; exit 1 when it is under ``fail_under``, 3 when input was skipped."""
    import json

    from rlmap.audit.coverage import coverage_json, render_coverage
    from rlmap.query.coverage import docstring_coverage

    focus = (profile.focus if profile is not None else ()) or (settings.package,)
    result = docstring_coverage(loaded.model, tuple(focus), exclude)
    if output_format == "json":
        common.say(json.dumps(coverage_json(result), indent=2, sort_keys=True))
    else:
        common.say(render_coverage(result), nl=False)
    incomplete = common.report_diagnostics(tuple(loaded.model.diagnostics))
    if fail_under is not None and result.total.percent < fail_under:
        common.say_error(f"docstring coverage {result.total.percent:.1f}% is under --fail-under {fail_under:g}%")
        raise typer.Exit(int(ExitCode.FINDINGS))
    raise typer.Exit(int(incomplete))


def _history(source_root: Path, package: str, since: str) -> dict[str, str]:
    """What was renamed or moved in the package since ``since`` (both versions read statically)."""
    from rlmap.diff.compare import compare
    from rlmap.diff.snapshot import from_directory, from_git, package_in_repository

    package_dir = source_root / package if (source_root / package).is_dir() else source_root
    top, folder = package_in_repository(
        package_dir, "--since reads the older version from git: audit a source inside a checkout, or leave out --since"
    )
    before = from_git(top, since, folder, name=package_dir.name)  # (named as the working tree names it)
    return compare(before, from_directory(package_dir, "working tree")).renames()


def _fix(findings: list[Any], context: Any, *, show_diff: bool) -> list[Any]:
    """Apply (or, with ``show_diff``, show) the certain edits; the findings left are returned."""
    from rlmap.audit.fix import plan_fixes, write_fixes

    root, code_root, prefix = context.report_root, context.root, context.code_prefix
    plan = plan_fixes(findings, root, code_root, prefix)
    for reason in plan.skipped:  # (--diff edits nothing: what it leaves out is not shown)
        common.say_note(reason.replace("; not edited", "; not shown") if show_diff else reason)
    if show_diff:
        common.say(plan.diff(), nl=False)
        return findings
    write_fixes(plan, root, code_root, prefix)
    fixed = {fix.path for fix in plan.files}
    left = [f for f in findings if not (f.certain and f.edit is not None and f.path in fixed)]
    uncertain = sum(1 for f in left if f.suggestion and not f.certain and f.rule.startswith("stale"))
    by_hand = [f for f in left if f.certain and f.suggestion and f.rule.startswith("stale")]
    edits = sum(fix.edits for fix in plan.files)
    shown = "".join(f"\n  {f.path}:{f.line}: {f.name} -> {f.suggestion}" for f in by_hand[:_BY_HAND_SHOWN])
    more = f"\n  and {len(by_hand) - _BY_HAND_SHOWN} more" if len(by_hand) > _BY_HAND_SHOWN else ""
    common.say_note(
        f"fixed {edits} reference(s) in {len(plan.files)} file(s)"
        + "".join(f"\n  {fix.path}: {fix.edits}" for fix in plan.files)
        + f"\n{uncertain} stale finding(s) with an uncertain suggestion left as they are"
        + (
            f"\n{len(by_hand)} stale finding(s) with a certain suggestion left to fix by hand (rlmap does not "
            f"rewrite them: a Markdown code span, an import of several names, a file it may not edit){shown}{more}"
            if by_hand
            else ""
        )
    )
    return left


_BY_HAND_SHOWN = 5  # the findings left to fix by hand that --fix names (the others are counted)


def _check_options(
    explain_rule: str | None, rules: Sequence[str], fix: bool, show_diff: bool, output_format: str = "text"
) -> None:
    """``--explain`` answers and exits; an unknown rule, or ``--fix`` with ``--diff``, is a usage
    error (typer checks --format and --fail-on against their choices)."""
    from rlmap.audit.catalog import unknown_rule_hint
    from rlmap.audit.report import explain
    from rlmap.audit.rules import RULES

    if fix and show_diff:  # one writes, the other promises to write nothing
        raise UsageError("--fix and --diff cannot be used together", "--diff to see the edits, --fix to apply them")
    if show_diff and output_format in ("json", "sarif"):  # the diff would come first, and no tool reads that
        raise UsageError(
            f"--diff prints a unified diff, which a --format {output_format} document cannot hold",
            f"run --diff with --format text, and --format {output_format} in a run of its own",
        )
    if explain_rule is not None:
        if output_format not in ("text", "json"):
            raise UsageError(f"--explain has no {output_format} form", "pass --format text or --format json")
        common.say(explain(explain_rule, as_json=output_format == "json"), nl=False)
        raise typer.Exit(0)
    for rule_id in rules:
        if rule_id not in RULES:
            raise UsageError(f"unknown --rule '{rule_id}'", unknown_rule_hint(rule_id))


def _check_docs_root(root: Path, configured: str | None = None) -> None:
    """A docs path holds what the scan reads (:func:`rlmap.audit.docscan.scan_docs`): a directory
    with a ``.rst`` or ``.md`` page, or a sphinx-gallery script defining a label, under it; a
    page; or a Sphinx inventory (``objects.inv``).  Any other path would be audited as docs with
    no page, and every central symbol reported as documented nowhere.  ``configured``: the file
    whose ``[tool.rlmap] docs`` gave the path (``None``: ``--docs`` did), which the error names."""
    from rlmap.audit.docscan import DOCS_SUFFIXES, defines_gallery_label
    from rlmap.readfile import walk_files

    where = f"{configured}: [tool.rlmap] docs: " if configured else ""

    def fail(problem: str, hint: str) -> UsageError:
        return UsageError(where + problem, "fix the path in that file, or pass --docs" if configured else hint)

    if not root.exists():
        raise fail(f"docs path '{root}' does not exist", "pass --docs an existing directory or file")
    if root.is_dir():
        if not any(
            path.suffix in DOCS_SUFFIXES or (path.suffix == ".py" and defines_gallery_label(path))
            for path in walk_files(root, lambda name: name.endswith((".py", *DOCS_SUFFIXES)))[0]
        ):
            raise fail(
                f"no .rst or .md page (nor a sphinx-gallery script with a label) under docs path '{root}'",
                "pass --docs the docs' source directory",
            )
    elif root.resolve().suffix.lower() not in (*DOCS_SUFFIXES, ".markdown", ".inv"):
        raise fail(
            f"docs path '{root}' is not a page (.rst, .md) nor a Sphinx inventory (.inv)",
            "pass --docs a docs directory, a page, or a built objects.inv",
        )


def _check_something_to_read(roots: list[Path], rules: Sequence[str], origin: str) -> None:
    """No docs is an error, unless only rules that read the code alone (its docstrings included)
    were asked for."""
    from rlmap.audit.coderules import REPORTS
    from rlmap.audit.rules import DOCSTRING_RULES

    code_rules = set().union(*REPORTS.values()) | DOCSTRING_RULES
    if roots or (rules and set(rules) <= code_rules):
        return
    where = "" if origin == "built-in defaults" else f" in {origin}"
    raise UsageError(
        f"nothing to audit: no docs given{where}",
        "pass --docs DIR (repeatable) or set docs = [...] under [tool.rlmap]; to check docstrings alone, "
        f"pass --rule for each of {', '.join(sorted(code_rules))}",
    )


def _context(
    settings: Any, profile: Any, loaded: Any, roots: list[Path], cache: Any, progress: Any = None
) -> tuple[Any, Any]:
    """The docs scanned and the audit's context: one root for every path in the report, whatever
    the working directory (see ``report_root``); parsed pages come from ``cache`` when unchanged."""
    from rlmap.audit.docscan import report_root, scan_docs
    from rlmap.audit.rules import AuditContext

    root = report_root(roots or [loaded.source.root])
    scan = scan_docs(roots, root, cache, progress)
    source_root = loaded.source.root.resolve()
    code_prefix = source_root.relative_to(root).as_posix() + "/" if source_root.is_relative_to(root) else ""
    context = AuditContext(
        model=loaded.model,
        docs=scan,
        root=loaded.source.root,
        source_tree=loaded.source,
        package=settings.package,
        focus=(profile.focus if profile is not None else ()) or (settings.package,),
        terms=profile.glossary if profile is not None else (),
        is_checkout=loaded.source.is_checkout,
        min_callers=settings.audit_min_callers,
        min_accesses=settings.audit_min_accesses,
        code_prefix="" if code_prefix == "./" else code_prefix,
        report_root=root,
        cache=cache,
    )
    return scan, context


def _page_cache(cache_dir: Path | None, no_cache: bool) -> Any:
    """The cache the model came from, for parsed pages too (the model's loading said if it is unusable)."""
    return common.cache_of(cache_dir, no_cache)


def _write_step_summary(findings: list[Any], known: frozenset[str]) -> bool:
    """Append the findings table to the file GitHub Actions names in ``$GITHUB_STEP_SUMMARY``;
    whether it was written."""
    import os

    from rlmap.audit.report import step_summary

    target = os.environ.get("GITHUB_STEP_SUMMARY")
    if not target:
        return False
    try:
        with open(target, "a", encoding="utf-8", newline="\n") as handle:
            handle.write(step_summary(findings, known))
    except OSError as error:
        common.say_warning(f"cannot write the step summary to {target} ({error.strerror}); annotations only")
        return False
    return True


def _report(
    output_format: str,
    findings: list[Any],
    known: frozenset[str],
    stamp: str,
    complete: bool,
    notes: tuple[Any, ...],
    summarized: bool = False,
    quiet: bool = False,
    width: int = 0,
    baselined: bool = True,
) -> str:
    from rlmap.audit.report import render_github, render_json, render_sarif, render_text

    if output_format == "json":
        return render_json(findings, known, stamp, notes)
    if output_format == "sarif":
        return render_sarif(findings, known, complete, notes)
    if output_format == "github":
        return render_github(findings, known, summarized, notes)
    return render_text(findings, known, summary_line=not quiet, width=width, baselined=baselined)
