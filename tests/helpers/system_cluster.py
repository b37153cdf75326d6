"""A shared cluster started the way docs/shared-machine.md says, by root with the installed command
(`drover up --system`), its state in a temporary directory so it never meets a real
/var/lib/drover or another test run's; and the installed commands run as real users on it."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import psutil

from drover.client import Client
from drover.config import Paths, cluster_tag
from drover.spool import layout
from drover.spool.process import is_alive, read_pid_record
from tests.helpers.cluster import log_tails
from tests.helpers.system_install import SystemInstall
from tests.helpers.users import LOGIN_PATH, run_as_user
from tests.helpers.wait import wait_until


class SystemCluster:
    def __init__(self, install: SystemInstall, config_toml: str = "", cpus: int = 2,
                 kill_grace_s: float = 1.0) -> None:
        self.install = install
        # Short: a Unix socket path must fit in 108 bytes. 0711: users reach the socket only.
        self.root = Path(tempfile.mkdtemp(prefix="drs-", dir="/tmp"))
        os.chmod(self.root, 0o711)
        self.state_dir = self.root / "state"
        self.state_dir.mkdir(mode=0o711)
        if config_toml:
            (self.state_dir / "drover.toml").write_text(config_toml)
        self.cpus = cpus
        self.kill_grace_s = kill_grace_s
        self.daemons: list[psutil.Process] = []  # what `up` started: the only processes `stop` kills

    @property
    def socket(self) -> str:
        return str(self.state_dir / "api.sock")

    @property
    def user_path(self) -> str:
        """A login's PATH with the install's bin directory (as /usr/local/bin would be) first."""
        return f"{self.install.bindir}:{LOGIN_PATH}"

    # -- running commands -----------------------------------------------------------------------

    def run_as(self, user: str, *argv: str, input: str | None = None, cwd: str | os.PathLike[str] | None = None,
               env: Mapping[str, str | None] | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        """Run an installed command (`drover` by default resolution: the install's bin directory
        comes first on PATH) as `user`, a fresh process with that user's uid, gid and groups, and
        a clean environment whose DROVER_SOCKET names this cluster. `cwd` defaults to the home."""
        return run_as_user(user, argv, env={"PATH": self.user_path, "DROVER_SOCKET": self.socket, **(env or {})},
                           input=input, cwd=cwd, timeout=timeout)

    def as_root(self, *argv: str, check: bool = True, timeout: float = 60, prefix: Sequence[str] = (),
                env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        """Run the installed `drover` as root, with a clean environment (plus `env`), as an admin
        would; `prefix`: what runs it (`unshare ...`)."""
        env = {"HOME": "/root", "USER": "root", "LOGNAME": "root", "PATH": self.user_path, "LANG": "C.UTF-8",
               "DROVER_SOCKET": self.socket, **(env or {})}
        result = subprocess.run([*prefix, self.install.drover, *argv], env=env, capture_output=True, text=True,
                                timeout=timeout, cwd="/", stdin=subprocess.DEVNULL)
        if check and result.returncode != 0:
            raise AssertionError(f"drover {' '.join(argv)} (as root) exited {result.returncode}\n"
                                 f"stdout: {result.stdout}\nstderr: {result.stderr}")
        return result

    def submit_as(self, user: str, *args: str, cwd: str | os.PathLike[str] | None = None) -> int:
        """`drover submit --parsable ARGS` as `user`; the job's id."""
        result = self.run_as(user, "drover", "submit", "--parsable", *args, cwd=cwd)
        assert result.returncode == 0, f"submit as {user} exited {result.returncode}: {result.stderr}"
        return int(result.stdout.split()[0])

    def job(self, job_id: int) -> dict[str, Any]:
        """The job as root sees it (`drover show --json`)."""
        shown = json.loads(self.as_root("show", "--json", str(job_id)).stdout)
        return shown[0] if isinstance(shown, list) else shown  # type: ignore[no-any-return]

    def wait_ended(self, job_id: int, timeout: float = 60) -> dict[str, Any]:
        self.as_root("wait", "--quiet", "--timeout", str(timeout), str(job_id), check=False, timeout=timeout + 30)
        return self.job(job_id)

    # -- life -----------------------------------------------------------------------------------

    def start(self, prefix: Sequence[str] = (), env: Mapping[str, str] | None = None) -> SystemCluster:
        """`drover up --system --state-dir DIR`, as root, with the installed command (see as_root
        for `prefix` and `env`)."""
        result = self.as_root("up", "--system", "--state-dir", str(self.state_dir), "--cpus", str(self.cpus),
                              "--kill-grace", str(self.kill_grace_s), check=False, prefix=prefix, env=env)
        # A shared cluster's controller keeps its pid file in its own directory (controller/).
        for pid_file in ("controller/controller.pid", "controller.pid", "execd.pid"):
            with contextlib.suppress(FileNotFoundError, ValueError, psutil.NoSuchProcess):
                self.daemons.append(psutil.Process(int((self.state_dir / pid_file).read_text().split()[0])))
        if result.returncode != 0:
            raise AssertionError(f"drover up --system exited {result.returncode}: {result.stderr}\n{self.logs()}")
        return self

    def spool(self) -> Path:
        """Where the execd keeps its attempts (it says so in its log)."""
        log = (self.state_dir / "execd.log").read_text(errors="replace") if (self.state_dir / "execd.log").exists() else ""
        found = re.search(r", spool (\S+), ", log)
        return Path(found.group(1)) if found else Path("/dev/shm/drover-0") / cluster_tag(Paths(str(self.state_dir)))

    def logs(self) -> str:
        return log_tails(self.state_dir)

    def stop(self) -> list[str]:
        """Cancel what still runs, `drover down`, then kill only what this cluster started and
        left (its daemons, its attempts' shepherds and jobs); remove its state, spool and cgroups.
        Returns what went wrong on the way."""
        problems = []
        spool = self.spool()
        self._cancel_everything()
        if any(daemon.is_running() for daemon in self.daemons):
            down = self.as_root("down", "--state-dir", str(self.state_dir), check=False, timeout=60)
            if down.returncode != 0:
                problems.append(f"drover down exited {down.returncode}: {down.stderr}")
        for daemon in self.daemons:
            with contextlib.suppress(psutil.NoSuchProcess):
                # A daemon that exited may stay a zombie until its new parent (init) reaps it.
                if daemon.is_running() and daemon.status() != psutil.STATUS_ZOMBIE:
                    problems.append(f"pid {daemon.pid} ({' '.join(daemon.cmdline()[2:4])}) outlived drover down")
                    daemon.kill()
        _kill_attempts(spool)
        _remove_cgroups(cluster_tag(Paths(str(self.state_dir))))
        shutil.rmtree(spool, ignore_errors=True)
        shutil.rmtree(self.root, ignore_errors=True)
        return problems

    def _cancel_everything(self) -> None:
        """Running jobs outlive `drover down`; cancelled ones end cleanly (their cgroups removed)."""
        try:
            with Client(self.socket, timeout_s=10) as root:
                live = [str(job.id) for job in root.jobs()]
                if live:
                    root.cancel(live)
                    wait_until(lambda: not root.jobs(), timeout=self.kill_grace_s + 20,
                               describe="every job to end after cancel")
        except Exception:  # a dead controller, a job that would not end: the kills below handle it
            pass


