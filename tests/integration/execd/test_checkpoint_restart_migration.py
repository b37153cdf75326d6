"""Grid Engine's checkpointing, restart and migration on a personal cluster, with real jobs and
signals (seeds/gridengine-shepherd-manpage.txt, gridengine-shepherd-process-flow.txt; GE's
checkpoint(5); docs/checkpointing.md).

The job counts, saves its counter into its checkpoint directory ($SGE_CKPT_DIR) when it gets
the checkpoint signal, and on RESTARTED=1 resumes from the saved counter."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.helpers.cluster import LocalCluster
from tests.helpers.wait import wait_until

COUNTER = """#!/bin/bash
dir="$SGE_CKPT_DIR"
n=0
if [ "$RESTARTED" = 1 ] && [ -f "$dir/counter" ]; then n=$(cat "$dir/counter"); echo "resumed at $n"; fi
save() { echo "$n" > "$dir/counter.new"; mv "$dir/counter.new" "$dir/counter"; echo "saved $n"; }
trap save USR2
while [ "$n" -lt {limit} ]; do n=$((n + 1)); echo "$n" > "$dir/progress"; sleep 0.05; done
echo "done at $n"
"""


def a_cluster(tmp_path: Path, environments: str) -> LocalCluster:
    return LocalCluster(config_toml=environments.replace("TMP", str(tmp_path)))


def show(cluster: LocalCluster, job: int) -> dict[str, Any]:
    return cluster.drover_json("show", str(job))  # type: ignore[no-any-return]


def running_attempt(cluster: LocalCluster, job: int, number: int) -> Path:
    """The spool directory of the job's attempt `number`, once its job runs."""
    def probe() -> Path | None:
        task = show(cluster, job)["tasks"][0]
        if task["state"] != "running" or len(task["attempts"]) != number:
            return None
        spool = cluster.spool / f"{job}.{task['index']}.{number}"
        return spool if (spool / "environment").exists() else None  # written once the job started

    return wait_until(probe, timeout=30, describe=f"attempt {number} of job {job} running")


USERDEFINED = """
[checkpoints.counter]
interface = "userdefined"
signal = "USR2"
ckpt_dir = "TMP/ckpt/$job_id"
when = "x"
"""


def test_gridengine_process_flow_migrated_job_restarts_from_its_checkpoint_with_checkpointed_file(
        tmp_path: Path) -> None:
    """1. A userdefined job counts; 2. drover migrate: the shepherd sends it the checkpoint
    signal (it saves its counter), stops it, and the controller requeues it; 3. the new attempt
    has RESTARTED=1 and the spool file `checkpointed` holding "1"; 4. it resumes from the saved
    counter and finishes."""
    cluster = a_cluster(tmp_path, USERDEFINED)
    try:
        cluster.start()
        (cluster.workdir / "count.sh").write_text(COUNTER.replace("{limit}", "200"))
        job = cluster.submit("--checkpoint", "counter", "--", "bash", "count.sh")
        ckpt_dir = tmp_path / "ckpt" / str(job)
        first = running_attempt(cluster, job, 1)
        assert (first / "environment").read_text().count("RESTARTED=0\n") == 1
        assert not (first / "checkpointed").exists()
        wait_until(lambda: (ckpt_dir / "progress").exists() and int((ckpt_dir / "progress").read_text()) >= 20,
                   describe="the job to count to 20")
        cluster.drover("migrate", str(job))

        second = running_attempt(cluster, job, 2)
        assert (second / "checkpointed").read_text() == "1\n"
        environment = (second / "environment").read_text().splitlines()
        assert "RESTARTED=1" in environment and f"SGE_CKPT_DIR={ckpt_dir}" in environment
        assert "SGE_CKPT_ENV=counter" in environment
        saved = int((ckpt_dir / "counter").read_text())
        assert saved >= 20
        assert cluster.drover("wait", str(job), timeout=90).returncode == 0
        output = (cluster.workdir / f"drover-{job}.out").read_text()
        assert f"resumed at {saved}\n" in output and output.endswith("done at 200\n")
        shown = show(cluster, job)
        assert shown["state"] == "completed" and len(shown["tasks"][0]["attempts"]) == 2
        events = [event["kind"] for event in cluster.drover_json("events", str(job))]
        assert "migrate_requested" in events
    finally:
        assert not cluster.stop()


