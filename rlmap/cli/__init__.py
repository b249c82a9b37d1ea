"""The ``rlmap`` command line: the only package that prints or exits.

Each command (:mod:`.query`: show and graph, :mod:`.generate`, :mod:`.audit`) builds its
inputs, calls the library, prints the result and returns an exit code from
:class:`rlmap.errors.ExitCode`; every :class:`rlmap.errors.RlmapError` and every usage error
becomes ``rlmap: error: ...`` on stderr, never a traceback (:func:`main`).
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from rlmap import __version__
from rlmap.cli import audit as _audit  # noqa: F401  (registers the command)
from rlmap.cli import diff as _diff  # noqa: F401
from rlmap.cli import generate as _generate  # noqa: F401
from rlmap.cli import query as _query  # noqa: F401
from rlmap.cli.common import app, kept_to_exit, let_go_kept, say, say_error, say_note
from rlmap.errors import ExitCode, RlmapError, WriteFailed, did_you_mean
from rlmap.index.cache import PARSERS, DamagedEntry, cache_identity

__all__ = ["app", "main", "run"]


# click's words for a number out of its range or not a number at all, as a person says them
_NUMBER = r"(-?[0-9]+(?:\.[0-9]+)?)"
_CLICK_RANGES = (
    (re.compile(r"is not a valid (?:int|integer|float) range"), "is not a number"),
    (re.compile(rf"is not in the range x>={_NUMBER}"), r"is below \1 (pass \1 or more)"),
    (re.compile(rf"is not in the range x<={_NUMBER}"), r"is above \1 (pass \1 or less)"),
    (re.compile(rf"is not in the range {_NUMBER}<=x<={_NUMBER}"), r"is not between \1 and \2"),
)


def _plain_words(message: str) -> str:
    """A click message without its range notation: ``0 is not in the range x>=1`` -> ``0 is
    below 1 (pass 1 or more)``; ``'abc' is not a valid int range`` -> ``'abc' is not a number``."""
    for pattern, words in _CLICK_RANGES:
        message = pattern.sub(words, message)
    return message


def _version_callback(value: bool) -> None:
    if value:
        say(f"rlmap {__version__} (cache {cache_identity()}; parsers: {PARSERS})")
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
    try:
        return _main(argv)
    except DamagedEntry as damaged:
        # A cached model is read a section at a time, each checked when a query reads it: a
        # damaged one is found (and removed) after the command started.  It prints nothing
        # before its answer is whole, so it runs once more, without the entry (which rebuilds it).
        say_note(f"removed a damaged cache entry ({damaged.path.name}) and rebuilt it")
        let_go_kept()  # the model that met the damaged entry is not held through the rebuild
        return _main(argv, retried=True)


def _main(argv: list[str] | None, retried: bool = False) -> int:
    command = typer.main.get_command(app)
    errors = _click_exceptions()
    no_args = getattr(errors, "NoArgsIsHelpError", ())
    empty = _empty_path(command, sys.argv[1:] if argv is None else argv)
    if empty:  # a path option given "" (an unset $VAR) would be read as the working directory
        say_error(f"{empty} is given an empty path - pass a path, or leave the option out")
        return int(ExitCode.USAGE)
    try:
        result = command.main(args=argv, prog_name="rlmap", standalone_mode=False)
    except DamagedEntry as error:
        if retried:  # damaged again: not a stale entry but a cache directory something writes into
            say_error(str(error))
            return int(error.exit_code)
        raise
    except RlmapError as error:
        say_error(str(error))
        return int(error.exit_code)
    except no_args as error:  # ``rlmap`` alone: the help, on stderr (the exit is a usage error's)
        with contextlib.suppress(OSError, ValueError):
            error.show()
        return int(ExitCode.USAGE)
    except errors.UsageError as error:
        hint = f"run '{error.ctx.command_path if error.ctx else _command_path(command, argv)} --help'"
        if isinstance(error, errors.NoSuchOption):
            meant = _options_like(error)
            say_error(
                f"{error.message} - "
                + (f"{did_you_mean(meant, quoted=False)} ({hint} for every option)" if meant else hint)
            )
            return int(ExitCode.USAGE)
        message = _plain_words(error.format_message().replace("Value error, ", ""))  # (pydantic's prefix, in typer's)
        say_error(f"{message.rstrip('.')} - {hint}")  # (click ends its sentences: "Missing argument 'NAME'.")
        return int(ExitCode.USAGE)
    except typer.Exit as done:
        return int(done.exit_code)
    except typer.Abort:
        say_error("interrupted")
        return 130
    except errors.ClickException as error:
        say_error(error.format_message())
        return int(ExitCode.USAGE)
    except KeyboardInterrupt:
        say_error("interrupted")
        return 130
    except BrokenPipeError:
        if sys.stderr is not None:  # the reader went away (``| head``): not an error worth a message
            sys.stderr.close()
        return 1  # as typer leaves then (a command whose output is written at the end)
    except Exception as error:
        if isinstance(error, OSError) and _written_by_click(error):  # help or completions: not a bug
            say_error(str(WriteFailed.output(error)))
            return int(ExitCode.OUTPUT_FAILED)
        where = error.__traceback__
        while where is not None and where.tb_next is not None:
            where = where.tb_next
        origin = f" at {Path(where.tb_frame.f_code.co_filename).name}:{where.tb_lineno}" if where else ""
        say_error(
            f"internal error: {type(error).__name__}: {error}{origin} - this is a bug in rlmap {__version__}; "
            "please report it with the command you ran (RLMAP_DEBUG=1 shows the traceback)"
        )
        if os.environ.get("RLMAP_DEBUG"):
            raise
        return int(ExitCode.INTERNAL)
    if result == 130:  # typer's own answer to Ctrl-C inside a command (no command exits 130 itself)
        say_error("interrupted")
    return int(result) if isinstance(result, int) else int(ExitCode.OK)


def _options_like(error: Any) -> list[str]:
    """The command's long options spelled like the unknown one (``--chek`` -> ``--check``).
    click's own guesses are loose (``--bogus`` -> ``--jobs``): these are the close ones only."""
    import difflib

    params = error.ctx.command.params if error.ctx is not None else []
    options = sorted(
        {name for param in params for name in (*param.opts, *param.secondary_opts) if name.startswith("--")}
    )
    return difflib.get_close_matches(error.option_name, options, n=2, cutoff=0.8)


