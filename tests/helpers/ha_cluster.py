"""Two controllers on one PostgreSQL database, and one node: the active/standby set-up of
docs/high-availability.md on one machine.

Each controller has a state directory of its own ("a", "b": its socket, its log) and listens on
a loopback port of its own; the second got the first's cluster files (the CA and the
controller's certificate under tls/) by copy, as the second host of a site would. The node's
execd is given both controllers' addresses and a certificate from the cluster's CA; users'
commands get both controllers' sockets (DROVER_SOCKET=A,B). Every process is started in its own
process group and ended by it; `close()` also kills the jobs left in the node's spool and
removes every file made.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from drover.client import Client
from drover.cluster.ca import Authority, cert_pem, signing_request
from drover.cluster.files import TlsFiles
from drover.config import Paths, cluster_tag
from drover.spool import layout
from drover.spool.process import read_pid_record
from tests.helpers.cluster import LocalCluster, log_tails, remove_cluster_cgroups
from tests.helpers.wait import wait_until

NODE = "node1"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class HaCluster:
    def __init__(self, store_url: str, heartbeat_s: float = 1.0, cpus: int = 2, controller_toml: str = "") -> None:
        """`controller_toml`: more of both controllers' drover.toml (whole tables)."""
        self.root = Path(tempfile.mkdtemp(prefix="drha-", dir="/tmp"))  # short: socket paths
        self.store_url = store_url
        self.cpus = cpus
        self.state = {name: self.root / name for name in ("a", "b", "node")}
        for directory in self.state.values():
            directory.mkdir(mode=0o700)
        self.workdir = self.root / "work"
        self.workdir.mkdir()
        self.ports = {"a": free_port(), "b": free_port()}
        self.processes: dict[str, subprocess.Popen[bytes]] = {}
        config = (f'[store]\nurl = "{store_url}"\n[controller]\nheartbeat_s = {heartbeat_s}\n'
                  "node_timeout_s = 60\nkill_grace_s = 1\n" + controller_toml)
        for name in ("a", "b"):
            (self.state[name] / "drover.toml").write_text(config)
        self.env = dict(os.environ, DROVER_SOCKET=f"{self.socket('a')},{self.socket('b')}")
        self.env.pop("DROVER_STATE_DIR", None)
        self._cluster_files()

    # -- set-up -----------------------------------------------------------------------------------

    def _cluster_files(self) -> None:
        """The CA and the controller's certificate made on "a", copied to "b" (as the docs say);
        the node's key and certificate from that CA."""
        subprocess.run([sys.executable, "-m", "drover", "cluster", "init", "--state-dir", str(self.state["a"])],
                       check=True, capture_output=True, env=self.env, timeout=60)
        shutil.copytree(self.state["a"] / "tls", self.state["b"] / "tls")
        cluster = TlsFiles.of(str(self.state["a"]))
        authority = Authority.load(Path(cluster.ca_cert).read_bytes(), Path(cluster.ca_key).read_bytes())
        request, key = signing_request(NODE)
        tls = self.state["node"] / "tls"
        tls.mkdir(mode=0o700)
        (tls / "node.key").write_bytes(key)
        (tls / "node.crt").write_bytes(cert_pem(authority.node_certificate(NODE, request)))
        shutil.copy(cluster.ca_cert, tls / "ca.crt")
        (self.state["node"] / "drover.toml").write_text(
            "[execd]\n" f"controller = {json.dumps([self.url('a'), self.url('b')])}\n"
            f'node_name = "{NODE}"\ntls_cert = "{tls / "node.crt"}"\ntls_key = "{tls / "node.key"}"\n'
            f'tls_ca = "{tls / "ca.crt"}"\n')

    def url(self, name: str) -> str:
        return f"https://127.0.0.1:{self.ports[name]}"

    def socket(self, name: str) -> str:
        return str(self.state[name] / "api.sock")

    @property
    def spool(self) -> Path:
        return self.state["node"] / "spool"

    # -- processes --------------------------------------------------------------------------------

    def _spawn(self, name: str, argv: list[str]) -> subprocess.Popen[bytes]:
        daemon = "execd" if name == "node" else "controller"
        with open(self.state[name] / f"{daemon}.log", "ab") as log:
            process = subprocess.Popen([sys.executable, "-m", "drover", *argv], stdin=subprocess.DEVNULL, stdout=log,
                                       stderr=log, env=self.env, process_group=0)
        self.processes[name] = process
        return process

    def start_controller(self, name: str) -> subprocess.Popen[bytes]:
        return self._spawn(name, ["controller", "--state-dir", str(self.state[name]), "--kill-grace", "1",
                                  "--listen", f"127.0.0.1:{self.ports[name]}"])

    def start_execd(self) -> None:
        self._spawn("node", ["execd", "--state-dir", str(self.state["node"]), "--cpus", str(self.cpus),
                             "--memory", "4096", "--spool", str(self.spool)])

    def kill(self, name: str, signum: int = signal.SIGKILL) -> int:
        """Signal a daemon's process group; its exit status once it is gone."""
        process = self.processes.pop(name)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signum)
        return process.wait(timeout=30)

    def health(self, name: str) -> dict[str, Any]:
        with Client(self.socket(name), timeout_s=5) as client:
            return client.transport.call("GET", "/v1/health")  # type: ignore[no-any-return]

    def wait_role(self, name: str, role: str, timeout: float = 30) -> dict[str, Any]:
        return wait_until(lambda: (found := self.health(name))["role"] == role and found,
                          timeout=timeout, describe=f"controller {name} to be {role}")

    def wait_node_up(self, timeout: float = 30) -> None:
        wait_until(lambda: any(node["name"] == NODE and node["state"] == "up" for node in self.json("nodes")),
                   timeout=timeout, describe="the node to be up")

    def log(self, name: str) -> str:
        path = self.state[name] / ("execd.log" if name == "node" else "controller.log")
        return path.read_text(errors="replace") if path.exists() else ""

    # -- users' commands --------------------------------------------------------------------------

    def drover(self, *args: str, check: bool = True, sockets: str | None = None,
               timeout: float = 60) -> subprocess.CompletedProcess[str]:
        """The `drover` command with both controllers' sockets (or `sockets`)."""
        env = self.env if sockets is None else {**self.env, "DROVER_SOCKET": sockets}
        result = subprocess.run([sys.executable, "-m", "drover", *args], capture_output=True, text=True,
                                env=env, cwd=self.workdir, timeout=timeout)
        if check and result.returncode != 0:
            raise AssertionError(f"drover {' '.join(args)} exited {result.returncode}\n"
                                 f"stdout: {result.stdout}\nstderr: {result.stderr}")
        return result

    def json(self, *args: str) -> Any:
        return json.loads(self.drover(*args, "--json").stdout)

    def submit(self, *args: str) -> int:
        return int(self.drover("submit", "--parsable", *args).stdout.split()[0])

    # -- the node's attempts ----------------------------------------------------------------------

    def shepherds(self) -> dict[str, int]:
        """Each attempt in the node's spool → its shepherd's pid."""
        found = {}
        for name in layout.attempt_names(str(self.spool)):
            record = read_pid_record(layout.SpoolDir(str(self.spool), name).record(layout.PID))
            if record is not None:
                found[name] = record[0]
        return found

    # -- cleaning up --------------------------------------------------------------------------------

    def logs(self) -> str:
        return "\n".join(f"=== {name} ===\n{log_tails(directory)}" for name, directory in self.state.items())

    def close(self) -> None:
        for name in list(self.processes):
            process = self.processes[name]
            if process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGTERM)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    process.wait(timeout=15)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        self.processes.clear()
        leftovers = LocalCluster.__new__(LocalCluster)  # its way of ending a spool's jobs, on this spool
        leftovers.state_dir = self.state["node"]
        leftovers.kill_leftover_jobs()
        remove_cluster_cgroups(cluster_tag(Paths(str(self.state["node"]))))
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> HaCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def until(deadline_s: float, probe: Any) -> float:
    """Seconds until `probe()` is truthy (polled every 20 ms), or an AssertionError after `deadline_s`."""
    start = time.monotonic()
    wait_until(probe, timeout=deadline_s, interval=0.02, describe="the probe")
    return time.monotonic() - start
