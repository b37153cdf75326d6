"""Every catchable signal sent with kill() to a running job's shepherd, as root, on a real
cluster: the shepherd survives all of them, forwards the job's own to the job, freezes and thaws
on SIGTSTP/SIGCONT, stops the job on SIGTERM, and writes the others in its trace; the job ends
as it should, with nothing left running and no cgroup left. Each containment backend this host
can run is tested."""

from __future__ import annotations

import os
import signal
import time
import uuid

from tests.helpers.attempts import (
    attempt_cgroups,
    backend_cluster,  # noqa: F401  (a fixture)
    escaping_lines,
    kill_all,
    processes_with_argument,
    read_kept,
    shepherd_pid,
)
from tests.helpers.cluster import LocalCluster
from tests.helpers.wait import wait_until

from drover.shepherd.signals import CATCHABLE, FAULTS
from drover.shepherd.supervise import FORWARDED
from drover.spool.process import is_alive, read_pid_record

# The job: records every signal that reaches it; SIGTERM (the shepherd's stop) ends it, exit 0.
RECORDER = r"""
import os, signal, sys, time
def got(signum, frame):
    with open("received", "a") as file:
        file.write(f"{signum}\n")
    if signum == signal.SIGTERM:
        sys.exit(0)
for signum in signal.valid_signals() - {signal.SIGKILL, signal.SIGSTOP, signal.SIGCHLD}:
    signal.signal(signum, got)
open("ready", "w").close()
while True:
    time.sleep(0.05)
"""


def _job_script(marker: str) -> str:
    return (
        "grep -E '^(SigBlk|SigIgn):' /proc/self/status > dispositions\n"  # what a child of the job inherits
        + escaping_lines(marker)
        + "exec python3 recorder.py\n"
    )


def _received(workdir: object) -> list[int]:
    path = os.path.join(str(workdir), "received")
    return [int(line) for line in open(path).read().split()] if os.path.exists(path) else []


def test_every_catchable_signal_sent_to_the_shepherd(backend_cluster: tuple[LocalCluster, str]) -> None:  # noqa: F811
    cluster, backend = backend_cluster
    marker = f"{4000 + uuid.uuid4().int % 1000}.{os.getpid()}"
    (cluster.workdir / "recorder.py").write_text(RECORDER)
    job = cluster.submit("--keep-spool", "--", "bash", "-c", _job_script(marker))
    attempt = f"{job}.0.1"
    try:
        wait_until(lambda: (cluster.workdir / "ready").exists(), describe="the job to be ready")
        shepherd = shepherd_pid(cluster, attempt)
        record = read_pid_record(str(cluster.spool / attempt / "pid"))
        assert record is not None
        # `ready` is touched once the escapees are forked, not once each has become `sleep`
        wait_until(lambda: len(processes_with_argument(marker)) == 3, describe="the three escapees running")
        assert attempt_cgroups(cluster) or backend == "subreaper"

        # The job and its children start with no signal blocked or ignored — among those a
        # process can set: the C library keeps 32 and 33 for itself, and whatever the daemons
        # inherited there (a login may ignore them) no Python process can reset.
        settable = sum(1 << (int(n) - 1) for n in signal.valid_signals())
        masks = dict(line.split(":\t") for line in (cluster.workdir / "dispositions").read_text().splitlines())
        assert {key: int(value, 16) & settable for key, value in masks.items()} == {"SigBlk": 0, "SigIgn": 0}, masks

        contract = {signal.SIGTERM, signal.SIGTSTP, signal.SIGCONT}
        for signum in sorted(CATCHABLE - contract) + [signal.SIGTSTP, signal.SIGCONT]:
            os.kill(shepherd, signum)
            time.sleep(0.02)
            assert is_alive(*record), f"the shepherd died of {signal.Signals(signum).name if signum < 32 else signum}"
        forwarded = {int(s) for s in FORWARDED}
        wait_until(lambda: set(_received(cluster.workdir)) >= forwarded,
                   describe="every forwarded signal to reach the job")
        assert cluster.drover_json("show", str(job))["state"] == "running"

        os.kill(shepherd, signal.SIGTERM)  # the shepherd's stop: SIGTERM to the job, which exits 0
        cluster.drover("wait", str(job))
        shown = cluster.drover_json("show", str(job))
        assert shown["state"] == "completed", shown
        # The job got exactly its own signals, each once: none of the others was forwarded
        # (the subreaper suspends with SIGSTOP and resumes with SIGCONT, which the job sees).
        thawed = {signal.SIGCONT} if backend == "subreaper" else set()
        assert sorted(_received(cluster.workdir)) == sorted(forwarded | {signal.SIGTERM} | thawed)
        # Nothing of the attempt runs on, and no cgroup is left.
        wait_until(lambda: not processes_with_argument(marker), describe="no escapee left")
        assert attempt_cgroups(cluster) == []
        # What was not the job's business is in the trace, with who sent the faults.
        trace = wait_until(lambda: read_kept(cluster, attempt, "trace"), describe="the kept trace")
        for signum in FAULTS:
            assert f"ignored {signal.Signals(signum).name} from pid {os.getpid()}" in trace, trace
        assert "ignored SIGRTMIN+1" in trace and "ignored SIGABRT" in trace and "ignored SIGIO" in trace, trace
    finally:
        kill_all(processes_with_argument(marker))
