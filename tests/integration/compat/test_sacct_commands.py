"""sacct on a real cluster, driven as workflow tools drive it (their exact command lines, from
the tools' released sources), with the output parsed as they parse it."""

from __future__ import annotations

import csv
import datetime as dt
import getpass

from tests.helpers.cluster import LocalCluster
from tests.helpers.compat_install import install, run


def test_the_command_lines_of_submitit_parsl_snakemake_and_toil(cluster: LocalCluster) -> None:
    bin_dir = install(cluster)
    good = run(cluster, bin_dir, "sbatch", "--parsable", "-J", "run-uuid-1", "--wrap", "true").stdout.strip()
    bad = run(cluster, bin_dir, "sbatch", "--parsable", "-J", "run-uuid-1", "--wrap", "exit 3").stdout.strip()
    array = run(cluster, bin_dir, "sbatch", "--parsable", "--array=1-3", "--wrap", "true").stdout.strip()
    cluster.drover("wait", good, bad, array, check=False)

    # parsl: `sacct -X` must work with no selection at all (the user's jobs since midnight)
    assert run(cluster, bin_dir, "sacct", "-X").returncode == 0
    # submitit: the header names the columns; steps (with a dot) are skipped by the tool
    out = run(cluster, bin_dir, "sacct", "-o", "JobID,State,NodeList", "--parsable2", "-j", good, "-j", array)
    lines = out.stdout.splitlines()
    assert lines[0].split("|") == ["JobID", "State", "NodeList"]
    rows = {line.split("|")[0]: line.split("|")[1] for line in lines[1:] if "." not in line.split("|")[0]}
    assert rows == {good: "COMPLETED", f"{array}_1": "COMPLETED", f"{array}_2": "COMPLETED",
                    f"{array}_3": "COMPLETED"}
    # parsl: lower-case fields, `%20`, `--job` with a comma list, split on white space
    out = run(cluster, bin_dir, "sacct", "-X", "--noheader", "--format=jobid,state%20", "--job", f"{good},{bad}")
    assert [line.split()[:2] for line in out.stdout.splitlines()] == [[good, "COMPLETED"], [bad, "FAILED"]]
    # snakemake: by job name, in a window two days back, `|`-separated, JobIdRaw
    start = (dt.datetime.now() - dt.timedelta(days=2)).strftime("%Y-%m-%dT%H:00")
    out = run(cluster, bin_dir, "sacct", "-X", "--parsable2", "--clusters", "all", "--noheader",
              "--format=JobIdRaw,State", "--starttime", start, "--endtime", "now", "--name", "run-uuid-1")
    assert list(csv.reader(out.stdout.splitlines(), delimiter="|")) == [[good, "COMPLETED"], [bad, "FAILED"]]
    # snakemake, when no account was given: a pipe passed as arguments is refused, as by sacct
    refused = run(cluster, bin_dir, "sacct", "-nu", getpass.getuser(), "-o", "Account%256", "|", "tail", "-1")
    assert refused.returncode == 1 and refused.stderr == "sacct: invalid option -- '1'\n"
    # toil: JobIDRaw,State,ExitCode with -S/-E in ISO form
    now = dt.datetime.now()
    out = run(cluster, bin_dir, "sacct", "-n", "-j", f"{good},{bad}", "--format", "JobIDRaw,State,ExitCode", "-P",
              "-S", (now - dt.timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%S"), "-E",
              (now + dt.timedelta(minutes=1)).strftime("%Y-%m-%dT%H:%M:%S"))
    assert out.stdout.splitlines() == [f"{good}|COMPLETED|0:0", f"{good}.batch|COMPLETED|0:0",
                                       f"{bad}|FAILED|3:0", f"{bad}.batch|FAILED|3:0"]


def test_the_batch_step_carries_what_the_job_used(cluster: LocalCluster) -> None:
    bin_dir = install(cluster)
    job = run(cluster, bin_dir, "sbatch", "--parsable", "--wrap",
              "python3 -c 'x = bytearray(64 << 20); sum(range(3_000_000))'").stdout.strip()
    cluster.drover("wait", job)
    out = run(cluster, bin_dir, "sacct", "-j", job, "-P", "-o", "JobID,MaxRSS,TotalCPU,ExitCode,Elapsed")
    header, allocation, batch = out.stdout.splitlines()
    assert header == "JobID|MaxRSS|TotalCPU|ExitCode|Elapsed"
    assert allocation.split("|")[:2] == [job, ""]  # usage is on the step, as in Slurm
    step_id, rss, cpu, code, _ = batch.split("|")
    assert step_id == f"{job}.batch" and code == "0:0"
    assert rss.endswith(("K", "M")) and float(rss[:-1]) * (1024 if rss.endswith("M") else 1) > 60 * 1024
    assert cpu != "00:00:00"


def test_a_job_id_sacct_does_not_know_prints_the_header_alone(cluster: LocalCluster) -> None:
    bin_dir = install(cluster)
    out = run(cluster, bin_dir, "sacct", "-j", "999999", "-P", "-o", "JobID,State")
    assert (out.returncode, out.stdout) == (0, "JobID|State\n")
    bad = run(cluster, bin_dir, "sacct", "-j", "12x")
    assert bad.returncode == 1 and "Bad job/step specified: 12x" in bad.stderr
