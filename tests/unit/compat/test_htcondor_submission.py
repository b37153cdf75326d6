"""A submit description made into one Drover job, on plain data: one array for the cluster, a
script that runs each proc, output patterns, requests, sandbox staging, mail, holds, and the
errors condor_submit gives."""

from __future__ import annotations

import base64
import json
import subprocess
from typing import Any

import pytest

from drover.compat.htcondor.submission import CLUSTER, Context, Plan, build, runs
from drover.compat.htcondor.submitfile import parse
from drover.core.errors import BadRequest

FILES = {"/home/ann/in.txt": b"input", "/home/ann/run.sh": b"#!/bin/sh\necho run\n"}


def plans(text: str, warnings: list[str] | None = None, nodes: list[dict[str, Any]] | None = None) -> list[Plan]:
    ctx = Context(cwd="/home/ann", environ={"HOME": "/home/ann", "PATH": "/usr/bin", "SECRET": "s"}, user="ann",
                  read_bytes=lambda path: FILES[path], is_dir=lambda path: path in ("/home/ann", "/home/ann/sub"),
                  node_ads=nodes or [])
    return build(parse(text), ctx, (warnings if warnings is not None else []).append)


def plan(text: str, warnings: list[str] | None = None, nodes: list[dict[str, Any]] | None = None) -> Plan:
    (one,) = plans(text, warnings, nodes)
    return one


def test_a_cluster_of_three_procs_is_one_array_with_patterns_for_its_files() -> None:
    p = plan("executable = /bin/echo\narguments = $(Process)\noutput = out.$(Cluster).$(Process)\n"
             "error = err.$(Process)\nlog = job.log\nrequest_cpus = 2\nrequest_memory = 1 GB\nqueue 3\n")
    job = p.job
    assert job["array"] == "0-2" and job["cpus"] == 2 and job["memory_mib"] == 1024
    assert job["workdir"] == "/home/ann" and job["name"] == "echo"
    assert job["output"] == "/home/ann/out.%j.%a" and job["error"] == "/home/ann/err.%a"
    assert [pp.log for pp in p.procs] == ["/home/ann/job.log"] * 3
    assert "  1)\n" in job["script"] and "exec /bin/echo 1\n" in job["script"]


def test_each_proc_runs_its_own_arguments_environment_and_directory() -> None:
    p = plan('executable = /bin/sh\narguments = "-c \'echo $X $(Cluster) $(Item) $0\' $(Cluster)"\n'
             'environment = "X=$(Item)"\ninitialdir = $(Item)\nqueue Item in (., sub)\n')
    script = p.job["script"]
    ran = [subprocess.run(["bash", "-c", script.replace("cd /home/ann/sub || exit 1", "true")],
                          env={"DROVER_ARRAY_TASK_ID": str(i), "DROVER_JOB_ID": "41", "PATH": "/usr/bin:/bin"},
                          capture_output=True, text=True, check=True).stdout for i in (0, 1)]
    assert ran == [". 41 . 41\n", "sub 41 sub 41\n"]
    assert "cd /home/ann/sub || exit 1" in script


def test_outputs_that_differ_by_item_are_redirected_by_each_proc() -> None:
    p = plan("executable = /bin/true\noutput = $(Item).out\nqueue Item in (a, b)\n")
    assert p.job["output"] == "/dev/null"
    assert "exec >/home/ann/a.out 2>/dev/null" in p.job["script"]


def test_one_proc_has_no_array_and_its_process_is_zero() -> None:
    p = plan("executable = /bin/true\noutput = o.$(Process)\nqueue\n")
    assert "array" not in p.job and p.job["output"] == "/home/ann/o.0"


def test_requests_from_expressions_of_custom_attributes_as_dask_jobqueue_writes_them() -> None:
    p = plan('executable = /bin/sh\nMY.DaskWorkerMemory = 2147483648\nMY.DaskWorkerCores = 2\n'
             'RequestCpus = MY.DaskWorkerCores\nRequestMemory = floor(MY.DaskWorkerMemory / 1048576)\n'
             'MY.JobId = "$(ClusterId).$(ProcId)"\nqueue\n')
    assert p.job["cpus"] == 2 and p.job["memory_mib"] == 2048
    extras = json.loads(p.job["comment"])
    assert extras["attrs"]["JobId"] == f'"{CLUSTER}.@@DROVER_PROCESS@@"'


def test_a_sandbox_stages_inputs_and_the_executable_in_and_outputs_out() -> None:
    p = plan("executable = run.sh\nshould_transfer_files = YES\ntransfer_input_files = in.txt\n"
             "transfer_output_files = result.txt\nqueue\n")
    job = p.job
    assert job["workdir"] == "" and p.sandbox and p.staged_in
    staged = {f["name"]: base64.b64decode(f["data"]) for f in job["stage_in"]}
    assert staged == {"in.txt": b"input", "run.sh": b"#!/bin/sh\necho run\n"}
    assert job["stage_out"] == ["result.txt"]
    assert "exec ./run.sh" in job["script"]


