"""sbatch's options made into a Drover job, on plain data."""

from __future__ import annotations

import pytest

from drover.compat.slurm.request import OptionError, Refused, Request, parse
from drover.compat.slurm.sbatch import job_exit_status, wrapped
from drover.compat.slurm.submission import dependencies, export, pattern, to_job


def a_request(*argv: str, command: str = "sbatch") -> Request:
    request = Request(command)
    request.add(parse(command, list(argv))[0], "the command line")
    return request


def test_options_translate_to_a_drover_job(tmp_path: object) -> None:
    job = to_job(a_request("-J", "x", "-n", "2", "-c", "2", "--mem-per-cpu", "1G", "-t", "1-00:00:00", "-a", "1-4%2",
                           "-d", "afterok:5:6", "-p", "short", "--nice=5", "-o", "o-%A_%a.%J.%4t.out",
                           "--no-requeue", "--export=NONE,KEEP=1", "-A", "proj"),
                 "#!/bin/bash\ntrue\n", "job.sh", environ={"HOME": "/h"})
    assert (job["name"], job["cpus"], job["memory_mib"], job["time_limit_s"]) == ("x", 4, 4096, 86400)
    assert job["array"] == "1-4%2" and job["priority"] == -5
    assert job["dependencies"] == [{"kind": "afterok", "job": 5}, {"kind": "afterok", "job": 6}]
    assert job["output"] == "o-%A_%a.%j.0000.out" and job["queue"] == "short" and job["rerunnable"] is False
    env = job["environment"]
    assert "HOME" not in env and env["KEEP"] == "1"
    assert (env["SLURM_NTASKS"], env["SLURM_CPUS_PER_TASK"], env["SLURM_MEM_PER_CPU"]) == ("2", "2", "1024")
    assert env["SLURM_JOB_ACCOUNT"] == "proj"


def test_defaults_are_sbatchs() -> None:
    job = to_job(a_request(), "#!/bin/sh\n", "sbatch", environ={})
    assert (job["name"], job["cpus"], job["output"]) == ("sbatch", 1, "slurm-%j.out")
    array = to_job(a_request("--array=1-3"), "#!/bin/sh\n", "sbatch", environ={})
    assert array["output"] == "slurm-%A_%a.out" and "SLURM_NTASKS" not in array["environment"]


def test_another_jobs_variables_are_not_passed_on() -> None:
    inside = {"SLURM_JOB_ID": "9", "SLURM_NTASKS": "8", "SLURM_STEP_ID": "0", "SLURMD_NODENAME": "n", "KEEP": "1",
              "SLURM_CONF": "/etc/slurm.conf"}
    assert export(a_request(), environ=inside) == {"KEEP": "1", "SLURM_CONF": "/etc/slurm.conf"}


def test_bad_values_are_refused_as_sbatch_refuses_them() -> None:
    with pytest.raises(OptionError, match="Invalid time limit"):
        to_job(a_request("-t", "soon"), "#!/bin/sh\n", "x", environ={})
    with pytest.raises(Refused, match="--exclusive with --nodes=2-4: Drover keeps"):
        to_job(a_request("-N", "2-4", "--exclusive"), "#!/bin/sh\n", "x", environ={})
    assert to_job(a_request("-N", "1-4"), "#!/bin/sh\n", "x", environ={})["cpus"] == 1
    with pytest.raises(OptionError, match="unknown kind 'afterwards'"):
        dependencies("afterwards:12")
    with pytest.raises(OptionError, match=r"\+TIME"):
        dependencies("after:14+5")
    assert dependencies("afterok:12:13_4?afterany:14").text == "afterok:12?afterok:13.4?afterany:14"


def test_patterns() -> None:
    assert pattern("%x-%J-%s-%t-%N-%u-%%-%q.out", "sbatch") == "%x-%j-batch-0-%N-%u-%%-%%q.out"
    assert pattern("a\\%j", "sbatch") == "a%%j"  # a backslash: no replacement at all
    with pytest.raises(Refused, match="%b"):
        pattern("%b", "sbatch")


def test_the_script_keeps_its_interpreter_and_arguments() -> None:
    script = wrapped("#!/usr/bin/env python3\nprint(1)\n", ["a b", "$c"])
    assert "exec /usr/bin/env python3 \"$slurm_script\" 'a b' '$c'\n" in script
    assert "\n#!/usr/bin/env python3\nprint(1)\n" in script


def test_wait_returns_the_highest_exit_code() -> None:
    from drover.protocol.api import AttemptInfo, JobInfo, TaskInfo

    def task(index: int, state: str, code: int | None, signal: int | None = None) -> TaskInfo:
        attempt = AttemptInfo(number=1, node="n", cpu_ids=[], dispatched_at=0, exit_code=code, signal=signal)
        return TaskInfo(index=index, state=state, state_since=0, attempts=[attempt])

    def job(*tasks: TaskInfo) -> JobInfo:
        return JobInfo(id=1, name="x", owner="u", state="failed", submitted_at=0, priority=0, cpus=1, memory_mib=0,
                       time_limit_s=None, array=None, task_counts={}, workdir="/", output="o", error=None,
                       tasks=list(tasks))

    assert job_exit_status(job(task(1, "completed", 0), task(2, "failed", 3), task(3, "failed", 2))) == 3
    assert job_exit_status(job(task(1, "cancelled", None, 15))) == 1


def test_a_warning_signal_is_due_only_before_a_time_limit() -> None:
    timed = to_job(a_request("--signal=B:USR2@30", "-t", "10"), "#!/bin/sh\n", "job.sh", environ={})
    assert (timed["warn_signal"], timed["warn_before_s"]) == ("SIGUSR2", 30)
    unlimited = to_job(a_request("--signal=B:USR2@30"), "#!/bin/sh\n", "job.sh", environ={})  # as Toil sends it
    assert "warn_signal" not in unlimited
    with pytest.raises(Exception, match="signal"):
        to_job(a_request("--signal=NOSUCH@30"), "#!/bin/sh\n", "job.sh", environ={})
