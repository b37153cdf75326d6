"""HTCondor's job event log as Drover writes it, on plain data: each event's header and body as
condor_event.cpp formats them, and the reading condor_wait does (complete events only)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from drover.compat.htcondor import eventlog

WHEN = time.mktime((2026, 11, 28, 9, 5, 3, 0, 0, -1))


def test_the_header_is_the_event_number_the_job_id_and_an_iso_date() -> None:
    assert eventlog.header(5, 12, 3, WHEN) == "005 (012.003.000) 2026-11-28 09:05:03 "
    assert eventlog.header(1, 1234, 0, WHEN).startswith("001 (1234.000.000) ")


def test_a_normal_termination_with_its_usage_and_resources() -> None:
    text = eventlog.terminated(12, 0, WHEN, 3, None, eventlog.Usage(3725.0, 61.0, 20480), eventlog.Request(2, 128, 1024))
    lines = text.split("\n")
    assert lines[0] == "005 (012.000.000) 2026-11-28 09:05:03 Job terminated."
    assert lines[1] == "\t(1) Normal termination (return value 3)"
    assert lines[2] == "\t\tUsr 0 01:02:05, Sys 0 00:01:01  -  Run Remote Usage"
    assert lines[3] == "\t\tUsr 0 00:00:00, Sys 0 00:00:00  -  Run Local Usage"
    assert lines[4] == "\t\tUsr 0 01:02:05, Sys 0 00:01:01  -  Total Remote Usage"
    assert lines[6] == "\t0  -  Run Bytes Sent By Job"
    assert lines[10].startswith("\tPartitionable Resources :    Usage  Request Allocated")
    assert lines[11].split() == ["Cpus", ":", "3786.00", "2", "2"]
    assert lines[13].split() == ["Memory", "(MB)", ":", "20", "128", "128"]
    assert text.endswith("\n...\n")


def test_an_abnormal_termination_names_its_signal() -> None:
    text = eventlog.terminated(12, 1, WHEN, None, 9, eventlog.Usage(), eventlog.Request(1, 0))
    assert "\t(0) Abnormal termination (signal 9)\n\t(0) No core file\n\t\tUsr 0 00:00:00" in text
    # its memory not known: the usage left empty, as formatUsageAd leaves one the ad lacks
    assert [line.split() for line in text.split("\n") if "Memory (MB)" in line] == [["Memory", "(MB)", ":", "0", "0"]]


@pytest.mark.parametrize(("text", "body"), [
    (eventlog.submitted(3, 0, WHEN, "<10.0.0.1:9618>"), "Job submitted from host: <10.0.0.1:9618>\n"),
    (eventlog.executing(3, 0, WHEN, "<10.0.0.2:9618>", "slot1@n1"),
     "Job executing on host: <10.0.0.2:9618>\n\tSlotName: slot1@n1\n"),
    (eventlog.held(3, 0, WHEN, "via condor_hold (by user ann)", 1),
     "Job was held.\n\tvia condor_hold (by user ann)\n\tCode 1 Subcode 0\n"),
    (eventlog.released(3, 0, WHEN, "via condor_release (by user ann)"),
     "Job was released.\n\tvia condor_release (by user ann)\n"),
    (eventlog.aborted(3, 0, WHEN, "via condor_rm (by user ann)"), "Job was aborted.\n\tvia condor_rm (by user ann)\n"),
    (eventlog.image_size(3, 0, WHEN, 2048),
     "Image size of job updated: 2048\n\t2  -  MemoryUsage of job (MB)\n\t2048  -  ResidentSetSize of job (KB)\n"),
    (eventlog.file_transfer(3, 0, WHEN, eventlog.TRANSFER_OUTPUT_STARTED),
     "Started transferring output files\n"),
    (eventlog.shadow_exception(3, 0, WHEN, "lost"),
     "Shadow exception!\n\tlost\n\t0  -  Run Bytes Sent By Job\n\t0  -  Run Bytes Received By Job\n"),
])
def test_each_event_is_its_header_its_body_and_the_separator(text: str, body: str) -> None:
    assert text[len("000 (003.000.000) 2026-11-28 09:05:03 "):] == body + "...\n"


def test_reading_gives_complete_events_and_keeps_a_partial_one() -> None:
    text = eventlog.submitted(3, 0, WHEN, "<h>") + eventlog.executing(3, 0, WHEN, "<n>", "slot1@n")
    partial = "005 (003.000.000) 2026-11-28 09:05:03 Job terminated.\n\t(1) Normal"
    events, rest = eventlog.read_events(text + partial)
    assert [(e.number, e.cluster, e.proc) for e in events] == [(0, 3, 0), (1, 3, 0)]
    assert events[1].text.startswith("Job executing on host: <n>")
    assert rest == partial


def test_append_refuses_what_is_no_regular_file(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(OSError):  # at once: a FIFO nobody reads is never waited on
        eventlog.append(str(fifo), "x")
    with pytest.raises(OSError):
        eventlog.append(str(tmp_path), "x")
    log = tmp_path / "job.log"
    eventlog.append(str(log), "a")
    eventlog.append(str(log), "b")
    assert log.read_text() == "ab"
    assert log.stat().st_mode & 0o777 == 0o644 & ~_umask()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
