"""Drover's benchmarks, side by side with what a user would otherwise run on one box.

Every figure is measured in this run, on this machine, next to its references: GNU parallel
(`parallel -j2`), task-spooler (`tsp -S 2`), HyperQueue (a server and one worker of 2 CPUs,
bench/hq_reference.py) and `xargs -P2 -n1` (the machine's process-creation limit). Median and
min-max over the repetitions. See bench/README.md for what each one means.

    .venv/bin/python bench/run.py                 # everything, 3 repetitions
    .venv/bin/python bench/run.py B1 B3 --repeat 5
    .venv/bin/python bench/run.py --quick         # smaller B1, B2, B4, B7 and B8
    .venv/bin/python bench/run.py B10 --repeat 1  # the planner alone, no cluster
    .venv/bin/python bench/run.py B1 B2 --postgres  # also with the store on a private PostgreSQL
    .venv/bin/python bench/run.py B1 --array-only # B1's array alone (its controller CPU per job)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from hq_reference import hyperqueue  # bench/hq_reference.py

BIN = Path(sys.executable).parent
DROVER = str(BIN / "drover")
RESULTS = Path(__file__).parent / "results"
# --postgres: a private PostgreSQL server (durable: the server's defaults) for the clusters whose
# store is on it, beside those on SQLite in the same run.
POSTGRES: list[Any] = []
# --no-promises: every cluster's drover.toml sets `[scheduler] promises = false` (they are on by default).
SETTINGS: list[str] = []


# -- helpers ---------------------------------------------------------------------------------


def summary(samples: list[float]) -> dict[str, Any]:
    return {"median": statistics.median(samples), "min": min(samples), "max": max(samples), "samples": samples}


def shown(figure: dict[str, Any] | None, unit: str) -> str:
    if figure is None:
        return "missing"
    spread = f" [{figure['min']:.4g}-{figure['max']:.4g}]" if len(figure["samples"]) > 1 else ""
    return f"{figure['median']:.4g} {unit}{spread}"


def timed(action: Callable[[], object]) -> float:
    began = time.perf_counter()
    action()
    return time.perf_counter() - began


def need(tool: str, package: str) -> str | None:
    """The tool's path, installing its Debian package if it is missing; None if impossible."""
    if shutil.which(tool):
        return shutil.which(tool)
    if os.geteuid() == 0 and shutil.which("apt-get"):
        subprocess.run(["apt-get", "install", "-y", "-qq", package], capture_output=True)
        if not shutil.which(tool):
            subprocess.run(["apt-get", "update", "-qq"], capture_output=True)
            subprocess.run(["apt-get", "install", "-y", "-qq", package], capture_output=True)
    found = shutil.which(tool)
    if found is None:
        print(f"missing: {tool} (install the Debian package {package})", file=sys.stderr)
    return found


class Cluster:
    """A personal cluster with 2 slots and a state directory of its own."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.env = dict(os.environ, DROVER_STATE_DIR=str(root / "state"))
        self.env.pop("DROVER_SOCKET", None)
        self.work = root / "work"
        self.work.mkdir()
        self.socket = str(root / "state" / "api.sock")

    def drover(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run([DROVER, *args], env=self.env, capture_output=True, text=True, check=check,
                              cwd=self.work)

    def client(self) -> Any:
        from drover.client import Client

        return Client(self.socket, timeout_s=600)

    def job(self, script: str, **fields: Any) -> dict[str, Any]:
        return {"script": script, "workdir": str(self.work), "output": "/dev/null", **fields}

    def controller_pid(self) -> int:
        return int((self.root / "state" / "controller.pid").read_text().split()[0])


@contextmanager
def cluster(store: str = "sqlite") -> Iterator[Cluster]:
    """`store`: "sqlite" (the default store), or "postgresql": a database of its own on the
    run's private server (--postgres)."""
    root = Path(tempfile.mkdtemp(prefix="drvb-", dir="/tmp"))
    made = Cluster(root)
    settings = list(SETTINGS)
    if store == "postgresql":
        server = POSTGRES[0]
        settings.append(f'[store]\nurl = "{server.url(server.create_database())}"\n')
    if settings:
        (root / "state").mkdir()
        (root / "state" / "drover.toml").write_text("".join(settings))
    try:
        made.drover("up", "--cpus", "2")
        yield made
    finally:
        made.drover("down", check=False)
        remove_spool(root / "state")
        shutil.rmtree(root, ignore_errors=True)


