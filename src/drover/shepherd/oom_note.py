"""The line a job's owner finds at the end of its error file when the kernel's out-of-memory
killer ended it, as Slurm's slurmstepd writes one ("Detected 1 oom_kill event ..."):

    drover: job 12 (attempt 1): 1 process killed by the out-of-memory killer: it used more than
    its 64 MiB memory limit

A job killed that way ends with signal 9 and not a word of its own; this line says why, where
its owner looks first. It goes to the error file (the output file when stderr is joined), through
the descriptor the shepherd opened as the owner for the job (enter_as_owner): no path is opened
again, and the write is made with the owner's effective ids. Only a regular file gets it
(/dev/null needs none); an interactive job's terminal is gone by then. The node's own kill over
its hard limit where no cgroup limit acts has its own line (execd/enforcement.py). Standard
library only.
"""

from __future__ import annotations

import os
import stat

from drover.shepherd.config import ShepherdConfig
from drover.shepherd.identity import Identity, acting_as


def line(config: ShepherdConfig, kills: int, limit_mib: int) -> str:
    """The line for an attempt of which `kills` processes were killed at its `limit_mib`."""
    job = f"{config.job_id}.{config.task_index}" if config.is_array else str(config.job_id)
    processes = "1 process" if kills == 1 else f"{kills} processes"
    why = (f"it used more than its {limit_mib} MiB memory limit" if limit_mib > 0
           else "memory ran out above its cgroup")  # a limit of the node's, not the job's
    return f"drover: job {job} (attempt {config.attempt_number}): {processes} killed by the out-of-memory killer: {why}"


def append(fd: int, text: str, identity: Identity | None) -> str | None:
    """Append `text` and a newline to the open file `fd`, as the owner; None once written, else
    why not (for the attempt's trace)."""
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return "the error file is not a regular file: no out-of-memory line"
        data = (text + "\n").encode("utf-8", "replace")
        with acting_as(identity):
            # The job may have left the offset anywhere (its file is shared, not opened to
            # append): the line goes at the end, after what the job wrote.
            os.lseek(fd, 0, os.SEEK_END)
            os.write(fd, data)
        return None
    except OSError as error:
        return f"cannot write the out-of-memory line to the error file: {error.strerror}"
