"""LSF as an outer scheduler: the command lines the allocator and the worker run, and how their
output is read (cluster/outer/lsf.py), on outputs in IBM Spectrum LSF's documented formats
(bsub(1), bjobs(1) -o -noheader). The integration test runs them on Drover's own LSF front end."""

from __future__ import annotations

import pytest

from drover.cluster.outer.base import Refused, Request, by_name
from drover.cluster.outer.lsf import Lsf, parse_time_left, run_limit
from drover.core.allocations import AllocationState


def test_bsub_asks_for_slots_one_a_host_the_run_limit_and_queue_with_the_users_arguments_last() -> None:
    request = Request("drover-abc-q1", 2, 5400, "/s/q1.sh", "/s/drover-abc-q1-%j.out", "normal", ("-P", "proj"),
                      {"DROVER_JOIN_TOKEN": "drv1.a.b.c"})
    assert Lsf().submit(request) == [
        "bsub", "-J", "drover-abc-q1", "-n", "2", "-R", "span[ptile=1]", "-W", "90", "-o",
        "/s/drover-abc-q1-%J.out", "-rn", "-q", "normal", "-P", "proj"]
    assert "-q" not in Lsf().submit(Request("n", 1, 60, "/s", "/o"))
    assert "drv1.a.b.c" not in " ".join(Lsf().submit(request))  # the token goes in bsub's environment
    assert Lsf().script_on_stdin  # bsub < script


@pytest.mark.parametrize(("seconds", "minutes"), [(60, "1"), (5400, "90"), (119, "1"), (30, "1")])
def test_run_limits_in_minutes(seconds: float, minutes: str) -> None:
    assert run_limit(seconds) == minutes


def test_the_job_id_bsub_prints() -> None:
    assert Lsf().submitted_id("Job <1234> is submitted to queue <normal>.\n") == "1234"
    assert Lsf().submitted_id("Job <88> is submitted to default queue <normal>.\n") == "88"
    with pytest.raises(Refused, match="no job id"):
        Lsf().submitted_id("normal: No such queue. Job not submitted.\n")
    assert Lsf().output_file("/s/q1-%j.out", "q1", "1234") == "/s/q1-1234.out"


def test_bjobs_states() -> None:
    out = ("101 PEND\n102 RUN\n103 DONE\n104 EXIT\n105 PSUSP\n106 USUSP\n107 SSUSP\n108 UNKWN\n109 ZOMBI\n"
           "110 WAIT\nJob <111> is not found\n\n")
    assert Lsf().states(out) == {
        "101": AllocationState.QUEUED, "102": AllocationState.RUNNING, "103": AllocationState.ENDED,
        "104": AllocationState.FAILED, "105": AllocationState.QUEUED, "106": AllocationState.QUEUED,
        "107": AllocationState.QUEUED, "108": AllocationState.RUNNING, "109": AllocationState.FAILED,
        "110": AllocationState.QUEUED}


def test_the_status_command_and_when_its_failure_is_still_an_answer() -> None:
    assert Lsf().status("drover-abc-", "alice", ["101", "102"]) == [
        "bjobs", "-a", "-o", "jobid stat", "-noheader", "101", "102"]
    assert Lsf().answered(0, "101 RUN\n", "")
    # An id mbatchd forgot fails bjobs, which still shows the others: an answer.
    assert Lsf().answered(255, "102 RUN\n", "Job <101> is not found\n")
    assert not Lsf().answered(255, "", "LSF is down. Please wait ...\n")
    assert not Lsf().answered(1, "", "")
    assert Lsf().cancel(["101"]) == ["bkill", "101"]


@pytest.mark.parametrize(("text", "seconds"), [("0:59 L", 3540), ("12:05 L", 43500), ("1:00 E", 3600),
                                               ("-", None), ("", None)])
def test_time_left(text: str, seconds: float | None) -> None:
    assert parse_time_left(text) == seconds
    assert Lsf().seconds_left(text + "\n") == seconds
    assert Lsf().time_left("7") == ["bjobs", "-o", "time_left", "-noheader", "7"]


def test_the_script_starts_one_worker_a_host() -> None:
    one = Lsf().script(["/usr/bin/python3", "-m", "drover", "alloc", "worker", "https://h:7443"], 1,
                       {"DROVER_JOIN_TOKEN": "drv1.a.b.c"})
    assert "\nexport DROVER_JOIN_TOKEN=drv1.a.b.c\nexec /usr/bin/python3 -m drover alloc worker https://h:7443\n" in one
    several = Lsf().script(["drover", "w"], 2, {})
    assert "for host in $LSB_HOSTS; do\n" in several
    assert "  blaunch \"$host\" /usr/bin/env DROVER_NODE_INDEX=\"$i\" drover w &\n" in several
    assert several.endswith("done\nwait\n")


def test_inside_an_allocation() -> None:
    assert Lsf().allocation_id({"LSB_JOBID": "77"}) == "77"
    assert Lsf().allocation_id({"LSB_JOBID": ""}) is None
    assert Lsf().node_index({"DROVER_NODE_INDEX": "1"}) == 1
    assert Lsf().node_index({}) == 0


def test_by_name() -> None:
    assert by_name("lsf").name == "lsf"
