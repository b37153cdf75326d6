"""A parallel job's tasks (GE's tight integration) outlive the restart of either daemon, as its
job script does: each task is a record of its attempt in the store, committed before its node is
told to start it; a node reports a task's end until the controller acknowledges it, and a
restarted node daemon re-attaches to the tasks' shepherds. So a task that ends while the
controller is down, or runs on while the node daemon restarts, is still known, shown, and
counted once in its job's accounting."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

from tests.helpers.cluster import LocalCluster, log_tails
from tests.helpers.wait import wait_until

CONFIG = """[parallel_environments.mpi]
slots = 4
allocation_rule = "$pe_slots"
control_slaves = true
job_is_first_task = false
accounting_summary = true
"""

# The task: says it runs, waits for the test's word, burns 1.5 s of CPU, says it is done.
TASK = """import os, sys, time
here = sys.argv[1]
open(os.path.join(here, "running"), "w").close()
while not os.path.exists(os.path.join(here, "go")):
    time.sleep(0.05)
t = time.process_time()
while time.process_time() - t < 1.5:
    pass
open(os.path.join(here, "done"), "w").close()
"""


def _job(cluster: LocalCluster, here: Path) -> int:
    """A job whose script starts the task, waits for it and writes the status its caller
    returned (the caller waits out a controller that does not answer for a while)."""
    task = here / "task.py"
    task.write_text(TASK)
    script = (f'{sys.executable} -m drover task start "$DROVER_NODE" -- {sys.executable} {task} {here}; '
              f'echo "status $?" > {here / "caller"}')
    job = cluster.submit("--pe", "mpi", "2", "--", "bash", "-c", script)
    wait_until(lambda: (here / "running").exists(), timeout=60, describe="the task to run")
    return job


def _the_task_is_recorded_and_counted(cluster: LocalCluster, job: int, here: Path) -> None:
    assert cluster.drover("wait", str(job), timeout=90).returncode == 0
    assert (here / "caller").read_text().strip() == "status 0"  # its caller followed it to its end

    def task() -> dict[str, object]:
        shown = cluster.drover_json("show", str(job))
        (attempt,) = (shown[0] if isinstance(shown, list) else shown)["tasks"][0]["attempts"]
        (found,) = attempt["pe_tasks"]
        return dict(found, job_usage=attempt["usage"])

    wait_until(lambda: task()["ended_at"] is not None, timeout=60, describe="the task's end recorded")
    found = task()
    assert (found["petask"], found["exit_code"]) == ("1", 0), found
    usage = found["usage"]
    assert isinstance(usage, dict) and usage["user_cpu_s"] + usage["sys_cpu_s"] >= 1.4, found
    (row,) = cluster.drover_json("history", "--job", str(job))
    cpu = row["usage"]["user_cpu_s"] + row["usage"]["sys_cpu_s"]
    assert 1.4 <= cpu < 2 * 1.5, row  # the task's CPU time, counted once


def test_a_task_that_ends_while_the_controller_is_down_is_counted_once_it_is_back(tmp_path: Path) -> None:
    cluster = LocalCluster(cpus=2, config_toml=CONFIG)
    try:
        cluster.start()
        job = _job(cluster, tmp_path)
        cluster.kill("controller")  # kill -9
        (tmp_path / "go").touch()
        wait_until(lambda: (tmp_path / "done").exists(), timeout=60, describe="the task to end")
        cluster.start_controller()
        _the_task_is_recorded_and_counted(cluster, job, tmp_path)
    except BaseException:
        print(log_tails(cluster.state_dir))
        raise
    finally:
        assert not cluster.stop()


def test_a_task_runs_on_while_its_node_daemon_restarts_and_its_end_is_heard(tmp_path: Path) -> None:
    cluster = LocalCluster(cpus=2, config_toml=CONFIG)
    try:
        cluster.start()
        job = _job(cluster, tmp_path)
        shepherd_pid = int((cluster.spool / f"{job}.0.1" / "1" / "pid").read_text().split()[0])
        cluster.kill("execd")  # kill -9
        assert os.path.exists(f"/proc/{shepherd_pid}"), "the task's shepherd died with its node daemon"
        cluster.start_execd()
        (tmp_path / "go").touch()
        _the_task_is_recorded_and_counted(cluster, job, tmp_path)
        wait_until(lambda: not (cluster.spool / f"{job}.0.1").exists(), timeout=30,
                   describe="the task's spool removed")
    except BaseException:
        print(log_tails(cluster.state_dir))
        raise
    finally:
        assert not cluster.stop()


def test_a_task_whose_order_died_with_its_node_daemon_fails_and_its_caller_stops_waiting(tmp_path: Path) -> None:
    """The node daemon is stopped (SIGSTOP) while the controller sends it a task's order, and
    killed before it reads it: the order is gone with its socket. The daemon started again
    does not know the task, so the controller ends it, failed; its caller prints why and
    returns non-zero, and the job goes on to its end."""
    cluster = LocalCluster(cpus=2, config_toml=CONFIG)
    try:
        cluster.start()
        # The job starts its task only once the node daemon is stopped.
        (tmp_path / "task.py").write_text(TASK)
        script = (f'while [ ! -e {tmp_path / "start"} ]; do sleep 0.05; done; '
                  f'{sys.executable} -m drover task start "$DROVER_NODE" -- {sys.executable} {tmp_path / "task.py"} '
                  f'{tmp_path} 2> {tmp_path / "said"}; echo "status $?" > {tmp_path / "caller"}')
        job = cluster.submit("--pe", "mpi", "2", "--", "bash", "-c", script)
        def shown() -> dict[str, Any]:
            found = cluster.drover_json("show", str(job))
            return found[0] if isinstance(found, list) else found  # type: ignore[no-any-return]

        wait_until(lambda: shown()["state"] == "running", timeout=60, describe="the job to run")
        assert cluster.execd is not None
        os.killpg(cluster.execd.pid, signal.SIGSTOP)
        (tmp_path / "start").touch()

        def recorded() -> list[dict[str, object]]:
            (attempt,) = shown()["tasks"][0]["attempts"]
            return attempt["pe_tasks"]  # type: ignore[no-any-return]

        wait_until(lambda: len(recorded()) == 1, timeout=60, describe="the task's record, before its order goes")
        time.sleep(0.5)  # the order is written to the stopped daemon's socket
        cluster.kill("execd")  # kill -9, and the order with it
        cluster.start_execd()
        wait_until(lambda: (tmp_path / "caller").exists(), timeout=60, describe="the task's caller to return")
        assert (tmp_path / "caller").read_text().strip() == "status 1"
        assert "does not know the task: its order, or its refusal, was lost" in (tmp_path / "said").read_text()
        assert not (tmp_path / "running").exists()  # it never ran
        (found,) = recorded()
        assert found["ended_at"] is not None and "was lost" in str(found["failure"]), found
        assert cluster.drover("wait", str(job), timeout=90).returncode == 0
    except BaseException:
        print(log_tails(cluster.state_dir))
        raise
    finally:
        assert not cluster.stop()
