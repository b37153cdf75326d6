"""A job step, as srun runs one inside an allocation: N tasks of one command, each with its
SLURM_PROCID, SLURM_LOCALID, SLURM_NODEID and the step's SLURM_STEP_* variables, their output to
srun's own or to --output/--error files (per task with %t), labelled with -l; the step's exit
status is the highest of its tasks' (128 + the signal for one killed), as srun reports it.

The tasks of this node run where srun runs: inside the job, so inside its CPUs, its memory limit
and its containment; Drover confines the job as a whole, not each step. In a job whose
allocation spans several hosts, the tasks laid out on the others (step_hosts.py) are started
there as tasks of the job (step_remote.py), their output relayed here like the local ones'."""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import IO, Any, Protocol

from drover.compat.slurm.step_hosts import NodeTasks

FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2,
             signal.SIGCONT)


class Sink:
    """Where a task on another host has its output copied: a file srun opened, srun's own stream,
    or the pipe that labels its lines (a descriptor of its own, so that the labelling ends
    once every task's end of it is closed). Closed once, when the task has ended."""

    def __init__(self, target: Any) -> None:
        self.fd = os.dup(target) if isinstance(target, int) else None
        self.handle: IO[bytes] | None = None if isinstance(target, int) else target

    def write(self, data: bytes) -> None:
        if self.handle is not None:
            self.handle.write(data)
            self.handle.flush()
        elif self.fd is not None:
            view = memoryview(data)
            while view:
                view = view[os.write(self.fd, view):]

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


class Elsewhere(Protocol):
    """The step's tasks on the job's other hosts (step_remote.RemoteTasks)."""

    def start(self, rank: int, host: str, argv: list[str], cwd: str, env: dict[str, str], stdout: Sink,
              stderr: Sink) -> None: ...

    def stop(self) -> None: ...

    def codes(self) -> dict[int, int | None]: ...

    def close(self) -> None: ...


@dataclass
class Step:
    argv: list[str]
    ntasks: int
    environment: dict[str, str]  # the step's, before each task's own variables
    output: str | None = None  # patterns, as srun's -o/-e/-i take them
    error: str | None = None
    input: str | None = None
    open_mode: str = "truncate"
    label: bool = False
    kill_on_bad_exit: bool = False
    wait_s: int | None = None  # -W: after the first task ends, the others get this long
    cwd: str | None = None
    step_id: int = 0
    node: str = ""
    # The step's nodes and their tasks, this one first; empty: all of them on this node.
    nodes: list[NodeTasks] = field(default_factory=list)
    elsewhere: Elsewhere | None = None  # the tasks on the other nodes
    processes: dict[int, subprocess.Popen[bytes]] = field(default_factory=dict)  # by rank


def next_step_id(job_id: str, directory: str) -> int:
    """Steps are numbered from 0 in each job, as Slurm numbers them: a counter in the job's own
    TMPDIR, taken under a lock so that steps started at once get different numbers."""
    path = os.path.join(directory, f".slurm_steps.{job_id}")
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError:
        return 0
    with open(fd, "r+") as counter:
        fcntl.flock(counter, fcntl.LOCK_EX)
        text = counter.read().strip()
        step = int(text) + 1 if (text.isascii() and text.isdigit()) else 0
        counter.seek(0)
        counter.truncate()
        counter.write(str(step))
    return step


def expand(pattern: str, step: Step, task: int | None) -> str:
    """srun's filename pattern for one task (`task` None: for the whole step)."""
    env = step.environment
    job = env.get("SLURM_JOB_ID", "0")
    nodeid = next((i for i, node in enumerate(step.nodes) if task in node.ranks), 0)
    node = step.nodes[nodeid].node if step.nodes else step.node
    values = {"j": job, "J": f"{job}.{step.step_id}", "s": str(step.step_id), "A": env.get("SLURM_ARRAY_JOB_ID", job),
              "a": env.get("SLURM_ARRAY_TASK_ID", "4294967294"), "t": str(task or 0), "n": str(nodeid), "N": node,
              "x": env.get("SLURM_JOB_NAME", ""), "u": env.get("SLURM_JOB_USER", env.get("USER", "")),
              "r": env.get("SLURM_RESTART_COUNT", "0")}
    out, i = [], 0
    while i < len(pattern):
        if pattern[i] != "%" or i + 1 >= len(pattern):
            out.append(pattern[i])
            i += 1
            continue
        j = i + 1
        while j < len(pattern) and pattern[j].isdigit():
            j += 1
        width = min(int(pattern[i + 1:j] or 0), 10)
        letter = pattern[j] if j < len(pattern) else ""
        if letter == "%":
            out.append("%")
        elif letter in values:
            value = values[letter]
            out.append(value.zfill(width) if (value.isascii() and value.isdigit()) else value)
        else:
            out.append(pattern[i:j + 1])
        i = j + 1
    return "".join(out)


