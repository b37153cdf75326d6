"""Staged-out files sent in chunks: written at their offsets, resumed from what the controller
holds, bounded by its limit, and renamed into place only whole and matching their digests."""

from __future__ import annotations

import asyncio
import hashlib
import os
from pathlib import Path

import msgspec
import pytest

from drover.controller.nodes import staged_files
from drover.core.errors import NotFound
from drover.protocol.node_channel import (
    Ack,
    ChunkKept,
    Hello,
    Progress,
    SentFile,
    StagedChunk,
    StagedOut,
    StartAttempt,
    frames,
    node_decoder,
)

LIMIT = 1000


def chunk(offset: int, data: bytes, size: int, record: str = "0", attempt: str = "7.0.1") -> StagedChunk:
    return StagedChunk(attempt, record, offset, data, size)


def sent(data: bytes, name: str = "out/result.bin", record: str = "0") -> SentFile:
    return SentFile(name, record, len(data), hashlib.sha256(data).hexdigest(), 0o640)


def test_chunks_resume_from_what_is_held_and_a_repeat_changes_nothing(tmp_path: Path) -> None:
    data = bytes(range(256)) * 3
    assert staged_files.keep_chunk(str(tmp_path), chunk(0, data[:300], len(data)), LIMIT).have == 300
    assert staged_files.keep_chunk(str(tmp_path), chunk(0, data[:300], len(data)), LIMIT).have == 300  # again
    # A node that remembers more than the controller holds is told where to go on from.
    assert staged_files.keep_chunk(str(tmp_path), chunk(600, data[600:], len(data)), LIMIT).have == 300
    assert staged_files.keep_chunk(str(tmp_path), chunk(300, data[300:], len(data)), LIMIT).have == len(data)
    assert not os.path.exists(tmp_path / "7.0.1")  # nothing under its name before the report
    staged_files.keep(str(tmp_path), StagedOut("7.0.1", [], sent=[sent(data)]))
    kept = tmp_path / "7.0.1" / "out" / "result.bin"
    assert kept.read_bytes() == data and kept.stat().st_mode & 0o777 == 0o640
    assert not os.path.exists(tmp_path / staged_files.PARTIAL_DIR / "7.0.1")
    staged_files.keep(str(tmp_path), StagedOut("7.0.1", [], sent=[sent(data)]))  # its ack was lost
    assert kept.read_bytes() == data


def test_a_file_over_the_limit_is_refused_whole_and_nothing_of_it_stays(tmp_path: Path) -> None:
    assert staged_files.keep_chunk(str(tmp_path), chunk(0, b"a" * 600, 600, record="0"), LIMIT).have == 600
    answer = staged_files.keep_chunk(str(tmp_path), chunk(0, b"b" * 300, 500, record="1"), LIMIT)
    assert answer.refused is not None and "max_stage_out_bytes" in answer.refused
    assert sorted(os.listdir(tmp_path / staged_files.PARTIAL_DIR / "7.0.1")) == ["0"]
    lying = staged_files.keep_chunk(str(tmp_path), chunk(0, b"c" * 50, 10, record="2"), LIMIT)
    assert lying.refused is not None and "past the file's size" in lying.refused


def test_a_report_whose_bytes_differ_keeps_nothing_and_asks_for_them_again(tmp_path: Path) -> None:
    good, other = b"x" * 100, b"y" * 10
    staged_files.keep_chunk(str(tmp_path), chunk(0, good, 100, record="0"), LIMIT)
    staged_files.keep_chunk(str(tmp_path), chunk(0, other[:5], 10, record="1"), LIMIT)  # half of it
    with pytest.raises(staged_files.NotKept):
        staged_files.keep(str(tmp_path), StagedOut("7.0.1", [], sent=[sent(good), sent(other, "b", "1")]))
    assert not os.path.exists(tmp_path / "7.0.1")  # not even the whole one: all or nothing
    assert staged_files.keep_chunk(str(tmp_path), chunk(5, other[5:], 10, record="1"), LIMIT).have == 0


@pytest.mark.parametrize("attempt", ["../x", "7.0.1/..", "7.0", " 7.0.1", "7.0.01"])
def test_only_an_attempts_name_becomes_a_directory(tmp_path: Path, attempt: str) -> None:
    with pytest.raises(ValueError):
        staged_files.keep_chunk(str(tmp_path), chunk(0, b"x", 1, attempt=attempt), LIMIT)
    assert staged_files.keep_chunk(str(tmp_path), chunk(0, b"x", 1, record="../0"), LIMIT).refused


