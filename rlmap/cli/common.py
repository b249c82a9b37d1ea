"""What every command shares: the typer app, the options, terminal output, and loading the
model, the configuration and the profile.  Only the modules of :mod:`rlmap.cli` print or exit."""

from __future__ import annotations

import codecs
import errno
import gc
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Annotated, Any, Literal

import typer
from typer.core import TyperCommand, TyperGroup

from rlmap.errors import ExitCode, UsageError, WriteFailed
from rlmap.index.cache import Cache, default_cache_dir
from rlmap.index.records import Diagnostic
from rlmap.terminal import inert

# The commands in the order the README presents them (``rlmap --help`` lists them so).
COMMAND_ORDER = ("generate", "audit", "diff", "show", "graph")


class _KeptToExit:
    """What the ``rlmap`` process keeps to its end (see :func:`rlmap.cli.run`, which leaves without
    freeing it: torchrl's resolved model is millions of objects, 0.13 s to free one by one for
    nothing); ``None`` where main() runs in a longer process (a test), which frees as usual."""

    values: list[Any] | None = None


def keep_to_exit(value: Any) -> None:
    """Keep ``value`` to the end of an ``rlmap`` process (:func:`rlmap.cli.run`); nothing elsewhere."""
    if _KeptToExit.values is not None:
        _KeptToExit.values.append(value)


def let_go_kept() -> None:
    """Let go what :func:`keep_to_exit` kept so far (a command run again, after a damaged cache
    entry, does not hold the first run's model through its own)."""
    if _KeptToExit.values is not None:
        _KeptToExit.values.clear()


def kept_to_exit() -> None:
    """From now on, :func:`keep_to_exit` keeps what it is given (the process leaves without freeing it)."""
    if _KeptToExit.values is None:
        _KeptToExit.values = []


@contextmanager
def _words_kept_whole() -> Iterator[None]:
    """Help text wrapped without breaking a word at a hyphen (``--fail-`` / ``under``): the
    wrapper click's formatting makes, made with ``break_on_hyphens=False`` for the while.  Where
    the click that typer runs on lays its wrapper out otherwise, help wraps as click does."""
    formatter = TyperCommand.context_class.formatter_class
    package = formatter.__module__.rpartition(".")[0]
    wrapping = sys.modules.get(f"{package}._textwrap")
    wrapper = getattr(wrapping, "TextWrapper", None)
    if wrapper is None:
        yield
        return

    class Whole(wrapper):  # type: ignore[misc, valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            kwargs.setdefault("break_on_hyphens", False)
            super().__init__(*args, **kwargs)

    wrapping.TextWrapper = Whole  # type: ignore[union-attr]
    try:
        yield
    finally:
        wrapping.TextWrapper = wrapper  # type: ignore[union-attr]


class _HelpFormatter(TyperCommand.context_class.formatter_class):  # type: ignore[misc, name-defined]
    def write_usage(self, *args: Any, **kwargs: Any) -> None:
        with _words_kept_whole():
            super().write_usage(*args, **kwargs)

    def write_text(self, *args: Any, **kwargs: Any) -> None:
        with _words_kept_whole():
            super().write_text(*args, **kwargs)

    def write_dl(self, *args: Any, **kwargs: Any) -> None:
        with _words_kept_whole():
            super().write_dl(*args, **kwargs)


class _Context(TyperCommand.context_class):  # type: ignore[misc, name-defined, valid-type]
    formatter_class = _HelpFormatter


class _ReadmeOrder(TyperGroup):
    context_class = _Context

    def list_commands(self, ctx: Any) -> list[str]:
        names = super().list_commands(ctx)
        rank = {name: position for position, name in enumerate(COMMAND_ORDER)}
        return sorted(names, key=lambda name: (rank.get(name, len(rank)), name))


