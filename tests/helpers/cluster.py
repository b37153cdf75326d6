"""LocalCluster: a real controller and execd started the way users start them, as subprocesses
in their own process groups with logs in the cluster's state directory."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from drover.client import Client
from drover.config import Paths, cluster_tag
from drover.spool import layout
from drover.spool.process import is_alive, read_pid_record
from tests.helpers.cgroups_left import remove_cgroups_of
from tests.helpers.wait import wait_until


def log_tails(state_dir: Path) -> str:
    """The last lines of the daemons' logs in a state directory, for a failed test's report."""
    out = []
    for name in ("controller", "execd"):
        path = state_dir / f"{name}.log"
        if path.exists():
            out.append(f"--- {name}.log ---\n" + "".join(path.read_text(errors="replace").splitlines(True)[-40:]))
    return "\n".join(out)


class LocalCluster:
    def __init__(self, cpus: int = 2, memory_mib: int = 4096, kill_grace_s: float = 1.0,
                 config_toml: str = "", shared: bool = False) -> None:
        # Short path: a Unix socket path must fit in 108 bytes.
        self.root = Path(tempfile.mkdtemp(prefix="drv-", dir="/tmp"))
        self.state_dir = self.root / "state"
        self.state_dir.mkdir()
        self.workdir = self.root / "work"
        self.workdir.mkdir()
        self.shared = shared
        if shared:  # every local user must reach the socket
            os.chmod(self.root, 0o711)
            os.chmod(self.state_dir, 0o711)
        self.cpus = cpus
        self.memory_mib = memory_mib
        self.kill_grace_s = kill_grace_s
        self.controller: subprocess.Popen[bytes] | None = None
        self.execd: subprocess.Popen[bytes] | None = None
        self.env = dict(os.environ, DROVER_STATE_DIR=str(self.state_dir))
        self.env.pop("DROVER_SOCKET", None)
        if config_toml:
            (self.state_dir / "drover.toml").write_text(config_toml)

    @property
    def socket(self) -> str:
        return str(self.state_dir / "api.sock")

    @property
    def spool(self) -> Path:
        return self.state_dir / "spool"

    def _daemon(self, name: str, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        log = open(self.state_dir / f"{name}.log", "ab")
        try:
            return subprocess.Popen(
                [sys.executable, "-m", "drover", name, "--state-dir", str(self.state_dir), *args],
                stdin=subprocess.DEVNULL, stdout=log, stderr=log, env={**self.env, **(env or {})},
                process_group=0,
            )
        finally:
            log.close()

    def start_controller(self, **env: str) -> None:
        """Start the controller; `env` adds environment variables (such as the fault-injection
        seam's, drover/controller/faults.py)."""
        self.controller = self._daemon("controller", "--kill-grace", str(self.kill_grace_s),
                                       *(["--system"] if self.shared else []), env=env)
        wait_until(lambda: self.client().ping(), describe="the controller to answer")

    def start_execd(self, wait_up: bool = True, **env: str) -> None:
        """Start the execd; `env` adds environment variables (such as the fault-injection
        seam's, drover/execd/faults.py). `wait_up`: until its node is UP (a drained one is not)."""
        self.execd = self._daemon("execd", "--cpus", str(self.cpus), "--memory", str(self.memory_mib),
                                  "--spool", str(self.spool), env=env)
        if wait_up:
            self.wait_node_up()

    def wait_node_up(self) -> None:
        wait_until(lambda: any(n.state == "up" for n in self.client().nodes()), describe="a node to be up")

    def start(self) -> LocalCluster:
        self.start_controller()
        self.start_execd()
        return self

    def client(self) -> Client:
        return Client(self.socket, timeout_s=30)

    def drover(self, *args: str, check: bool = True, input: str | None = None,
               cwd: str | Path | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        """Run the `drover` command as a user would."""
        result = subprocess.run(
            [sys.executable, "-m", "drover", *args], capture_output=True, text=True, input=input,
            env=self.env, cwd=cwd or self.workdir, timeout=timeout,
        )
        if check and result.returncode != 0:
            raise AssertionError(
                f"drover {' '.join(args)} exited {result.returncode}\nstdout: {result.stdout}\nstderr: {result.stderr}"
            )
        return result

    def drover_json(self, *args: str) -> Any:
        return json.loads(self.drover(*args, "--json").stdout)

    def submit(self, *args: str, cwd: str | Path | None = None) -> int:
        return int(self.drover("submit", "--parsable", *args, cwd=cwd).stdout.split()[0])

    def kill(self, name: str, signum: int = signal.SIGKILL) -> None:
        process = getattr(self, name)
        if process is not None:
            os.killpg(process.pid, signum)
            process.wait(timeout=20)
            setattr(self, name, None)

    def logs(self) -> str:
        return log_tails(self.state_dir)

    def stop(self) -> list[str]:
        """Stop both daemons; kill every job left running; return what was still alive."""
        problems = []
        for name in ("execd", "controller"):
            process = getattr(self, name)
            if process is None:
                continue
            if process.poll() is not None:
                problems.append(f"the {name} had died (exit {process.returncode})")
            else:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    problems.append(f"the {name} did not stop on SIGTERM")
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            process.wait()
            setattr(self, name, None)
        self.kill_leftover_jobs()
        remove_cluster_cgroups(cluster_tag(Paths(str(self.state_dir))))
        shutil.rmtree(self.root, ignore_errors=True)
        return problems

    def kill_leftover_jobs(self) -> None:
        for name in layout.attempt_names(str(self.spool)):
            spool = layout.SpoolDir(str(self.spool), name)
            record = read_pid_record(spool.record(layout.PID))
            job_pid_text = (Path(spool.path) / layout.JOB_PID)
            if job_pid_text.exists():
                try:
                    os.killpg(int(job_pid_text.read_text().split()[0]), signal.SIGKILL)
                except (ProcessLookupError, ValueError):
                    pass
            if record is not None and is_alive(*record):
                try:
                    os.kill(record[0], signal.SIGKILL)
                except ProcessLookupError:
                    pass
            # What the node does for a shepherd it lost: every process of the attempt's cgroups
            # killed (a cgroup the shepherd froze to kill it and died before thawing included),
            # then the cgroups removed.
            from drover.execd.lost_shepherd import end_attempt

            end_attempt(spool)


def remove_cluster_cgroups(tag: str) -> None:
    """The cluster's parent cgroups (drover-TAG in each hierarchy), once its attempts' are gone:
    a test leaves no cgroup behind. Only empty ones are removed (rmdir refuses the others)."""
    remove_cgroups_of(tag)


def serve(request: Any, local: LocalCluster, start: Callable[[LocalCluster], None] | None = None
          ) -> Iterator[LocalCluster]:
    """A fixture's body: start `local` (as `start` says, else both daemons), yield it, stop it
    and fail on what was left alive; its daemons' logs printed when the set-up or the test failed."""
    try:
        (start or LocalCluster.start)(local)
    except BaseException:
        print(local.logs())
        local.stop()
        raise
    yield local
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.failed:
        print(local.logs())
    problems = local.stop()
    assert not problems, "; ".join(problems)
