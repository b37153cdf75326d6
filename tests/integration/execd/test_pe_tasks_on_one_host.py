"""Tight integration on one host (GE process flow: "for each task a subdirectory <petaskid> is
created that holds the task specific spool files"): a job of a PE with control_slaves = true
starts tasks on its own host with `drover task start` and `qrsh -inherit`; each prints its output
through the caller and exits with its status; a task's spool directory is in the attempt's; a
task still running when the job is cancelled is killed with it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

from tests.helpers.cluster import LocalCluster, log_tails
from tests.helpers.wait import wait_until

CONFIG = """[parallel_environments.mpi]
slots = 4
allocation_rule = "$pe_slots"
control_slaves = true
accounting_summary = true

[parallel_environments.apart]
slots = 4
allocation_rule = "$pe_slots"
control_slaves = true

[parallel_environments.loose]
slots = 4
allocation_rule = "$pe_slots"
"""


def test_tasks_on_the_jobs_own_host_print_their_output_and_return_their_status(tmp_path: Path) -> None:
    cluster = LocalCluster(cpus=2, config_toml=CONFIG)
    try:
        cluster.start()
        qrsh = f"{sys.executable} -m drover.compat.gridengine.qrsh"
        script = (f'{sys.executable} -m drover task start "$DROVER_NODE" -- sh -c "echo out \\$DROVER_NODE; '
                  f'echo err >&2; exit 3"; echo "status $?"; '
                  f'{qrsh} -inherit "$DROVER_NODE" sh -c "echo inherited; pwd"; echo "status $?"')
        job = cluster.submit("--pe", "mpi", "2", "--", "bash", "-c", script)
        assert cluster.drover("wait", str(job)).returncode == 0
        node = cluster.drover_json("nodes")[0]["name"]
        out = (cluster.workdir / f"drover-{job}.out").read_text()
        assert out.splitlines() == [f"out {node}", "err", "status 3", "inherited", str(cluster.workdir), "status 0"], out
    except BaseException:
        print(log_tails(cluster.state_dir))
        raise
    finally:
        assert not cluster.stop()


def test_a_task_has_its_spool_subdirectory_and_dies_with_the_job(tmp_path: Path) -> None:
    cluster = LocalCluster(cpus=2, config_toml=CONFIG)
    try:
        cluster.start()
        marker = tmp_path / "pid"
        script = (f'{sys.executable} -m drover task start "$DROVER_NODE" -- sh -c "echo \\$\\$ > {marker}; '
                  'exec sleep 300"')
        job = cluster.submit("--pe", "mpi", "2", "--", "bash", "-c", script)
        wait_until(lambda: marker.exists() and marker.read_text().strip() != "", timeout=60,
                   describe="the task to run")
        pid = int(marker.read_text())
        spool = cluster.state_dir / "spool" / f"{job}.0.1" / "1"
        assert (spool / "config").exists() and (spool / "out").is_dir()
        shown = cluster.drover_json("show", str(job))
        shown = shown[0] if isinstance(shown, list) else shown
        (attempt,) = shown["tasks"][0]["attempts"]
        (task,) = attempt["pe_tasks"]
        assert (task["petask"], task["host"], task["ended_at"]) == ("1", attempt["node"], None), task
        assert "task 1 on" in cluster.drover("show", str(job)).stdout
        cluster.drover("cancel", str(job))
        wait_until(lambda: not os.path.exists(f"/proc/{pid}"), timeout=30, describe="the task killed")
        cluster.drover("wait", str(job), check=False)
        refused = cluster.submit("--pe", "loose", "1", "--", "bash", "-c",
                                 f'{sys.executable} -m drover task start "$DROVER_NODE" -- true')
        cluster.drover("wait", str(refused), check=False)
        err = (cluster.workdir / f"drover-{refused}.out").read_text()
        assert "control_slaves = false" in err, err
    except BaseException:
        print(log_tails(cluster.state_dir))
        raise
    finally:
        assert not cluster.stop()


BURN = "import time\nt = time.process_time()\nwhile time.process_time() - t < 1.5:\n    pass\n"


def _burning_task(cluster: LocalCluster, tmp_path: Path, pe: str) -> int:
    """A job of `pe` whose script waits for its one task, which burns 1.5 s of CPU; once ended."""
    burn = tmp_path / "burn.py"
    burn.write_text(BURN)
    script = f'{sys.executable} -m drover task start "$DROVER_NODE" -- {sys.executable} {burn}'
    job = cluster.submit("--pe", pe, "2", "--", "bash", "-c", script)
    assert cluster.drover("wait", str(job)).returncode == 0
    return job


def _qacct(cluster: LocalCluster, job: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "drover.compat.gridengine.qacct", "-j", str(job)],
                          capture_output=True, text=True, env=cluster.env, cwd=cluster.workdir, timeout=60)


def test_a_tasks_cpu_time_is_in_its_jobs_accounting(tmp_path: Path) -> None:
    """As Slurm counts its steps' usage in the job's: a task that burns 1.5 s of CPU while the job
    script only waits for it shows in the job's usage (`drover show`, `drover history`, qacct)."""
    cluster = LocalCluster(cpus=2, config_toml=CONFIG)
    try:
        cluster.start()
        job = _burning_task(cluster, tmp_path, "mpi")
        shown = cluster.drover_json("show", str(job))
        shown = shown[0] if isinstance(shown, list) else shown
        (attempt,) = shown["tasks"][0]["attempts"]
        assert attempt["usage"]["user_cpu_s"] + attempt["usage"]["sys_cpu_s"] >= 1.4, attempt["usage"]
        (row,) = cluster.drover_json("history", "--job", str(job))
        assert row["usage"]["user_cpu_s"] + row["usage"]["sys_cpu_s"] >= 1.4, row
        qacct = _qacct(cluster, job)
        (cpu,) = re.findall(r"^cpu\s+(\S+)", qacct.stdout, re.M)
        assert float(cpu) >= 1.4, qacct.stdout + qacct.stderr
    except BaseException:
        print(log_tails(cluster.state_dir))
        raise
    finally:
        assert not cluster.stop()