def remove_spool(state_dir: Path) -> None:
    """The cluster's spool (on tmpfs, outside its state directory: `drover down` keeps it for
    the jobs that go on running); every benchmark's jobs have ended by then."""
    from drover.config import Paths, default_spool

    shutil.rmtree(default_spool(Paths(str(state_dir))), ignore_errors=True)


@contextmanager
def task_spooler(slots: int = 2) -> Iterator[dict[str, str] | None]:
    """A private task-spooler server (its own socket), stopped afterwards."""
    if need("tsp", "task-spooler") is None:
        yield None
        return
    root = tempfile.mkdtemp(prefix="tsb-", dir="/tmp")
    env = dict(os.environ, TS_SOCKET=f"{root}/ts.sock", TMPDIR=root)
    subprocess.run(["tsp", "-S", str(slots)], env=env, check=True, capture_output=True)
    try:
        yield env
    finally:
        subprocess.run(["tsp", "-K"], env=env, capture_output=True)
        shutil.rmtree(root, ignore_errors=True)


def tsp_run_all(env: dict[str, str], commands: list[list[str]]) -> None:
    """One `tsp` process per job, as users submit (each job's output kept in a file, tsp's
    default); then wait until the last two (2 slots) end."""
    ids = [subprocess.run(["tsp", *command], env=env, capture_output=True, text=True, check=True).stdout.strip()
           for command in commands]
    for job in ids[-2:]:
        subprocess.run(["tsp", "-w", job], env=env, capture_output=True, check=True)


def parallel_run(lines: list[str]) -> None:
    subprocess.run(["parallel", "-j2"], input="\n".join(lines) + "\n", text=True, check=True, capture_output=True)


# -- the benchmarks --------------------------------------------------------------------------


# What `drover submit -- /bin/true` stores: the command line, which the shepherd execs without
# bash (task-spooler and xargs exec it too); a script holding `/bin/true` costs bash's start more.
TRUE_COMMAND = "exec /bin/true\n"