def test_frames_stay_under_their_bound_and_carry_every_message() -> None:
    batch = [chunk(i * 1000, b"z" * 1000, 10**6) for i in range(50)]
    cut = list(frames(batch, limit=5000))
    assert len(cut) > 1 and all(len(frame) <= 5000 for frame in cut)
    assert [m for frame in cut for m in node_decoder.decode(frame)] == batch
    (alone,) = frames([chunk(0, b"z" * 9000, 9000)], limit=5000)  # one message bigger on its own
    assert msgspec.json.decode(alone)[0]["offset"] == 0


def test_a_name_outside_the_jobs_files_keeps_nothing(tmp_path: Path) -> None:
    staged_files.keep_chunk(str(tmp_path), chunk(0, b"x", 1), LIMIT)
    with pytest.raises(NotFound):
        staged_files.keep(str(tmp_path), StagedOut("7.0.1", [], sent=[sent(b"x", name="../../escaped")]))
    assert not os.path.exists(tmp_path / "escaped") and not os.path.exists(tmp_path.parent / "escaped")


def test_the_controller_answers_chunks_of_its_nodes_own_attempts_and_a_bad_report_closes_no_channel(
        tmp_path: Path) -> None:
    """Through the controller's service: a chunk of an attempt the node runs is kept and answered;
    one naming an attempt that is not the node's, or the node's own spelt otherwise, is refused; a report naming a file outside the
    job's files is not acknowledged, and the node keeps its channel."""
    from tests.unit.controller.test_job_isolation import Cluster

    from drover.controller.settings import Settings

    async def main() -> None:
        cluster = Cluster(tmp_path / "drover.db", settings=Settings(files_dir=str(tmp_path / "files")))
        await cluster.submit()
        (order,) = cluster.sent(StartAttempt)
        await cluster.report(chunk(0, b"abc", 3, attempt=order.attempt), chunk(0, b"abc", 3, attempt="99.0.1"),
                             chunk(0, b"abc", 3, attempt="0" + order.attempt))
        answers = cluster.sent(ChunkKept)
        assert [(a.attempt, a.have, a.refused) for a in answers] == [
            (order.attempt, 3, None), ("99.0.1", 0, "not an attempt this node ran"),
            ("0" + order.attempt, 0, "not an attempt this node ran")]
        await cluster.report(StagedOut(order.attempt, [], sent=[sent(b"abc", name="../../escaped")]))
        assert order.attempt not in cluster.acked()
        cluster.check()  # the node's channel is still open
        await cluster.report(StagedOut(order.attempt, [], sent=[sent(b"abc", name="out.txt")]))
        assert (tmp_path / "files" / order.attempt / "out.txt").read_bytes() == b"abc"
        assert [ack.kind for ack in cluster.sent(Ack)] == ["stage_out"]
        cluster.check()

    asyncio.run(main())


def test_only_the_node_that_ran_an_attempt_has_its_partly_sent_files_forgotten(tmp_path: Path) -> None:
    """A node that gives up staging out an attempt's files has what it sent of them forgotten;
    another node's word that it gave up deleted what the attempt's own node was sending."""
    from tests.unit.controller.test_job_isolation import Cluster

    from drover.controller.nodes.node_channels import NodeChannel
    from drover.controller.settings import Settings

    async def main() -> None:
        files = tmp_path / "files"
        cluster = Cluster(tmp_path / "drover.db", settings=Settings(files_dir=str(files)))
        cluster.service.node_connected(NodeChannel("n2", cluster.socket), Hello("n2", 4, 8192, []))
        await cluster.submit()
        (order,) = cluster.sent(StartAttempt)
        await cluster.report(chunk(0, b"abc", 10, attempt=order.attempt))  # n1 runs it, and sends a part
        partial = files / staged_files.PARTIAL_DIR / order.attempt
        assert (partial / "0").read_bytes() == b"abc"
        cluster.service.node_messages("n2", [Progress(order.attempt, [], "stage_out", 3, "forged", given_up=True)])
        await cluster.turn()
        assert (partial / "0").read_bytes() == b"abc"  # another node's word forgets nothing
        await cluster.report(Progress(order.attempt, [], "stage_out", 3, "the disk is full", given_up=True))
        assert not partial.exists()  # its own node's does

    asyncio.run(main())
