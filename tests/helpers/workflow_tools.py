"""Workflow tools (submitit, dask-jobqueue, parsl, snakemake…) installed from PyPI, each into its
own virtual environment, and run as their users run them against a cluster's Slurm and Grid
Engine front ends.

Each tool gets a virtual environment under the repository's `.venv-workflows/`, named by the tool
and keyed on its pinned versions and on the Python version, so its dependencies never clash with
Drover's and a second run reuses the first one's install. The install needs the package index once;
the tests themselves run offline. Where it cannot be installed, the caller skips, saying why."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from tests.helpers.cluster import LocalCluster

REPOSITORY = Path(__file__).resolve().parents[2]
CACHE = Path(os.environ.get("DROVER_WORKFLOW_TOOLS", REPOSITORY / ".venv-workflows"))
DRIVERS = REPOSITORY / "tests" / "integration" / "workflows" / "drivers"

# The versions the tests are written against. A new release can change what the tool sends; a
# bump of a pin is a deliberate change, made with the invocations it brings checked again.
PINS: dict[str, tuple[str, ...]] = {
    "submitit": ("submitit==1.5.4",),
    "dask-jobqueue": ("dask-jobqueue==0.9.0", "dask==2026.8.0", "distributed==2026.8.0"),
    "parsl": ("parsl==2026.10.26",),
    "psij-python": ("psij-python==0.9.11",),
    # The last release with the `htcondor` module (25.x has htcondor2 alone): its JobEventLog.
    "htcondor": ("htcondor==24.0.24",),
    "snakemake": ("snakemake==9.27.1", "snakemake-executor-plugin-slurm==2.8.0",
                  "snakemake-executor-plugin-slurm-jobstep==0.6.1",
                  "snakemake-executor-plugin-cluster-generic==1.0.9"),
}
INSTALL_TIMEOUT_S = 900


class ToolUnavailable(Exception):
    """The tool could not be installed here (no package index, no venv module…)."""


@dataclass(frozen=True)
class ToolEnv:
    """A tool's virtual environment, ready to run its drivers."""

    name: str
    prefix: Path
    install_seconds: float  # 0 when an earlier run's install was reused

    @property
    def bin(self) -> Path:
        return self.prefix / "bin"

    @property
    def python(self) -> Path:
        return self.bin / "python"

    def environment(self, cluster: LocalCluster, front_ends: Path) -> dict[str, str]:
        """The cluster's environment with the front ends first on PATH, then the tool's own
        commands (parsl starts `interchange.py`, snakemake itself), as a user's shell has them."""
        env = {key: value for key, value in cluster.env.items()
               if key not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
        env["PATH"] = os.pathsep.join([str(front_ends), str(self.bin), os.environ.get("PATH", "/usr/bin:/bin")])
        env["PYTHONUNBUFFERED"] = "1"
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        return env

    def start(self, argv: list[str], cluster: LocalCluster, front_ends: Path,
              cwd: Path | None = None) -> ToolRun:
        """Start `argv` (a driver or one of the tool's commands) in its own process group, its
        output collected in a file so that a long run never blocks on a full pipe."""
        log = (cwd or cluster.workdir) / f"{self.name}-{time.monotonic_ns()}.log"
        semaphores = _semaphores()
        with open(log, "w") as out:
            process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                       text=True, env=self.environment(cluster, front_ends),
                                       cwd=cwd or cluster.workdir, process_group=0)
        return ToolRun(process, log, semaphores)

    def driver(self, script: str, *args: str) -> list[str]:
        """The argv that runs a driver script of tests/integration/workflows/drivers."""
        return [str(self.python), str(DRIVERS / script), *args]