class Command(TyperCommand):
    """A command whose usage line reads ``show [OPTIONS] NAME`` (typer writes ``{NAME}``), and
    whose help keeps an option's name whole (:func:`_words_kept_whole`).

    Commands pass it as ``@app.command(cls=common.Command)``."""

    context_class = _Context

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        pieces = super().collect_usage_pieces(ctx)
        return [piece[1:-1] if piece[:1] == "{" and piece[-1:] == "}" else piece for piece in pieces]


app = typer.Typer(
    cls=_ReadmeOrder,
    name="rlmap",
    help="Internals documentation for TorchRL, generated from its source (never imported).",
    add_completion=True,  # --install-completion / --show-completion; NAME completes from the cached model
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # help text is literal: "[tool.rlmap]" must not be read as markup
    context_settings={"help_option_names": ["-h", "--help"]},
)


def exit_codes(outcome: str = "", usage: str = "") -> str:
    """The exit codes a CI job reads (DESIGN.md's table, :class:`rlmap.errors.ExitCode`), as a
    command's help ends: ``outcome``, what exit 1 means for it (none: it has no 1); ``usage``,
    the usage errors of its own before the common ones."""
    return (
        "Exit codes: 0 done; "
        + (f"1 {outcome}; " if outcome else "")
        + f"2 {usage + ', ' if usage else ''}a bad option, source or configuration; 3 some input could not "
        "be read (the rest was done); 70 a bug in rlmap; 120 the output could not be written; 130 interrupted."
    )


SourceOption = Annotated[
    Path | None,
    typer.Option(
        "--source",
        metavar="PATH",
        help=(
            "A checkout holding torchrl/, the torchrl package directory, or any directory of Python code "
            "(with --package). Default: the installed torchrl."
        ),
        show_default=False,
    ),
]
CacheDirOption = Annotated[
    Path | None,
    typer.Option(
        "--cache-dir", metavar="DIR", help="Where parsed files are cached. Default: ~/.cache/rlmap.", show_default=False
    ),
]
NoCacheOption = Annotated[bool, typer.Option("--no-cache", help="Parse everything; read and write no cache.")]
JobsOption = Annotated[
    int | None,
    typer.Option(
        "--jobs",
        "-j",
        metavar="N",
        min=1,
        help="Parser processes; above 1, the value flow is also solved in a process of its own. Default: one per core.",
        show_default=False,
    ),
]
QuietOption = Annotated[
    bool, typer.Option("--quiet", "-q", help="No progress display, nor the summary line a command ends with.")
]
PackageOption = Annotated[
    str | None,
    typer.Option(
        "--package",
        metavar="NAME",
        help="Top-level package to analyse. Default: [tool.rlmap] package, else torchrl.",
        rich_help_panel="Advanced",
        show_default=False,
    ),
]
ProfileOption = Annotated[
    Path | None,
    typer.Option(
        "--profile",
        metavar="FILE|DIR",
        help="A profile (a TOML file, or a directory holding profile.toml): pages, prose, glossary, extensions. "
        "Default: [tool.rlmap] profile, else the built-in one for the package.",
        show_default=False,
    ),
]
ConfigOption = Annotated[
    Path | None,
    typer.Option(
        "--config",
        metavar="FILE",
        help="A TOML file with [tool.rlmap]. Default: the nearest pyproject.toml holding one, from here up.",
        show_default=False,
    ),
]

# Closed sets of values: typer lists them in --help and refuses anything else with the choices.
# (``Annotated[GraphFormat, typer.Option("--format", ...)]``; audit's --format and --fail-on can
# use AuditFormat and FailOn the same way.)
GraphFormat = Literal["json", "dot", "pycg"]
AuditFormat = Literal["text", "json", "sarif", "github"]
ShowFormat = Literal["text", "json"]
FailOn = Literal["any", "new", "none"]


def terminal_safe(text: str) -> str:
    """``text`` with every control character (tab and newline aside) made visible and inert."""
    return inert(text, keep_newlines=True)