def b1(repeat: int, quick: bool, array_only: bool = False) -> dict[str, Any]:
    """Throughput: N x /bin/true on 2 slots, first submission to last recorded finished.
    `array_only`: the array alone, without the single submissions and the references."""
    n = 300 if quick else 1000
    stores = ["sqlite", *(["postgresql"] if POSTGRES else [])]
    array: dict[str, list[float]] = {store: [] for store in stores}
    singles: dict[str, list[float]] = {store: [] for store in stores}
    controller_ms: dict[str, list[float]] = {store: [] for store in stores}
    # Each side's daemons' CPU per job (ms), in parts and in all, of the array and of the singles
    # (on SQLite): Drover's controller, execd, and shepherds with their jobs; HyperQueue's server,
    # worker and tasks.
    daemons_ms: dict[str, list[float]] = {}
    for _ in range(repeat):
        for store in stores:  # side by side in each repetition: the machine's noise is shared
            with cluster(store) as c, c.client() as client:
                controller = c.controller_pid()
                daemons = drover_daemons(c)
                cpu = cpu_seconds(controller)
                before = drover_cpu(daemons)
                began = time.perf_counter()
                (job,) = client.submit([c.job(TRUE_COMMAND, array=f"1-{n}")])
                client.wait(job)
                array[store].append(n / (time.perf_counter() - began))
                controller_ms[store].append((cpu_seconds(controller) - cpu) / n * 1000)
                if store == "sqlite":
                    add_cpu_per_job(daemons_ms, "drover array", before, drover_cpu(daemons, settle=True), n)
                if array_only:
                    continue
                before = drover_cpu(daemons)
                began = time.perf_counter()
                ids = [client.submit([c.job(TRUE_COMMAND)])[0] for _ in range(n)]
                for job in ids:
                    client.wait(job)
                singles[store].append(n / (time.perf_counter() - began))
                if store == "sqlite":
                    add_cpu_per_job(daemons_ms, "drover singles", before, drover_cpu(daemons, settle=True), n)
    if array_only:
        return {"jobs": n, **{f"drover array{'' if store == 'sqlite' else ', PostgreSQL store'}": summary(array[store])
                              for store in stores},
                **{f"drover array{'' if store == 'sqlite' else ', PostgreSQL store'}: controller CPU per job (ms)":
                   summary(controller_ms[store]) for store in stores},
                **{name: summary(samples) for name, samples in daemons_ms.items()}}
    refs: dict[str, list[float]] = {"parallel -j2": [], "tsp -S 2": [], "HyperQueue array": [],
                                    "HyperQueue singles (client)": [], "xargs -P2": []}
    for _ in range(repeat):
        if need("parallel", "parallel"):
            refs["parallel -j2"].append(n / timed(lambda: parallel_run(["/bin/true"] * n)))
        with task_spooler() as env:
            if env is not None:
                refs["tsp -S 2"].append(n / timed(lambda: tsp_run_all(env, [["/bin/true"]] * n)))
        with hyperqueue() as hq:
            if hq is not None:
                for name, one_job in (("array", True), ("singles", False)):
                    before = hq.cpu()
                    seconds = hq.run([["/bin/true"]] * n, one_job=one_job)
                    refs[f"HyperQueue {name}{'' if one_job else ' (client)'}"].append(n / seconds)
                    add_cpu_per_job(daemons_ms, f"HyperQueue {name}", before, hq.cpu(), n)
        refs["xargs -P2"].append(n / timed(lambda: subprocess.run(
            ["xargs", "-P2", "-n1", "/bin/true"], input="x\n" * n, text=True, check=True)))
    on_postgres = {
        "drover array, PostgreSQL store": summary(array["postgresql"]),
        "drover array, PostgreSQL store: controller CPU per job (ms)": summary(controller_ms["postgresql"]),
        "drover singles (client), PostgreSQL store": summary(singles["postgresql"]),
    } if POSTGRES else {}
    return {"jobs": n, "drover array": summary(array["sqlite"]),
            "drover array: controller CPU per job (ms)": summary(controller_ms["sqlite"]),
            "drover singles (client)": summary(singles["sqlite"]), **on_postgres,
            **{name: summary(v) if v else None for name, v in refs.items()},
            **{name: summary(samples) for name, samples in daemons_ms.items()}}


def drover_daemons(c: Cluster) -> dict[str, int]:
    """The cluster's daemons: the controller, the execd, and the execd's fork server (the parent
    of every shepherd, which reaps them: their CPU, and their jobs', shows in its cutime/cstime)."""
    execd = int((c.root / "state" / "execd.pid").read_text().split()[0])
    children = [int(pid) for tid in os.listdir(f"/proc/{execd}/task")
                for pid in Path(f"/proc/{execd}/task/{tid}/children").read_text().split()]
    (fork_server,) = [pid for pid in children
                      if b"drover.execd.forkserver" in Path(f"/proc/{pid}/cmdline").read_bytes()]
    return {"controller": c.controller_pid(), "execd": execd, "shepherds and jobs": fork_server}


def drover_cpu(daemons: dict[str, int], settle: bool = False) -> dict[str, float]:
    """Each daemon's CPU seconds so far, with its waited-for children's. `settle`: first wait
    (up to 5 s) until the fork server has reaped every shepherd: a job is recorded finished
    once its shepherd reported its exit, a moment before the shepherd itself exits."""
    fork_server = daemons["shepherds and jobs"]
    deadline = time.monotonic() + 5
    while settle and time.monotonic() < deadline and any(not _warm(pid) for pid in _children(fork_server)):
        time.sleep(0.01)
    spent = {name: cpu_seconds(pid, children=True) for name, pid in daemons.items()}
    # Shepherds serve attempt after attempt (execd/warm_shepherds.py): the CPU of those still
    # alive, and of the jobs they reaped, is not yet in the fork server's cutime and cstime.
    for pid in _children(fork_server):
        try:
            spent["shepherds and jobs"] += cpu_seconds(pid, children=True)
        except (FileNotFoundError, ProcessLookupError):
            pass  # reaped meanwhile: in the fork server's cstime now, after it was read
    return spent