@dataclass(frozen=True)
class ToolRun:
    """A started tool: its process (leader of its own process group) and its output file."""

    process: subprocess.Popen[str]
    log: Path
    semaphores_before: frozenset[str]  # multiprocessing's named semaphores in /dev/shm at the start
    # A tool run as another user: its semaphores are that uid's, whatever else appears meanwhile.
    semaphores_of: int | None = None

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def finish(self, timeout: float) -> tuple[int | None, str]:
        """Wait for the tool to end by itself. On timeout, interrupt it as a user would and
        return None for its status: a tool that never ends is the failure being reported."""
        try:
            status = self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.stop()
            return None, self.output() + f"\n[still running after {timeout}s: interrupted]"
        self.stop()  # whatever the tool left behind in its process group
        return status, self.output()

    def interrupt(self, timeout: float = 60, whole_group: bool = True) -> tuple[int | None, str]:
        """Press Ctrl-C: SIGINT to the tool's process group, as a terminal sends it (or, with
        `whole_group=False`, to the tool's main process only, as `kill -INT PID` does); wait for
        the tool to clean up. Returns (exit status, or None if it had to be killed; output)."""
        if whole_group:
            os.killpg(self.process.pid, signal.SIGINT)
        else:
            self.process.send_signal(signal.SIGINT)
        try:
            status = self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.stop()
            return None, self.output() + f"\n[did not stop within {timeout}s of SIGINT: killed]"
        self.stop()
        return status, self.output()

    def stop(self) -> None:
        """End the tool and everything left in its process group, whatever state it is in."""
        if self.process.poll() is None:
            for signum, grace in ((signal.SIGINT, 20.0), (signal.SIGKILL, 10.0)):
                try:
                    os.killpg(self.process.pid, signum)
                except ProcessLookupError:
                    break
                try:
                    self.process.wait(timeout=grace)
                    break
                except subprocess.TimeoutExpired:
                    continue
        try:  # helpers the tool left in its group (dask nannies, parsl's interchange)
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        # The named semaphores of the tool's multiprocessing: its resource tracker, killed with
        # the group, can no longer unlink them.
        for name in _semaphores() - self.semaphores_before:
            with contextlib.suppress(FileNotFoundError):
                path = os.path.join("/dev/shm", name)
                if self.semaphores_of is None or os.stat(path).st_uid == self.semaphores_of:
                    os.unlink(path)

    def wait_for_line(self, prefix: str, timeout: float = 120) -> str:
        """Wait until the tool prints a line starting with `prefix`; return the rest of it."""
        return self.wait_for(rf"^{re.escape(prefix)}(.*)$", timeout).group(1).strip()

    def wait_for(self, pattern: str, timeout: float = 120) -> re.Match[str]:
        """Wait until the tool's output matches `pattern` (a multi-line regex); return the match."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = re.search(pattern, self.output(), re.MULTILINE)
            if found:
                return found
            if self.process.poll() is not None:
                raise AssertionError(f"the tool exited ({self.process.returncode}) before printing "
                                     f"{pattern!r}:\n" + self.output()[-4000:])
            time.sleep(0.2)
        raise AssertionError(f"the tool did not print {pattern!r} within {timeout}s:\n" + self.output()[-4000:])


def install(name: str) -> ToolEnv:
    """The tool's virtual environment, created on first use. Raises ToolUnavailable, with pip's
    own words, where it cannot be installed."""
    pins = PINS[name]
    key = hashlib.sha256("\n".join((sys.version, *pins)).encode()).hexdigest()[:12]
    prefix = CACHE / f"{name}-{key}"
    done = prefix / ".installed"
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / f".{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two test runs installing the same tool take turns
        if done.exists():
            return ToolEnv(name, prefix, 0.0)
        started = time.monotonic()
        shutil.rmtree(prefix, ignore_errors=True)  # what an interrupted install left
        made = subprocess.run([sys.executable, "-m", "venv", str(prefix)], capture_output=True, text=True)
        if made.returncode != 0:
            raise ToolUnavailable(f"python -m venv failed: {made.stderr.strip()[-500:]}")
        try:
            pip = subprocess.run([str(prefix / "bin" / "python"), "-m", "pip", "install", "--quiet",
                                  "--disable-pip-version-check", *pins],
                                 capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise ToolUnavailable(f"pip install {' '.join(pins)} took over {INSTALL_TIMEOUT_S}s") from None
        if pip.returncode != 0:
            raise ToolUnavailable(f"pip install {' '.join(pins)} failed: {pip.stderr.strip()[-800:]}")
        done.write_text("\n".join(pins) + "\n")
        return ToolEnv(name, prefix, time.monotonic() - started)


def _semaphores() -> frozenset[str]:
    try:
        return frozenset(name for name in os.listdir("/dev/shm") if name.startswith("sem.mp-"))
    except FileNotFoundError:
        return frozenset()
