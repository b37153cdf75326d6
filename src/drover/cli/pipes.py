"""A command whose reader went away (`drover status | head`, `sbatch --help | head`) ends quietly,
as a C program killed by SIGPIPE does, instead of printing a traceback. SIGPIPE itself stays
ignored (Python's default): restoring it would kill the client on a socket the controller closed."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

SIGPIPE_STATUS = 141  # 128 + SIGPIPE, what a shell reports for a command killed by it


def quiet_on_broken_pipe(main: Callable[[], int | None]) -> int:
    try:
        status = main()
        sys.stdout.flush()  # what is still buffered fails here, not in the interpreter's exit
        return int(status or 0)
    except BrokenPipeError:
        # Python flushes stdout again at exit: point it somewhere that takes the rest.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return SIGPIPE_STATUS
