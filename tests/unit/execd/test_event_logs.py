"""The node's end of a job's event log (execd/event_logs.py): the controller's writer, run as
the job's owner, appends each line once; on a node that runs signed jobs only, nothing but the
event log the owner signed is appended to, checked once per job. Real writer processes, and a
private munged for the signatures (root only: the writer switches to the owner)."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from drover.cluster import munge
from drover.cluster.signing import job_digest, signed_request
from drover.execd import signatures
from drover.execd.event_logs import NodeEventLogs
from drover.execd.signatures import SignedJobs
from drover.protocol.node_channel import AppendEventLog, EventLogAppended

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the writer runs as the job's owner: root switches to it")


def lines(job: int, *seqs: int) -> list[tuple[int, str]]:
    return [(seq, json.dumps({"seq": seq, "job": job, "event": "e"}) + "\n") for seq in seqs]


def appended(logs: NodeEventLogs, *orders: AppendEventLog) -> list[EventLogAppended]:
    """Each order's answer, in order."""
    answers: list[EventLogAppended] = []
    logs.send = answers.append

    async def main() -> None:
        for order in orders:
            logs.append(order)
            for _ in range(500):
                if len(answers) == orders.index(order) + 1:
                    break
                await asyncio.sleep(0.01)
        await logs.close()

    asyncio.run(main())
    return answers


def test_lines_are_appended_once(tmp_path: Path) -> None:
    """Root's job here: this test's interpreter may be one only root can run. That a user's event
    log is written as that user is proven through the installed command, in
    tests/integration/shared/test_service_user.py."""
    path = str(tmp_path / "events.jsonl")
    logs = NodeEventLogs(lambda message: None)
    first, again = appended(logs, AppendEventLog(1, 7, "root", path, lines(7, 1, 2)),
                            AppendEventLog(2, 7, "root", path, lines(7, 1, 2, 3)))
    assert (first.request, first.last, first.error) == (1, 2, None)
    assert (again.request, again.last, again.error) == (2, 3, None)
    assert [json.loads(line)["seq"] for line in Path(path).read_text().splitlines()] == [1, 2, 3]


def test_what_the_writer_refuses_goes_back_with_its_reason(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo")
    (fifo,) = appended(NodeEventLogs(lambda message: None),
                       AppendEventLog(1, 7, "root", str(tmp_path / "fifo"), lines(7, 1)))
    assert fifo.error == f"{tmp_path / 'fifo'} is not a regular file"
    (unknown,) = appended(NodeEventLogs(lambda message: None),
                          AppendEventLog(1, 7, "no-such-user-here", str(tmp_path / "x"), lines(7, 1)))
    assert unknown.error == "user no-such-user-here does not exist on this node"


@pytest.fixture
def munged(tmp_path: Path) -> Iterator[str]:
    from tests.helpers.munge import Munged, MungeUnavailable

    try:
        daemon = Munged(tmp_path / "munge")
    except MungeUnavailable as why:
        pytest.skip(str(why))
    yield daemon.socket
    daemon.stop()


def test_a_node_that_runs_signed_jobs_only_appends_to_the_event_log_the_owner_signed(
        munged: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path, other = str(tmp_path / "events.jsonl"), str(tmp_path / ".bashrc")
    job = {"script": "true\n", "workdir": str(tmp_path), "event_log": path}
    signed: dict[str, Any] = dict(signed_request(job))
    credential = munge.encode(job_digest(signed), munged)  # root's: this node runs root's jobs
    node = SignedJobs("n1", munged, 3600, allow_root_jobs=True)

    def order(request: int, to: str, sent: dict[str, Any] | None = signed, cred: str | None = credential,
              job_id: int = 7) -> AppendEventLog:
        return AppendEventLog(request, job_id, "root", to, lines(job_id, request), cred, sent)

    logs = NodeEventLogs(lambda message: None, node)
    unsigned, elsewhere, forged, genuine = appended(
        logs, order(1, path, cred=None), order(2, other), order(3, other, {**signed, "event_log": other}), order(4, path))
    assert unsigned.error is not None and "not signed by its owner" in unsigned.error
    assert elsewhere.error == f"the event log {other} is not the one the job's owner signed"
    assert forged.error == "what the controller sent as the job's signed fields is not what its owner signed"
    assert genuine.error is None and genuine.last == 4
    assert not os.path.exists(other) and [json.loads(x)["seq"] for x in Path(path).read_text().splitlines()] == [4]

    def no_munged(*args: Any, **kwargs: Any) -> Any:
        raise munge.CredentialError("munged is not asked again")

    monkeypatch.setattr(signatures.munge, "decode", no_munged)
    (later,) = appended(logs, order(5, path))  # the same job, owner and path: checked once
    assert later.error is None and later.last == 5
    (another_job,) = appended(logs, order(6, path, job_id=8))
    assert another_job.error is not None and "munged is not asked again" in another_job.error
