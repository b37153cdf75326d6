"""B8: one controller serving many nodes over the real node protocol and TLS, on loopback.

A real controller (`drover cluster init`, then `drover controller --listen 127.0.0.1:PORT`),
with `heartbeat_s` and `node_timeout_s` set in its drover.toml; simulated nodes, many per
process (bench/simulated_nodes.py), each joined with a join token and connected over TLS with
its own certificate; jobs submitted in one bulk request on the controller's local socket. No
job runs: a node reports each attempt started, then exited after 0-50 ms.

Measured, each repetition on a controller of its own:
- idle: the controller's CPU (utime + stime of /proc/PID/stat) per heartbeat, every node
  heart-beating and no job;
- throughput: JOBS one-CPU jobs, first submission to the last one recorded completed (the
  controller acknowledged its final report), and the steady rate (the middle 80 % of them); the
  controller's CPU per job;
- node loss: one node holding running jobs falls silent (no heartbeat, its socket frozen but
  not closed); the time until its jobs were started again elsewhere, and completed, against the
  bound its settings give (3 x heartbeat_s to be DOWN, then node_timeout_s, each noticed within
  one check of the controller's).

    .venv/bin/python bench/cluster.py                        # 200 nodes, 10,000 jobs, 3 repetitions
    .venv/bin/python bench/cluster.py --nodes 10 --jobs 200 --repeat 1
    .venv/bin/python bench/cluster.py --profile DIR          # the controller under cProfile
    .venv/bin/python bench/cluster.py --py-spy DIR           # py-spy's samples while the jobs run

`bench/run.py B8` runs it with the others. Everything it starts (the controller, the node
processes) and makes (a directory under /tmp: state, sockets, certificates) is removed at the end.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

HERE = Path(__file__).parent
SIMULATOR = HERE / "simulated_nodes.py"
TICK = os.sysconf("SC_CLK_TCK")


def summary(samples: list[float]) -> dict[str, Any]:
    return {"median": statistics.median(samples), "min": min(samples), "max": max(samples), "samples": samples}


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process, all its threads, in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def peak_rss_mib(pid: int) -> float:
    """The process's peak resident memory so far (VmHWM), in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def node_cpus(index: int) -> int:
    """2 to 8 CPUs, spread evenly over the nodes (5 on average)."""
    return 2 + (index * 3) % 7


