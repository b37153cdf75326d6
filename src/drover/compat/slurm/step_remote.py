"""A step's tasks on the job's other hosts: each started as a task of the job on its host, under
a shepherd of its own there and counted in the job's accounting, through the controller (as
`drover task start` starts one), and followed from srun: its output copied to srun's streams
as it comes (cli/pe_task_relay.py), its end turned into a wait status as the local tasks' are.
A stop srun was asked for (its SIGINT or SIGTERM, -K, -W) is asked of the controller for each
of them; it is only noted where it is asked, which may be a signal handler, and sent at the
next look."""

from __future__ import annotations

import signal
import sys
import time
from dataclasses import dataclass

from drover.cli.pe_task_relay import POLL_S, TaskRelay, next_delay
from drover.compat.slurm.step import Sink
from drover.core.errors import DroverError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from drover.client.client import Client
    from drover.protocol.api import PeTaskInfo


@dataclass
class RemoteTask:
    rank: int
    host: str
    stdout: Sink
    stderr: Sink
    relay: TaskRelay | None = None  # None: it could not be started
    code: int | None = None  # as Popen's returncode: negative for a signal


class RemoteTasks:
    def __init__(self, api: Client, job_id: int, index: int) -> None:
        self.api = api
        self.job_id = job_id
        self.index = index
        self.tasks: list[RemoteTask] = []
        self.stop_asked = False
        self.stop_sent = False
        self.delay = POLL_S[0]
        self.due = 0.0

    def start(self, rank: int, host: str, argv: list[str], cwd: str, env: dict[str, str], stdout: Sink,
              stderr: Sink) -> None:
        task = RemoteTask(rank, host, stdout, stderr)
        self.tasks.append(task)
        if self.stop_asked:  # srun was stopped while it started the others: this one is not started
            self._ended(task, -signal.SIGTERM)
            return
        try:
            started = self.api.start_pe_task(self.job_id, host, argv, task=self.index, cwd=cwd, env=env)
        except DroverError as error:
            print(f"srun: error: {host}: task {rank}: could not be started: {error}", file=sys.stderr)
            self._ended(task, 1)
            return
        task.relay = TaskRelay(self.job_id, self.index, started.petask, {"stdout": stdout.write, "stderr": stderr.write})

    def stop(self) -> None:
        """Stop them all (safe in a signal handler: only noted, sent at the next look)."""
        if not self.stop_asked:  # -K and -W ask again at every turn of the wait
            self.stop_asked = True
            self.due, self.delay = 0.0, POLL_S[0]  # their ends are looked for at once, then often

    def codes(self) -> dict[int, int | None]:
        """Each task's wait status so far (None while it runs), looked at no more often than
        POLL_S says: each look is a few requests to the controller."""
        now = time.monotonic()
        if self.stop_asked and not self.stop_sent:
            self.stop_sent = True
            for task, relay in self._running():
                try:
                    relay.stop(self.api)
                except DroverError as error:  # it ended meanwhile, or its node is gone: its end tells
                    print(f"srun: error: {task.host}: task {task.rank}: {error}", file=sys.stderr)
        if now >= self.due:
            for task, relay in self._running():
                try:
                    info = relay.look(self.api)
                except DroverError as error:  # the controller forgot it (it restarted), or cannot be reached
                    print(f"srun: error: {task.host}: task {task.rank}: lost: {error}", file=sys.stderr)
                    self._ended(task, 1)
                    continue
                if info is not None:
                    self._ended(task, _wait_status(info, task))
            self.due = now + self.delay
            self.delay = next_delay(self.delay)
        return {task.rank: task.code for task in self.tasks}

    def close(self) -> None:
        """Srun ends before its tasks here did (an error): their output is no longer copied."""
        for task in self.tasks:
            task.stdout.close()
            task.stderr.close()

    def _running(self) -> list[tuple[RemoteTask, TaskRelay]]:
        """The tasks still running, each with its relay (one that could not be started has none)."""
        return [(task, task.relay) for task in self.tasks if task.code is None and task.relay is not None]

    def _ended(self, task: RemoteTask, code: int) -> None:
        task.code = code
        task.stdout.close()
        task.stderr.close()


def _wait_status(info: PeTaskInfo, task: RemoteTask) -> int:
    if info.signal:
        return -info.signal
    if info.exit_code is not None:
        return info.exit_code
    print(f"srun: error: {task.host}: task {task.rank}: {info.failure or 'ended without a status'}", file=sys.stderr)
    return info.exit_status if info.exit_status is not None else 1
