"""A real Slurm for a test, on this host alone: its own munged (own key and socket, so a munged
another test started is not touched), slurmctld and one slurmd, with their own ports, state and
logs under a private directory; one node named after this host, with 2 CPUs. With `nodes=N`, N
nodes n1..nN of 2 CPUs each, one slurmd each on this host (`slurmd -N NAME`, its own port, spool
and log), so that an allocation of several nodes is a real one: srun starts a task on each. Installed from
Debian's packages (slurmctld, slurmd, slurm-client: Slurm 22.05 on Debian 12) where missing;
a test that cannot have it skips with the reason. Every process is stopped by its PID.

Its commands (sbatch, squeue, scancel, srun) find it by SLURM_CONF in `env`. `started` gives one
to a fixture, and `inner_cluster` the Drover cluster that asks it for allocations."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import debian
from tests.helpers.cluster import LocalCluster
from tests.helpers.munge import Munged
from tests.helpers.outer_allocations import allocating_cluster, free_port

Unavailable = debian.Unavailable
CPUS = 2


def _installed() -> None:
    if os.geteuid() != 0:
        raise Unavailable("a private Slurm needs root (its slurmd starts jobs as their users)")
    debian.installed(("slurmctld", "slurmd", "sbatch", "squeue", "scancel", "srun"), "slurm-wlm", recommends=False)


class Slurm:
    def __init__(self, nodes: int = 1) -> None:
        _installed()
        self.nodes = nodes
        self.root = Path(tempfile.mkdtemp(prefix="slurm-", dir="/tmp"))
        os.chmod(self.root, 0o755)
        self.munged = Munged(self.root / "munge")
        self.host = socket.gethostname().split(".")[0]
        self.conf = self.root / "slurm.conf"
        self.processes: list[subprocess.Popen[bytes]] = []
        for name in ("state", "spool", "log"):
            (self.root / name).mkdir()
        self.conf.write_text(self._config())
        self.env = {**os.environ, "SLURM_CONF": str(self.conf)}

    def _config(self) -> str:
        root = self.root
        return "\n".join([
            "ClusterName=drovertest",
            f"SlurmctldHost={self.host}(127.0.0.1)",
            f"SlurmctldPort={free_port()}",
            f"SlurmdPort={free_port()}",
            "SlurmUser=root",
            "SlurmdUser=root",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            f"AuthInfo=socket={self.munged.socket}",
            f"StateSaveLocation={root / 'state'}",
            f"SlurmdSpoolDir={root / 'spool'}" + ("/%n" if self.nodes > 1 else ""),
            f"SlurmctldPidFile={root / 'slurmctld.pid'}",
            f"SlurmdPidFile={root / 'slurmd.pid'}" + (".%n" if self.nodes > 1 else ""),
            f"SlurmctldLogFile={root / 'log' / 'slurmctld.log'}",
            f"SlurmdLogFile={root / 'log' / 'slurmd.log'}" + (".%n" if self.nodes > 1 else ""),
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none",
            "JobCompType=jobcomp/none",
            "MpiDefault=none",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_CPU",
            "ReturnToService=2",
            "SchedulerType=sched/backfill",
            "MinJobAge=600",
            "KillWait=5",
            "InactiveLimit=0",
            "SlurmctldTimeout=30",
            "SlurmdTimeout=60",
            "MessageTimeout=20",
            *self._nodes(),
        ])

    def _nodes(self) -> list[str]:
        if self.nodes == 1:
            return [f"NodeName={self.host} NodeAddr=127.0.0.1 CPUs={CPUS} State=UNKNOWN",
                    f"PartitionName=debug Nodes={self.host} Default=YES MaxTime=INFINITE State=UP", ""]
        names = self.node_names()
        return [*(f"NodeName={name} NodeHostname={name} NodeAddr=127.0.0.1 Port={free_port()} CPUs={CPUS} "
                  "State=UNKNOWN" for name in names),
                f"PartitionName=debug Nodes={','.join(names)} Default=YES MaxTime=INFINITE State=UP", ""]

    def node_names(self) -> list[str]:
        return [self.host] if self.nodes == 1 else [f"n{index}" for index in range(1, self.nodes + 1)]

    def start(self) -> Slurm:
        log = open(self.root / "log" / "daemons.out", "ab")
        try:
            slurmds = [["slurmd", "-D"]] if self.nodes == 1 else [["slurmd", "-D", "-N", name]
                                                                   for name in self.node_names()]
            for name in self.node_names() if self.nodes > 1 else []:
                (self.root / "spool" / name).mkdir()
            for daemon in (["slurmctld", "-D", "-i"], *slurmds):
                self.processes.append(subprocess.Popen([*daemon, "-f", str(self.conf)], stdin=subprocess.DEVNULL,
                                                       stdout=log, stderr=log, env=self.env, process_group=0))
        finally:
            log.close()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            for process in self.processes:
                if process.poll() is not None:
                    raise Unavailable(f"a Slurm daemon exited at start ({process.args[0]}): {self.logs()}")
            shown = self.run("sinfo", "--noheader", "--format=%t", check=False)
            if shown.returncode == 0 and shown.stdout.strip() in ("idle", "mix", "alloc"):
                return self
            time.sleep(0.2)
        raise Unavailable(f"the private Slurm did not get its node idle within 60s: {self.logs()}")

    def run(self, *argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(list(argv), capture_output=True, text=True, env=self.env, timeout=60)
        if check and done.returncode != 0:
            raise AssertionError(f"{' '.join(argv)}: exit {done.returncode}: {done.stderr}{done.stdout}")
        return done

    def jobs(self) -> dict[str, tuple[str, str]]:
        """Every job squeue shows: id → (name, state)."""
        out = self.run("squeue", "--noheader", "--states=all", "--format=%i|%j|%T").stdout
        return {parts[0]: (parts[1], parts[2]) for line in out.splitlines() if len(parts := line.split("|")) == 3}

    def live_jobs(self) -> dict[str, tuple[str, str]]:
        return {job: shown for job, shown in self.jobs().items()
                if shown[1] in ("PENDING", "CONFIGURING", "RUNNING", "COMPLETING")}

    def logs(self) -> str:
        tails = []
        for path in sorted((self.root / "log").glob("*")):
            tails.append(f"--- {path.name}\n" + path.read_text(errors="replace")[-3000:])
        return "\n".join(tails)

    def stop(self) -> None:
        """Cancel what runs, stop the daemons by PID, then munged; remove the directory."""
        if self.processes:
            self.run("scancel", "--user=root", check=False)
        for process in reversed(self.processes):
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait()
        self.processes.clear()
        self.munged.stop()
        shutil.rmtree(self.root, ignore_errors=True)


@contextlib.contextmanager
def started(nodes: int = 1) -> Iterator[Slurm]:
    """A private Slurm, started, for a fixture: the test skips, saying why, where it cannot be had;
    stopped at the end."""
    try:
        outer = Slurm(nodes=nodes)
    except Unavailable as why:
        pytest.skip(str(why))
    try:
        outer.start()
    except Unavailable as why:
        outer.stop()
        pytest.skip(str(why))
    try:
        yield outer
    finally:
        outer.stop()


def inner_cluster(slurm: Slurm) -> contextlib.AbstractContextManager[LocalCluster]:
    """A Drover cluster serving TLS on loopback, with no node of its own; its commands and its
    controller reach the private Slurm (SLURM_CONF). At the end its allocation queues are
    removed and Slurm is waited for to end their allocations."""
    return allocating_cluster(lambda: not ours(slurm), "the allocations to end in Slurm", timeout=60,
                              env={"SLURM_CONF": str(slurm.conf)}, outer_logs=lambda _: slurm.logs())


def ours(slurm: Slurm) -> dict[str, tuple[str, str]]:
    """Slurm's unfinished jobs that are Drover's allocations: id → (name, state)."""
    return {job: shown for job, shown in slurm.live_jobs().items() if shown[0].startswith("drover-")}


def slurm_nodes(local: LocalCluster) -> list[dict[str, Any]]:
    """The Drover nodes inside Slurm's allocations, as `drover nodes --json` lists them."""
    return [node for node in local.drover_json("nodes") if node["name"].startswith("slurm-")]