def _children(pid: int) -> list[int]:
    return [int(child) for tid in os.listdir(f"/proc/{pid}/task")
            for child in Path(f"/proc/{pid}/task/{tid}/children").read_text().split()]


def _warm(pid: int) -> bool:
    """Whether the fork server's child `pid` is a warm shepherd waiting for an order (execd/
    warm_shepherds.py), forked ahead or back from an attempt: nothing open but stdin, stdout,
    stderr and its socket to the server. One running an attempt holds its signal pipe and more."""
    try:
        return len(os.listdir(f"/proc/{pid}/fd")) <= 4
    except FileNotFoundError:
        return True  # gone meanwhile


def add_cpu_per_job(into: dict[str, list[float]], what: str, before: dict[str, float], after: dict[str, float],
                    jobs: int) -> None:
    """Append each part's CPU per job (ms) between `before` and `after`, and all parts together,
    to `into["<what> CPU per job (ms): all daemons"]` and `into["<what> CPU per job (ms): <part>"]`."""
    parts = {part: (after[part] - before[part]) / jobs * 1000 for part in before}
    into.setdefault(f"{what} CPU per job (ms): all daemons", []).append(sum(parts.values()))
    for part, ms in parts.items():
        into.setdefault(f"{what} CPU per job (ms): {part}", []).append(ms)


def b2(repeat: int, quick: bool) -> dict[str, Any]:
    """Submission: CLI one by one, one bulk call, one 100,000-task array (held: nothing runs);
    with --postgres, also on a PostgreSQL store, side by side in each repetition."""
    n = 200 if quick else 1000
    stores = ["sqlite", *(["postgresql"] if POSTGRES else [])]
    one_by_one: dict[str, list[float]] = {store: [] for store in stores}
    bulk: dict[str, list[float]] = {store: [] for store in stores}
    big_array: dict[str, list[float]] = {store: [] for store in stores}
    tsp_rate: list[float] = []
    for _ in range(repeat):
        for store in stores:
            with cluster(store) as c:
                began = time.perf_counter()
                ids = [c.drover("submit", "--parsable", "--hold", "--", "true").stdout.strip() for _ in range(n)]
                one_by_one[store].append(n / (time.perf_counter() - began))
                c.drover("cancel", "-q", *ids)
                lines = c.work / "lines"
                lines.write_text("true\n" * n)
                seconds = timed(lambda lines=lines, c=c: c.drover("submit", "--parsable", "--hold", "--each-line", str(lines)))
                bulk[store].append(n / seconds)
                big_array[store].append(timed(lambda c=c: c.drover("submit", "--parsable", "--hold", "--array", "1-100000",
                                                                   "--", "true")))
        with task_spooler(slots=1) as env:
            if env is not None:
                began = time.perf_counter()
                for _ in range(n):
                    subprocess.run(["tsp", "true"], env=env, capture_output=True)
                tsp_rate.append(n / (time.perf_counter() - began))
    on_postgres = {
        "drover CLI one by one (/s), PostgreSQL store": summary(one_by_one["postgresql"]),
        "drover one bulk call (/s), PostgreSQL store": summary(bulk["postgresql"]),
        "drover 100,000-task array (s), PostgreSQL store": summary(big_array["postgresql"]),
    } if POSTGRES else {}
    return {"submissions": n, "drover CLI one by one (/s)": summary(one_by_one["sqlite"]),
            "drover one bulk call (/s)": summary(bulk["sqlite"]), "drover 100,000-task array (s)": summary(big_array["sqlite"]),
            **on_postgres, "tsp one by one (/s)": summary(tsp_rate) if tsp_rate else None}


