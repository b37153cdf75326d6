"""An internal error while the controller handles one job costs that job alone: it ends FAILED
with the reason, the node's channel stays (no reconnect, no reload), and the other jobs, running
and new, go on. The error is injected with the controller's fault-injection seam
(drover/controller/faults.py)."""

from __future__ import annotations

from tests.helpers.cluster import LocalCluster
from tests.helpers.wait import wait_until

from drover.controller.faults import REPORT_RAISES


def state(cluster: LocalCluster, job: int) -> str:
    return str(cluster.drover_json("show", str(job))["state"])


def test_an_exception_while_handling_one_jobs_exit_report_fails_that_job_alone_and_keeps_the_node() -> None:
    cluster = LocalCluster()
    try:
        cluster.start_controller(**{REPORT_RAISES: "exited:poisoned"})
        cluster.start_execd()
        flag = cluster.workdir / "go"
        running = cluster.submit("-J", "running", "--", "bash", "-c", f"while [ ! -e {flag} ]; do sleep 0.05; done")
        wait_until(lambda: state(cluster, running) == "running", describe="the first job to run")
        poisoned = cluster.submit("-J", "poisoned", "--", "echo", "hello")
        wait_until(lambda: state(cluster, poisoned) == "failed", describe="the poisoned job to fail")

        shown = cluster.drover("show", str(poisoned)).stdout
        assert "FAILED" in shown, shown
        assert (f"reason      internal error while handling the exited report of attempt {poisoned}.0.1 from node "
                in shown), shown
        assert "RuntimeError: injected fault" in shown, shown
        kinds = [event["kind"] for event in cluster.drover_json("events", str(poisoned))]
        assert "internal_error" in kinds and kinds.count("job_ended") == 1, kinds
        # Its report was acknowledged with its failure: the node finished its cleanup.
        wait_until(lambda: not (cluster.spool / f"{poisoned}.0.1").exists(), describe="the poisoned job's spool to go")

        flag.touch()
        after = cluster.submit("-J", "after", "--", "true")
        assert cluster.drover("wait", str(running), str(after)).returncode == 0
        assert state(cluster, running) == "completed" and state(cluster, after) == "completed"

        execd_log = (cluster.state_dir / "execd.log").read_text()
        assert execd_log.count("joined the cluster as node") == 1 and "reconnecting" not in execd_log, execd_log
        controller_log = (cluster.state_dir / "controller.log").read_text()
        assert "fault injection for testing is on" in controller_log
        assert "Traceback" in controller_log and "injected fault" in controller_log
        assert "reloading the working set" not in controller_log
    except BaseException:
        print(cluster.logs())
        raise
    finally:
        assert not cluster.stop()