def test_hold_priority_mail_and_getenv() -> None:
    p = plan("executable = /bin/true\nhold = true\npriority = 5\nnotification = Complete\nnotify_user = a@b\n"
             "getenv = PATH, SEC*\nqueue\n")
    job = p.job
    assert job["hold"] is True and job["priority"] == 5
    assert job["mail_type"] == ["END", "FAIL"] and job["mail_user"] == "a@b"
    assert job["environment"] == {"PATH": "/usr/bin", "SECRET": "s"}


def test_what_drover_approximates_is_said() -> None:
    warnings: list[str] = []
    plan("executable = /bin/true\nrequest_disk = 1GB\npriority = 5000\nperiodic_remove = false\nqueue\n", warnings)
    assert any(w.startswith("request_disk") for w in warnings)
    assert any("priority = 5000" in w for w in warnings)
    assert any(w.startswith("periodic_remove") for w in warnings)


def test_requirements_are_evaluated_against_the_nodes() -> None:
    nodes = [{"Machine": "n1", "OpSys": "LINUX", "Memory": 4096}, {"Machine": "n2", "OpSys": "LINUX", "Memory": 512}]
    warnings: list[str] = []
    plan('executable = /bin/true\nrequirements = OpSys == "LINUX"\nqueue\n', warnings, nodes)
    assert warnings == []
    plan("executable = /bin/true\nrequirements = Memory > 1024\nqueue\n", warnings, nodes)
    assert warnings and "only n1 match it" in warnings[0]
    warnings.clear()
    plan("executable = /bin/true\nrequirements = HasDocker\nqueue\n", warnings, nodes)
    assert "have no hasdocker" in warnings[0]
    with pytest.raises(BadRequest, match="no node of the cluster matches it"):
        plan('executable = /bin/true\nrequirements = OpSys == "WINDOWS"\nqueue\n', warnings, nodes)


