"""How every command is entered (`drover`, and each installed front end through its wrapper).

Each says which cluster answers when it found the machine's shared one by itself
(cli/which_cluster.py).

A command whose reader went away (`drover status | head`, `sbatch --help | head`) ends quietly,
as a C program killed by SIGPIPE does, instead of printing a traceback. SIGPIPE itself stays
ignored (Python's default): restoring it would kill the client on a socket the controller closed.

A number as long as a command line allows is read whole: Python's default limit of 4,300
digits would end a parser with a traceback, where the parser's own bounds say what is wrong.
(The limit guards servers against others' input; here the input is the caller's own.)"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

SIGPIPE_STATUS = 141  # 128 + SIGPIPE, what a shell reports for a command killed by it


def quiet_on_broken_pipe(main: Callable[[], int | None]) -> int:
    sys.set_int_max_str_digits(0)
    from drover import config
    from drover.cli.which_cluster import say_which_cluster

    config.cluster_found = say_which_cluster
    try:
        status = main()
        sys.stdout.flush()  # what is still buffered fails here, not in the interpreter's exit
        return int(status or 0)
    except BrokenPipeError:
        # Python flushes stdout again at exit: point it somewhere that takes the rest.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return SIGPIPE_STATUS
