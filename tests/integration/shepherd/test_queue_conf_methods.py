"""Grid Engine's suspend_method, resume_method and terminate_method (queue_conf(5)) and the
shepherd's verify_method (seeds/gridengine-shepherd-process-flow.txt), on a personal cluster with
real jobs, real signals and real method commands."""

from __future__ import annotations

import os
import pwd
from pathlib import Path

from tests.helpers.attempts import read_kept
from tests.helpers.cluster import LocalCluster
from tests.helpers.wait import wait_until

# The job: ticks into ./ticks; records SIGUSR1, SIGUSR2 and SIGINT it gets in ./got; its pid in ./pid.
TICKER = """
echo $$ > pid
trap 'echo USR1 >> got' USR1
trap 'echo USR2 >> got' USR2
trap 'echo INT >> got; exit 7' INT
while :; do echo t >> ticks; sleep 0.05; done
"""

# A method's command: writes its arguments, user and working directory to ./method.<name>.
METHOD = """#!/bin/bash
name=$1; shift
{ echo "args=$*"; echo "user=$(id -un)"; echo "pwd=$PWD"; echo "mark=$DROVER_TEST_MARK"; } > "method.$name.part"
mv "method.$name.part" "method.$name"
exit 3
"""


def _cluster(tmp_path: Path, execd: str = "", queue: str = "") -> LocalCluster:
    return LocalCluster(config_toml=f"[execd]\n{execd}\n[queues.q]\n{queue}\n")


def _job(cluster: LocalCluster, name: str, *options: str) -> tuple[int, Path]:
    where = cluster.workdir / name
    where.mkdir()
    (where / "job.sh").write_text(TICKER)
    job = cluster.submit("--queue", "q", "--name", name, *options, "job.sh", cwd=where)
    wait_until(lambda: (where / "ticks").exists() and (where / "pid").exists(), describe="the job ticking")
    return job, where


def _running(script: Path, name: str) -> bool:
    """Whether a method command `script name ...` still runs (any process's command line)."""
    for entry in Path("/proc").iterdir():
        try:
            words = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:  # not a process, or gone meanwhile
            continue
        if str(script).encode() in words and name.encode() in words:
            return True
    return False


def _ticks(where: Path) -> int:
    return len((where / "ticks").read_text().split())


def _ticking(where: Path) -> bool:
    before = _ticks(where)
    try:
        wait_until(lambda: _ticks(where) > before + 2, timeout=3, describe="ticks")
    except AssertionError:
        return False
    return True


def test_gridengine_queue_conf_a_signal_suspend_and_resume_method_replaces_the_freeze(tmp_path: Path) -> None:
    """queue_conf(5): "If no executable path is given, Grid Engine takes the specified parameter
    entries as the signal to be delivered instead of the default signal"."""
    cluster = _cluster(tmp_path, queue='suspend_method = "SIGUSR1"\nresume_method = "SIGUSR2"\n')
    try:
        cluster.start()
        job, where = _job(cluster, "sig")
        cluster.drover("suspend", str(job))
        wait_until(lambda: (where / "got").exists() and "USR1" in (where / "got").read_text(), describe="SIGUSR1")
        assert _ticking(where)  # not frozen: the signal was all
        cluster.drover("resume", str(job))
        wait_until(lambda: "USR2" in (where / "got").read_text(), describe="SIGUSR2")
        cluster.drover("cancel", str(job))
        cluster.drover("wait", str(job), check=False)
    finally:
        assert not cluster.stop()


def test_gridengine_queue_conf_a_signal_terminate_method_replaces_sigterm(tmp_path: Path) -> None:
    cluster = _cluster(tmp_path, queue='terminate_method = "SIGINT"\n')
    try:
        cluster.start()
        job, where = _job(cluster, "int")
        cluster.drover("cancel", str(job))
        cluster.drover("wait", str(job), check=False)
        assert (where / "got").read_text().split() == ["INT"]
        assert cluster.drover_json("show", str(job))["state"] == "cancelled"
    finally:
        assert not cluster.stop()


