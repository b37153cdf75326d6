"""Grid Engine's process flow, spool file "signal", on a real cluster: "If shepherd receives a
SIGTTIN, it reads the signal to deliver from the spoolfile "signal" and sends this signal to the
job's process group." `drover signal JOB TERM` (TSTP, CONT, TTIN) reaches the job as that signal,
not as the shepherd's order that the same signal sent to the shepherd would be."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers.cluster import LocalCluster
from tests.helpers.wait import wait_until
from tests.integration.execd.test_prolog_interruptions import (
    cluster_with,
    in_the_prolog,
    slow_prolog,
)

# Catches each signal and writes its name; ends when the file `stop` appears.
JOB = """
import os, signal, time
def got(signum, frame):
    with open("got", "a") as file:
        file.write(signal.Signals(signum).name[3:] + "\\n")
for name in ("TERM", "TSTP", "CONT", "TTIN", "USR1"):
    signal.signal(signal.Signals["SIG" + name], got)
open("ready", "w").close()
for _ in range(2000):
    if os.path.exists("stop"):
        break
    time.sleep(0.05)
"""


def test_gridengine_process_flow_spool_file_signal_delivers_what_the_shepherd_would_read_as_an_order(
        cluster: LocalCluster) -> None:
    got, stop = cluster.workdir / "got", cluster.workdir / "stop"
    job = cluster.submit("--keep-spool", "--", "python3", "-c", JOB)
    attempt = f"{job}.0.1"
    wait_until((cluster.workdir / "ready").exists, describe="the job to catch its signals")
    cluster.drover("signal", str(job), "USR1")
    wait_until(lambda: got.exists() and "USR1" in got.read_text(), describe="SIGUSR1 to reach the job")
    for name in ("TERM", "TSTP", "CONT", "TTIN"):
        cluster.drover("signal", str(job), name)
        wait_until(lambda name=name: name in got.read_text().split(), describe=f"SIG{name} to reach the job")
    record = json.loads((cluster.spool / attempt / "signal").read_text())
    assert record == ["SIGTERM", "SIGTSTP", "SIGCONT", "SIGTTIN"]
    # The shepherd took none of them as an order: the job was not stopped, nor frozen.
    assert cluster.drover_json("show", str(job))["state"] == "running"
    stop.touch()
    cluster.drover("wait", str(job))
    assert cluster.drover_json("show", str(job))["state"] == "completed"
    assert got.read_text().split() == ["USR1", "TERM", "TSTP", "CONT", "TTIN"]
    # The trace says what went to the job, and how.
    trace = wait_until(lambda: (cluster.spool / "kept" / attempt / "trace").exists()
                       and (cluster.spool / "kept" / attempt / "trace").read_text(), describe="the kept trace")
    assert "SIGUSR1 forwarded to the job" in trace
    for name in ("SIGTERM", "SIGTSTP", "SIGCONT", "SIGTTIN"):
        assert f"{name} (spool record signal) to the job" in trace, trace
    assert "stop requested" not in trace and "suspend requested" not in trace, trace


def test_gridengine_process_flow_spool_file_signal_written_during_the_prolog_reaches_the_job_once_it_started(
        tmp_path: Path) -> None:
    """A SIGTERM by name while the node prolog runs: the shepherd keeps its SIGTTIN, reads the
    record as it starts the job, and sends the SIGTERM once the job catches it: the job handles
    it and completes, and nothing took it for a stop."""
    in_prolog = tmp_path / "in-prolog"
    cluster = cluster_with(prolog=slow_prolog(in_prolog))
    try:
        cluster.start()
        got = cluster.workdir / "got"
        script = (f"trap 'echo TERM >> {got}' TERM; i=0; while [ $i -lt 200 ] && [ ! -f {got} ]; do "
                  "sleep 0.05; i=$((i + 1)); done; [ -f " + str(got) + " ]")
        job = cluster.submit("--", "bash", "-c", script)
        in_the_prolog(cluster, job, in_prolog)
        assert cluster.drover("signal", str(job), "TERM").returncode == 0
        assert cluster.drover("wait", str(job)).returncode == 0, cluster.drover_json("show", str(job))
        assert got.read_text().split() == ["TERM"]
        assert cluster.drover_json("show", str(job))["state"] == "completed"
    finally:
        assert not cluster.stop()
