"""A controller that has begun to stop (main.py's shutdown: stop_answering) starts no new work:
the nodes' reports are still recorded and acknowledged (a job that ends is counted), but no
planner pass runs, so no order goes out that the stopping controller would not follow (an
attempt it records as dispatched and never hears of, or one a node starts that it never
recorded). The next controller plans from the store."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.helpers.node_socket import FakeSocket

from drover.config_schema import SchedulerSection
from drover.controller.nodes.node_channels import NodeChannel
from drover.controller.service import ControllerService, Settings
from drover.core.errors import Standby
from drover.protocol.api import JobSubmission
from drover.protocol.node_channel import Ack, Exited, Hello, StartAttempt, Started
from drover.store.sqlite import SqliteStore

OK = {"exit_code": 0, "signal": None, "failure": None, "timed_out": False, "terminated": False, "out_of_memory": False}


async def turns() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


def test_a_stopping_controller_records_the_ends_it_hears_of_and_sends_no_new_order(tmp_path: Path) -> None:
    async def main() -> None:
        store = SqliteStore(str(tmp_path / "drover.db"))
        try:
            service = ControllerService(store, Settings(scheduler=SchedulerSection(promises=False)))  # no order ahead
            socket = FakeSocket()
            service.node_connected(NodeChannel("n1", socket), Hello("n1", 1, 8192, []))
            running, waiting = service.submit([JobSubmission(script="true\n", workdir="/tmp")] * 2, "alice")
            await turns()
            (order,) = [m for m in socket.messages if isinstance(m, StartAttempt)]  # one CPU: one job
            service.node_messages("n1", [Started(order.attempt, 10, 1.0)])
            await turns()
            service.stop_answering(Standby("stopping"))
            service.node_messages("n1", [Exited(order.attempt, dict(OK))])  # its CPU is free now
            service.request_schedule()
            await turns()
            assert Ack([order.attempt]) in socket.messages  # its end is recorded, and said to be
            ended = store.load_job(running)
            assert ended is not None and ended.state is not None and ended.state.value == "completed"
            assert [m.attempt for m in socket.messages if isinstance(m, StartAttempt)] == [order.attempt]
            assert store.attempts_of(waiting) == [] and not service.state.jobs[waiting].tasks  # none dispatched
        finally:
            store.close()

    asyncio.run(main())