def test_gridengine_queue_conf_command_methods_run_as_the_owner_with_placeholders_expanded(tmp_path: Path) -> None:
    """queue_conf(5): "this command, together with its arguments, is started ... The following
    special variables are expanded at runtime" ($job_pid, $job_id, $job_name, $queue, $job_owner,
    $ja_task_id); "it is started in the same environment as for the job concerned". The node's
    method is the default; the queue's wins over it. A command that exits non-zero counts as done
    ("Suspend, restart, terminate, clean, and migrate: Always successful."), and the trace says so."""
    script = tmp_path / "method.sh"
    script.write_text(METHOD)
    script.chmod(0o755)
    cluster = _cluster(
        tmp_path, execd=f'suspend_method = "{script} suspend $job_pid $job_id"\nterminate_method = "/bin/false"\n',
        queue=f'resume_method = "{script} resume $job_name $queue $ja_task_id"\n'
              f'terminate_method = "{script} terminate $job_owner $job_pid"\n')
    try:
        cluster.start()
        cluster.env["DROVER_TEST_MARK"] = "from-the-job"  # the job's environment, submitted with it
        job, where = _job(cluster, "cmd x", "--keep-spool")
        pid = (where / "pid").read_text().strip()
        me = pwd.getpwuid(os.getuid()).pw_name
        cluster.drover("suspend", str(job))
        wait_until(lambda: (where / "method.suspend").exists(), describe="the suspend command")
        assert (where / "method.suspend").read_text() == f"args={pid} {job}\nuser={me}\npwd={where}\nmark=from-the-job\n"
        assert _ticking(where)  # the command replaced the freeze
        cluster.drover("resume", str(job))
        wait_until(lambda: (where / "method.resume").exists(), describe="the resume command")
        assert (where / "method.resume").read_text().startswith("args=cmd x q 0\n")
        # the resume command has ended: GE starts no method while another runs
        wait_until(lambda: not _running(script, "resume"), describe="the resume command to end")
        cluster.drover("cancel", str(job))
        cluster.drover("wait", str(job), check=False)  # SIGKILL after the grace: the command killed nothing
        assert (where / "method.terminate").read_text().startswith(f"args={me} {pid}\n")
        assert cluster.drover_json("show", str(job))["state"] == "cancelled"
        attempt = f"{job}.0.1"
        wait_until(lambda: (cluster.spool / "kept" / attempt / "trace").exists(), describe="the kept trace")
        trace = read_kept(cluster, attempt, "trace")
        assert "suspend_method: exited 3; done all the same" in trace
        assert "terminate_method: exited 3; done all the same" in trace
    finally:
        assert not cluster.stop()


def test_gridengine_process_flow_verify_method_a_bad_command_fails_the_attempt_before_the_job_runs(
        tmp_path: Path) -> None:
    """Process flow, Initialization: "Check the configuration (verify_method): Terminate, suspend,
    resume methods." A command the owner cannot execute is the attempt's error, naming the
    method, and the job (its prolog too) does not run."""
    not_executable = tmp_path / "stop.sh"
    not_executable.write_text("#!/bin/sh\n")
    not_executable.chmod(0o644)
    cluster = LocalCluster(config_toml=f'[queues.missing]\nsuspend_method = "/no/such $job_pid"\n'
                                       f'[queues.plain]\nterminate_method = "{not_executable}"\n')
    try:
        cluster.start()
        for queue, error in (("missing", "suspend_method: /no/such: no such file"),
                             ("plain", f"terminate_method: {not_executable}: not executable")):
            marker = cluster.workdir / f"ran-{queue}"
            job = cluster.submit("--queue", queue, "--prolog", f"touch {marker}.prolog", "--", "touch", str(marker))
            assert cluster.drover("wait", str(job), check=False).returncode != 0
            shown = cluster.drover_json("show", str(job))
            assert shown["state"] == "failed"
            assert shown["tasks"][0]["attempts"][0]["failure"] == error
            assert not marker.exists() and not Path(f"{marker}.prolog").exists()
    finally:
        assert not cluster.stop()


def test_gridengine_qconf_mq_drover_queue_set_changes_a_queues_methods_for_the_next_attempts(tmp_path: Path) -> None:
    """Grid Engine changes a queue's methods with qconf -mq; Drover with `drover queue set`
    (operators only): the jobs that start afterwards use them; NONE goes back to the default."""
    cluster = _cluster(tmp_path, queue="nice = 0\n")
    try:
        cluster.start()
        cluster.drover("queue", "set", "q", "suspend_method=SIGUSR1", "resume_method=SIGUSR2")
        assert "suspend_method: unknown signal 'STOP'" in cluster.drover(
            "queue", "set", "q", "suspend_method=STOP", check=False).stderr
        job, where = _job(cluster, "set")
        cluster.drover("suspend", str(job))
        wait_until(lambda: (where / "got").exists() and "USR1" in (where / "got").read_text(), describe="SIGUSR1")
        assert _ticking(where)
        cluster.drover("resume", str(job))
        wait_until(lambda: "USR2" in (where / "got").read_text(), describe="SIGUSR2")
        cluster.drover("cancel", str(job))
        cluster.drover("wait", str(job), check=False)
        cluster.drover("queue", "set", "q", "suspend_method=NONE")
        job, where = _job(cluster, "default")
        cluster.drover("suspend", str(job))
        wait_until(lambda: not _ticking(where), describe="the freeze")
        assert not (where / "got").exists()
        cluster.drover("resume", str(job))  # SIGUSR2: the queue's resume method is still set
        wait_until(lambda: (where / "got").exists() and "USR2" in (where / "got").read_text(), describe="SIGUSR2")
        cluster.drover("cancel", str(job))
        cluster.drover("wait", str(job), check=False)
    finally:
        assert not cluster.stop()