class Controller:
    """`drover cluster init` and `drover controller --listen 127.0.0.1:PORT` in a state
    directory of its own; stopped, and its directory removed, by `close`."""

    def __init__(self, root: Path, heartbeat_s: float, node_timeout_s: float, profile: Path | None,
                 nodes: int) -> None:
        self.root = root
        self.state = root / "ctl"
        self.state.mkdir(mode=0o700)
        # Every simulated node connects from 127.0.0.1, as nodes behind one NAT would: the limit of
        # connections from one address (128 by default) must fit them all, and their joins.
        (self.state / "drover.toml").write_text(
            f"[controller]\nheartbeat_s = {heartbeat_s}\nnode_timeout_s = {node_timeout_s}\n"
            f"[controller.connections]\nmax_connections_per_peer = {max(128, 2 * nodes + 64)}\n")
        self.env = dict(os.environ, DROVER_STATE_DIR=str(self.state))
        self.env.pop("DROVER_SOCKET", None)
        self.socket = str(self.state / "api.sock")
        self.port = free_port()
        self.url = f"https://127.0.0.1:{self.port}"
        self.drover("cluster", "init", "--state-dir", str(self.state), "--host", "127.0.0.1")
        command = [sys.executable, "-m", "drover", "controller", "--state-dir", str(self.state),
                   "--listen", f"127.0.0.1:{self.port}", "--kill-grace", "1"]
        if profile is not None:
            command[1:1] = ["-m", "cProfile", "-o", str(profile)]
        with open(self.state / "controller.log", "ab") as log:
            self.process = subprocess.Popen(command, env=self.env, stdin=subprocess.DEVNULL, stdout=log,
                                            stderr=log, process_group=0)
        deadline = time.monotonic() + 30
        while f"serving TLS on ('127.0.0.1', {self.port})" not in self.log():
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.close()
                raise RuntimeError(f"the controller did not start:\n{self.log()[-3000:]}")
            time.sleep(0.05)

    def drover(self, *args: str) -> str:
        done = subprocess.run([sys.executable, "-m", "drover", *args], env=self.env, capture_output=True,
                              text=True, stdin=subprocess.DEVNULL, cwd=self.root)
        if done.returncode != 0:
            raise RuntimeError(f"drover {' '.join(args)} exited {done.returncode}: {done.stderr.strip()}")
        return done.stdout

    def log(self) -> str:
        path = self.state / "controller.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def cpu_s(self) -> float:
        return cpu_seconds(self.process.pid)

    def client(self) -> Any:
        from drover.client import Client

        return Client(self.socket, timeout_s=600)

    def close(self) -> None:
        """SIGTERM (it shuts down gracefully), then SIGKILL to its process group if it lingers."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                pass
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()


class NodeProcess:
    """One process of simulated nodes, driven one JSON line each way."""

    def __init__(self, controller: Controller, token: str, names: dict[str, int], workdir: Path, seed: int) -> None:
        self.names = names
        command = [sys.executable, str(SIMULATOR), controller.url, "--token", token, "--workdir", str(workdir),
                   "--seed", str(seed), *(f"--name={name}:{cpus}" for name, cpus in names.items())]
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                        process_group=0)
        self.pipe_in: IO[str] = self.process.stdin  # type: ignore[assignment]
        self.pipe_out: IO[str] = self.process.stdout  # type: ignore[assignment]

    def ready(self) -> dict[str, Any]:
        line = self.pipe_out.readline()
        if not line:
            raise RuntimeError(f"a node process ended before its nodes were connected (exit {self.process.wait()})")
        return dict(json.loads(line))

    def ask(self, cmd: str, **fields: Any) -> dict[str, Any]:
        self.pipe_in.write(json.dumps({"cmd": cmd, **fields}) + "\n")
        self.pipe_in.flush()
        line = self.pipe_out.readline()
        if not line:
            raise RuntimeError(f"a node process ended (exit {self.process.wait()})")
        return dict(json.loads(line))

    def close(self) -> None:
        if self.process.poll() is None:
            with contextlib.suppress(OSError):
                self.pipe_in.write(json.dumps({"cmd": "quit"}) + "\n")
                self.pipe_in.close()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()
        with contextlib.suppress(OSError):
            self.pipe_out.close()


class Nodes:
    def __init__(self, processes: list[NodeProcess]) -> None:
        self.processes = processes

    def of(self, node: str) -> NodeProcess:
        return next(p for p in self.processes if node in p.names)

    def count(self) -> dict[str, float]:
        total: dict[str, float] = {}
        for process in self.processes:
            for key, value in process.ask("count").items():
                total[key] = total.get(key, 0) + value
        return total

    def events(self) -> list[tuple[str, str, float]]:
        return [(kind, name, at) for process in self.processes for kind, name, at in process.ask("events")["events"]]


@contextlib.contextmanager
def cluster(nodes: int, per_process: int, heartbeat_s: float, node_timeout_s: float,
            profile: Path | None = None) -> Iterator[tuple[Controller, Nodes, dict[str, Any]]]:
    root = Path(tempfile.mkdtemp(prefix="drvc-", dir="/tmp"))
    controller: Controller | None = None
    processes: list[NodeProcess] = []
    facts: dict[str, Any] = {}
    try:
        controller = Controller(root, heartbeat_s, node_timeout_s, profile, nodes)
        token = controller.drover("token", "create", "--uses", str(nodes)).strip()
        names = {f"sim-{i:03d}": node_cpus(i) for i in range(nodes)}
        order = list(names)
        began = time.monotonic()
        for first in range(0, nodes, per_process):
            chunk = {name: names[name] for name in order[first:first + per_process]}
            processes.append(NodeProcess(controller, token, chunk, root / "nodes", seed=first))
        for process in processes:
            process.ready()
        facts["nodes joined and connected (s)"] = time.monotonic() - began
        facts["CPUs"] = sum(names.values())
        with controller.client() as client:
            deadline = time.monotonic() + 30
            while sum(node.state == "up" for node in client.nodes()) < nodes:
                if time.monotonic() > deadline:
                    raise RuntimeError("not every node is UP on the controller")
                time.sleep(0.1)
        yield controller, Nodes(processes), facts
    except BaseException:
        if controller is not None:
            print("B8: the controller's log ends:\n" + "\n".join(controller.log().splitlines()[-30:]), file=sys.stderr)
        raise
    finally:
        for process in processes:
            process.close()
        if controller is not None:
            controller.close()
        shutil.rmtree(root, ignore_errors=True)


def idle(controller: Controller, nodes: Nodes, seconds: float) -> dict[str, float]:
    """The controller's CPU per heartbeat, every node heart-beating and no job."""
    time.sleep(1)
    beats, cpu = nodes.count()["heartbeats"], controller.cpu_s()
    time.sleep(seconds)
    beats, cpu = nodes.count()["heartbeats"] - beats, controller.cpu_s() - cpu
    return {"heartbeats/s": beats / seconds, "CPU per heartbeat (ms)": cpu / beats * 1000,
            "controller CPU (ms/s)": cpu / seconds * 1000}