def on_terminal() -> bool:
    """Whether stdout is a terminal (not when it was closed from the start: ``>&-``)."""
    return sys.stdout is not None and sys.stdout.isatty()


def say(text: str, nl: bool = True) -> None:
    """Print the command's output on stdout, its exact text (no escape sequence stripped, lines
    ending in ``\\n``): the bytes go to the stream's binary layer in a loop that writes what a
    short write left, so a write the device cuts short (a full disk, ``ulimit -f``) fails on the
    next one, whether the stream is buffered or not (``python -u``: a short write of the text
    layer is dropped in silence).  A write that fails is the user's to fix:
    :class:`~rlmap.errors.WriteFailed` (exit 120), not an internal error.  A reader gone away
    (``| head``) is left to the caller (typer: exit 1).

    The encoding is the stream's, UTF-8 where it says ASCII (a C locale: as click writes); a
    character it lacks is escaped (``\\u2192``), not an error.  An encoding that starts with a
    byte-order mark (UTF-16), or a stream with no binary layer, is written through its text
    layer, which writes the mark once."""
    stream = sys.stdout
    if stream is None:  # closed when the process started (``>&-``): nowhere to write
        return
    payload = text + "\n" if nl else text
    binary = getattr(stream, "buffer", None)
    encoding = _byte_encoding(stream)
    try:
        if binary is None or encoding is None:
            stream.write(payload)
            stream.flush()
            return
        try:
            data = memoryview(payload.encode(encoding, stream.errors or "strict"))
        except UnicodeEncodeError:
            data = memoryview(payload.encode(encoding, "backslashreplace"))
        stream.flush()  # what was written through the text layer goes first
        while data:
            written = binary.write(data)
            if written is None:  # a non-blocking stream that cannot take more now
                raise BlockingIOError(errno.EAGAIN, "the output would block")
            data = data[written:]
        binary.flush()
    except BrokenPipeError:
        raise
    except OSError as error:
        raise WriteFailed.output(error) from None


def _byte_encoding(stream: Any) -> str | None:
    """The encoding ``say`` writes ``stream``'s bytes in; ``None`` for one that begins with a
    byte-order mark (written once by the stream's own encoder, not once per call)."""
    try:
        name = codecs.lookup(stream.encoding or "utf-8").name
    except LookupError:
        return None
    if name == "ascii":
        return "utf-8"
    return None if name in ("utf-16", "utf-32", "utf-8-sig") else name


def echo_safe(text: str, err: bool = False, nl: bool = True) -> None:
    """Print ``text`` with control characters escaped; a diagnostic that stderr cannot take (a
    full disk, a reader gone away) is dropped: there is nowhere left to tell, and the exit code
    still says what happened."""
    if not err:
        say(terminal_safe(text), nl=nl)
        return
    with suppress(OSError, ValueError):
        typer.echo(terminal_safe(text), err=True, nl=nl)


def terminal_columns() -> int:
    """The terminal's width (at least 40), for text fitted to it (``show``, the audit's report)."""
    import shutil

    return max(40, shutil.get_terminal_size((80, 24)).columns)


def terminal_lines() -> int:
    """The lines a text may take before it goes through a pager (:func:`page`)."""
    import shutil

    return shutil.get_terminal_size((80, 24)).lines - 1


def page(text: str) -> None:
    """Show ``text`` through ``$PAGER`` (default ``less -FRX``: quits when it fits, keeps links).
    It is printed as it is when no pager runs (none found, ``$PAGER`` not a command line, or
    ``TERM=dumb``, where no pager works), or when the pager exits with an error before
    reading any of it (``PAGER=false`` would lose the report); a pager that read the report and
    then exits with an error (``less -K`` left with Ctrl-C) has shown it, and it is not printed
    again.  While the pager runs, Ctrl-C is the pager's (as git does): rlmap does not die under it."""
    import shlex
    import shutil

    if os.environ.get("TERM") == "dumb":  # no pager works there (less asks for RETURN, then may lose it)
        say(text)
        return
    given = os.environ.get("PAGER") or "less -FRX"
    try:
        command = shlex.split(given)
    except ValueError as error:  # an unbalanced quote: not a command line
        say_warning(f"PAGER={given!r} is not a command line ({error}); the report is printed instead")
        say(text)
        return
    if not command or shutil.which(command[0]) is None:
        say(text)
        return
    encoding = getattr(sys.stdout, "encoding", None) or "utf-8"
    if not _pager_read(command, (text + "\n").encode(encoding, errors="replace")):
        say(text)