def b3(repeat: int, quick: bool) -> dict[str, Any]:
    """Latency: one `true` job on an idle cluster, 50 times."""
    client_ms, cli_ms = [], []
    with cluster() as c, c.client() as client:
        for _ in range(50):
            began = time.perf_counter()
            (job,) = client.submit([c.job("true\n")])
            client.wait(job)
            client_ms.append((time.perf_counter() - began) * 1000)
        for _ in range(50):
            began = time.perf_counter()
            job = c.drover("submit", "--parsable", "--output", "/dev/null", "--", "true").stdout.strip()
            c.drover("wait", "-q", job)
            cli_ms.append((time.perf_counter() - began) * 1000)
    tsp_ms, parallel_ms = [], []
    with task_spooler() as env:
        if env is not None:
            for _ in range(50):
                began = time.perf_counter()
                job = subprocess.run(["tsp", "true"], env=env, capture_output=True, text=True).stdout.strip()
                subprocess.run(["tsp", "-w", job], env=env, capture_output=True, check=True)
                tsp_ms.append((time.perf_counter() - began) * 1000)
    if need("parallel", "parallel"):
        for _ in range(20):
            parallel_ms.append(timed(lambda: subprocess.run(["parallel", ":::", "true"], capture_output=True)) * 1000)

    def p95(samples: list[float]) -> float:
        return sorted(samples)[int(len(samples) * 0.95) - 1]

    return {"drover client submit->finished (ms)": {**summary(client_ms), "p95": p95(client_ms)},
            "drover CLI submit->wait returns (ms)": {**summary(cli_ms), "p95": p95(cli_ms)},
            "tsp true; tsp -w (ms)": {**summary(tsp_ms), "p95": p95(tsp_ms)} if tsp_ms else None,
            "parallel ::: true (ms)": summary(parallel_ms) if parallel_ms else None}


def b4(repeat: int, quick: bool) -> dict[str, Any]:
    """Efficiency: N x sleep 0.5 on 2 slots; percent over the ideal N x 0.5 / 2 seconds."""
    n = 40 if quick else 200
    ideal = n * 0.5 / 2
    drover, parallel, tsp, hq_over = [], [], [], []
    for _ in range(repeat):
        with cluster() as c, c.client() as client:
            began = time.perf_counter()
            (job,) = client.submit([c.job("sleep 0.5\n", array=f"1-{n}")])
            client.wait(job)
            drover.append(((time.perf_counter() - began) / ideal - 1) * 100)
        if need("parallel", "parallel"):
            parallel.append((timed(lambda: parallel_run(["sleep 0.5"] * n)) / ideal - 1) * 100)
        with task_spooler() as env:
            if env is not None:
                tsp.append((timed(lambda: tsp_run_all(env, [["sleep", "0.5"]] * n)) / ideal - 1) * 100)
        with hyperqueue() as hq:
            if hq is not None:
                hq_over.append((hq.run([["sleep", "0.5"]] * n, one_job=True) / ideal - 1) * 100)
    return {"jobs": n, "ideal (s)": ideal, "drover (% over ideal)": summary(drover),
            "parallel -j2 (% over ideal)": summary(parallel) if parallel else None,
            "tsp -S 2 (% over ideal)": summary(tsp) if tsp else None,
            "HyperQueue (% over ideal)": summary(hq_over) if hq_over else None}


def b5(repeat: int, quick: bool) -> dict[str, Any]:
    """A long history and sampling: 1,000,000 ended jobs against a fresh cluster; CPU with 100 running."""
    import history_load  # bench/history_load.py

    return history_load.run(repeat, quick)


def b6(repeat: int, quick: bool) -> dict[str, Any]:
    """Start-up: cold start of client commands against `python3 -c pass` in the same venv."""
    def cold(command: list[str], env: dict[str, str] | None = None) -> dict[str, Any]:
        samples = []
        for _ in range(20):
            samples.append(timed(lambda: subprocess.run(command, env=env, capture_output=True)) * 1000)
        return summary(samples)

    with cluster() as c:
        figures = {
            "python3 -c pass (ms)": cold([sys.executable, "-c", "pass"]),
            "drover --help (ms)": cold([DROVER, "--help"]),
            "drover submit (ms)": cold([DROVER, "submit", "--parsable", "--hold", "--", "true"], c.env),
            "drover status (ms)": cold([DROVER, "status"], c.env),
        }
    return figures