def test_gridengine_accounting_summary_false_gives_each_task_a_record_of_its_own(tmp_path: Path) -> None:
    """A PE without accounting_summary (Grid Engine's default, FALSE): `qacct -j` shows the job
    script's record, whose CPU time is its own, and after it one for the task, with the task's."""
    cluster = LocalCluster(cpus=2, config_toml=CONFIG)
    try:
        cluster.start()
        job = _burning_task(cluster, tmp_path, "apart")
        qacct = _qacct(cluster, job)
        master, task = (float(cpu) for cpu in re.findall(r"^cpu\s+(\S+)", qacct.stdout, re.M))
        assert master < 1.4 <= task, qacct.stdout + qacct.stderr
        assert re.findall(r"^granted_pe\s+(\S+)", qacct.stdout, re.M) == ["apart", "apart"], qacct.stdout
        (row,) = cluster.drover_json("history", "--job", str(job))
        assert row["usage"]["user_cpu_s"] + row["usage"]["sys_cpu_s"] < 1.4, row  # the job script's alone
    except BaseException:
        print(log_tails(cluster.state_dir))
        raise
    finally:
        assert not cluster.stop()


def test_a_task_stopped_with_its_job_is_counted_when_it_ends_after_it(tmp_path: Path) -> None:
    """A task still burning CPU when its job script exits is stopped with the attempt; its usage,
    which arrives after the job's, is added to the job's accounting then."""
    cluster = LocalCluster(cpus=2, config_toml=CONFIG)
    try:
        cluster.start()
        burn, marker = tmp_path / "forever.py", tmp_path / "burning"
        burn.write_text(f"open({str(marker)!r}, 'w').close()\nwhile True:\n    pass\n")
        script = (f'{sys.executable} -m drover task start "$DROVER_NODE" -- {sys.executable} {burn} & '
                  f'while [ ! -e {marker} ]; do sleep 0.1; done; sleep 2')
        job = cluster.submit("--pe", "mpi", "2", "--", "bash", "-c", script)
        cluster.drover("wait", str(job), check=False)

        def cpu() -> float:
            (row,) = cluster.drover_json("history", "--job", str(job))
            return row["usage"]["user_cpu_s"] + row["usage"]["sys_cpu_s"] if row["usage"] else 0.0

        wait_until(lambda: cpu() >= 0.3, timeout=30, describe="the stopped task's CPU time counted")
    except BaseException:
        print(log_tails(cluster.state_dir))
        raise
    finally:
        assert not cluster.stop()