def _pager_read(command: list[str], data: bytes) -> bool:
    """Run the pager ``command`` on ``data``: ``False`` if it could not start, or exited with an
    error having read none of it (what is left in its pipe says; where the pipe cannot be asked,
    an error counts as unread)."""
    import select
    import signal
    import subprocess

    read_end, write_end = os.pipe()
    watch = os.dup(read_end)  # held to count what the pager leaves unread (and so no write fails)
    interrupt = signal.getsignal(signal.SIGINT)
    try:
        try:
            process = subprocess.Popen(command, stdin=read_end)
        except OSError:
            return False
        finally:
            os.close(read_end)
        with suppress(ValueError):  # not the main thread: the pager and rlmap share Ctrl-C
            signal.signal(signal.SIGINT, signal.SIG_IGN)
        os.set_blocking(write_end, False)
        view = memoryview(data)
        while view:
            try:
                view = view[os.write(write_end, view[: 1 << 16]) :]
            except BlockingIOError:  # the pipe is full: wait for the pager to read, or to end
                if process.poll() is not None:
                    break
                select.select([], [write_end], [], 0.05)
        os.close(write_end)
        write_end = -1
        status = process.wait()
        if status == 0:
            return True
        try:
            import fcntl
            import struct
            import termios

            unread = struct.unpack("i", fcntl.ioctl(watch, termios.FIONREAD, b"\0\0\0\0"))[0]
        except (ImportError, OSError):
            return False
        return unread < len(data) - len(view)
    finally:
        if write_end >= 0:
            os.close(write_end)
        os.close(watch)
        with suppress(ValueError):
            signal.signal(signal.SIGINT, interrupt)


def refuse_empty_scopes(scopes: tuple[str, ...]) -> None:
    """An empty ``--scope`` (a prefix of every name) is a usage error: it keeps everything, which
    leaving the option out says better."""
    if any(not prefix.strip() for prefix in scopes):
        hint = "pass the start of a qualified name (e.g. torchrl.collectors), or leave it out"
        raise UsageError("--scope is empty", hint)


def say_error(message: str) -> None:
    echo_safe(f"rlmap: error: {message}", err=True)


def say_warning(message: str) -> None:
    echo_safe(f"rlmap: warning: {message}", err=True)


def say_note(message: str) -> None:
    echo_safe(f"rlmap: note: {message}", err=True)


Progress = Callable[[str, int, int], None]  # (phase, done, total): total 0 when not counted

# How a phase's count reads in a plain progress line.
_UNITS = {
    "index": "files",
    "resolve": "modules",
    "build": "sections",
    "render": "pages",
    "write": "files",
    "read": "files",
    "check": "rules",
}


# A phase this young (seconds) is not said at its quarters in a log: only when it starts and ends.
QUICK_PHASE = 2.0


