"""PBS as an outer scheduler: the command lines the allocator and the worker run, and how their
output is read (cluster/outer/pbs.py), on outputs in PBS Pro's documented formats (qsub(1B),
qstat(1B) -f -F json). The integration test runs them on Drover's own PBS front end."""

from __future__ import annotations

import json

import pytest

from drover.cluster.outer.base import Refused, Request, by_name
from drover.cluster.outer.pbs import Pbs, parse_walltime, walltime
from drover.core.allocations import AllocationState

TOKEN = {"DROVER_JOIN_TOKEN": "drv1.a.b.c"}


def test_qsub_asks_for_chunks_walltime_and_queue_with_the_users_arguments_last() -> None:
    request = Request("drover-abc-q1", 1, 5400, "/s/q1.sh", "/s/drover-abc-q1-%j.out", "workq", ("-A", "proj"),
                      TOKEN)
    assert Pbs().submit(request) == [
        "qsub", "-N", "drover-abc-q1", "-l", "select=1:ncpus=1", "-l", "walltime=01:30:00", "-j", "oe",
        "-o", "/s/", "-r", "n", "-v", "DROVER_JOIN_TOKEN", "-q", "workq", "-A", "proj", "/s/q1.sh"]
    several = Pbs().submit(Request("n", 3, 60, "/s/x.sh", "/s/o-%j.out"))
    assert several[:4] == ["qsub", "-N", "n", "-l"] and "select=3:ncpus=1" in several
    assert several[several.index("place=scatter") - 1] == "-l"  # one chunk a host
    assert "-q" not in several and "-v" not in several
    assert not Pbs().script_on_stdin


@pytest.mark.parametrize(("seconds", "text"), [(60, "00:01:00"), (5400, "01:30:00"), (90061.9, "25:01:01")])
def test_walltimes(seconds: float, text: str) -> None:
    assert walltime(seconds) == text
    assert parse_walltime(text) == float(int(seconds))


def test_the_job_id_qsub_prints_is_kept_by_its_number() -> None:
    assert Pbs().submitted_id("1234.pbsserver\n") == "1234"
    assert Pbs().submitted_id("77.head.example.org\n") == "77"
    assert Pbs().submitted_id("5\n") == "5"
    with pytest.raises(Refused, match="no job id"):
        Pbs().submitted_id("qsub: Unknown queue\n")
    with pytest.raises(Refused, match="no job id"):
        Pbs().submitted_id("")
    # PBS names the output after the job (-o is a directory): NAME.oSEQ.
    assert Pbs().output_file("/s/drover-abc-q1-%j.out", "drover-abc-q1", "1234") == "/s/drover-abc-q1.o1234"


def _qstat(jobs: dict[str, dict[str, object]]) -> str:
    """qstat -f -F json's document, as PBS Pro 19 and later write it."""
    return json.dumps({"timestamp": 1700000000, "pbs_version": "2022.1.1", "pbs_server": "head", "Jobs": jobs},
                      indent=4)


def test_qstat_states_by_job_state_and_exit_status() -> None:
    out = _qstat({
        "11.head": {"Job_Name": "drover-abc-q1", "job_state": "Q", "queue": "workq"},
        "12.head": {"Job_Name": "drover-abc-q1", "job_state": "H"},
        "13.head": {"Job_Name": "drover-abc-q1", "job_state": "R", "exec_host": "n1/0"},
        "14.head": {"Job_Name": "drover-abc-q1", "job_state": "E"},
        "15.head": {"Job_Name": "drover-abc-q1", "job_state": "F", "Exit_status": 0},
        "16.head": {"Job_Name": "drover-abc-q1", "job_state": "F", "Exit_status": -1},
        "17.head": {"Job_Name": "drover-abc-q1", "job_state": "F", "Exit_status": 271},
        "18.head": {"Job_Name": "drover-abc-q1", "job_state": "W"},
        "19.head": {"Job_Name": "drover-abc-q1", "job_state": "S"},
        "20.head": {"Job_Name": "drover-abc-q1", "job_state": "X", "Exit_status": 0},
    })
    assert Pbs().states(out) == {
        "11": AllocationState.QUEUED, "12": AllocationState.QUEUED, "13": AllocationState.RUNNING,
        "14": AllocationState.RUNNING, "15": AllocationState.ENDED, "16": AllocationState.FAILED,
        "17": AllocationState.FAILED, "18": AllocationState.QUEUED, "19": AllocationState.QUEUED,
        "20": AllocationState.ENDED}
    # No job at all: PBS Pro prints the document without "Jobs"; garbage reads as nothing listed.
    assert Pbs().states(json.dumps({"timestamp": 1, "pbs_version": "2022.1.1", "pbs_server": "head"})) == {}
    assert Pbs().states("") == {} and Pbs().states("not json") == {}