def b7(repeat: int, quick: bool) -> dict[str, Any]:
    """Reads never stall writes: `drover submit` latency while 2,000 listings arrive at once."""
    ended, count = (1000, 500) if quick else (3000, 2000)
    calm: dict[str, list[float]] = {"p50": [], "p99": [], "turnaround p50": []}
    busy: dict[str, list[float]] = {"p50": [], "p99": [], "turnaround p50": []}
    ratios: dict[str, list[float]] = {"p50": [], "p99": []}
    listings: dict[str, list[float]] = {"burst (s)": [], "p50 (s)": [], "p99 (s)": [], "failed": []}
    rss_mib = []
    with cluster() as c, c.client() as client:
        ids = client.submit([c.job("true\n") for _ in range(ended)])
        for job in ids:
            client.wait(job)
        controller = c.controller_pid()
        for _ in range(repeat):
            quiet = submit_latencies(c, lambda submitted: submitted >= 100)
            burst = subprocess.Popen([sys.executable, str(Path(__file__).with_name("listing_burst.py")), c.socket,
                                      "--count", str(count)], stdout=subprocess.PIPE, text=True)
            loaded = submit_latencies(c, lambda submitted, burst=burst: burst.poll() is not None and submitted >= 20)
            figures = json.loads(burst.communicate()[0])
            rss_mib.append(peak_rss_mib(controller))
            for into, sample in ((calm, quiet), (busy, loaded)):
                into["p50"].append(percentile(sample[0], 50))
                into["p99"].append(percentile(sample[0], 99))
                into["turnaround p50"].append(percentile(sample[1], 50))
            ratios["p50"].append(busy["p50"][-1] / calm["p50"][-1])
            ratios["p99"].append(busy["p99"][-1] / calm["p99"][-1])
            listings["burst (s)"].append(figures["burst_s"])
            listings["p50 (s)"].append(figures["listing_p50_s"] or float("nan"))
            listings["p99 (s)"].append(figures["listing_p99_s"] or float("nan"))
            listings["failed"].append(figures["failed"])
            if figures["failures"]:
                print(f"B7: listings failed: {figures['failures']}", file=sys.stderr)
    return {"ended jobs": ended, "listings in the burst": count,
            "submit p50 idle (ms)": summary(calm["p50"]), "submit p99 idle (ms)": summary(calm["p99"]),
            "submit p50 burst (ms)": summary(busy["p50"]), "submit p99 burst (ms)": summary(busy["p99"]),
            "submit p50 burst/idle": summary(ratios["p50"]), "submit p99 burst/idle": summary(ratios["p99"]),
            "job turnaround p50 idle (ms)": summary(calm["turnaround p50"]),
            "job turnaround p50 burst (ms)": summary(busy["turnaround p50"]),
            **{f"listing {name}": summary(values) for name, values in listings.items()},
            "controller peak RSS (MiB)": summary(rss_mib)}


def submit_latencies(c: Cluster, done: Callable[[int], bool]) -> tuple[list[float], list[float]]:
    """Submit one `true` job every 20 ms until `done(submitted)`, each on schedule whether or not
    the previous ones were answered (up to 64 at once), so that a stalled controller shows in
    every submission it holds up. Returns each submission's latency from when it was due (ms),
    then, once the jobs ended, each one's turnaround on the controller's clock (submitted to
    ended, through its node's reports; ms)."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    local = threading.local()

    def submit(due: float) -> tuple[float, int]:
        if not hasattr(local, "client"):
            local.client = c.client()
        (job,) = local.client.submit([c.job("true\n")])
        return (time.perf_counter() - due) * 1000, job

    with ThreadPoolExecutor(max_workers=64) as pool:
        futures = []
        due = time.perf_counter()
        while not done(len(futures)):
            futures.append(pool.submit(submit, due))
            due += 0.02
            time.sleep(max(due - time.perf_counter(), 0))
        answered = [future.result() for future in futures]
    turnaround = []
    with c.client() as client:
        for _, job in answered:
            info = client.wait(job)
            turnaround.append((info.ended_at - info.submitted_at) * 1000)
    return [latency for latency, _ in answered], turnaround


def percentile(samples: list[float], percent: int) -> float:
    ordered = sorted(samples)
    return ordered[max(int(round(len(ordered) * percent / 100)) - 1, 0)]


def cpu_seconds(pid: int, children: bool = False) -> float:
    """utime + stime of a process (all its threads) so far, from /proc/PID/stat; `children`: with
    cutime + cstime (its children it has waited for, and theirs)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    ticks = sum(int(field) for field in fields[11:15 if children else 13])
    return ticks / os.sysconf("SC_CLK_TCK")


