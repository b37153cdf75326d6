"""A report naming what is no attempt Drover could have made (a number the store cannot hold,
thousands of digits) changes nothing and fails nothing: the frame carrying it, and the other
nodes' reports handled in the same loop turn, go on as if it were not there. (A node taken over
sent such a name beside another node's honest report of a job's end: the whole group was set
aside, nothing acknowledged, and the job never ended.)"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest
from tests.unit.controller.test_group_commit import OK, Cluster

from drover.core.ids import attempt_key
from drover.protocol.node_channel import Exited, Progress, Started


@pytest.mark.parametrize("name", ["99999999999999999999.0.1", "1" * 5000 + ".0.1", "1.4294967296.1",
                                  "0.0.1", "١.0.1", "1.0", "1.0.1.2"])
def test_a_name_beyond_what_the_store_holds_is_no_attempts(name: str) -> None:
    assert attempt_key(name) is None


def test_names_drover_makes_are_read() -> None:
    assert attempt_key("12.0.1") == (12, 0, 1)
    assert attempt_key(f"{2**63 - 1}.{2**31 - 1}.3") == (2**63 - 1, 2**31 - 1, 3)


@pytest.mark.parametrize("poison", ["99999999999999999999.0.1", "7" * 5000 + ".0.1"])
def test_another_nodes_report_naming_no_attempt_does_not_stop_a_job_ending(tmp_path: Path, poison: str,
                                                                          caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.CRITICAL)

    async def main() -> None:
        cluster = Cluster(tmp_path / "drover.db")
        await cluster.submit(2)
        orders = cluster.orders()
        for job_id, (node, attempt) in orders.items():
            cluster.service.node_messages(node, [Started(attempt, 10 + job_id, 1.0)])
        await cluster.turn()
        (first, (node, attempt)), (_, (other, _)) = sorted(orders.items())
        cluster.service.node_messages(node, [Exited(attempt, dict(OK))])
        cluster.service.node_messages(other, [Progress(attempt, ["x"], None, 0, None),
                                              Progress(poison, ["x"], "mail", 3, "e", given_up=True)])
        await cluster.turn()
        assert cluster.state_of(first) == "completed"
        assert attempt in cluster.acked()

    asyncio.run(main())
