"""The ``rlmap`` command's entry point (and ``python -m rlmap``'s): Ctrl-C from the first moment.

Importing the command line takes a fifth of a second (typer, click, rich); an interrupt then
would end the process with a traceback from inside the import machinery, before the command
line's own handling (exit 130, "interrupted") is in place.  Until it is, an interrupt ends the
process at once with that message and code.  Nothing here is imported by the library.
"""

from __future__ import annotations

import os
import signal
from types import FrameType

INTERRUPTED = 130


def _leave(signum: int, frame: FrameType | None) -> None:
    del signum, frame
    os.write(2, b"rlmap: error: interrupted\n")
    os._exit(INTERRUPTED)


def run() -> None:
    """Import the command line with Ctrl-C ending the process cleanly, then run it."""
    try:
        previous = signal.signal(signal.SIGINT, _leave)
    except ValueError:  # not the main thread: no handler can be set, none is needed
        previous = None
    from rlmap.cli import run as command

    if previous is not None:
        signal.signal(signal.SIGINT, previous)
    command()