class _PlainProgress:
    """Progress for a log (not a terminal): one line when a phase starts, every quarter of a
    counted phase once it has run :data:`QUICK_PHASE` seconds, and when it ends, each at the
    seconds since the command started (``at 6.7 s``), the last also with the phase's own (``3.5
    s, at 12.8 s``); nothing in the first second (a warm run says nothing).  A phase that started
    in the first second and still runs at its end is said then (a timer: rendering reports
    nothing until it is done)."""

    def __init__(self) -> None:
        import threading
        import time

        self._clock = time.monotonic
        self._start = self._clock()
        self._phase = ""
        self._quarter = -1
        self._begun = ("", 0.0)  # the phase last reported, and when it was first (said or not)
        self._lock = threading.Lock()
        # reported in the first second, and when (said as of then, if the timer says it later)
        self._waiting: tuple[str, int, int, float] | None = None
        self._timer = threading.Timer(1.0, self._late)
        self._timer.daemon = True
        self._timer.start()

    def __call__(self, phase: str, done: int, total: int) -> None:
        with self._lock:
            if phase != self._begun[0]:
                self._begun = (phase, self._clock())
            now = self._clock()
            if now - self._start < 1.0:
                self._waiting = (phase, done, total, now)
                return
            self._waiting = None
            self._say(phase, done, total, now)

    def _late(self) -> None:
        with self._lock:
            if self._waiting is not None:
                self._say(*self._waiting)
                self._waiting = None

    def close(self) -> None:
        self._timer.cancel()
        with self._lock:
            self._waiting = None

    def _say(self, phase: str, done: int, total: int, now: float) -> None:
        quarter = 4 * done // total if total else 0
        if (phase, quarter) == (self._phase, self._quarter):
            return
        if phase == self._phase and 0 < done < total and now - self._begun[1] < QUICK_PHASE:
            return  # a quick phase is said when it starts and when it ends (a log of a warm run stays short)
        self._phase, self._quarter = phase, quarter
        count = f" {done}/{total} {_UNITS.get(phase.partition(' ')[0], '')}".rstrip() if total else ""
        took = f"{now - self._begun[1]:.1f} s, " if total and done >= total and phase == self._begun[0] else ""
        say_progress(f"{phase}{count} ({took}at {now - self._start:.1f} s)")


def say_progress(message: str) -> None:
    echo_safe(f"rlmap: {message}", err=True)


@contextmanager
def progress_display(quiet: bool, first: str = "index") -> Iterator[Progress | None]:
    """Progress on stderr, phase by phase (index, resolve, render, write) with counts: a bar on
    a terminal, a few plain lines in a log; nothing when quiet.  ``first``: the phase the bar
    shows until the first report."""
    if quiet:
        yield None
        return
    if sys.stderr is None or not sys.stderr.isatty():  # (stderr closed from the start: lines dropped)
        with _plain() as plain:
            yield plain
        return
    from rich.console import Console

    console = Console(stderr=True)
    if console.is_dumb_terminal:  # TERM=dumb: no bar can be drawn there, the lines can
        with _plain() as plain:
            yield plain
        return
    bar = _DelayedBar(console, first)
    try:
        yield bar
    finally:
        bar.close()


@contextmanager
def _plain() -> Iterator[_PlainProgress]:
    progress = _PlainProgress()
    try:
        yield progress
    finally:
        progress.close()


BAR_DELAY = 1.0  # seconds before a terminal's bar appears: a run done sooner draws none (as a log says nothing)


class _DelayedBar:
    """The terminal's bar, drawn once the run has taken ``delay`` seconds: a warm answer draws
    nothing (it hid the cursor and drew a bar for a tenth of a second).  A timer starts it, so that
    a phase not reported as it goes (resolve) shows too; it opens on the last phase reported, its
    clock from that phase's start."""

    def __init__(self, console: Any, first: str, delay: float = BAR_DELAY) -> None:
        import threading

        self._console = console
        self._clock = console.get_time  # (the clock rich's bar reads: monotonic)
        self._lock = threading.Lock()
        self._last = (first, 0, 0)
        self._since = self._clock()  # when the last phase reported started
        self._bar: Any = None
        self._report: _BarProgress | None = None
        self._closed = False
        self._timer = threading.Timer(delay, self.show)
        self._timer.daemon = True
        self._timer.start()

    def __call__(self, phase: str, done: int, total: int) -> None:
        with self._lock:
            if self._report is not None:
                self._report(phase, done, total)
                return
            if phase != self._last[0] or done < self._last[1]:  # a phase starts (again)
                self._since = self._clock()
            self._last = (phase, done, total)

    def show(self) -> None:
        """Draw the bar (the timer calls it), unless the run has ended."""
        with self._lock:
            if self._closed or self._bar is not None:
                return
            phase, done, total = self._last
            self._bar = progress_bar(self._console)
            self._report = _BarProgress(self._bar, phase)
            self._report(phase, done, total)
            self._bar.tasks[-1].start_time = self._since  # (the phase's clock, not the bar's)
            self._bar.start()

    def close(self) -> None:
        self._timer.cancel()
        with self._lock:
            self._closed = True
            if self._bar is not None:
                self._bar.stop()