def test_gridengine_checkpoint5_when_x_a_suspend_migrates_the_job(tmp_path: Path) -> None:
    """checkpoint(5) 'x': "A job is checkpointed, aborted and if possible migrated as soon as the
    job gets suspended": drover suspend of such a job requeues it from its checkpoint."""
    cluster = a_cluster(tmp_path, USERDEFINED)
    try:
        cluster.start()
        (cluster.workdir / "count.sh").write_text(COUNTER.replace("{limit}", "60"))
        job = cluster.submit("--checkpoint", "counter", "--", "bash", "count.sh")
        running_attempt(cluster, job, 1)
        wait_until(lambda: (tmp_path / "ckpt" / str(job) / "progress").exists(), describe="the job to count")
        assert "migrating" in cluster.drover("suspend", str(job)).stdout
        second = running_attempt(cluster, job, 2)
        assert (second / "checkpointed").read_text() == "1\n"
        assert cluster.drover("wait", str(job), timeout=90).returncode == 0
        assert "resumed at" in (cluster.workdir / f"drover-{job}.out").read_text()
    finally:
        assert not cluster.stop()


APPLICATION_LEVEL = """
[checkpoints.app]
interface = "application-level"
ckpt_command = "/bin/sh -c 'echo $job_pid $job_name >> $ckpt_dir/checkpoints'"
clean_command = "/bin/sh -c 'echo cleaned > $ckpt_dir/cleaned'"
ckpt_dir = "TMP/app/$job_id"
signal = "none"
when = "m"
min_cpu_interval_s = 1

[checkpoints.broken]
interface = "application-level"
ckpt_command = "/nonexistent/ckpt $job_pid"
signal = "none"
"""


def test_gridengine_shepherd_periodic_checkpoints_run_the_ckpt_command_and_are_traced(tmp_path: Path) -> None:
    """checkpoint(5) 'm': "Checkpoints are generated periodically"; the shepherd runs the
    ckpt_command as the job's owner with $job_pid filled in, records each in its trace, and runs
    the clean_command after the job ended on its own."""
    cluster = a_cluster(tmp_path, APPLICATION_LEVEL)
    try:
        cluster.start()
        job = cluster.submit("--checkpoint", "app", "--keep-spool", "--name", "periodic", "--", "sleep", "3.5")
        first = running_attempt(cluster, job, 1)
        job_pid = int((first / "job_pid").read_text().split()[0])
        assert cluster.drover("wait", str(job), timeout=60).returncode == 0
        lines = (tmp_path / "app" / str(job) / "checkpoints").read_text().splitlines()
        assert len(lines) >= 2 and set(lines) == {f"{job_pid} periodic"}
        assert (tmp_path / "app" / str(job) / "cleaned").read_text() == "cleaned\n"
        kept = cluster.spool / "kept" / first.name  # --keep-spool: the node keeps it there
        trace = wait_until(lambda: (kept / "trace").exists() and (kept / "trace").read_text(), describe="the trace")
        assert trace.count("checkpoint (periodic): ckpt_command exited 0") == len(lines)
        assert "clean_command exited 0" in trace
        assert (kept / "checkpointed").read_text() == "1\n"  # a checkpoint is "in the arena"
    finally:
        assert not cluster.stop()


def test_gridengine_checkpoint_on_demand_runs_the_ckpt_command(tmp_path: Path) -> None:
    cluster = a_cluster(tmp_path, APPLICATION_LEVEL)
    try:
        cluster.start()
        job = cluster.submit("--checkpoint", "app", "--checkpoint-interval", "n", "--name", "asked", "--",
                             "sleep", "30")
        running_attempt(cluster, job, 1)
        assert "asked to checkpoint" in cluster.drover("checkpoint", str(job)).stdout
        made = tmp_path / "app" / str(job) / "checkpoints"
        wait_until(lambda: made.exists() and made.read_text().endswith(" asked\n"), describe="the checkpoint")
        cluster.drover("cancel", str(job))
        cluster.drover("wait", str(job), check=False)
        assert not (tmp_path / "app" / str(job) / "cleaned").exists()  # cancelled: it did not end on its own
    finally:
        assert not cluster.stop()


def test_gridengine_process_flow_verify_method_refuses_a_bad_checkpoint_command_before_the_job_runs(
        tmp_path: Path) -> None:
    """GE's verify_method checks the "Validity of the checkpointing interface" before the job
    starts: a command that cannot run keeps the job from running (it fails, as a job that could
    not be started does), and the reason names the environment."""
    cluster = a_cluster(tmp_path, APPLICATION_LEVEL)
    try:
        cluster.start()
        marker = cluster.workdir / "ran"
        job = cluster.submit("--checkpoint", "broken", "--", "touch", str(marker))
        assert cluster.drover("wait", str(job), check=False).returncode != 0
        shown = show(cluster, job)
        assert shown["state"] == "failed"
        failure = shown["tasks"][0]["attempts"][0]["failure"]
        assert "checkpoint environment broken: ckpt_command /nonexistent/ckpt" in failure
        assert not marker.exists()
    finally:
        assert not cluster.stop()