def _empty_path(group: Any, args: list[str]) -> str:
    """The first option taking a path that ``args`` give an empty value (``--cache-dir ""``,
    ``--docs=``); ``""`` when none is.  The parser turns an empty path into ``.``, the working
    directory: the cache, the pages or the docs would be looked for, or written, there."""
    options = {
        name
        for command in (group, *getattr(group, "commands", {}).values())
        for param in getattr(command, "params", ())
        if type(getattr(param, "type", None)).__name__ in ("Path", "TyperPath")
        for name in getattr(param, "opts", ())
        if name.startswith("-")
    }
    for place, arg in enumerate(args):
        if arg == "--":
            break
        name, equals, value = arg.partition("=")
        if name in options and (value == "" if equals else place + 1 < len(args) and args[place + 1] == ""):
            return name
    return ""


def _command_path(group: Any, argv: list[str] | None) -> str:
    """``rlmap show`` for an error the parser raised without its command's context
    (``--quiet=1``): the first argument that names a command, else ``rlmap``."""
    names = getattr(group, "commands", {})
    given = sys.argv[1:] if argv is None else argv
    command = next((arg for arg in given if not arg.startswith("-")), "")
    return f"rlmap {command}" if command in names else "rlmap"


def run() -> None:
    """The ``rlmap`` command; it ends the process (``python -m rlmap`` and the console script).

    It leaves at once when its output is flushed (``os._exit``): what a command loaded (the
    model, :func:`rlmap.cli.common.keep_to_exit`) and the interpreter's own objects are not
    freed one by one before the process ends.  Watched by a profiler, a tracer or a
    ``sys.monitoring`` tool (cProfile, coverage, a debugger), which write their results as the
    interpreter shuts down, it leaves the usual way, and so it does on an exit typer makes itself
    (``SystemExit``: exit 1 when the reader of the output went away, shell completion)."""
    if _watched():
        sys.exit(main())
    kept_to_exit()
    code = main()
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is None:  # closed when the process started (``>&-``)
                continue
            try:
                stream.flush()
            except (BrokenPipeError, ValueError):  # the reader went away (``| head``), or it is closed
                pass
            except OSError:  # the output is not whole (a full disk): as the interpreter's own shutdown
                code = code or int(ExitCode.OUTPUT_FAILED)
    except KeyboardInterrupt:  # pressed while the last of the output was written
        say_error("interrupted")
        code = 130
    os._exit(code)


def _written_by_click(error: OSError) -> bool:
    """Whether ``error`` was raised as click (typer's) wrote to a stream: the help, completions
    (every output of rlmap's own goes through :func:`rlmap.cli.common.say`)."""
    where = error.__traceback__
    while where is not None:
        code = where.tb_frame.f_code
        if code.co_name == "echo" and Path(code.co_filename).parent.name in ("click", "_click"):
            return True
        where = where.tb_next
    return False


def _watched() -> bool:
    """Whether a profiler, a tracer or a ``sys.monitoring`` tool (Python 3.12+: cProfile and
    coverage use it, and then ``sys.getprofile()`` is ``None``) watches this process."""
    if sys.getprofile() is not None or sys.gettrace() is not None:
        return True
    monitoring = getattr(sys, "monitoring", None)
    return monitoring is not None and any(monitoring.get_tool(tool) is not None for tool in range(6))