def per_task(pattern: str | None) -> bool:
    return pattern is not None and "%t" in pattern


def run(step: Step) -> int:
    """Start the tasks, relay signals to them, and return the step's exit status."""
    program = _program(step)
    if program is None:
        for _task in range(step.ntasks):
            print(f"slurmstepd: error: execve(): {step.argv[0]}: No such file or directory", file=sys.stderr)
        return _report(step, [2] * step.ntasks)
    here = step.nodes[0].ranks if step.nodes else list(range(step.ntasks))
    # SLURM_TASK_PID is the task's own pid: the shell's, which execs the command.
    argv = ["/bin/sh", "-c", 'SLURM_TASK_PID=$$; export SLURM_TASK_PID; exec "$@"', "sh", *step.argv]
    with _streams(step) as streams:
        for localid, task in enumerate(here):
            stdin, stdout, stderr = streams(task)
            env = dict(step.environment, SLURM_PROCID=str(task), SLURM_LOCALID=str(localid), SLURM_NODEID="0")
            try:
                process = subprocess.Popen(argv, stdin=stdin, stdout=stdout, stderr=stderr, env=env, cwd=step.cwd)
            except OSError as error:
                print(f"slurmstepd: error: couldn't chdir to `{step.cwd}': {error.strerror}", file=sys.stderr)
                _stop(step, signal.SIGKILL)
                return 1
            step.processes[task] = process
        # Taken before the tasks elsewhere start (a request each): a signal meanwhile stops
        # those started and skips the rest.
        previous = {signum: signal.signal(signum, lambda signum, _: _stop(step, signum)) for signum in FORWARDED}
        try:
            if step.elsewhere is not None:
                _start_elsewhere(step, step.elsewhere, argv, streams)
            streams(None)  # every task has its ends of the pipes: ours may close
            codes = _wait(step)
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)
            if step.elsewhere is not None:
                step.elsewhere.close()  # their ends of the label pipes, if srun ends early
    return _report(step, codes)


def _start_elsewhere(step: Step, elsewhere: Elsewhere, argv: list[str],
                     streams: Callable[[int | None], tuple[Any, Any, Any]]) -> None:
    """The tasks of the other nodes, each with its own rank, node and place on it; they read no
    input (srun's stdin reaches the tasks of this node only)."""
    for nodeid, node in enumerate(step.nodes[1:], start=1):
        for localid, task in enumerate(node.ranks):
            _, stdout, stderr = streams(task)
            out = Sink(stdout)
            err = out if stderr is stdout else Sink(stderr)
            env = dict(step.environment, SLURM_PROCID=str(task), SLURM_LOCALID=str(localid), SLURM_NODEID=str(nodeid),
                       SLURM_GTIDS=",".join(str(rank) for rank in node.ranks), SLURMD_NODENAME=node.node)
            elsewhere.start(task, node.node, argv, os.path.abspath(step.cwd or "."), env, out, err)


def _program(step: Step) -> str | None:
    """The command's path, searched for as the step's execve would find it (its PATH)."""
    name = step.argv[0]
    if "/" in name:
        path = name if os.path.isabs(name) else os.path.join(step.cwd or os.getcwd(), name)
        return path if os.access(path, os.X_OK) and not os.path.isdir(path) else None
    return shutil.which(name, path=step.environment.get("PATH", os.defpath))


def _stop(step: Step, signum: int) -> None:
    for process in step.processes.values():
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signum)
    if step.elsewhere is not None and signum in _STOPPING:
        step.elsewhere.stop()  # a task elsewhere is stopped, whatever the signal that stops the step


# The signals that end a step: on the other hosts, its tasks are stopped (the node's stop: SIGTERM,
# then SIGKILL after a grace); the others (SIGUSR1, SIGCONT...) reach the tasks of this node only.
_STOPPING = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGKILL)


def _wait(step: Step) -> list[int]:
    """Each task's wait status (returncode: negative for a signal). -K kills the others once one
    fails; -W gives them `wait_s` once the first has ended."""
    first_end: float | None = None
    while True:
        by_rank = {task: process.poll() for task, process in step.processes.items()}
        if step.elsewhere is not None:
            by_rank.update(step.elsewhere.codes())
        codes = [by_rank[task] for task in sorted(by_rank)]
        if all(code is not None for code in codes):
            return [code for code in codes if code is not None]
        ended = [code for code in codes if code is not None]
        if ended and first_end is None:
            first_end = time.monotonic()
        if step.kill_on_bad_exit and any(code != 0 for code in ended):
            _stop(step, signal.SIGKILL)
        if step.wait_s and first_end is not None and time.monotonic() - first_end > step.wait_s:
            print(f"srun: error: {step.node}: tasks still running {step.wait_s} seconds after the first ended; "
                  "terminating the step", file=sys.stderr)
            _stop(step, signal.SIGKILL)
        time.sleep(0.02)


