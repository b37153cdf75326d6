"""The tail of a task's output on a job's page: its last 64 KiB first, then what comes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from drover.protocol.api import JobInfo
from drover.web import pages
from drover.web.output import TAIL_BYTES, OutputTail


def _job(stdout: str, array: str | None = None, indices: tuple[int, ...] = (0,)) -> JobInfo:
    attempt = {"number": 1, "node": "n1", "cpu_ids": [0], "dispatched_at": 1.0, "started_at": 1.0}
    fields: dict[str, Any] = {
        "id": 5, "name": "j", "owner": "alice", "state": "running", "submitted_at": 1.0, "priority": 0, "cpus": 1,
        "memory_mib": 0, "time_limit_s": None, "array": array, "task_counts": {}, "workdir": "/", "output": stdout,
        "error": None, "tasks": [{"index": index, "state": "running", "state_since": 1.0, "stdout": stdout,
                                  "attempts": [attempt]} for index in indices]}
    return msgspec.convert(fields, JobInfo)


class NoClient:
    """The file is visible here: the client is never asked."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"the client was asked for {name}")


def test_the_tail_starts_at_the_last_64_kib_then_follows(tmp_path: Path) -> None:
    out = tmp_path / "drover-5.out"
    out.write_bytes(b"x" * TAIL_BYTES + b"the tail\n")
    tail = OutputTail(5, 0)
    job = _job(str(out))
    first = tail.read_new(NoClient(), job)  # type: ignore[arg-type]
    assert len(first) == TAIL_BYTES and first.endswith("the tail\n")
    assert tail.read_new(NoClient(), job) == ""  # type: ignore[arg-type]
    with out.open("ab") as file:
        file.write("é, then more\n".encode())
    assert tail.read_new(NoClient(), job) == "é, then more\n"  # type: ignore[arg-type]


def test_a_character_split_between_reads_is_kept_whole(tmp_path: Path) -> None:
    out = tmp_path / "drover-5.out"
    out.write_bytes("é".encode()[:1])
    tail = OutputTail(5, 0)
    assert tail.read_new(NoClient(), _job(str(out))) == ""  # type: ignore[arg-type]
    with out.open("ab") as file:
        file.write("é".encode()[1:])
    assert tail.read_new(NoClient(), _job(str(out))) == "é"  # type: ignore[arg-type]


def test_a_truncated_file_is_read_again_from_its_tail(tmp_path: Path) -> None:
    out = tmp_path / "drover-5.out"
    out.write_bytes(b"a long first run\n")
    tail = OutputTail(5, 0)
    tail.read_new(NoClient(), _job(str(out)))  # type: ignore[arg-type]
    out.write_bytes(b"new\n")
    assert tail.read_new(NoClient(), _job(str(out))) == "new\n"  # type: ignore[arg-type]


def test_a_task_not_started_has_no_output_yet(tmp_path: Path) -> None:
    assert OutputTail(5, 3).read_new(NoClient(), _job(str(tmp_path / "x"))) == ""  # type: ignore[arg-type]


def test_an_arrays_page_offers_each_tasks_output_and_controls() -> None:
    job = _job("/tmp/o", array="1-3", indices=(1, 2, 3))
    assert 'href="/jobs/5?task=2"' in pages.output_tail(job, 2) and 'data-task="2"' in pages.output_tail(job, 2)
    html = pages.job_live(job, [], None, now=2.0)
    assert 'data-ref="5.3"' in html and 'data-ref="5"' in html
