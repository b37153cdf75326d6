"""A start order (StartAttempt) whose CPU ids are not all among those the node offers (its
hello's count), or that names a CPU twice: the shepherd could not pin the job there, and would
run it on every CPU. A controller taken over may send such an order (docs/security.md); an
honest one does not (it ends, itself, what a node came back too small for). The node refuses it
before anything of it is made: no spool, no shepherd, and the controller is told at once, as of
an attempt the node could not prepare (node_fault: it requeues the job). A good order that
follows runs as ever, on a real shepherd."""

from __future__ import annotations

import asyncio
import json
import os
import pwd
from pathlib import Path
from typing import Any

import pytest
from tests.helpers.attempt_config import NODE_OPTIONS, attempt_config
from tests.unit.execd.test_node_promises import Cleanup, Spawner, spawner, until  # noqa: F401  (a fixture)

from drover.execd.attempts import Attempts, cpus_refusal
from drover.protocol.node_channel import Exited, StartAttempt, Started, controller_decoder
from drover.spool import layout

NAME = "7.0.1"


def test_cpu_ids_the_node_offers_each_once_are_taken() -> None:
    assert cpus_refusal([], 2) is None
    assert cpus_refusal([0], 2) is None and cpus_refusal([1, 0], 2) is None
    assert cpus_refusal(list(range(64)), 64) is None


@pytest.mark.parametrize("cpu_ids,why", [
    ([2], "CPU 2 is not one this node offers (it offers CPUs 0 to 1)"),
    ([0, 1, 65535], "CPU 65535 is not one this node offers (it offers CPUs 0 to 1)"),
    ([1 << 16], "CPU 65536 is not one this node offers (it offers CPUs 0 to 1)"),
    ([-1], "CPU -1 is not one this node offers (it offers CPUs 0 to 1)"),
    ([10 ** 5000], "a CPU id out of any range is not one this node offers (it offers CPUs 0 to 1)"),
    ([0, 0], "CPU 0 is named twice"),
    ([1, 0, 1], "CPU 1 is named twice"),
    ([True], "a CPU id of type bool is not one this node offers (it offers CPUs 0 to 1)"),
    (["1"], "a CPU id of type str is not one this node offers (it offers CPUs 0 to 1)"),
    ({"0": 0}, "its CPUs are not a list of CPU ids"),
])
def test_cpu_ids_the_node_does_not_offer_or_names_twice_are_refused(cpu_ids: Any, why: str) -> None:
    """Some of these only a spool's config, read back after a restart, could hold (JSON): the
    order's decoder lets only lists of ints through."""
    assert cpus_refusal(cpu_ids, 2) == why


def hostile(config: dict[str, Any], cpu_ids: str, name: str = NAME) -> StartAttempt:
    """The order a frame with these CPU ids decodes to, as the node's channel decodes it."""
    frame = json.dumps([{"type": "start", "attempt": name, "config": {**config, "cpu_ids": "CPUS"},
                         "script": "touch ran\n"}]).replace('"CPUS"', cpu_ids)
    (order,) = controller_decoder.decode(frame.encode())
    assert isinstance(order, StartAttempt)
    return order


def test_an_order_on_cpus_the_node_lacks_starts_nothing_makes_nothing_and_is_reported(
        tmp_path: Path, spawner: Spawner) -> None:  # noqa: F811
    """A node of two CPUs: each hostile order is refused whole, with a report the controller
    requeues the job on; a repeat is refused again (nothing of the first was kept); then a good
    order of the same attempt runs, on a real shepherd."""
    root, work = tmp_path / "spool", tmp_path / "work"
    work.mkdir()
    owner = pwd.getpwuid(os.geteuid()).pw_name
    config: dict[str, Any] = {**attempt_config(str(work), NAME, owner=owner), "cpus": 2}
    hostile_cpus = ["[2, 3]", "[0, 2]", "[65536, 0]", "[" + "9" * 1000 + ", 0]", "[-1, 0]", "[1, 1]", "[0, 0]"]

    async def scenario() -> None:
        cleanup, sent = Cleanup(), []
        attempts = Attempts(str(root), spawner, sent.append, cleanup, NODE_OPTIONS, cpus=2)  # type: ignore[arg-type]
        try:
            for cpu_ids in [*hostile_cpus, hostile_cpus[0]]:
                attempts.start(hostile(config, cpu_ids))
            assert sorted(os.listdir(root)) == [layout.NOTIFY_SOCKET]  # no spool, not even for a moment's use
            assert spawner.started == [] and cleanup.begun == [] and not attempts.live and not attempts.promised
            assert not (work / "ran").exists()
            assert [type(message) for message in sent] == [Exited] * (len(hostile_cpus) + 1)
            for message in sent:
                assert message.attempt == NAME and message.done == [] and message.usage is None
                status = message.exit_status
                assert status["node_fault"] is True and status["exit_code"] is None and not status["terminated"]
                assert status["failure"].startswith("the node refused the order's CPUs: ")
            assert sent[0].exit_status["failure"].endswith("CPU 2 is not one this node offers (it offers CPUs 0 to 1)")
            assert sent[5].exit_status["failure"].endswith("CPU 1 is named twice")
            assert NAME not in [known.attempt for known in attempts.known()]  # its order may come again

            sent.clear()
            attempts.start(hostile(config, "[1, 0]"))
            await until(lambda: NAME in cleanup.begun)
            assert spawner.started == [NAME] and (work / "ran").exists()
            assert [type(message) for message in sent] == [Started]
        finally:
            attempts.close()

    asyncio.run(scenario())
