"""Following a parallel job's task (cli/pe_task_relay.py) when its node does not have it: the
node refused it or never got its order, and the controller records its end (failed, with why).
The caller gets the task's record, not the node's "not on this node"; a node that goes on not
having a task whose record says it runs is believed after AWAY_S; the output of a task that ran
not copied is an error still."""

from __future__ import annotations

from typing import Any

import pytest

from drover.cli import pe_task_relay
from drover.cli.pe_task_relay import TaskRelay
from drover.core.errors import NotFound
from drover.protocol.api import OutputChunk, PeTaskInfo

RUNNING = PeTaskInfo(job_id=7, task=0, attempt=1, petask="1", host="n2", argv=["true"], started_at=1.0)
LOST = PeTaskInfo(job_id=7, task=0, attempt=1, petask="1", host="n2", argv=["true"], started_at=1.0, ended_at=2.0,
                  failure="node n2 does not know the task: its order, or its refusal, was lost", exit_status=1)


class Controller:
    """The API as the relay sees it: the task's record (one per look, then the last again) and
    its node's answer to a read of its output."""

    def __init__(self, records: list[PeTaskInfo], output: OutputChunk | None) -> None:
        self.records, self.output = records, output

    def pe_task(self, job_id: int, petask: str, task: int = 0) -> PeTaskInfo:
        return self.records.pop(0) if len(self.records) > 1 else self.records[0]

    def pe_task_output(self, *args: Any, **kwargs: Any) -> OutputChunk:
        if self.output is None:
            raise NotFound("task 1 of attempt 7.0.1 is not on this node (or no longer)")
        chunk, self.output = self.output, OutputChunk(node="n2", attempt=1, offset=0, data=b"", size=0)
        return chunk


def _relay(written: list[bytes]) -> TaskRelay:
    return TaskRelay(7, 0, "1", {"stdout": written.append, "stderr": written.append})


def test_a_task_its_node_does_not_have_is_followed_to_the_end_its_record_says() -> None:
    relay = _relay([])
    # Running by its record while its node says it has it not: the end being recorded is waited for.
    assert relay.look(Controller([RUNNING, RUNNING], None)) is None  # type: ignore[arg-type]
    assert relay.missing_since is not None
    assert relay.look(Controller([RUNNING, LOST], None)) == LOST  # type: ignore[arg-type]


def test_a_node_that_goes_on_not_having_a_running_task_is_believed_in_the_end(monkeypatch: pytest.MonkeyPatch) -> None:
    relay = _relay([])
    now = [100.0]
    monkeypatch.setattr(pe_task_relay.time, "monotonic", lambda: now[0])
    assert relay.look(Controller([RUNNING], None)) is None  # type: ignore[arg-type]
    now[0] += pe_task_relay.AWAY_S + 1
    with pytest.raises(NotFound, match="not on this node"):
        relay.look(Controller([RUNNING], None))  # type: ignore[arg-type]


def test_the_output_of_a_task_that_ran_not_copied_is_an_error_still() -> None:
    """A task that ran (no failure to start) whose node answers a read of its output with an
    error: the caller says so, rather than return the task's status without its output."""
    ended = PeTaskInfo(job_id=7, task=0, attempt=1, petask="1", host="n2", argv=["true"], started_at=1.0,
                       ended_at=2.0, exit_code=0, exit_status=0)
    with pytest.raises(NotFound):
        _relay([]).look(Controller([ended], None))  # type: ignore[arg-type]


def test_output_is_copied_and_an_ended_task_is_returned_once_all_of_it_is() -> None:
    written: list[bytes] = []
    relay = _relay(written)
    chunk = OutputChunk(node="n2", attempt=1, offset=0, data=b"hello\n", size=6)
    ended = PeTaskInfo(job_id=7, task=0, attempt=1, petask="1", host="n2", argv=["true"], started_at=1.0,
                       ended_at=2.0, exit_code=0, exit_status=0)
    assert relay.look(Controller([ended], chunk)) == ended  # type: ignore[arg-type]
    assert written == [b"hello\n"] and relay.offsets["stdout"] == 6
