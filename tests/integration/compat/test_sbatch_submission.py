"""sbatch run as a real process against a real cluster: where options come from, the script run
as Slurm runs it, sbatch's outputs and exit statuses, and the exact command lines workflow tools
send (snakemake, Toil, dask-jobqueue, psij)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.helpers.cluster import LocalCluster


def install(cluster: LocalCluster) -> Path:
    bin_dir = cluster.root / "bin"
    cluster.drover("compat", "install", str(bin_dir))
    return bin_dir


def sbatch(cluster: LocalCluster, bin_dir: Path, *args: str, stdin: str | None = None,
           env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(bin_dir / "sbatch"), *args], capture_output=True, text=True, input=stdin,
                          env={**cluster.env, **(env or {})}, cwd=cluster.workdir, timeout=60)


def job_of(cluster: LocalCluster, done: subprocess.CompletedProcess[str]) -> dict[str, object]:
    assert done.returncode == 0, done.stderr
    job_id = done.stdout.split()[-1]
    cluster.drover("wait", job_id, check=False)
    shown: dict[str, object] = cluster.drover_json("show", job_id)
    return shown


def test_the_command_line_wins_over_the_environment_which_wins_over_directives(cluster: LocalCluster) -> None:
    bin_dir = install(cluster)
    script = cluster.workdir / "job.sh"
    script.write_text("#!/bin/bash\n#SBATCH -J from-script -t 5 --cpus-per-task=2\n#SBATCH --open-mode append\n"
                      "echo ran\n")
    from_script = job_of(cluster, sbatch(cluster, bin_dir, str(script)))
    assert (from_script["name"], from_script["time_limit_s"], from_script["cpus"]) == ("from-script", 300, 2)
    from_env = job_of(cluster, sbatch(cluster, bin_dir, str(script),
                                      env={"SBATCH_JOB_NAME": "from-env", "SBATCH_TIMELIMIT": "10"}))
    assert (from_env["name"], from_env["time_limit_s"]) == ("from-env", 600)
    from_line = job_of(cluster, sbatch(cluster, bin_dir, "--job=from-line", str(script),
                                       env={"SBATCH_JOB_NAME": "from-env"}))
    assert from_line["name"] == "from-line"


def test_the_script_runs_with_its_own_interpreter_and_arguments(cluster: LocalCluster) -> None:
    bin_dir = install(cluster)
    script = cluster.workdir / "job.py"
    script.write_text("#!/usr/bin/env python3\n#SBATCH -o py.out\nimport sys\nprint(sys.argv[1:])\n")
    job_of(cluster, sbatch(cluster, bin_dir, str(script), "a b", "-J", "$HOME"))  # after the script: its own
    assert (cluster.workdir / "py.out").read_text() == "['a b', '-J', '$HOME']\n"


def test_a_comment_is_kept_and_squeue_shows_it(cluster: LocalCluster) -> None:
    bin_dir = install(cluster)
    done = sbatch(cluster, bin_dir, "--hold", "--comment", "seed 42", "--wrap", "true")
    assert done.returncode == 0, done.stderr
    job_id = done.stdout.split()[-1]
    assert cluster.drover_json("show", job_id)["options"] == {"comment": "seed 42"}
    listed = subprocess.run([str(bin_dir / "squeue"), "-h", "-j", job_id, "-o", "%i %k"], capture_output=True,
                            text=True, env=cluster.env, cwd=cluster.workdir, timeout=60)
    assert listed.stdout.split(maxsplit=1) == [job_id, "seed 42\n"], listed.stderr
    cluster.drover("cancel", job_id)


def test_outputs_and_exit_statuses_are_sbatchs(cluster: LocalCluster) -> None:
    bin_dir = install(cluster)
    quiet = sbatch(cluster, bin_dir, "-Q", "--wrap", "true")
    assert quiet.returncode == 0 and quiet.stdout == ""
    waited = sbatch(cluster, bin_dir, "-W", "-a", "1-3", "--wrap", "exit $SLURM_ARRAY_TASK_ID")
    assert waited.returncode == 3 and waited.stdout.startswith("Submitted batch job ")
    unknown = sbatch(cluster, bin_dir, "--bogus", "--wrap", "true")
    assert unknown.returncode == 255
    assert unknown.stderr == "sbatch: unrecognized option '--bogus'\nTry \"sbatch --help\" for more information\n"
    assert sbatch(cluster, bin_dir, "-t", "soon", "--wrap", "true").returncode == 255
    refused = sbatch(cluster, bin_dir, "--container=x", "--wrap", "true", env={"SLURM_EXIT_ERROR": "7"})
    assert refused.returncode == 7 and "--container=x is not supported by Drover" in refused.stderr
    strict = sbatch(cluster, bin_dir, "--strict", "--qos=high", "--wrap", "true")
    assert strict.returncode == 1 and "refused under --strict" in strict.stderr
    missing = sbatch(cluster, bin_dir, "nosuch.sh")
    assert missing.returncode == 1 and missing.stderr == "sbatch: error: Unable to open file nosuch.sh\n"
    dos = sbatch(cluster, bin_dir, stdin="#!/bin/sh\r\ntrue\r\n")
    assert dos.returncode == 1 and "DOS line breaks" in dos.stderr
    assert sbatch(cluster, bin_dir, "--wrap", "true", "extra").returncode == 1  # as sbatch: no arguments with --wrap
    assert [job["name"] for job in cluster.drover_json("status", "--all")].count("wrap") == 2


def test_the_command_lines_workflow_tools_send(cluster: LocalCluster) -> None:
    """snakemake's (--parsable, --wrap, -D, --comment, --export=ALL), Toil's (--time=0:SECONDS,
    --signal=B:USR1@30, --export=ALL,VAR=val), dask-jobqueue's directives (-J, -n 1, -t, %J) and
    psij's (double-quoted values, -o /dev/null)."""
    bin_dir = install(cluster)
    (cluster.workdir / "slurm_logs").mkdir()
    snakemake = sbatch(cluster, bin_dir, "--parsable", "--job-name", "5e1f", "--output",
                       f"{cluster.workdir}/slurm_logs/%j.log", "--export=ALL", "--comment", "rule_all", "-t", "10",
                       "--mem", "100", "--ntasks=1", "--cpus-per-task=1", "-D", str(cluster.workdir),
                       "--wrap=echo snakemake $SLURM_JOB_NAME")
    assert snakemake.stdout.strip().isdigit(), snakemake.stderr
    job_of(cluster, snakemake)
    log = cluster.workdir / "slurm_logs" / f"{snakemake.stdout.strip()}.log"
    assert log.read_text() == "snakemake 5e1f\n"
    toil = sbatch(cluster, bin_dir, "-J", "toil_job_1_x", "--signal=B:USR1@30", "--export=ALL,TOIL_VAR=v",
                  "--mem=100", "--cpus-per-task=1", "--time=0:3600", "-o", "toil.%j.out", "-e", "toil.%j.err",
                  "--wrap=exec sh -c 'echo $TOIL_VAR'")
    toil_job = job_of(cluster, toil)
    assert toil_job["time_limit_s"] == 3600
    assert (cluster.workdir / f"toil.{toil_job['id']}.out").read_text() == "v\n"
    dask = cluster.workdir / "dask.sh"
    dask.write_text("#!/usr/bin/env bash\n\n#SBATCH -J dask-worker\n#SBATCH -e dask-worker-%J.err\n"
                    "#SBATCH -o dask-worker-%J.out\n#SBATCH -n 1\n#SBATCH --cpus-per-task=1\n#SBATCH --mem=954M\n"
                    "#SBATCH -t 00:30:00\n\necho worker\n")
    dask_job = job_of(cluster, sbatch(cluster, bin_dir, str(dask)))
    assert (cluster.workdir / f"dask-worker-{dask_job['id']}.out").read_text() == "worker\n"
    psij = cluster.workdir / "psij.sh"
    psij.write_text(f'#!/bin/bash\n#SBATCH --job-name="psij job"\n#SBATCH --chdir="{cluster.workdir}"\n'
                    "#SBATCH --nodes=1\n#SBATCH --ntasks=1\n#SBATCH --time=0:5:0\n#SBATCH -e /dev/null\n"
                    "#SBATCH -o /dev/null\n#SBATCH --export=ALL\necho \"$SLURM_JOB_NAME\" > psij.result\n")
    job_of(cluster, sbatch(cluster, bin_dir, str(psij)))
    assert (cluster.workdir / "psij.result").read_text() == "psij job\n"
