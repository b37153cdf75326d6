"""When to interrupt snakemake so that it cancels what it submitted: its remote executors take
their jobs out of the list they cancel on an interrupt while they ask their status, and put
those still running back after. A Ctrl-C that lands between two rounds of status queries finds
them all on it; one that lands during a query kills the status command too, and the executor may
fail before it cancels anything.

So the test holds each status query once it has its answer, and decides when the round ends:
`HeldStatus` wraps the status command in a script that runs the real one, says it has answered
(its process ids in a file), then waits on a FIFO until the test lets it go. Once the test let it
go and snakemake has reaped it, the executor has the answer: it puts the jobs back and sleeps
until its next round, which stops at the same gate. The test presses Ctrl-C once every thread of
snakemake's is asleep (the state in /proc/PID/task/TID/stat, the same on every architecture):
then it lands between two rounds."""

from __future__ import annotations

import errno
import os
import shlex
from pathlib import Path

from tests.helpers.wait import wait_until


class HeldStatus:
    """A status command held at the end of each query until the test ends the round."""

    def __init__(self, command: Path, real: str | Path, directory: Path, only_if: str | None = None) -> None:
        """Write `command`, a script that runs `real` and holds it; its marks go in `directory`.
        With `only_if` (a word among the arguments, e.g. sacct's `--name`), other calls pass
        through unheld."""
        self.command = command
        self.answered = directory / "status-answered"
        self.gate = directory / "status-gate"
        os.mkfifo(self.gate, 0o600)
        hold = (f'answer=$({shlex.quote(str(real))} "$@")\nstatus=$?\n'
                f'echo "$$ $PPID" > {shlex.quote(str(self.answered))}.new\n'
                f'mv {shlex.quote(str(self.answered))}.new {shlex.quote(str(self.answered))}\n'
                f'cat {shlex.quote(str(self.gate))} > /dev/null\n'
                '[ -z "$answer" ] || printf \'%s\\n\' "$answer"\nexit $status\n')
        if only_if is not None:
            hold = (f'case " $* " in *" {only_if} "*) ;; *) exec {shlex.quote(str(real))} "$@" ;; esac\n'
                    + hold)
        self.command.write_text("#!/bin/sh\n" + hold)
        self.command.chmod(0o755)

    def end_round(self, tool_pid: int, timeout: float = 60) -> None:
        """Wait until a status query has its answer, let it go, and wait until the tool has
        reaped it (and the shell that ran it): its answer is then the tool's."""
        wait_until(self.answered.exists, timeout=timeout, describe="a status query to answer")
        pids = [int(pid) for pid in self.answered.read_text().split() if int(pid) != tool_pid]
        self.answered.unlink()
        # The query's `cat` opens the FIFO to read just after it answered; opened for writing
        # and closed, it reads its end of file.
        wait_until(self._release, describe="the status query to wait at its gate")
        wait_until(lambda: not any(Path(f"/proc/{pid}").exists() for pid in pids),
                   describe=f"the tool to reap its status query ({pids})")
        # Twice in a row: a thread woken while another was looked at is seen the second time.
        wait_until(lambda: _asleep(tool_pid) and _asleep(tool_pid),
                   describe="the tool to go to sleep with the query's answer taken in")

    def _release(self) -> bool:
        try:
            os.close(os.open(self.gate, os.O_WRONLY | os.O_NONBLOCK))
        except OSError as error:
            if error.errno == errno.ENXIO:  # no reader yet
                return False
            raise
        return True


def _asleep(pid: int) -> bool:
    """Whether every thread of the process sleeps (waits on something, none runs or may run)."""
    states = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            stat = (task / "stat").read_text()
        except OSError:  # the thread ended
            continue
        states.append(stat[stat.rindex(")") + 2])  # after the command's name, which may hold anything
    return bool(states) and all(state == "S" for state in states)