def progress_bar(console: Any, refresh: bool = True) -> Any:
    """rich's bar: phase, bar, ``done/total`` (nothing for a phase not counted), elapsed time."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    columns = (TextColumn("{task.description:<8}"), BarColumn(), TextColumn("{task.fields[count]}"))
    return Progress(*columns, TimeElapsedColumn(), console=console, transient=True, auto_refresh=refresh)


class _BarProgress:
    """Reports into rich's bar: a task per phase, and a new one when a phase starts again, so that
    its clock runs from its start and a phase not counted pulses (a task's total, once set,
    cannot be unset, nor its stopped clock restarted)."""

    def __init__(self, bar: Any, first: str) -> None:
        self.bar = bar
        self.task = bar.add_task(first, total=None, count="")

    def __call__(self, phase: str, done: int, total: int) -> None:
        count = f"{done}/{total}" if total else ""
        current = self.bar.tasks[-1]
        if current.description != phase or done < current.completed:
            self.bar.remove_task(self.task)
            self.task = self.bar.add_task(phase, total=total or None, completed=done, count=count)
            return
        self.bar.update(self.task, completed=done, total=total or None, count=count)


def cache_of(cache_dir: Path | None, no_cache: bool) -> Any:
    """The cache the options name; both ``--no-cache`` and ``--cache-dir`` are a usage error (which
    one was meant is not known)."""
    if no_cache and cache_dir is not None:
        raise UsageError(
            "--no-cache and --cache-dir are both given",
            "pass --cache-dir to use that cache, or --no-cache to read and write none",
        )
    return Cache.disabled() if no_cache else Cache.at(cache_dir or default_cache_dir())


def load_model_of(
    settings: Any,
    profile: Any,
    cache_dir: Path | None,
    no_cache: bool,
    jobs: int | None,
    quiet: bool,
    pin_links: bool = False,
    progress: Progress | None = None,
) -> Any:
    """The resolved model of the configured source, with key accesses under the profile's extensions.

    ``pin_links`` (for committed pages): in a git checkout, link each file at the last commit that
    changed it, and not at all when the worktree changed it (see :mod:`rlmap.index.history`).
    """
    from rlmap.index.source import locate_source
    from rlmap.model.session import load_model
    from rlmap.pages.header import analysis_of

    extensions, value_cap = analysis_of(profile)
    tree = locate_source(
        settings.source, package=settings.package, repo_url=settings.repo_url, packages=settings.packages
    )
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
    cache = cache_of(cache_dir, no_cache)
    if progress is not None:
        loaded = load_model(tree, cache, jobs, progress, extensions, value_cap)
    else:
        with progress_display(quiet) as own:
            loaded = load_model(tree, cache, jobs, own, extensions, value_cap)
    # A command is one short process: every object alive now (the model's millions of rows, tuples
    # and dicts of strings freed by their reference counts) is moved out of the cyclic collector's
    # sight, so that no later collection scans them to find no cycle (half a second on torchrl).
    # Not done in the library: a long process (Sphinx) would keep any cycle frozen here.
    gc.freeze()
    keep_to_exit(loaded)
    if cache.write_failed:
        say_warning(f"could not write to the cache in {cache.directory}; the next run will parse again")
    if cache.rejected:
        say_note(
            f"ignored {cache.rejected} unusable cache entr{'y' if cache.rejected == 1 else 'ies'} in {cache.directory} "
            "(corrupt, truncated or not written by this rlmap) and rebuilt them"
        )
    if loaded.model.over_cap:
        say_note(loaded.model.cap_note())
    if pin_links and tree.commit and tree.repo_url:
        pin_permalinks(loaded)
    return loaded


def settings_of(
    config: Path | None, source: Path | None, package: str | None, profile: Path | None = None, quiet: bool = False
) -> Any:
    """``[tool.rlmap]`` (or ``--config``) with the command line's values on top (``quiet``: see
    :func:`read_config`)."""
    return read_config(config, quiet).override(source=source, package=package, profile=profile)


def read_config(config: Path | None, quiet: bool = False) -> Any:
    """:func:`rlmap.config.load_config`, saying which ``pyproject.toml`` it passed over (another
    user's file, never read as configuration) and how to use it anyway; ``quiet``: not said (a
    shell's completion, whose stderr is the user's prompt)."""
    from rlmap.config import load_config

    found = load_config(config)
    for path in () if quiet else found.passed_over:
        say_note(f"{path}: owned by another user, its [tool.rlmap] table is not read; pass --config {path} to use it")
    return found


def report_diagnostics(diagnostics: tuple[Diagnostic, ...]) -> int:
    """Print what could not be read; the exit code that reflects it."""
    if not diagnostics:
        return ExitCode.OK
    for diagnostic in diagnostics:
        say_warning(str(diagnostic))
    files = len({diagnostic.path for diagnostic in diagnostics})
    # (a file may be skipped whole, or read with a part left out: a reference too long to be a name)
    say_error(
        f"{files} file(s) could not be read or indexed in full - "
        "fix them (each warning above says what was left out and why); everything else was processed"
    )
    return ExitCode.INCOMPLETE_INPUT


def documented_package(settings: Any) -> str:
    """The package the configured source holds, whose built-in profile applies: ``--package`` (or
    ``[tool.rlmap] package``), unless ``--source`` is a package directory, or a folder of modules,
    that names its own (a project's code is not given TorchRL's profile)."""
    if settings.source is None:
        return str(settings.package)
    from rlmap.index.source import locate_source

    return locate_source(settings.source, package=settings.package, packages=settings.packages).package


def profile_of(profile: Path | None, package: str) -> Any:
    """The profile to use: the one configured or passed, else rlmap's own for ``package``, else None."""
    from rlmap.pages.profile import builtin_profile_path, load_profile

    if profile is not None:
        return load_profile(profile)
    path = builtin_profile_path(package)
    return load_profile(path, f"rlmap/profiles/{package}/{path.name}", builtin=True) if path is not None else None


def profile_basics_of(profile: Path | None, package: str) -> Any:
    """What ``show`` and ``graph`` read of the profile :func:`profile_of` chooses: its header and
    glossary (:mod:`rlmap.pages.header`), checked; its pages are left to the commands that render them."""
    from rlmap.pages.header import builtin_profile_path, load_profile_basics

    if profile is not None:
        return load_profile_basics(profile)
    path = builtin_profile_path(package)
    return load_profile_basics(path, f"rlmap/profiles/{package}/{path.name}") if path is not None else None


def pin_permalinks(loaded: Any) -> None:
    """Pin the model's links per file; say which files get none, and when pinning is impossible."""
    from dataclasses import replace

    from rlmap.index.history import pin_files
    from rlmap.index.indexer import MAX_FILE_BYTES
    from rlmap.readfile import read_regular

    tree = loaded.source
    files = {}
    for path in tree.python_files():
        data = read_regular(path, MAX_FILE_BYTES)  # (never a FIFO: it would hold the run up)
        if isinstance(data, bytes):
            files[tree.relpath(path)] = data  # (what is not read, the indexer has reported)
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
