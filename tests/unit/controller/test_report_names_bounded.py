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

from drover.controller.followers import fast_attempt_key
from drover.core.ids import (
    CACHED_NAME_MAX,
    bounded_attempt_key,
    parse_attempt_name,
)
from drover.protocol.node_channel import Exited, File, PeTaskExited, Progress, StagedOut, Started


@pytest.mark.parametrize("name", ["99999999999999999999.0.1", "1" * 5000 + ".0.1", "1.4294967296.1",
                                  "0.0.1", "١.0.1", "1.0", "1.0.1.2"])
def test_a_name_beyond_what_the_store_holds_is_no_attempts(name: str) -> None:
    assert bounded_attempt_key(name) is None


def test_names_drover_makes_are_read() -> None:
    assert bounded_attempt_key("12.0.1") == (12, 0, 1)
    assert bounded_attempt_key(f"{2**63 - 1}.{2**31 - 1}.3") == (2**63 - 1, 2**31 - 1, 3)
    longest = f"{2**63 - 1}.{2**63 - 1}.{2**63 - 1}"  # within CACHED_NAME_MAX, and read as a name
    assert bounded_attempt_key(longest) is None and fast_attempt_key(longest) == (2**63 - 1,) * 3


def test_the_names_kept_between_reports_are_those_of_attempts_drover_could_make() -> None:
    """A node may name any text; what is kept of names is bounded by their count and their
    length: a long name is read each time, never kept (a thousand names of 1 MiB would otherwise
    hold a GiB)."""
    long_name = "7" * 100_000 + ".0.1"
    kept = bounded_attempt_key.cache_info().currsize, fast_attempt_key.cache_info().currsize
    assert bounded_attempt_key(long_name) is None
    assert fast_attempt_key(long_name) == fast_attempt_key.read(long_name)  # read, as ever
    assert (bounded_attempt_key.cache_info().currsize, fast_attempt_key.cache_info().currsize) == kept
    assert len(f"{2**63 - 1}.{2**63 - 1}.{2**63 - 1}") <= CACHED_NAME_MAX


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


@pytest.mark.parametrize("name", ["99999999999999999999.0.1", "1.4294967296.1", "0.0.1", "١.0.1", " 1.0.1", "1_0.0.1"])
def test_a_name_a_node_or_user_sends_is_read_within_what_the_store_holds(name: str) -> None:
    with pytest.raises(ValueError):
        parse_attempt_name(name)
    assert parse_attempt_name("12.0.1") == (12, 0, 1)


POISON = "99999999999999999999.0.1"


def test_the_end_of_a_parallel_task_of_no_attempt_changes_nothing(tmp_path: Path) -> None:
    """A node's PeTaskExited naming 20 digits asked the store for that job (SQLite's integer
    overflowed): the controller restored the job from the store, failed, reloaded its whole
    working set, and closed the node's channel."""
    from tests.unit.controller.test_job_isolation import Cluster

    async def main() -> None:
        cluster = Cluster(tmp_path / "drover.db")
        (job_id,) = await cluster.submit()
        await cluster.report(PeTaskExited(POISON, "1", dict(OK)))
        assert cluster.state_of(job_id) == "dispatched"
        cluster.check()  # the node's channel is still open

    asyncio.run(main())


def test_files_staged_out_of_no_attempt_are_not_kept(tmp_path: Path) -> None:
    """A StagedOut naming 20 digits kept its files in a directory of no job, which no purge
    removes. Its files are not kept; it is acknowledged, as every report of an attempt the
    node cannot speak for is (it changes nothing, and the node need not send it again)."""
    from tests.unit.controller.test_job_isolation import Cluster

    from drover.controller.settings import Settings

    async def main() -> None:
        cluster = Cluster(tmp_path / "drover.db", settings=Settings(files_dir=str(tmp_path / "files")))
        await cluster.submit()
        await cluster.report(StagedOut(POISON, [File("out.txt", b"abc", 0o640)]))
        assert not (tmp_path / "files" / POISON).exists() and POISON in cluster.acked()
        cluster.check()

    asyncio.run(main())