@contextlib.contextmanager
def sampled(pid: int, out: Path | None) -> Iterator[None]:
    """py-spy's samples of the process while the block runs (collapsed stacks, to `out`)."""
    if out is None:
        yield
        return
    spy = subprocess.Popen([shutil.which("py-spy") or "py-spy", "record", "--pid", str(pid), "--rate", "200",
                            "--format", "raw", "--output", str(out), "--nonblocking"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(1)  # attached
        yield
    finally:
        spy.send_signal(signal.SIGINT)
        try:
            spy.wait(timeout=30)
        except subprocess.TimeoutExpired:
            spy.kill()
            spy.wait()


def throughput(controller: Controller, nodes: Nodes, jobs: int, per_beat_s: float,
               spy: Path | None = None) -> dict[str, float]:
    """JOBS one-CPU jobs in one request: first submission to the last recorded completed."""
    workdir = str(controller.root)
    batch = [{"script": "true\n", "workdir": workdir, "output": "/dev/null", "cpus": 1, "name": "b8"}
             for _ in range(jobs)]
    nodes.events()
    start = nodes.count()
    with controller.client() as client:
        with sampled(controller.process.pid, spy):
            cpu = controller.cpu_s()
            began = time.monotonic()
            ids = client.submit(batch)
            submitted = time.monotonic()
            deadline = submitted + max(600, jobs / 5)
            while (now := nodes.count())["acked"] - start["acked"] < jobs:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"only {now['acked'] - start['acked']:.0f} of {jobs} jobs ended in time")
                time.sleep(0.1)
            cpu = controller.cpu_s() - cpu
            finished = time.monotonic()
        events = nodes.events()
        end = nodes.count()
        ours = set(ids)
        completed = sum(job.state == "completed" for job in client.jobs(include_ended=True, limit=jobs)
                        if job.id in ours)
    if completed != jobs:
        raise RuntimeError(f"{completed} of {jobs} jobs completed")
    acks = sorted(at for kind, _, at in events if kind == "ack")
    starts = sorted(at for kind, _, at in events if kind == "start")
    elapsed = acks[-1] - began
    ten, ninety = acks[len(acks) // 10], acks[len(acks) * 9 // 10]
    beats = end["heartbeats"] - start["heartbeats"]
    return {
        "jobs/s": jobs / elapsed, "steady jobs/s": (len(acks) * 9 // 10 - len(acks) // 10) / (ninety - ten),
        "elapsed (s)": elapsed, "submission (s)": submitted - began, "first start (s)": starts[0] - began,
        "controller CPU per job (ms)": cpu / jobs * 1000,
        "controller CPU per job, heartbeats aside (ms)": (cpu - beats * per_beat_s) / jobs * 1000,
        "controller CPU busy (%)": cpu / (finished - began) * 100,
        "node processes' CPU per job (ms)": (end["cpu_s"] - start["cpu_s"]) / jobs * 1000,
    }


def node_loss(controller: Controller, nodes: Nodes, heartbeat_s: float, node_timeout_s: float) -> dict[str, float]:
    """A node holding running jobs goes silent: how long until they ran again elsewhere."""
    # A batch of as many jobs as the cluster has CPUs fills every node in the first pass (each
    # task goes to the least loaded node that fits, until none has room): the victim, one of
    # the largest nodes, gets as many as it has CPUs, and holds them; the others end theirs.
    order = sorted((name, cpus) for process in nodes.processes for name, cpus in process.names.items())
    most = max(cpus for _, cpus in order)
    victim = next(name for name, cpus in order if cpus == most)
    its = nodes.of(victim)
    others = sum(cpus for _, cpus in order) - most
    workdir = str(controller.root)
    its.ask("hold", node=victim)
    nodes.events()
    acked = nodes.count()["acked"]
    with controller.client() as client:
        client.submit([{"script": "true\n", "workdir": workdir, "output": "/dev/null", "cpus": 1,
                        "name": "b8-loss"} for _ in range(most + others)])
        deadline = time.monotonic() + 60
        while len(its.ask("held", node=victim)["held"]) < most or nodes.count()["acked"] - acked < others:
            if time.monotonic() > deadline:
                raise RuntimeError("the node to lose did not take its jobs")
            time.sleep(0.05)
        held = {int(name.split(".")[0]) for name in its.ask("held", node=victim)["held"]}
        frozen = its.ask("freeze", node=victim)
        restarted: dict[int, float] = {}
        completed: dict[int, float] = {}
        deadline = time.monotonic() + 3 * heartbeat_s + node_timeout_s + 60
        while len(completed) < len(held):
            if time.monotonic() > deadline:
                raise RuntimeError(f"{len(held) - len(completed)} jobs of the lost node did not end elsewhere")
            time.sleep(0.05)
            for kind, name, at in nodes.events():
                job = int(name.split(".")[0])
                if job in held and int(name.split(".")[2]) > 1:
                    (restarted if kind == "start" else completed).setdefault(job, at)
        infos = [client.job(job) for job in held]
        # On the controller's clock: when it took the node for DOWN (its channel closed), and
        # when it gave up its attempts (their end).
        down_at = next(node.last_seen for node in client.nodes() if node.name == victim)
    if {info.state for info in infos} != {"completed"}:
        raise RuntimeError(f"the lost node's jobs ended {sorted({info.state for info in infos})}")
    lost_at = max(info.tasks[0].attempts[0].ended_at or 0 for info in infos)
    check_s = min(max(node_timeout_s / 4, 0.2), heartbeat_s, 30)  # the controller's watch period
    return {
        "jobs on the lost node": len(held),
        "silent -> DOWN (s)": down_at - frozen["frozen_wall"],
        "silent -> jobs requeued (s)": lost_at - frozen["frozen_wall"],
        "silent -> started elsewhere (s)": max(restarted.values()) - frozen["frozen_at"],
        "silent -> completed elsewhere (s)": max(completed.values()) - frozen["frozen_at"],
        "bound (s)": 3 * heartbeat_s + node_timeout_s + 2 * check_s,
    }


def run(repeat: int = 3, quick: bool = False, nodes: int | None = None, per_process: int | None = None,
        jobs: int | None = None, idle_s: float | None = None, heartbeat_s: float = 1.0,
        node_timeout_s: float = 5.0, profile: Path | None = None, py_spy: Path | None = None) -> dict[str, Any]:
    nodes = nodes or (20 if quick else 200)
    per_process = per_process or (10 if quick else 50)
    jobs = jobs or (1000 if quick else 10_000)
    idle_s = idle_s or (5 if quick else 15)
    samples: dict[str, list[float]] = {}
    setup: dict[str, Any] = {}
    for n in range(repeat):
        print(f"B8: repetition {n + 1} of {repeat}: {nodes} nodes, {jobs} jobs", file=sys.stderr, flush=True)
        with cluster(nodes, per_process, heartbeat_s, node_timeout_s,
                     profile / f"controller-{n + 1}.prof" if profile else None) as (controller, simulated, facts):
            quiet = idle(controller, simulated, idle_s)
            busy = throughput(controller, simulated, jobs, quiet["CPU per heartbeat (ms)"] / 1000,
                              py_spy / f"controller-{n + 1}.txt" if py_spy else None)
            lost = node_loss(controller, simulated, heartbeat_s, node_timeout_s)
            lost["controller peak RSS (MiB)"] = peak_rss_mib(controller.process.pid)
        setup = {key: value for key, value in facts.items() if not isinstance(value, float)}
        for key, value in {**{k: v for k, v in facts.items() if isinstance(v, float)}, **quiet, **busy,
                           **lost}.items():
            samples.setdefault(key, []).append(float(value))
    return {"nodes": nodes, "node processes": -(-nodes // per_process), "jobs": jobs, "heartbeat_s": heartbeat_s,
            "node_timeout_s": node_timeout_s, **setup, **{key: summary(values) for key, values in samples.items()}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="20 nodes, 1,000 jobs")
    parser.add_argument("--nodes", type=int)
    parser.add_argument("--per-process", type=int, help="simulated nodes in one process (default 50)")
    parser.add_argument("--jobs", type=int)
    parser.add_argument("--idle", type=float, help="seconds of idle heart-beating measured (default 15)")
    parser.add_argument("--heartbeat", type=float, default=1.0, help="[controller] heartbeat_s (default 1)")
    parser.add_argument("--node-timeout", type=float, default=5.0, help="[controller] node_timeout_s (default 5)")
    parser.add_argument("--profile", type=Path, metavar="DIR", help="run the controller under cProfile, "
                        "its profile written to DIR/controller-N.prof")
    parser.add_argument("--py-spy", type=Path, metavar="DIR", help="sample the controller with py-spy (if "
                        "installed) while the jobs run, collapsed stacks to DIR/controller-N.txt")
    parser.add_argument("--json-out", metavar="FILE", help="also write the figures there, as JSON")
    args = parser.parse_args()
    for directory in ("profile", "py_spy"):
        if getattr(args, directory):
            getattr(args, directory).mkdir(parents=True, exist_ok=True)
            setattr(args, directory, getattr(args, directory).resolve())
    if args.py_spy and not shutil.which("py-spy"):
        parser.error("--py-spy: py-spy is not installed (pip install py-spy)")
    results = run(args.repeat, args.quick, args.nodes, args.per_process, args.jobs, args.idle, args.heartbeat,
                  args.node_timeout, args.profile, args.py_spy)
    for key, value in results.items():
        if isinstance(value, dict):
            spread = f" [{value['min']:.4g}-{value['max']:.4g}]" if len(value["samples"]) > 1 else ""
            print(f"  {key:<46} {value['median']:.4g}{spread}")
        else:
            print(f"  {key:<46} {value}")
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
