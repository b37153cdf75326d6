"""squeue on a real cluster, with the command lines psij, parsl, snakemake and toil send and
the parsing they do."""

from __future__ import annotations

from tests.helpers.cluster import LocalCluster
from tests.helpers.compat_install import install, run
from tests.helpers.wait import wait_until


def test_the_tools_command_lines(cluster: LocalCluster) -> None:
    bin_dir = install(cluster)
    sleeper = run(cluster, bin_dir, "sbatch", "--parsable", "-J", "uuid-7", "--wrap", "sleep 60").stdout.strip()
    held = run(cluster, bin_dir, "sbatch", "--parsable", "-H", "--array=1-4%2", "--wrap", "true").stdout.strip()
    done = run(cluster, bin_dir, "sbatch", "--parsable", "--wrap", "exit 2").stdout.strip()
    cluster.drover("wait", done, check=False)
    wait_until(lambda: cluster.drover_json("show", sleeper)["state"] == "running", describe="running")

    # psij: -O with three names, -t all, --me; every line exactly three words after the header
    out = run(cluster, bin_dir, "squeue", "-O", "JobArrayID,StateCompact,Reason", "-t", "all", "--me").stdout
    rows = [line.split() for line in out.splitlines()[1:]]
    assert all(len(row) == 3 for row in rows), rows
    assert {row[0]: (row[1], row[2]) for row in rows} == {
        sleeper: ("R", "None"), f"{held}_[1-4%2]": ("PD", "JobHeldUser"), done: ("F", "NonZeroExitCode")}
    out = run(cluster, bin_dir, "squeue", "--me", "-o", "%i", "-h", "-r", "-t", "all").stdout.split()
    assert sorted(out) == sorted([sleeper, done] + [f"{held}_{i}" for i in range(1, 5)])
    # parsl's fallback: several ids, one of them ended: the others print, exit 0
    out = run(cluster, bin_dir, "squeue", "--noheader", "--format=%i %t", "--job", f"{sleeper},{done}")
    assert (out.returncode, out.stdout) == (0, f"{sleeper} R\n")
    # snakemake's status through squeue: by name, every state, `|`
    out = run(cluster, bin_dir, "squeue", "--format=%i|%T", "--states=all", "--noheader", "--name", "uuid-7")
    assert out.stdout == f"{sleeper}|RUNNING\n"
    # toil: id, compact state, elapsed
    out = run(cluster, bin_dir, "squeue", "-h", "--format", "%i %t %M").stdout.splitlines()
    assert any(line.startswith(f"{sleeper} R ") for line in out)
    # SQUEUE_FORMAT and -j with the id as the next word
    env_out = run(cluster, bin_dir, "squeue", "-h", "-j", sleeper, env={"SQUEUE_FORMAT": "%j:%u"}).stdout
    assert env_out.strip().startswith("uuid-7:")
    cluster.drover("cancel", sleeper, held)


def test_an_unknown_job_is_an_error_as_in_slurm(cluster: LocalCluster) -> None:
    bin_dir = install(cluster)
    out = run(cluster, bin_dir, "squeue", "-j", "424242")
    assert (out.returncode, out.stdout, out.stderr) == (1, "", "slurm_load_jobs error: Invalid job id specified\n")
    out = run(cluster, bin_dir, "squeue", "-t", "bogus")
    assert out.returncode == 1 and out.stderr.startswith("squeue: error: Invalid job state specified: bogus")
    out = run(cluster, bin_dir, "squeue", "--bogus")
    assert out.returncode == 1 and out.stderr == (
        "squeue: unrecognized option '--bogus'\nTry \"squeue --help\" for more information\n")
