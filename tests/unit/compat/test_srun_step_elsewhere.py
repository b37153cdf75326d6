"""A step whose tasks are laid out over several nodes (compat/slurm/step.py): the tasks of this
node run here, the others are handed to what starts them elsewhere with their own ranks and
variables, their output is labelled like the local tasks', and the step's status is the
highest of all. The remote side here is a stand-in on plain data."""

from __future__ import annotations

import os
import signal
from pathlib import Path

from drover.compat.slurm.step import Sink, Step, run
from drover.compat.slurm.step_hosts import NodeTasks


class Stand:
    """Tasks "on other hosts" that write a line each and end with the status given by rank."""

    def __init__(self, statuses: dict[int, int]) -> None:
        self.statuses = statuses
        self.started: dict[int, tuple[str, dict[str, str], Sink]] = {}
        self.sinks: list[Sink] = []
        self.stopped = False
        self.looks = 0

    def start(self, rank: int, host: str, argv: list[str], cwd: str, env: dict[str, str], stdout: Sink,
              stderr: Sink) -> None:
        assert argv[-2:] == ["-c", "exit 0"] and os.path.isabs(cwd)
        self.started[rank] = (host, env, stdout)
        self.sinks += [stdout, stderr]

    def stop(self) -> None:
        self.stopped = True

    def codes(self) -> dict[int, int | None]:
        self.looks += 1
        if self.looks < 3:
            return dict.fromkeys(self.started)
        for host, _, stdout in self.started.values():
            if self.looks == 3:
                stdout.write(f"from {host}\nno newline".encode())
        self.close()
        return {rank: self.statuses.get(rank, 0) for rank in self.started}

    def close(self) -> None:
        for sink in self.sinks:
            sink.close()


def test_tasks_on_other_nodes_get_their_ranks_and_their_status_counts(tmp_path: Path) -> None:
    stand = Stand({2: 3})
    nodes = [NodeTasks("n1", [0]), NodeTasks("n2", [1, 2])]
    step = Step(argv=["sh", "-c", "exit 0"], ntasks=3, environment=dict(os.environ, SLURM_JOB_ID="7"),
                output=str(tmp_path / "out.%t"), label=True, node="n1", nodes=nodes, elsewhere=stand)
    assert run(step) == 3
    host, env, _ = stand.started[2]
    assert host == "n2" and (env["SLURM_PROCID"], env["SLURM_LOCALID"], env["SLURM_NODEID"]) == ("2", "1", "1")
    assert (env["SLURM_GTIDS"], env["SLURMD_NODENAME"]) == ("1,2", "n2")
    assert (tmp_path / "out.2").read_text() == "2: from n2\n2: no newline\n"
    assert (tmp_path / "out.0").read_text() == ""  # the local task wrote nothing
    assert not stand.stopped


def test_a_signal_to_srun_stops_the_tasks_elsewhere(tmp_path: Path) -> None:
    class Waiting(Stand):
        def codes(self) -> dict[int, int | None]:
            self.looks += 1
            if self.looks == 2:
                os.kill(os.getpid(), signal.SIGTERM)  # handled by the step: it stops its tasks
            return {rank: (-signal.SIGTERM if self.stopped else None) for rank in self.started}

    stand = Waiting({})
    step = Step(argv=["sh", "-c", "exit 0"], ntasks=2, environment=dict(os.environ), node="n1",
                nodes=[NodeTasks("n1", [0]), NodeTasks("n2", [1])], elsewhere=stand)
    assert run(step) == 128 + signal.SIGTERM
    assert stand.stopped