def _kill_attempts(spool: Path) -> None:
    """SIGKILL the jobs and shepherds of the attempts still in the spool (each checked by its
    recorded start time, so a reused pid is left alone)."""
    if not spool.is_dir():
        return
    for name in layout.attempt_names(str(spool)):
        attempt = layout.SpoolDir(str(spool), name)
        job_pid = Path(attempt.path) / layout.JOB_PID
        with contextlib.suppress(OSError, ValueError):
            os.killpg(int(job_pid.read_text().split()[0]), signal.SIGKILL)
        record = read_pid_record(attempt.record(layout.PID))
        if record is not None and is_alive(*record):
            with contextlib.suppress(ProcessLookupError):
                os.kill(record[0], signal.SIGKILL)


def _remove_cgroups(tag: str) -> None:
    """rmdir the cluster's cgroups (drover-<tag>/<attempt> beneath this process's own cgroup in
    each hierarchy) that a killed shepherd could not remove; their processes are killed first."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return
    for line in lines:
        _, controllers, path = line.split(":", 2)
        names = [c.removeprefix("name=") for c in controllers.split(",") if c] or [""]
        for mount in (Path("/sys/fs/cgroup") / names[0], Path("/sys/fs/cgroup/unified"), Path("/sys/fs/cgroup")):
            top = mount / path.lstrip("/") / f"drover-{tag}"
            if not top.is_dir():
                continue
            for attempt in [p for p in top.iterdir() if p.is_dir()] + [top]:
                with contextlib.suppress(OSError, ValueError):
                    for pid in (attempt / "cgroup.procs").read_text().split():
                        os.kill(int(pid), signal.SIGKILL)
                with contextlib.suppress(OSError, AssertionError):
                    wait_until(lambda a=attempt: not (a / "cgroup.procs").read_text().split(), timeout=5,  # type: ignore[misc]
                               describe=f"{attempt} to empty")
                with contextlib.suppress(OSError):
                    attempt.rmdir()
            break