@pytest.mark.parametrize(("text", "message"), [
    ("executable = /bin/true\nuniverse = docker\nqueue\n", "'docker' universe is not supported"),
    ("executable = /bin/true\nuniverse = moon\nqueue\n", "ERROR: I don't know about the 'moon' universe."),
    ("arguments = x\nqueue\n", "ERROR: No 'executable' parameter was provided"),
    ("executable = /bin/true\ninitialdir = nowhere\nqueue\n", "ERROR: No such directory: /home/ann/nowhere"),
    ("executable = /bin/true\npriority = $(Process)\nqueue 2\n", "priority differs between the jobs"),
    ("executable = /bin/true\nshould_transfer_files = maybe\nqueue\n", "should_transfer_files = MAYBE is invalid"),
    ("executable = /bin/true\nnotification = sometimes\nqueue\n", "Notification must be"),
    ('executable = /bin/true\narguments = a "b\nqueue\n', "Found illegal unescaped double-quote"),
])
def test_what_condor_submit_refuses(text: str, message: str) -> None:
    with pytest.raises(BadRequest, match=message.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")):
        plan(text)


# -- procs whose requests differ: one cluster per run of procs with the same request -------------

@pytest.mark.parametrize(("keys", "expected"), [
    ([], []),
    ([1], [(0, 1)]),
    ([1, 1, 1], [(0, 3)]),
    ([1, 2, 4], [(0, 1), (1, 2), (2, 3)]),
    ([1, 1, 2, 2, 1], [(0, 2), (2, 4), (4, 5)]),  # runs, not groups: the last 1 is a cluster of its own
    ([(1, None), (1, None), (1, 64)], [(0, 2), (2, 3)]),
])
def test_consecutive_procs_with_the_same_request_are_one_run(keys: list[Any], expected: list[tuple[int, int]]) -> None:
    assert runs(keys) == expected


def test_a_queue_after_changing_request_cpus_is_two_clusters_keeping_the_files_proc_numbers() -> None:
    warnings: list[str] = []
    first, second = plans("executable = /bin/echo\narguments = $(Process)\noutput = out.$(Process)\n"
                          "request_cpus = 1\nperiodic_remove = false\nqueue 2\nrequest_cpus = 2\n"
                          "request_memory = 64M\nqueue 3\n", warnings)
    assert (first.job["cpus"], first.job["array"], [p.process for p in first.procs]) == (1, "0-1", [0, 1])
    assert "memory_mib" not in first.job
    assert (second.job["cpus"], second.job["memory_mib"], second.job["array"]) == (2, 64, "2-4")
    assert [p.process for p in second.procs] == [2, 3, 4]
    assert second.job["output"] == "/home/ann/out.%a"  # %a is the proc: the file's numbers, not 0-2 again
    assert "  4)\n" in second.job["script"] and "exec /bin/echo 4\n" in second.job["script"]
    assert "  0)\n" not in second.job["script"]
    assert sum(w.startswith("periodic_remove") for w in warnings) == 1  # said once for the submit


def test_requests_from_itemdata_split_where_they_change_and_a_lone_proc_keeps_its_number() -> None:
    got = plans("executable = /bin/echo\narguments = $(word)\nrequest_cpus = $(n)\nrequest_memory = $(mem)\n"
                "output = o.$(Process)\nqueue n, mem, word from (\n 1, 32, a\n 1, 32, b\n 2, 32, c\n 2, 32, d\n"
                " 2, 128, e\n)\n")
    assert [(p.job["cpus"], p.job.get("memory_mib"), p.job.get("array")) for p in got] == [
        (1, 32, "0-1"), (2, 32, "2-3"), (2, 128, "4")]
    lone = got[2]
    assert lone.job["output"] == "/home/ann/o.%a" and "  4)\n" in lone.job["script"]
    extras = [json.loads(p.job["comment"]) for p in got]
    # condor_q shows each proc's own arguments: a list from the cluster's first proc
    assert [(e.get("args"), e.get("first")) for e in extras] == [(["a", "b"], None), (["c", "d"], 2), ("e", None)]


def test_gpus_and_requirements_that_differ_split_too_and_a_uniform_submit_does_not() -> None:
    nodes = [{"Machine": "n1", "OpSys": "LINUX", "Memory": 4096}, {"Machine": "n2", "OpSys": "LINUX", "Memory": 512}]
    got = plans("executable = /bin/true\nrequest_gpus = 1\nqueue\nrequest_gpus = 0\n"
                "requirements = Memory > 1024\nqueue 2\n", nodes=nodes)
    assert [(p.job.get("gres"), p.job.get("array")) for p in got] == [(["gpu:1"], None), (None, "1-2")]
    assert len(plans("executable = /bin/true\nrequest_cpus = 2\nqueue 2\nqueue 2\n")) == 1


def test_condor_q_shows_each_proc_of_a_later_cluster_its_own_arguments() -> None:
    from drover.compat.htcondor.jobads import ads
    from drover.protocol.api import JobInfo

    _, second = plans("executable = /bin/echo\narguments = $(word)\nrequest_cpus = $(n)\n"
                      "queue n, word from (\n 1, a\n 2, b\n 2, c\n)\n")
    job = JobInfo(id=13, name="echo", owner="ann", state="pending", submitted_at=1.0, priority=0, cpus=2,
                  memory_mib=0, time_limit_s=None, array=second.job["array"], task_counts={"pending": 2},
                  workdir="/home/ann", output="/dev/null", error=None,
                  options={"comment": second.job["comment"]})
    assert [(ad["ClusterId"], ad["ProcId"], ad["Args"]) for ad in ads(job)] == [(13, 1, "b"), (13, 2, "c")]


def test_a_max_rss_not_known_is_no_image_size_of_0() -> None:
    """0 is not known (accounting.md, Max RSS): the cgroup's peak where one measured it, else
    ImageSize, ResidentSetSize and MemoryUsage are left out, as an ad without them."""
    from drover.compat.htcondor.jobads import ads
    from drover.protocol.api import AttemptInfo, JobInfo, TaskInfo, Usage

    def one(usage: Usage) -> dict[str, Any]:
        attempt = AttemptInfo(number=1, node="n1", cpu_ids=[0], dispatched_at=1.0, started_at=2.0, ended_at=3.0,
                              exit_code=0, usage=usage)
        job = JobInfo(id=13, name="true", owner="ann", state="completed", submitted_at=1.0, priority=0, cpus=1,
                      memory_mib=0, time_limit_s=None, array=None, task_counts={"completed": 1},
                      workdir="/home/ann", output="/dev/null", error=None,
                      tasks=[TaskInfo(index=0, state="completed", state_since=3.0, attempts=[attempt])])
        (ad,) = ads(job)
        return {name: ad.get(name) for name in ("ImageSize", "ResidentSetSize", "MemoryUsage")}

    assert one(Usage(user_cpu_s=1.0, sys_cpu_s=0.0, max_rss_kib=2048)) == {
        "ImageSize": 2048, "ResidentSetSize": 2048, "MemoryUsage": 2}
    assert one(Usage(user_cpu_s=1.0, sys_cpu_s=0.0, max_rss_kib=0, cgroup_peak_memory_bytes=5 << 20)) == {
        "ImageSize": 5120, "ResidentSetSize": 5120, "MemoryUsage": 5}
    assert one(Usage(user_cpu_s=1.0, sys_cpu_s=0.0, max_rss_kib=0)) == {
        "ImageSize": None, "ResidentSetSize": None, "MemoryUsage": None}
