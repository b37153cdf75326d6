"""salloc: get an allocation and run a command in it (by default the user's shell), as Slurm's
salloc does; `srun` inside the command runs job steps in the allocation.

On Slurm the command runs where salloc runs, and only srun reaches the allocated node. On Drover
the allocation is a job, and the command runs inside it, on its node, in its CPUs and memory,
with the job's SLURM_* variables; on a terminal it gets a terminal of its own, relayed to this
one, as `drover run --pty` does. For a command that runs on the allocated node anyway (srun,
mpirun, a shell) the outcome is the same. The exit status is the command's (0 if it was ended by
SIGHUP, SIGINT, SIGQUIT or SIGKILL, 1 for another signal, as salloc's); 255 for an option salloc
refuses while reading its options; 1 for other errors. --no-shell holds the allocation (a job
that sleeps) until its time limit or scancel.
"""

from __future__ import annotations

import os
import shlex
import signal
import sys
from collections.abc import Sequence

from drover.compat.slurm import submit_options
from drover.compat.slurm.common import VERSION
from drover.compat.slurm.reporting import reporting_errors
from drover.compat.slurm.request import Request, apply_marks, parse
from drover.compat.slurm.submission import to_job

OPTIONS = submit_options.options_for("salloc")
# salloc's own rule: a command ended by one of these was most likely ended by its user.
USER_SIGNALS = (signal.SIGHUP, signal.SIGINT, signal.SIGQUIT, signal.SIGKILL)


def main(argv: Sequence[str] | None = None) -> int:
    return reporting_errors("salloc", lambda: _main(list(sys.argv[1:] if argv is None else argv)))


def _main(argv: list[str]) -> int:
    found, command = parse("salloc", argv)
    request = Request("salloc")
    request.add_environment(os.environ)
    request.add(found, "the command line")
    if request.has("help") or request.has("usage"):
        print("Usage: salloc [OPTIONS(0)...] [ : [OPTIONS(N)...]] [command(0) [args(0)...]]")
        return 0
    if request.has("version"):
        print(VERSION)
        return 0
    apply_marks(request, request.has("strict") or os.environ.get("DROVER_COMPAT_STRICT") == "1")
    quiet = request.has("quiet")
    granted = None if quiet else "salloc: Granted job allocation {id}"
    relinquished = None if quiet else "salloc: Relinquishing job allocation {id}"
    if request.has("no-shell"):
        return _hold(request, granted)
    if not command:
        command = [os.environ.get("SHELL") or "/bin/sh"]
    script = "#!/bin/bash\nexec " + " ".join(shlex.quote(word) for word in command) + "\n"
    job = to_job(request, script, "interactive")

    from drover.compat.slurm.allocation import exit_status, on_terminal, stream_job

    if not sys.stdin.isatty():
        return _status(stream_job("salloc", job, quiet=quiet, announce=granted, farewell=relinquished))
    ended = on_terminal("salloc", job, announce=granted, quiet=quiet)
    status = _status(exit_status("salloc", ended))
    if relinquished:
        print(relinquished.format(id=ended.id), file=sys.stderr)
    return status


def _status(status: int) -> int:
    """The command's exit status as salloc returns it."""
    if status > 128 and status - 128 in USER_SIGNALS:
        return 0
    if status > 128 and status - 128 < 65:
        return 1
    return status


def _hold(request: Request, granted: str | None) -> int:
    """--no-shell: a job that holds the allocation until its time limit or scancel."""
    from drover.client.client import Client

    job = to_job(request, "#!/bin/bash\nwhile :; do sleep 3600; done\n", "no-shell")
    job["output"] = "/dev/null"
    with Client() as client:
        (job_id,) = client.submit([job])
    if granted:
        print(granted.format(id=job_id), file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