def _report(step: Step, codes: list[int]) -> int:
    """srun's words for tasks that failed, and its exit status: a signal outranks exit codes."""
    signalled = sorted({-code for code in codes if code < 0})
    nodes = step.nodes or [NodeTasks(step.node, list(range(len(codes))))]
    for node in nodes:
        failed: dict[int, list[int]] = {}
        for task in node.ranks:
            if codes[task] > 0:
                failed.setdefault(codes[task], []).append(task)
        for code, tasks in sorted(failed.items()):
            print(f"srun: error: {node.node}: {_tasks(tasks)}: Exited with exit code {code}", file=sys.stderr)
        for signum in signalled:
            tasks = [task for task in node.ranks if codes[task] == -signum]
            if tasks:
                name = signal.strsignal(signum) or f"Signal {signum}"
                print(f"srun: error: {node.node}: {_tasks(tasks)}: {name}", file=sys.stderr)
    if signalled:
        return 128 + signalled[-1]
    return max(codes, default=0)


def _tasks(tasks: list[int]) -> str:
    """`task 3`, or `tasks 0-2,5`, as srun names them."""
    if len(tasks) == 1:
        return f"task {tasks[0]}"
    ranges: list[str] = []
    start = previous = tasks[0]
    for task in [*tasks[1:], -1]:
        if task == previous + 1:
            previous = task
            continue
        ranges.append(str(start) if start == previous else f"{start}-{previous}")
        start = previous = task
    return f"tasks {','.join(ranges)}"


@contextlib.contextmanager
def _streams(step: Step) -> Iterator[Callable[[int | None], tuple[Any, Any, Any]]]:
    """A function giving each task its stdin, stdout and stderr (called with None once all are
    started), and the threads that label output lines, joined at the end."""
    opened: dict[str, IO[bytes]] = {}
    relays: list[threading.Thread] = []
    ours: list[int] = []  # the write ends of label pipes, closed once the tasks hold them

    def file(pattern: str, task: int, mode: str) -> IO[bytes]:
        path = expand(pattern, step, task)
        if path not in opened:
            opened[path] = open(path, mode)  # noqa: SIM115  # closed when the step ends
        return opened[path]

    def target(pattern: str | None, task: int, fallback: IO[bytes], stream: str) -> Any:
        if pattern is not None:
            handle = file(pattern, task, "ab" if step.open_mode == "append" else "wb")
        else:
            handle = fallback
        if not step.label:
            return handle
        read_fd, write_fd = os.pipe()
        ours.append(write_fd)
        relay = threading.Thread(target=_label, args=(read_fd, handle, f"{task}: ".encode()), daemon=True,
                                 name=f"label-{stream}-{task}")
        relay.start()
        relays.append(relay)
        return write_fd

    def streams(task: int | None) -> tuple[Any, Any, Any]:
        if task is None:
            for fd in ours:
                os.close(fd)
            ours.clear()
            return None, None, None
        stdin: Any = None
        if step.input is not None:
            chosen = step.input
            if chosen == "none":
                stdin = subprocess.DEVNULL
            elif (chosen.isascii() and chosen.isdigit()):
                stdin = None if int(chosen) == task else subprocess.DEVNULL
            elif chosen != "all":
                stdin = file(chosen, task, "rb")
        stdout = target(step.output, task, sys.stdout.buffer, "out")
        if step.error is None and step.output is not None and not step.label:
            stderr = stdout  # -o without -e: both streams to the one file
        else:
            stderr = target(step.error if step.error is not None else step.output, task, sys.stderr.buffer, "err")
        return stdin, stdout, stderr

    sys.stdout.flush()
    sys.stderr.flush()
    try:
        yield streams
    finally:
        for fd in ours:  # the step ended before all its tasks were started: no more writers
            os.close(fd)
        for relay in relays:
            relay.join()
        for handle in opened.values():
            handle.close()


def _label(read_fd: int, out: IO[bytes], prefix: bytes) -> None:
    """srun -l: each line of a task's output behind its task number."""
    pending = b""
    with open(read_fd, "rb", buffering=0) as source:
        while chunk := source.read(65536):
            pending += chunk
            *lines, pending = pending.split(b"\n")
            if lines:
                out.write(b"".join(prefix + line + b"\n" for line in lines))
                out.flush()
    if pending:
        out.write(prefix + pending + b"\n")
        out.flush()
