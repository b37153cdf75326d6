"""Parallel environments as objects, on real daemons: GE shepherd, "Next a parallel environment
startup procedure is run if the job is a parallel job ... followed by a parallel environment
shutdown procedure for parallel jobs"; the spool file pe_hostfile; the PE's slots as a cap of the
whole cluster that `drover why` explains; and a job naming an unknown PE refused."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.helpers.cluster import LocalCluster
from tests.helpers.wait import wait_until

PROCEDURE = """#!/bin/bash
# a PE procedure: what it was given, where it ran, and the hostfile it was pointed at
echo "$1 args=${*:2} mark=${MARK:-none} cwd=$(pwd)"
if [ "$1" = start ]; then cat "$2"; fi
"""


def cluster_with_pe(tmp_path: Path, slots: int = 4, cpus: int = 4) -> LocalCluster:
    script = tmp_path / "procedure.sh"
    script.write_text(PROCEDURE)
    script.chmod(0o755)
    config = (f'[execd]\npe_start = "echo node-pe-start"\npe_stop = "echo node-pe-stop"\n'
              f'[parallel_environments.mpi]\nslots = {slots}\nallocation_rule = "$fill_up"\n'
              f'start_proc_args = "{script} start $pe_hostfile $pe $pe_slots $job_name $queue"\n'
              f'stop_proc_args = "root@{script} stop $job_id $pe"\n')
    return LocalCluster(cpus=cpus, config_toml=config)


def test_gridengine_pe_startup_and_shutdown_run_only_for_a_parallel_job(tmp_path: Path) -> None:
    """1. A job of PE mpi (2 slots), keeping its spool: the node's PE start, then the PE's
    start_proc_args (as the job's owner, with its environment, in its working directory, its
    placeholders replaced), the job, the PE's stop_proc_args (root@: the site's clean
    environment, in /), the node's PE stop. 2. Its environment has PE, NSLOTS, NHOSTS, NQUEUES and
    PE_HOSTFILE; its spool holds pe_hostfile in Grid Engine's format. 3. A serial job runs no PE
    method and gets no PE variables."""
    cluster = cluster_with_pe(tmp_path)
    try:
        cluster.start()
        node = cluster.drover_json("nodes")[0]["name"]
        job = cluster.submit("--pe", "mpi", "2", "--keep-spool", "--env", "MARK=job", "-J", "para", "--", "bash",
                             "-c", 'echo "job PE=$PE NSLOTS=$NSLOTS NHOSTS=$NHOSTS NQUEUES=$NQUEUES"; '
                                   'cat "$PE_HOSTFILE"')
        assert cluster.drover("wait", str(job)).returncode == 0
        lines = (cluster.workdir / f"drover-{job}.out").read_text().splitlines()
        hostfile_line = lines[2]
        host, slots, queue, processors = hostfile_line.split()
        assert (host, slots, queue) == (node, "2", f"default@{node}") and len(processors.split(",")) == 2
        assert lines == [
            "node-pe-start",
            f"start args={cluster.state_dir / 'spool'}/{job}.0.1/pe_hostfile mpi 2 para default "
            f"mark=job cwd={cluster.workdir}",
            hostfile_line,  # the start procedure read the spool's pe_hostfile
            "job PE=mpi NSLOTS=2 NHOSTS=1 NQUEUES=1",
            hostfile_line,  # the job read $PE_HOSTFILE
            f"stop args={job} mpi mark=none cwd=/",
            "node-pe-stop",
        ]
        kept = next((cluster.spool / "kept").glob(f"{job}.0.1"))
        assert (kept / "pe_hostfile").read_text() == hostfile_line + "\n"

        serial = cluster.submit("--env", "MARK=job", "--", "bash", "-c", 'echo "serial PE=${PE-unset} '
                                'NSLOTS=$NSLOTS NHOSTS=$NHOSTS PE_HOSTFILE=${PE_HOSTFILE-unset}"')
        assert cluster.drover("wait", str(serial)).returncode == 0
        assert (cluster.workdir / f"drover-{serial}.out").read_text().splitlines() == [
            "serial PE=unset NSLOTS=1 NHOSTS=1 PE_HOSTFILE=unset"]
    finally:
        assert not cluster.stop()


def test_sge_pe_slots_are_a_cap_of_the_whole_cluster_and_drover_why_says_so(tmp_path: Path) -> None:
    """1. PE mpi has 2 slots, the node 4 CPUs. 2. A job of 2 slots runs; a second waits, with
    PE_SLOTS, which `drover why` and `drover pe show` explain, while a plain job of 2 CPUs starts.
    3. When the first ends, the second runs. A range 1-8 gets the largest the PE can hold: 2."""
    cluster = cluster_with_pe(tmp_path, slots=2)
    try:
        cluster.start()
        first = cluster.submit("--pe", "mpi", "2", "--", "sleep", "60")
        second = cluster.submit("--pe", "mpi", "2", "--", "true")
        plain = cluster.submit("-c", "2", "--", "true")
        assert cluster.drover("wait", str(plain)).returncode == 0
        info = wait_until(lambda: (shown := cluster.drover_json("show", str(second)))["pending_reason"] == "pe_slots"
                          and shown, describe="the second job to wait for the PE's slots")
        assert info["pending_explanation"] == ("waiting for slots of parallel environment mpi: 2 a task, "
                                               "0 of its slots free")
        why = cluster.drover("why", str(second)).stdout
        assert "waiting for slots of parallel environment mpi" in why and "drover pe show" in why
        (mpi,) = [pe for pe in cluster.drover_json("pe", "list") if pe["name"] == "mpi"]
        assert (mpi["slots"], mpi["slots_used"], mpi["running"], mpi["pending"]) == (2, 2, 1, 1)
        shown = cluster.drover("pe", "show", "mpi").stdout.splitlines()
        assert shown[:2] == ["pe_name            mpi", "slots              2"]
        assert "allocation_rule    $fill_up" in shown
        cluster.drover("cancel", str(first))
        assert cluster.drover("wait", str(second)).returncode == 0
        ranged = cluster.submit("--pe", "mpi", "1-8", "--", "true")
        assert cluster.drover_json("show", str(ranged))["cpus"] == 2
    finally:
        assert not cluster.stop()


def test_an_unknown_pe_or_a_bad_slot_count_is_refused_in_one_line(tmp_path: Path) -> None:
    cluster = cluster_with_pe(tmp_path)
    try:
        cluster.start()
        unknown = cluster.drover("submit", "--pe", "nope", "2", "--", "true", check=False)
        assert unknown.returncode != 0
        assert unknown.stderr.strip().splitlines() == [
            "drover submit: unknown parallel environment 'nope'; this cluster has mpi, slurm, smp"]
        too_many = cluster.drover("submit", "--pe", "mpi", "8", "--", "true", check=False)
        assert too_many.returncode != 0 and "8 slots cannot run: the nodes have 4 CPUs in all" in too_many.stderr
        bad = cluster.drover("submit", "--pe", "mpi", "x", "--", "true", check=False)
        assert bad.returncode != 0 and "--pe mpi x: the slots of a parallel environment" in bad.stderr
        bin_dir = cluster.root / "bin"
        cluster.drover("compat", "install", str(bin_dir))
        qsub = subprocess.run([str(bin_dir / "qsub"), "-b", "y", "-pe", "nope", "2", "true"], capture_output=True,
                              text=True, env=cluster.env, cwd=cluster.workdir, timeout=60)
        assert qsub.returncode != 0 and "unknown parallel environment 'nope'" in qsub.stderr
        qconf = subprocess.run([str(bin_dir / "qconf"), "-spl"], capture_output=True, text=True, env=cluster.env,
                               timeout=60)
        assert qconf.stdout == "mpi\nslurm\nsmp\n"
        held = subprocess.run([str(bin_dir / "qsub"), "-terse", "-h", "-b", "y", "-pe", "mpi", "2", "true"],
                              capture_output=True, text=True, env=cluster.env, cwd=cluster.workdir, timeout=60)
        job = held.stdout.strip()
        shown = subprocess.run([str(bin_dir / "qstat"), "-r"], capture_output=True, text=True, env=cluster.env,
                               timeout=60).stdout
        assert "Requested PE:     mpi 2" in shown, shown
        detail = subprocess.run([str(bin_dir / "qstat"), "-j", job], capture_output=True, text=True,
                                env=cluster.env, timeout=60).stdout
        assert "mpi range: 2" in detail, detail
    finally:
        assert not cluster.stop()


def test_gridengine_manpage_a_failing_pe_start_procedure_sets_the_queue_in_error_and_requeues(tmp_path: Path) -> None:
    """The exit table's "Prolog, epilog and parallel start: The queue is set to error state and the
    job is re-queued" holds for a PE's own start_proc_args: 1. a start procedure that fails once
    (it runs as the owner, in the working directory, where a file says so); 2. the job's queue is
    in error on the node, the job pending, it did not run; the PE's stop did not run (its start
    failed); 3. the queue is cleared, and the job runs."""
    config = ('[parallel_environments.mpi]\nslots = 4\n'
              'start_proc_args = "bash -c \'test -e fail && rm fail && exit 7; echo started\'"\n'
              'stop_proc_args = "echo stopped"\n')
    cluster = LocalCluster(cpus=4, config_toml=config)
    try:
        cluster.start()
        (cluster.workdir / "fail").write_text("")
        marker = cluster.workdir / "ran"
        job = cluster.submit("--pe", "mpi", "2", "--", "touch", str(marker))
        failed = wait_until(lambda: (n := cluster.drover_json("nodes")[0])["queue_errors"].get("default") and n,
                            describe="queue default in error on the node")
        assert "the pe pe_start exited with status 7" in failed["queue_errors"]["default"]
        assert cluster.drover_json("show", str(job))["state"] == "pending" and not marker.exists()
        cluster.drover("node", "resume", failed["name"], "--queue", "default")
        assert cluster.drover("wait", str(job)).returncode == 0 and marker.exists()
        assert (cluster.workdir / f"drover-{job}.out").read_text().split() == ["started", "stopped"]
    finally:
        assert not cluster.stop()
