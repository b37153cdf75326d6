"""Many hosts on one machine: each "host" is a network namespace this helper makes, with its own
state directory and, for a node, its own name. The controller's host ("ctl") is joined to each
node's host by a veth pair on a private /24 (10.213.K.0/24: the controller .1, the node .2);
the controller listens on 10.213.0.1, which every node reaches through its own link.

The controller runs inside "ctl" with no execd of its own (`drover controller --listen` on its
veth address), so a job can only run on a node that joined; each node joins with `drover join`
run inside its namespace. Every command that reaches a namespace's address runs inside a
namespace (`ip netns exec`), never from the machine's own.

`close()` removes everything made: it kills every process left in the namespaces (they were
made for the test, so whatever is in them is the test's), then the jobs' processes by the
nodes' spools, deletes the namespaces (which takes their veth links with them) and the files.
It runs on failure too (the class is a context manager).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from drover.config import SERVICE_USER, Paths, cluster_tag
from drover.spool import layout
from tests.helpers.cluster import log_tails
from tests.helpers.system_cluster import _remove_cgroups
from tests.helpers.wait import wait_until

PORT = 7443


def why_not_available() -> str | None:
    """Why network namespaces cannot be made here, or None."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    if shutil.which("ip") is None:
        return "the `ip` command (iproute2) is missing"
    probe = f"drvprobe{uuid.uuid4().hex[:6]}"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if made.returncode != 0:
        return f"cannot make a network namespace: {made.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None


# MUNGE is the test's to choose, never the machine's: a command on these hosts signs with no
# munged unless the test names its own (tests/helpers/munge.py), though a system munged runs at
# /run/munge/munge.socket.2 (the node's joins: Hosts.join; the controller's: start_controller).
NO_MUNGE = {"DROVER_MUNGE_SOCKET": ""}


def _with_munge_socket(config_toml: str, absent: Path) -> str:
    """The controller's drover.toml, its munged `absent` (a path where none runs) unless the
    test named one: a system munged must not vouch for users the test did not prove."""
    if "munge_socket" in config_toml:
        return config_toml
    line = f'munge_socket = "{absent}"\n'
    if "[controller]\n" in config_toml:
        return config_toml.replace("[controller]\n", "[controller]\n" + line, 1)
    return "[controller]\n" + line + config_toml


