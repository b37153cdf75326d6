"""Slurm as an outer scheduler: the command lines the allocator and the worker run, and how
their output is read (cluster/outer/slurm.py). The integration test runs them on a real Slurm."""

from __future__ import annotations

import pytest

from drover.cluster.outer.base import Refused, Request, by_name
from drover.cluster.outer.slurm import Slurm, parse_slurm_time, slurm_time
from drover.core.allocations import AllocationState


def test_sbatch_asks_for_nodes_time_and_partition_with_the_users_arguments_last() -> None:
    request = Request("drover-abc-q1", 2, 5400, "/s/q1.sh", "/s/q1-%j.out", "debug", ("--account=proj", "--qos=low"))
    assert Slurm().submit(request) == [
        "sbatch", "--parsable", "--job-name=drover-abc-q1", "--nodes=2", "--ntasks-per-node=1", "--time=1:30:00",
        "--output=/s/q1-%j.out", "--no-requeue", "--partition=debug", "--account=proj", "--qos=low", "/s/q1.sh"]
    assert "--partition=debug" not in Slurm().submit(Request("n", 1, 60, "/s", "/o"))


@pytest.mark.parametrize(("seconds", "text"), [(60, "0:01:00"), (3600, "1:00:00"), (90061, "1-01:01:01")])
def test_time_limits(seconds: float, text: str) -> None:
    assert slurm_time(seconds) == text


@pytest.mark.parametrize(("text", "seconds"), [("59:58", 3598), ("1:00:00", 3600), ("2-00:00:10", 172810),
                                               ("UNLIMITED", None), ("INVALID", None), ("", None)])
def test_time_left(text: str, seconds: float | None) -> None:
    assert parse_slurm_time(text) == seconds
    assert Slurm().seconds_left(text + "\n") == seconds


def test_the_job_id_sbatch_prints() -> None:
    assert Slurm().submitted_id("1234\n") == "1234"
    assert Slurm().submitted_id("1234;cluster2\n") == "1234"
    with pytest.raises(Refused, match="no job id"):
        Slurm().submitted_id("sbatch: error: Batch job submission failed\n")


def test_squeue_states_and_names() -> None:
    out = "12|drover-abc-q1|PENDING\n13|drover-abc-q1|RUNNING\n14|other|COMPLETING\n15|x|CANCELLED\nnoise\n"
    assert Slurm().states(out) == {"12": AllocationState.QUEUED, "13": AllocationState.RUNNING,
                                   "14": AllocationState.RUNNING}
    assert Slurm().names(out)["12"] == "drover-abc-q1"
    assert Slurm().status("drover-abc-", "alice", ["12"]) == ["squeue", "--noheader", "--user=alice",
                                                             "--format=%i|%j|%T"]
    assert Slurm().answered(0, out, "") and not Slurm().answered(1, "", "slurm_load_jobs error")
    assert Slurm().output_file("/s/q1-%j.out", "q1", "12") == "/s/q1-12.out"
    assert Slurm().cancel(["12", "13"]) == ["scancel", "12", "13"]
    assert Slurm().time_left("12") == ["squeue", "--noheader", "--jobs=12", "--format=%L"]


def test_the_script_starts_one_worker_a_node() -> None:
    one = Slurm().script(["/usr/bin/python3", "-m", "drover", "alloc", "worker", "https://h:7443"], 1,
                         {"DROVER_JOIN_TOKEN": "drv1.a.b.c"})
    assert one.startswith("#!/bin/bash\n")
    assert "\nexport DROVER_JOIN_TOKEN=drv1.a.b.c\nexec /usr/bin/python3 -m drover alloc worker https://h:7443\n" in one
    several = Slurm().script(["drover", "it's"], 3, {"A": "x y"})
    assert "export A='x y'\n" in several
    assert "exec srun --nodes=3 --ntasks=3 --ntasks-per-node=1 --kill-on-bad-exit=0 drover 'it'\"'\"'s'\n" in several


def test_a_bad_environment_name_is_refused() -> None:
    with pytest.raises(ValueError, match="not an environment variable"):
        Slurm().script(["drover"], 1, {"A;rm": "x"})


def test_inside_an_allocation() -> None:
    assert Slurm().allocation_id({"SLURM_JOB_ID": "77"}) == "77"
    assert Slurm().allocation_id({}) is None
    assert Slurm().node_index({"SLURM_NODEID": "2"}) == 2
    assert Slurm().node_index({}) == 0


def test_managers_by_name() -> None:
    assert by_name("slurm").name == "slurm"
    with pytest.raises(ValueError, match="unknown outer scheduler"):
        by_name("cron")
