"""qmod, qhost, qselect, qconf and qacct's selections against a real cluster, and where qsub
reads its options from: sge_request, -@ files, directives with -C."""

from __future__ import annotations

import re

from tests.helpers.cluster import LocalCluster
from tests.helpers.compat_install import install, run
from tests.helpers.wait import wait_until


def test_options_from_sge_request_option_files_and_directives(cluster: LocalCluster) -> None:
    """1. ./.sge_request sets -N and -cwd; a -@ file on the command line sets -j y.
    2. The script's own prefix (-C '#PBS') is read, and `#$` lines are then not.
    3. The command line wins over both; -clear in the script drops sge_request's options."""
    bin_dir = install(cluster)
    (cluster.workdir / ".sge_request").write_text("# defaults\n-N from_defaults -cwd\n")
    (cluster.workdir / "more.opts").write_text("-j y  # joined\n")
    (cluster.workdir / "job.sh").write_text('#!/bin/bash\n#$ -N ignored\n#PBS -l h_rt=0:1:0\necho "$JOB_NAME"\n'
                                            'echo err >&2\n')
    first = run(cluster, bin_dir, "qsub", "-terse", "-sync", "y", "-C", "#PBS", "-@", "more.opts", "job.sh")
    assert first.returncode == 0, first.stderr
    job = first.stdout.splitlines()[0]
    assert (cluster.workdir / f"from_defaults.o{job}").read_text() == "from_defaults\nerr\n"
    (cluster.workdir / "clear.sh").write_text("#!/bin/bash\n#$ -clear\n#$ -cwd\necho $JOB_NAME\n")
    second = run(cluster, bin_dir, "qsub", "-terse", "-sync", "y", "-N", "named", "clear.sh")
    job = second.stdout.splitlines()[0]
    assert (cluster.workdir / f"named.o{job}").read_text() == "named\n"


def test_qmod_suspends_resumes_and_clears_errors(cluster: LocalCluster) -> None:
    bin_dir = install(cluster)
    sleeper = run(cluster, bin_dir, "qsub", "-terse", "-cwd", "-b", "y", "sleep", "60").stdout.strip()
    wait_until(lambda: cluster.drover_json("show", sleeper)["state"] == "running", describe="running")
    suspended = run(cluster, bin_dir, "qmod", "-sj", sleeper)
    assert suspended.returncode == 0 and suspended.stdout.endswith(f"- suspended job {sleeper}\n")
    wait_until(lambda: cluster.drover_json("show", sleeper)["state"] == "suspended", describe="suspended")
    table = run(cluster, bin_dir, "qstat", "-s", "s").stdout
    assert [line.split()[4] for line in table.splitlines()[2:]] == ["s"]
    assert run(cluster, bin_dir, "qmod", "-usj", sleeper).stdout.endswith(f"- unsuspended job {sleeper}\n")
    refused = run(cluster, bin_dir, "qmod", "-d", "all.q@node")
    assert refused.returncode == 1 and "one state on all its nodes" in refused.stderr
    erring = run(cluster, bin_dir, "qsub", "-terse", "-cwd", "-b", "y", "exit 100").stdout.strip()
    wait_until(lambda: cluster.drover_json("show", erring)["state"] == "held", describe="the error state")
    cleared = run(cluster, bin_dir, "qmod", "-cj", erring)
    assert cleared.returncode == 0 and f"cleared error state of job {erring}" in cleared.stdout
    run(cluster, bin_dir, "qdel", sleeper, erring)


def test_hosts_queues_and_configuration_views(cluster: LocalCluster) -> None:
    bin_dir = install(cluster)
    node = cluster.drover_json("nodes")[0]["name"]
    hosts = run(cluster, bin_dir, "qhost").stdout.splitlines()
    assert hosts[0].split() == ["HOSTNAME", "ARCH", "NCPU", "NSOC", "NCOR", "NTHR", "LOAD", "MEMTOT", "MEMUSE",
                                "SWAPTO", "SWAPUS"]
    assert hosts[2].split()[0] == "global" and hosts[3].split()[:1] == [node] and hosts[3].split()[2] == "2"
    assert "<host name='global'>" in run(cluster, bin_dir, "qhost", "-xml").stdout
    assert run(cluster, bin_dir, "qselect").stdout == f"all.q@{node}\n"
    assert run(cluster, bin_dir, "qselect", "-l", "slots=3").stdout == ""  # no node has 3 CPUs
    assert run(cluster, bin_dir, "qconf", "-sql").stdout == "all.q\n"
    assert run(cluster, bin_dir, "qconf", "-sel").stdout == f"{node}\n"
    assert re.search(rf"^slots\s+1,\[{node}=2\]$", run(cluster, bin_dir, "qconf", "-sq", "all.q").stdout, re.M)
    assert run(cluster, bin_dir, "qconf", "-spl").stdout == "slurm\nsmp\n"
    changed = run(cluster, bin_dir, "qconf", "-mattr", "queue", "slots", "4", "all.q")
    assert changed.returncode == 1 and "changes nothing" in changed.stderr


def test_qacct_selections_and_qalter(cluster: LocalCluster) -> None:
    bin_dir = install(cluster)
    ids = [run(cluster, bin_dir, "qsub", "-terse", "-cwd", "-N", f"acct{i}", "-b", "y", f"exit {i}").stdout.strip()
           for i in (0, 1)]
    cluster.drover("wait", *ids, check=False)
    by_name = run(cluster, bin_dir, "qacct", "-j", "acct*").stdout
    assert re.findall(r"^jobnumber\s+(\d+)", by_name, re.M) == ids
    assert re.findall(r"^exit_status\s+(\d+)", by_name, re.M) == ["0", "1"]
    assert "Total System Usage" in run(cluster, bin_dir, "qacct", "-d", "1").stdout
    missing = run(cluster, bin_dir, "qacct", "-j", "999999")
    assert missing.returncode == 1 and missing.stderr == "error: job id 999999 not found\n"
    held = run(cluster, bin_dir, "qsub", "-terse", "-cwd", "-h", "-b", "y", "true").stdout.strip()
    refused = run(cluster, bin_dir, "qalter", "-l", "h_rt=10", held)
    assert refused.returncode == 1 and "priority, queue and holds" in refused.stderr
    assert run(cluster, bin_dir, "qalter", "-h", "U", held).stdout == f"modified hold of job {held}\n"
    cluster.drover("wait", held)