@dataclass
class Host:
    """One namespace: its name there, its address, and its state directory."""

    namespace: str
    address: str
    state_dir: Path
    env: dict[str, str] = field(default_factory=dict)
    interpreter: str = sys.executable  # what runs `drover` here

    def command(self, *argv: str) -> list[str]:
        return ["ip", "netns", "exec", self.namespace, *argv]

    def run(self, *argv: str, check: bool = True, timeout: float = 60, cwd: Path | None = None,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        """A command inside this host's namespace."""
        result = subprocess.run(self.command(*argv), capture_output=True, text=True, timeout=timeout,
                                env={**os.environ, **self.env, **(env or {})}, cwd=cwd or self.state_dir.parent,
                                stdin=subprocess.DEVNULL)
        if check and result.returncode != 0:
            raise AssertionError(f"{' '.join(argv)} in {self.namespace} exited {result.returncode}\n"
                                 f"stdout: {result.stdout}\nstderr: {result.stderr}")
        return result

    def drover(self, *args: str, check: bool = True, timeout: float = 60,
               cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        """The `drover` command, as a user of this host runs it."""
        return self.run(self.interpreter, "-m", "drover", *args, check=check, timeout=timeout, cwd=cwd)

    def python(self, code: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
        return self.run(self.interpreter, "-c", code, check=False, timeout=timeout)


class Hosts:
    """The controller's host and node hosts, made on demand; a context manager."""

    def __init__(self, python: str = sys.executable) -> None:
        """`python`: what runs `drover` on every host (the daemons included); an installed
        Drover's (SystemInstall.python) where jobs' owners must be able to run it too."""
        self.python = python
        self.tag = uuid.uuid4().hex[:6]
        self.root = Path(tempfile.mkdtemp(prefix="drn-", dir="/tmp"))
        self.namespaces: list[str] = []
        self.nodes: dict[str, Host] = {}
        self.controller_process: subprocess.Popen[bytes] | None = None
        self.service_user = False  # the controller runs as the service user (start_controller)
        self.ctl = self._namespace("ctl", "", self.root / "ctl", python)
        self.ctl.env = {**NO_MUNGE, "DROVER_STATE_DIR": str(self.ctl.state_dir)}

    def __enter__(self) -> Hosts:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- making hosts -------------------------------------------------------------------------

    def _ip(self, *argv: str) -> None:
        result = subprocess.run(["ip", *argv], capture_output=True, text=True)
        if result.returncode != 0:
            raise RuntimeError(f"ip {' '.join(argv)}: {result.stderr.strip()}")

    def _namespace(self, role: str, address: str, state_dir: Path, python: str) -> Host:
        name = f"drv{self.tag}-{role}"
        self._ip("netns", "add", name)
        self.namespaces.append(name)
        self._ip("-n", name, "link", "set", "lo", "up")
        state_dir.mkdir(mode=0o700)
        return Host(name, address, state_dir, env=dict(NO_MUNGE), interpreter=python)

    def add_node(self, name: str) -> Host:
        """A node's host, linked to the controller's by a veth pair of its own."""
        k = len(self.nodes)
        subnet = f"10.213.{k}"
        host = self._namespace(name, f"{subnet}.2", self.root / name, self.python)
        ctl_end, node_end = f"drv{self.tag}c{k}", f"drv{self.tag}n{k}"
        self._ip("link", "add", ctl_end, "type", "veth", "peer", "name", node_end)
        self._ip("link", "set", ctl_end, "netns", self.ctl.namespace)
        self._ip("link", "set", node_end, "netns", host.namespace)
        self._ip("-n", self.ctl.namespace, "addr", "add", f"{subnet}.1/24", "dev", ctl_end)
        self._ip("-n", host.namespace, "addr", "add", f"{subnet}.2/24", "dev", node_end)
        self._ip("-n", self.ctl.namespace, "link", "set", ctl_end, "up")
        self._ip("-n", host.namespace, "link", "set", node_end, "up")
        # The controller listens on the first link's address; every node reaches it through its
        # own link (the controller's host answers for any address of its own on any link).
        self._ip("-n", host.namespace, "route", "add", "default", "via", f"{subnet}.1")
        if not self.ctl.address:
            self.ctl.address = f"{subnet}.1"
        self.nodes[name] = host
        return host

    def _link(self, node: str) -> str:
        """The controller's end of `node`'s veth pair."""
        return f"drv{self.tag}c{list(self.nodes).index(node)}"

    def cut(self, node: str) -> None:
        """Cut the link between the controller and `node` without a word: no FIN, no RST, the
        packets just stop (as a switch that died)."""
        self._ip("-n", self.ctl.namespace, "link", "set", self._link(node), "down")

    def restore(self, node: str) -> None:
        self._ip("-n", self.ctl.namespace, "link", "set", self._link(node), "up")

    def kill_host(self, node: str) -> None:
        """Every process of `node`'s host, kill -9: its execd, its shepherds and their jobs."""
        _kill_everything_in(self.nodes[node].namespace)

    # -- the controller -------------------------------------------------------------------------

    @property
    def url(self) -> str:
        return f"https://{self.ctl.address}:{PORT}"

    def start_controller(self, config_toml: str = "", service_user: bool = False) -> None:
        """`drover cluster init`, then the controller alone (no execd) inside "ctl", listening
        on its veth address. `service_user`: as a shared cluster's controller runs, as the
        service user (`drover cluster init --system` first); give the hosts an installed
        Drover's python, which that user can run."""
        assert self.ctl.address, "add a node first: the controller listens on its link's address"
        (self.ctl.state_dir / "drover.toml").write_text(_with_munge_socket(config_toml, self.root / "no-munged"))
        self.service_user = service_user
        self.ctl.drover("cluster", "init", *(["--system"] if service_user else []), "--state-dir",
                        str(self.ctl.state_dir), "--host", self.ctl.address)
        self._spawn_controller()
        wait_until(lambda: f"serving TLS on ('{self.ctl.address}', {PORT})" in self.controller_log(),
                   describe="the controller to serve TLS", timeout=30)

    def _spawn_controller(self) -> None:
        log = open(self.ctl.state_dir / "controller.log", "ab")
        try:
            as_service_user = ["setpriv", f"--reuid={SERVICE_USER}", f"--regid={SERVICE_USER}", "--clear-groups",
                               "--"] if self.service_user else []
            self.controller_process = subprocess.Popen(
                self.ctl.command(*as_service_user, self.python, "-m", "drover", "controller",
                                 *(["--system"] if self.service_user else []), "--state-dir", str(self.ctl.state_dir),
                                 "--kill-grace", "1", "--listen", f"{self.ctl.address}:{PORT}"),
                stdin=subprocess.DEVNULL, stdout=log, stderr=log, env={**os.environ, **self.ctl.env},
                process_group=0)
        finally:
            log.close()

    def kill_controller(self) -> None:
        """kill -9 the controller (its process group: `ip netns exec` and the daemon)."""
        assert self.controller_process is not None
        os.killpg(self.controller_process.pid, signal.SIGKILL)
        self.controller_process.wait()

    def restart_controller(self) -> None:
        """The controller again, on the same state directory and address."""
        served = self.controller_log().count("serving TLS on")
        self._spawn_controller()
        wait_until(lambda: self.controller_log().count("serving TLS on") > served,
                   describe="the controller to serve TLS again", timeout=30)

    def controller_log(self) -> str:
        path = self.ctl.state_dir / "controller.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def token(self, *args: str) -> str:
        return self.ctl.drover("token", "create", *args).stdout.strip()

    def join(self, node: str, token: str, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """`drover join`: with the munged `args` name (`--munge-socket`, a test's own), else
        with none (`--no-munge`), whatever munged this machine runs."""
        host = self.nodes[node]
        munge = [] if "--munge-socket" in args or "--no-munge" in args else ["--no-munge"]
        return host.drover("join", self.url, "--token", token, "--name", node, "--state-dir", str(host.state_dir),
                           "--cpus", "2", *munge, *args, check=check)

    def configure_node(self, node: str, more_config: str) -> None:
        """Add tables to a joined node's own drover.toml (its root's: the queues, parallel
        environments and methods it runs) and restart its execd to read them; returns once the
        controller welcomed it again."""
        host = self.nodes[node]
        config = host.state_dir / "drover.toml"
        config.write_text(config.read_text() + "\n" + more_config)
        pid = int((host.state_dir / "execd.pid").read_text().split()[0])  # the execd `drover join` started
        os.kill(pid, signal.SIGTERM)
        wait_until(lambda: not Path(f"/proc/{pid}").exists() or "zombie" in _proc_state(pid),
                   describe=f"{node}'s execd to stop", timeout=30)
        log_path = host.state_dir / "execd.log"
        welcomed = log_path.read_text(errors="replace").count(f"joined the cluster as node {node}")
        with open(log_path, "ab") as log:
            subprocess.Popen(host.command(host.interpreter, "-m", "drover", "execd", "--state-dir", str(host.state_dir)),
                             stdin=subprocess.DEVNULL, stdout=log, stderr=log, env={**os.environ, **host.env},
                             process_group=0)  # killed with everything in its namespace at close
        wait_until(lambda: log_path.read_text(errors="replace").count(f"joined the cluster as node {node}") > welcomed,
                   describe=f"{node}'s execd back", timeout=30)

    # -- cleaning up ------------------------------------------------------------------------------

    def logs(self) -> str:
        out = [log_tails(self.ctl.state_dir)]
        for name, host in self.nodes.items():
            out.append(f"=== {name} ===\n" + log_tails(host.state_dir))
        return "\n".join(out)

    def close(self) -> None:
        if self.controller_process is not None and self.controller_process.poll() is None:
            self.controller_process.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.controller_process.wait(timeout=15)
        for namespace in self.namespaces:
            _kill_everything_in(namespace)
        if self.controller_process is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.controller_process.pid, signal.SIGKILL)
            self.controller_process.wait()
        for host in (self.ctl, *self.nodes.values()):  # the controller's host has an execd after `up`
            for spool in _spools(host.state_dir):
                _kill_attempts(spool)
                shutil.rmtree(spool, ignore_errors=True)
            _remove_cgroups(cluster_tag(Paths(str(host.state_dir))))
        for namespace in self.namespaces:
            subprocess.run(["ip", "netns", "del", namespace], capture_output=True)
        shutil.rmtree(self.root, ignore_errors=True)


def _kill_everything_in(namespace: str) -> None:
    """Every process of a namespace this helper made: the daemons, and the jobs' (a job runs in
    its node's namespace)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        listed = subprocess.run(["ip", "netns", "pids", namespace], capture_output=True, text=True)
        pids = [int(pid) for pid in listed.stdout.split()]
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.05)


def _spools(state_dir: Path) -> list[Path]:
    """The spool of a node's execd, as it says in its log."""
    import re

    log = state_dir / "execd.log"
    text = log.read_text(errors="replace") if log.exists() else ""
    return sorted({Path(found) for found in re.findall(r", spool (\S+), ", text)})


def _kill_attempts(spool: Path) -> None:
    for name in layout.attempt_names(str(spool)):
        job_pid = Path(layout.SpoolDir(str(spool), name).path) / layout.JOB_PID
        with contextlib.suppress(FileNotFoundError, ValueError, ProcessLookupError):
            os.killpg(int(job_pid.read_text().split()[0]), signal.SIGKILL)


def _proc_state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/status").read_text().split("State:", 1)[1].split("\n", 1)[0].lower()
    except (OSError, IndexError):
        return "gone"