def b8(repeat: int, quick: bool) -> dict[str, Any]:
    """Many nodes: one controller, 200 simulated nodes over TLS (4 processes), 10,000 jobs."""
    import cluster as many_nodes  # bench/cluster.py

    return many_nodes.run(repeat, quick)


def peak_rss_mib(pid: int) -> float:
    """The process's peak resident memory so far (VmHWM), in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def b9(repeat: int, quick: bool) -> dict[str, Any]:
    """A job's output and terminal through its node (as from another host) against from here."""
    import relays  # bench/relays.py

    with cluster() as c:
        return relays.run(c, 1 if quick else repeat)


def b10(repeat: int, quick: bool) -> dict[str, Any]:
    """The planner alone on plain data: 100,000 pending tasks on 1,000 busy nodes (no cluster)."""
    import planner  # bench/planner.py

    return planner.run(repeat)


def b11(repeat: int, quick: bool) -> dict[str, Any]:
    """Serving /metrics: the controller's CPU, scraped every 5 s, with 10,000 jobs in its working set."""
    import metrics_scrape  # bench/metrics_scrape.py

    return metrics_scrape.run(DROVER, repeat, quick)


def b12(repeat: int, quick: bool) -> dict[str, Any]:
    """Drover inside one Slurm allocation against Slurm alone: 1,000 x /bin/true, jobs/s."""
    import inside_slurm  # bench/inside_slurm.py

    return inside_slurm.run(DROVER, repeat, quick)


BENCHMARKS = {"B1": b1, "B2": b2, "B3": b3, "B4": b4, "B5": b5, "B6": b6, "B7": b7, "B8": b8, "B9": b9, "B10": b10,
              "B11": b11, "B12": b12}


