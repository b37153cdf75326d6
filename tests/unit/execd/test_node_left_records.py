"""An attempt a node ended as it left its cluster for good (execd/leaving.py): its exit record,
as the node reports it, says so whatever the job did with its signals, and the controller
decides it as a lost node's: requeued if the job may run again, else NODE_FAIL, with the
node's words as the reason."""

from __future__ import annotations

import json
from pathlib import Path

from drover.controller.reads.history_views import end_reason
from drover.core.exit_status import classify_exit, exit_facts, outcome_reason
from drover.core.job_state import Trigger
from drover.execd import attempt_records
from drover.spool import layout

WHY = "node slurm-7-0 left: its slurm allocation 7 ended"


def _spool(tmp_path: Path, exit_code: int | None, signal: int | None, terminated: bool) -> layout.SpoolDir:
    spool = layout.SpoolDir(str(tmp_path), "3.0.1")
    Path(spool.path).mkdir()
    Path(spool.record(layout.EXIT_STATUS)).write_text(json.dumps({
        "exit_code": exit_code, "signal": signal, "failure": None, "timed_out": False,
        "terminated": terminated, "out_of_memory": False}))
    return spool


def test_an_attempt_ended_as_its_node_left_is_reported_so_whatever_the_job_did(tmp_path: Path) -> None:
    # Stopped by its shepherd; killed by the outer scheduler's SIGTERM; exited 0 on that SIGTERM.
    for exit_code, signal, terminated in ((None, 15, True), (None, 15, False), (0, None, False)):
        root = tmp_path / f"{exit_code}-{signal}-{terminated}"
        root.mkdir()
        spool = _spool(root, exit_code, signal, terminated)
        assert attempt_records.exit_status(spool).get("node_left") is None
        Path(spool.record(attempt_records.NODE_LEFT)).write_text(WHY)
        record = attempt_records.exit_status(spool)
        assert record["node_left"] is True and record["failure"] == WHY, record


def test_it_is_decided_as_a_lost_nodes_attempt(tmp_path: Path) -> None:
    spool = _spool(tmp_path, None, 15, True)
    Path(spool.record(attempt_records.NODE_LEFT)).write_text(WHY)
    record = attempt_records.exit_status(spool)
    rerunnable = exit_facts(record, rerunnable=True, attempt_number=1)
    assert classify_exit(rerunnable) is Trigger.REQUEUE
    assert outcome_reason(rerunnable, Trigger.REQUEUE) == f"{WHY}; requeued as a new attempt"
    not_rerunnable = exit_facts(record, rerunnable=False, attempt_number=1)
    assert classify_exit(not_rerunnable) is Trigger.LOSE_NODE
    assert outcome_reason(not_rerunnable, Trigger.LOSE_NODE) == f"{WHY}; the job is not rerunnable"
    assert end_reason(record, "node_fail", None) == f"NodeLost: {WHY}"


def test_a_job_that_ended_of_itself_keeps_its_end_without_the_mark(tmp_path: Path) -> None:
    spool = _spool(tmp_path, 0, None, False)
    record = attempt_records.exit_status(spool)
    assert classify_exit(exit_facts(record)) is Trigger.SUCCEED