def test_a_suspend_freezes_the_jobs_tasks_a_resume_thaws_them_and_a_signal_reaches_them(tmp_path: Path) -> None:
    """As Grid Engine's qmod -sj and qsig reach the tasks of a tightly integrated job: a task
    that counts stops counting while its job is suspended, counts again once it is resumed, and
    gets the signal `drover signal` sends the job."""
    cluster = LocalCluster(cpus=2, config_toml=CONFIG)
    try:
        cluster.start()
        ticks, got = tmp_path / "ticks", tmp_path / "got"
        task = f"trap 'echo usr1 > {got}' USR1; while :; do echo x >> {ticks}; sleep 0.1; done"
        script = f'{sys.executable} -m drover task start "$DROVER_NODE" -- sh -c "{task}"'
        job = cluster.submit("--pe", "mpi", "2", "--", "bash", "-c", script)
        wait_until(lambda: ticks.exists() and ticks.stat().st_size > 0, timeout=60, describe="the task to count")

        def state() -> str:
            shown = cluster.drover_json("show", str(job))
            return str((shown[0] if isinstance(shown, list) else shown)["state"])

        cluster.drover("suspend", str(job))
        wait_until(lambda: state() == "suspended", timeout=30, describe="the job suspended")

        def still() -> bool:  # the task's shepherd froze it (as the master's did its job)
            before = ticks.stat().st_size
            time.sleep(0.5)
            return ticks.stat().st_size == before

        wait_until(still, timeout=30, describe="the task frozen")
        frozen = ticks.stat().st_size
        time.sleep(1.0)
        assert ticks.stat().st_size == frozen, "the task counted while its job was suspended"
        cluster.drover("resume", str(job))
        wait_until(lambda: ticks.stat().st_size > frozen, timeout=30, describe="the task counting again")
        cluster.drover("signal", str(job), "USR1")
        wait_until(lambda: got.exists() and got.read_text().strip() == "usr1", timeout=30,
                   describe="the task to get SIGUSR1")
        cluster.drover("wait", str(job), check=False)  # the job script got it too, and ended of it
    except BaseException:
        print(log_tails(cluster.state_dir))
        raise
    finally:
        assert not cluster.stop()


def test_an_interrupted_caller_stops_its_task_and_the_job_goes_on(tmp_path: Path) -> None:
    """As Grid Engine's qrsh forwards its signals: a SIGINT (Ctrl-C) of a waiting `drover task
    start` stops its task, and the caller exits with the task's status; the job runs on."""
    cluster = LocalCluster(cpus=2, config_toml=CONFIG)
    try:
        cluster.start()
        marker = tmp_path / "pid"
        script = (f'{sys.executable} -m drover task start "$DROVER_NODE" -- sh -c "echo \\$\\$ > {marker}; '
                  f'exec sleep 300" & caller=$!; while [ ! -s {marker} ]; do sleep 0.1; done; '
                  'kill -INT $caller; wait $caller; echo "status $?"; echo "job goes on"')
        job = cluster.submit("--pe", "mpi", "2", "--", "bash", "-c", script)
        wait_until(lambda: marker.exists() and marker.read_text().strip() != "", timeout=60,
                   describe="the task to run")
        pid = int(marker.read_text())
        wait_until(lambda: not os.path.exists(f"/proc/{pid}"), timeout=30, describe="the task stopped")
        assert cluster.drover("wait", str(job), timeout=60).returncode == 0
        out = (cluster.workdir / f"drover-{job}.out").read_text()
        assert out.splitlines()[-2:] == ["status 143", "job goes on"], out  # 128 + SIGTERM, its shepherd's
    except BaseException:
        print(log_tails(cluster.state_dir))
        raise
    finally:
        assert not cluster.stop()