def test_the_status_command_and_when_its_failure_is_still_an_answer() -> None:
    assert Pbs().status("drover-abc-", "alice", ["11", "12"]) == ["qstat", "-x", "-f", "-F", "json", "11", "12"]
    assert Pbs().answered(0, "{}", "")
    # A purged id fails qstat, which still shows the others: an answer; a down server is not.
    assert Pbs().answered(153, _qstat({}), "qstat: Unknown Job Id 11.head\n")
    assert not Pbs().answered(15010, "", "Connection refused\nqstat: cannot connect to server head (errno=15010)\n")
    assert not Pbs().answered(2, "", "")
    assert Pbs().cancel(["11", "12"]) == ["qdel", "11", "12"]


def test_time_left_is_the_walltime_less_the_walltime_used() -> None:
    assert Pbs().time_left("13") == ["qstat", "-f", "-F", "json", "13"]
    running = _qstat({"13.head": {"job_state": "R", "Resource_List": {"walltime": "01:00:00", "ncpus": 1},
                                  "resources_used": {"walltime": "00:10:30", "cput": "00:00:01"}}})
    assert Pbs().seconds_left(running) == 2970.0
    starting = _qstat({"13.head": {"job_state": "R", "Resource_List": {"walltime": "00:05:00"}}})
    assert Pbs().seconds_left(starting) == 300.0
    assert Pbs().seconds_left(_qstat({"13.head": {"job_state": "R", "Resource_List": {}}})) is None
    assert Pbs().seconds_left("") is None


def test_the_script_starts_one_worker_a_host() -> None:
    worker = ["/usr/bin/python3", "-m", "drover", "alloc", "worker", "https://h:7443", "--manager", "pbs"]
    one = Pbs().script(worker, 1, TOKEN)
    assert one.startswith("#!/bin/bash\n")
    assert "\nexport DROVER_JOIN_TOKEN=drv1.a.b.c\nexec /usr/bin/python3 -m drover alloc worker https://h:7443 " \
           "--manager pbs\n" in one
    several = Pbs().script(["drover", "it's"], 3, {"A": "x y"})
    assert "export A='x y'\n" in several
    assert "for i in $(seq 0 2); do\n" in several
    assert "  pbsdsh -n \"$i\" -- /usr/bin/env DROVER_NODE_INDEX=\"$i\" drover 'it'\"'\"'s' &\n" in several
    assert several.endswith("done\nwait\n")


def test_inside_an_allocation() -> None:
    assert Pbs().allocation_id({"PBS_JOBID": "77.head"}) == "77"
    assert Pbs().allocation_id({}) is None
    assert Pbs().node_index({"DROVER_NODE_INDEX": "2", "PBS_JOBID": "77.head"}) == 2
    assert Pbs().node_index({"PBS_JOBID": "77.head"}) == 0
    assert Pbs().node_index({"DROVER_NODE_INDEX": "x"}) == 0


def test_by_name() -> None:
    assert by_name("pbs").name == "pbs"
