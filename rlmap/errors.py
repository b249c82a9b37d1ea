"""The one exception tree and the one table that maps outcomes to exit codes."""

from __future__ import annotations

import enum
import errno


class ExitCode(enum.IntEnum):
    """Process exit codes; DESIGN.md's table, in one place."""

    OK = 0
    FINDINGS = 1  # audit findings, or stale output under ``--check``
    USAGE = 2  # bad option, missing source, bad configuration
    INCOMPLETE_INPUT = 3  # some files could not be read; output written for the rest
    INTERNAL = 70  # a bug in rlmap (EX_SOFTWARE): reported in one line, never a traceback
    OUTPUT_FAILED = 120  # the output could not be written whole (a full disk): as Python's own exit


def did_you_mean(names: list[str] | tuple[str, ...], quoted: bool = True) -> str:
    """``did you mean 'a', 'b' or 'c'?``: the names a hint offers, each quoted (``quoted``)."""
    shown = [repr(name) if quoted else name for name in names]
    if not shown:
        return ""
    listed = shown[0] if len(shown) == 1 else f"{', '.join(shown[:-1])} or {shown[-1]}"
    return f"did you mean {listed}?"


class RlmapError(Exception):
    """Base of every error rlmap reports to a user.

    ``message`` says what happened; ``hint`` says what to do about it.  The CLI prints
    ``rlmap: error: <message> - <hint>`` and exits with ``exit_code``.
    """

    exit_code: ExitCode = ExitCode.USAGE

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        if not self.hint:
            return self.message
        # a message quoted from elsewhere may end its sentence (jinja2's): not before the dash
        message = self.message[:-1] if self.message.endswith(".") and not self.message.endswith("..") else self.message
        return f"{message} - {self.hint}"


class UsageError(RlmapError):
    """A command-line option or argument that cannot be honoured."""


class SourceError(RlmapError):
    """The source tree to document cannot be found or is not what was expected."""


class ConfigError(RlmapError):
    """A configuration file that is missing, unreadable or invalid."""


class SymbolNotFound(RlmapError):
    """A name given by the user matches nothing in the index; ``suggestions``: the names spelled
    like it (what the hint offers, for a script reading ``show --json``)."""

    def __init__(self, message: str, hint: str = "", suggestions: tuple[str, ...] = ()) -> None:
        super().__init__(message, hint)
        self.suggestions = suggestions


class CacheError(RlmapError):
    """The cache directory cannot be used."""


# What a write fails with when the device, not the path, is at fault, and what to do about each:
# no room (or a quota, or a file size limit), or an I/O error.  Anything else (a permission, a
# path that is no directory) is the user's choice of path: a usage error.
_DEVICE_ERRORS = {
    errno.ENOSPC: "free space on its device",
    errno.EDQUOT: "free space under the disk quota",
    errno.EFBIG: "raise the file size limit (ulimit -f)",
    errno.EIO: "check the device it goes to",
}


def device_failed(error: OSError) -> bool:
    """Whether ``error`` is a write failing for want of room or of a working device."""
    return error.errno in _DEVICE_ERRORS


class WriteFailed(RlmapError):
    """What the command writes cannot be written whole (a full disk, an I/O error): not a bug of
    rlmap, nor a bad option.  ``elsewhere``: how to write it somewhere else instead, if there is a way."""

    exit_code = ExitCode.OUTPUT_FAILED

    def __init__(self, what: str, error: OSError, elsewhere: str | None = None) -> None:
        remedy = _DEVICE_ERRORS.get(error.errno or 0, "")
        hint = ", or ".join(part for part in (remedy, elsewhere) if part)
        super().__init__(f"cannot write {what}: {error.strerror or error}", hint)

    @classmethod
    def output(cls, error: OSError) -> WriteFailed:
        """The command's own output (stdout) cannot be written."""
        return cls("the output", error, "send it elsewhere")