def print_table(results: dict[str, dict[str, Any]]) -> None:
    for name, figures in results.items():
        print(f"\n{name}: {BENCHMARKS[name].__doc__}")
        for key, value in figures.items():
            if isinstance(value, dict) and "median" in value:
                extra = f", p95 {value['p95']:.4g}" if "p95" in value else ""
                print(f"  {key:<42} {shown(value, '')}{extra}")
            elif value is None:
                print(f"  {key:<42} missing")
            elif isinstance(value, list):
                print(f"  {key:<42} {', '.join(f'{v:.4g}' for v in value)}")
            else:
                print(f"  {key:<42} {value:.4g}" if isinstance(value, float) else f"  {key:<42} {value}")
    ratios = []
    b1r = results.get("B1")
    if b1r and b1r.get("tsp -S 2"):
        ratios.append(f"B1 array / tsp: {b1r['drover array']['median'] / b1r['tsp -S 2']['median']:.2f}x")
    if b1r and b1r.get("parallel -j2"):
        ratios.append(f"B1 singles / parallel: {b1r['drover singles (client)']['median'] / b1r['parallel -j2']['median']:.2f}x")
    if b1r and b1r.get("HyperQueue array"):
        ratios.append(f"B1 array / HyperQueue array: {b1r['drover array']['median'] / b1r['HyperQueue array']['median']:.2f}x")
        ratios.append(f"B1 singles / HyperQueue singles: "
                      f"{b1r['drover singles (client)']['median'] / b1r['HyperQueue singles (client)']['median']:.2f}x")
        for what in ("array", "singles"):
            drover_ms = b1r[f"drover {what} CPU per job (ms): all daemons"]["median"]
            hq_ms = b1r[f"HyperQueue {what} CPU per job (ms): all daemons"]["median"]
            ratios.append(f"B1 {what} daemons' CPU per job, Drover / HyperQueue: {drover_ms:.3g} / {hq_ms:.3g} ms = "
                          f"{drover_ms / hq_ms:.1f}x")
    if b1r and b1r.get("drover array, PostgreSQL store"):
        ratios.append(f"B1 array on PostgreSQL / on SQLite: "
                      f"{b1r['drover array, PostgreSQL store']['median'] / b1r['drover array']['median']:.2f}x")
    b3r = results.get("B3")
    if b3r and b3r.get("tsp true; tsp -w (ms)"):
        ratios.append(f"B3 client latency / tsp: {b3r['drover client submit->finished (ms)']['median'] / b3r['tsp true; tsp -w (ms)']['median']:.2f}x")
    b4r = results.get("B4")
    if b4r and b4r.get("HyperQueue (% over ideal)"):
        ratios.append(f"B4 over ideal: Drover {b4r['drover (% over ideal)']['median']:.2f} %, "
                      f"HyperQueue {b4r['HyperQueue (% over ideal)']['median']:.2f} %")
    b7r = results.get("B7")
    if b7r:
        ratios.append(f"B7 submit during a burst of listings / idle: p50 {b7r['submit p50 burst/idle']['median']:.2f}x, "
                      f"p99 {b7r['submit p99 burst/idle']['median']:.2f}x")
    b8r = results.get("B8")
    if b8r and b1r:
        ratios.append(f"B8 {b8r['nodes']} nodes / B1 array on one machine: "
                      f"{b8r['jobs/s']['median'] / b1r['drover array']['median']:.2f}x the jobs/s, controller CPU per job "
                      f"{b8r['controller CPU per job (ms)']['median'] / b1r['drover array: controller CPU per job (ms)']['median']:.2f}x")
    if ratios:
        print("\nratios (median over median): " + "; ".join(ratios))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("which", nargs="*", metavar="B1..B12", help="which benchmarks (default: all)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json-out", default=str(RESULTS / "latest.json"))
    parser.add_argument("--postgres", action="store_true",
                        help="B1 and B2 also with the cluster's store on a private PostgreSQL server (needs its "
                             "binaries and psycopg, as the store's tests do)")
    parser.add_argument("--array-only", action="store_true",
                        help="B1: the array alone (no single submissions, no reference tools)")
    parser.add_argument("--no-promises", action="store_true",
                        help="every cluster with `[scheduler] promises = false`, to compare with the default "
                             "(promises on: docs/scheduling.md)")
    args = parser.parse_args()
    if args.no_promises:
        SETTINGS.append("[scheduler]\npromises = false\n")
    unknown = [name for name in args.which if name not in BENCHMARKS]
    if unknown:
        parser.error(f"unknown benchmark {', '.join(unknown)}; known: {', '.join(BENCHMARKS)}")
    # An installed Drover has its bytecode compiled; a checkout run with PYTHONDONTWRITEBYTECODE
    # would compile every module on every command, which is not what users see.
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(Path(__file__).parent.parent / "src")],
                   capture_output=True)
    results: dict[str, dict[str, Any]] = {}
    if args.postgres:
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
        from tests.helpers.postgres import PrivateServer

        POSTGRES.append(PrivateServer().start(durable=True))
    try:
        for name in args.which or list(BENCHMARKS):
            print(f"running {name} ...", file=sys.stderr, flush=True)
            if name == "B1" and args.array_only:
                results[name] = b1(args.repeat, args.quick, array_only=True)
            else:
                results[name] = BENCHMARKS[name](args.repeat, args.quick)
    finally:
        for server in POSTGRES:
            server.stop()
    print_table(results)
    out = Path(args.json_out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"machine": os.uname().nodename, "cpus": os.cpu_count(), "repeat": args.repeat,
                               "quick": args.quick, "results": results}, indent=2))
    print(f"\nresults written to {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
