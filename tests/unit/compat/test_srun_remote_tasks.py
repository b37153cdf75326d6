"""srun's tasks on a job's other hosts, as it follows them through the controller
(compat/slurm/step_remote.py), against a stand-in for the client API on plain data."""

from __future__ import annotations

import signal
from typing import Any

import pytest

from drover.compat.slurm.step_remote import RemoteTasks
from drover.core.errors import Forbidden
from drover.protocol.api import OutputChunk, PeTaskInfo


class Api:
    """The controller's side: tasks that end as told, with their output, and the stops asked."""

    def __init__(self, ends: dict[str, dict[str, Any]], refuse: str | None = None) -> None:
        self.ends = ends  # petask → PeTaskInfo fields once it has ended
        self.refuse = refuse
        self.output = {"1": b"one\n", "2": b"two\n"}
        self.stopped: list[str] = []
        self.started: list[tuple[str, list[str], dict[str, str]]] = []

    def start_pe_task(self, job_id: int, host: str, argv: list[str], task: int = 0, cwd: str | None = None,
                      env: dict[str, str] | None = None) -> PeTaskInfo:
        if self.refuse:
            raise Forbidden(self.refuse)
        self.started.append((host, argv, env or {}))
        return self._info(str(len(self.started)), host)

    def pe_task(self, job_id: int, petask: str, task: int = 0) -> PeTaskInfo:
        return self._info(petask, "n2", **self.ends.get(petask, {}))

    def pe_task_output(self, job_id: int, petask: str, stream: str = "stdout", offset: int = 0,
                       task: int = 0) -> OutputChunk:
        data = self.output[petask][offset:] if stream == "stdout" else b""
        return OutputChunk(node="n2", attempt=1, offset=offset, data=data, size=None)

    def stop_pe_task(self, job_id: int, petask: str, task: int = 0) -> PeTaskInfo:
        self.stopped.append(petask)
        self.ends[petask] = {"ended_at": 2.0, "signal": signal.SIGTERM, "exit_status": 143}
        return self._info(petask, "n2")

    def _info(self, petask: str, host: str, **fields: Any) -> PeTaskInfo:
        return PeTaskInfo(job_id=7, task=0, attempt=1, petask=petask, host=host, argv=["x"], started_at=1.0,
                          **fields)


class Out:
    def __init__(self) -> None:
        self.data = b""
        self.closed = False

    def write(self, data: bytes) -> None:
        self.data += data

    def close(self) -> None:
        self.closed = True


def test_each_tasks_output_is_copied_and_its_end_is_a_wait_status() -> None:
    api = Api({"1": {"ended_at": 2.0, "exit_code": 3, "exit_status": 3},
               "2": {"ended_at": 2.0, "signal": signal.SIGKILL, "exit_status": 137}})
    tasks = RemoteTasks(api, 7, 0)  # type: ignore[arg-type]  # the stand-in has the calls used
    outs = [Out(), Out()]
    tasks.start(1, "n2", ["x"], "/w", {"SLURM_PROCID": "1"}, outs[0], outs[0])  # type: ignore[arg-type]
    tasks.start(2, "n2", ["x"], "/w", {"SLURM_PROCID": "2"}, outs[1], outs[1])  # type: ignore[arg-type]
    assert tasks.codes() == {1: 3, 2: -signal.SIGKILL}
    assert (outs[0].data, outs[1].data) == (b"one\n", b"two\n") and all(out.closed for out in outs)
    assert [env["SLURM_PROCID"] for _, _, env in api.started] == ["1", "2"]


def test_a_stop_is_sent_at_the_next_look_and_skips_the_tasks_not_yet_started() -> None:
    api = Api({})
    tasks = RemoteTasks(api, 7, 0)  # type: ignore[arg-type]
    out = Out()
    tasks.start(1, "n2", ["x"], "/w", {}, out, out)  # type: ignore[arg-type]
    assert tasks.codes() == {1: None}
    tasks.stop()  # as a signal handler calls it: nothing is sent from there
    assert api.stopped == []
    tasks.start(2, "n3", ["x"], "/w", {}, Out(), Out())  # type: ignore[arg-type]
    assert len(api.started) == 1  # not started: srun is stopping
    assert tasks.codes() == {1: -signal.SIGTERM, 2: -signal.SIGTERM} and api.stopped == ["1"]


def test_a_task_the_controller_refuses_fails_with_the_reason(capsys: pytest.CaptureFixture[str]) -> None:
    api = Api({}, refuse="the parallel environment mpi of job 7 has control_slaves = false")
    tasks = RemoteTasks(api, 7, 0)  # type: ignore[arg-type]
    out = Out()
    tasks.start(1, "n2", ["x"], "/w", {}, out, out)  # type: ignore[arg-type]
    assert tasks.codes() == {1: 1} and out.closed
    assert "srun: error: n2: task 1: could not be started: the parallel environment mpi" in capsys.readouterr().err
