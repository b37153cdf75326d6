"""A node that runs signed jobs only runs a task of a parallel job only if its owner signed it
(cluster/signing.py, SignedPeTask): the job, the host, the command, the working directory and
the environment, as `drover task start` and `qrsh -inherit` sign them. With a private munged."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from drover.cluster import munge
from drover.cluster.signing import job_digest, signed_pe_task_request
from drover.execd.signatures import SignedJobs
from drover.protocol.node_channel import StartPeTask, task_script


@pytest.fixture
def munged(tmp_path: Path) -> Iterator[str]:
    from tests.helpers.munge import Munged, MungeUnavailable

    try:
        daemon = Munged(tmp_path / "munge")
    except MungeUnavailable as why:
        pytest.skip(str(why))
    yield daemon.socket
    daemon.stop()


def _order(credential: str | None, **changed: Any) -> StartPeTask:
    config: dict[str, Any] = {"job_id": 5, "owner": "root", "node": "n2", "workdir": "/work",
                              "environment": {"A": "1"}, "job": {"credential": credential}, **changed}
    return StartPeTask("5.0.1", "1", config, task_script(["./solver", "--rank", "1"]))  # type: ignore[arg-type]


def test_only_the_task_its_owner_signed_runs_on_a_node_of_signed_jobs(munged: str) -> None:
    # root's own credential: this node runs root's jobs
    credential = munge.encode(job_digest(signed_pe_task_request(5, "n2", ["./solver", "--rank", "1"], "/work",
                                                                {"A": "1"})), munged)
    node = SignedJobs("n2", munged, 3600, allow_root_jobs=True)
    assert node.pe_task_refusal(_order(credential)) is None
    changed = node.pe_task_refusal(_order(credential, environment={"A": "1", "LD_PRELOAD": "/tmp/x.so"}))
    assert changed is not None and "what the task runs is not what its owner signed" in changed
    assert "not what its owner signed" in (node.pe_task_refusal(_order(credential, job_id=6)) or "")
    elsewhere = node.pe_task_refusal(_order(credential, node="n1"))
    assert elsewhere == "the order is for node n1, not this one (n2)"
    unsigned = node.pe_task_refusal(_order(None))
    assert unsigned is not None and unsigned.startswith("the task is not signed by its owner")