def test_gridengine_submit_a_checkpoint_environment_that_is_not_configured_is_refused(tmp_path: Path) -> None:
    cluster = a_cluster(tmp_path, USERDEFINED)
    try:
        cluster.start()
        refused = cluster.drover("submit", "--checkpoint", "nope", "--", "true", check=False)
        assert refused.returncode != 0
        assert refused.stderr.strip().splitlines()[-1].endswith("no checkpoint environment 'nope'; known: counter")
        bad_occasion = cluster.drover("submit", "--checkpoint", "counter", "--checkpoint-interval", "q", "--",
                                      "true", check=False)
        assert bad_occasion.returncode != 0 and "-c 'q'" in bad_occasion.stderr
        alone = cluster.drover("submit", "--checkpoint-interval", "m", "--", "true", check=False)
        assert alone.returncode != 0 and "needs --checkpoint NAME" in alone.stderr
        assert cluster.drover_json("status") == []  # nothing was submitted
    finally:
        assert not cluster.stop()


def test_gridengine_checkpoint5_a_bad_environment_in_drover_toml_is_refused_naming_its_table(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    (state / "drover.toml").write_text('[checkpoints.blcr]\ninterface = "application-level"\n'
                                       'ckpt_command = "cr_checkpoint $job_pid"\n')
    cluster = LocalCluster()
    try:
        checked = cluster.drover("config", "check", "--state-dir", str(state), check=False)
        assert checked.returncode != 0
        assert "[checkpoints.blcr] ckpt_command must be 'none' or a command starting with an absolute path" in (
            checked.stderr + checked.stdout)
    finally:
        cluster.stop()


ON_SHUTDOWN = """
[checkpoints.shutdown]
interface = "application-level"
ckpt_command = "/bin/sh -c 'echo $job_pid >> $ckpt_dir/checkpoints'"
ckpt_dir = "TMP/down/$job_id"
signal = "none"
when = "s"
"""


def test_gridengine_checkpoint5_when_s_the_node_daemons_shutdown_checkpoints_its_jobs(tmp_path: Path) -> None:
    """checkpoint(5) 's': checkpointed when the node daemon shuts down. A Drover node's jobs go
    on without it (the next one re-attaches), so they are checkpointed, not aborted."""
    import signal

    cluster = a_cluster(tmp_path, ON_SHUTDOWN)
    try:
        cluster.start()
        job = cluster.submit("--checkpoint", "shutdown", "--", "sleep", "60")
        first = running_attempt(cluster, job, 1)
        made = tmp_path / "down" / str(job) / "checkpoints"
        assert not made.exists()
        cluster.kill("execd", signal.SIGTERM)
        job_pid = (first / "job_pid").read_text().split()[0]
        assert wait_until(lambda: made.exists() and made.read_text(), describe="the checkpoint") == f"{job_pid}\n"
        cluster.start_execd()
        cluster.drover("cancel", str(job))
        cluster.drover("wait", str(job), check=False)
    finally:
        assert not cluster.stop()


QSUB_SCRIPT = """#!/bin/bash
#$ -ckpt counter
#$ -c sx
#$ -cwd
echo "restarted=$RESTARTED env=$SGE_CKPT_ENV"
"""


def test_gridengine_qsub_ckpt_and_c_name_the_environment_and_its_occasions(tmp_path: Path) -> None:
    """qsub(1): -ckpt "Selects the checkpointing environment ... to be used for checkpointing the
    job"; -c "overwrites the definitions of the when parameter in the checkpointing environment"."""
    from tests.helpers.compat_install import install, run

    cluster = a_cluster(tmp_path, USERDEFINED)
    try:
        cluster.start()
        bin_dir = install(cluster)
        (cluster.workdir / "job.sh").write_text(QSUB_SCRIPT)
        submitted = run(cluster, bin_dir, "qsub", "-terse", "job.sh")
        assert submitted.returncode == 0 and submitted.stderr == "", submitted.stderr
        job = submitted.stdout.strip()
        assert cluster.drover("wait", job).returncode == 0
        assert "counter (sx)" in cluster.drover("show", job).stdout
        assert cluster.drover_json("show", job)["checkpoint"] == "counter (sx)"
        assert (cluster.workdir / f"job.sh.o{job}").read_text() == "restarted=0 env=counter\n"
        refused = run(cluster, bin_dir, "qsub", "-ckpt", "counter", "-c", "00:00:00", "-b", "y", "true")
        assert refused.returncode != 0 and "ERROR! -c argument invalid" in refused.stderr  # Grid Engine's words
        # qconf shows the environments as checkpoint(5) writes them
        assert run(cluster, bin_dir, "qconf", "-sckptl").stdout == "counter\n"
        shown = run(cluster, bin_dir, "qconf", "-sckpt", "counter").stdout.splitlines()
        assert f"{'interface':<24}userdefined" in shown and f"{'when':<24}x" in shown
        assert f"{'ckpt_dir':<24}{tmp_path}/ckpt/$job_id" in shown and f"{'signal':<24}SIGUSR2" in shown
        missing = run(cluster, bin_dir, "qconf", "-sckpt", "nope")
        assert missing.returncode == 1 and missing.stderr == "nope is not a checkpointing interface definition\n"
    finally:
        assert not cluster.stop()


FAILING_MIGRATION = """
[checkpoints.failing]
interface = "application-level"
migr_command = "/bin/sh -c 'echo migrating $job_pid; exit 3'"
ckpt_dir = "TMP/failing/$job_id"
signal = "none"
when = "x"
"""


def test_gridengine_manpage_a_failed_checkpoint_did_not_happen_but_migration_will_happen(tmp_path: Path) -> None:
    """The man page's exit values: "Checkpoint: Success, except for kernel checkpointing:
    checkpoint was not successful, did not happen (but migration will happen by Grid Engine)".
    A migr_command that exits 3 is written in the trace as a checkpoint that did not happen, and
    the job migrates all the same; a suspended job is not checkpointed."""
    cluster = a_cluster(tmp_path, FAILING_MIGRATION)
    try:
        cluster.start()
        job = cluster.submit("--checkpoint", "failing", "--checkpoint-interval", "n", "--keep-spool", "--",
                             "sleep", "30")
        first = running_attempt(cluster, job, 1)
        cluster.drover("suspend", str(job))  # 'n': a suspend only suspends
        wait_until(lambda: show(cluster, job)["state"] == "suspended", describe="the job suspended")
        cluster.drover("checkpoint", str(job))
        cluster.drover("resume", str(job))
        wait_until(lambda: show(cluster, job)["state"] == "running", describe="the job running again")
        cluster.drover("migrate", str(job))
        second = running_attempt(cluster, job, 2)
        assert (second / "checkpointed").read_text() == "1\n"  # a restart, whatever the checkpoint did
        kept = cluster.spool / "kept" / first.name
        trace = wait_until(lambda: (kept / "trace").exists() and (kept / "trace").read_text(), describe="the trace")
        assert "checkpoint (asked): the job is suspended; no new checkpoint is written" in trace
        assert ("checkpoint (migration): migr_command exited 3: the checkpoint was not successful, did not happen "
                "(the migration goes on)") in trace
        assert not (kept / "checkpointed").exists()
        cluster.drover("cancel", str(job))
        cluster.drover("wait", str(job), check=False)
    finally:
        assert not cluster.stop()


PERIODIC_SIGNAL = """
[checkpoints.counter]
interface = "userdefined"
signal = "USR2"
ckpt_dir = "TMP/ckpt/$job_id"
when = "m"
min_cpu_interval_s = 1
"""


def test_gridengine_shepherd_forwards_the_checkpointing_signal_periodically(tmp_path: Path) -> None:
    """The man page: the shepherd "forwards signals to the job, such as ... the checkpointing
    signal"; with 'm', every min_cpu_interval_s of the job's run time."""
    cluster = a_cluster(tmp_path, PERIODIC_SIGNAL)
    try:
        cluster.start()
        (cluster.workdir / "count.sh").write_text(COUNTER.replace("{limit}", "60"))
        job = cluster.submit("--checkpoint", "counter", "--keep-spool", "--", "bash", "count.sh")
        first = running_attempt(cluster, job, 1)
        assert cluster.drover("wait", str(job), timeout=60).returncode == 0
        saves = (cluster.workdir / f"drover-{job}.out").read_text().count("saved ")
        assert saves >= 2 and int((tmp_path / "ckpt" / str(job) / "counter").read_text()) > 0
        kept = cluster.spool / "kept" / first.name
        trace = wait_until(lambda: (kept / "trace").exists() and (kept / "trace").read_text(), describe="the trace")
        assert trace.count("checkpoint (periodic): sent SIGUSR2 to the job") >= saves
    finally:
        assert not cluster.stop()
