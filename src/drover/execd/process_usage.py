"""What an attempt's processes use now, summed over them (psutil reads /proc; no subprocess).

Where an attempt has a cgroup its processes are the ones the cgroup lists; otherwise they are the
descendants of its shepherd, which is the subreaper of the job's tree, so a process that left
its parent (a daemonised child) is still found. Any process may end between two reads: it then
counts for nothing this round.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import psutil

CMD_CHARS = 200  # jobd's cmd: enough to recognise the program, short enough for a table


@dataclass(frozen=True, slots=True)
class ProcessFigures:
    rss_bytes: int
    cpu_s: float  # user and system time, with that of the children each process waited for
    processes: int
    threads: int
    read_bytes: int | None  # None: no process's I/O counters could be read (another user's, as non-root)
    write_bytes: int | None
    cmd: str  # the command line of the process with the largest resident set


NOTHING = ProcessFigures(0, 0.0, 0, 0, None, None, "")


def parents() -> dict[int, int]:
    """pid → parent pid of every process on the host: read once per sampling round, however many
    attempts need it (psutil's children(recursive=True) would read it again for each)."""
    result: dict[int, int] = {}
    for process in psutil.process_iter(["ppid"]):
        ppid = process.info.get("ppid")
        if isinstance(ppid, int):
            result[process.pid] = ppid
    return result


def descendants(root: int, parent_of: Mapping[int, int]) -> list[int]:
    """Every process below `root` (not `root` itself), from a pid → parent map."""
    children: dict[int, list[int]] = {}
    for pid, ppid in parent_of.items():
        children.setdefault(ppid, []).append(pid)
    found: list[int] = []
    seen = {root}
    stack = list(children.get(root, []))
    while stack:
        pid = stack.pop()
        if pid in seen:
            continue  # a loop in a map read while processes came and went
        seen.add(pid)
        found.append(pid)
        stack.extend(children.get(pid, []))
    return found


def read_processes(pids: Iterable[int]) -> ProcessFigures:
    rss = threads = count = 0
    cpu_s = 0.0
    read_bytes: int | None = None
    write_bytes: int | None = None
    biggest_rss, biggest = -1, None
    for pid in pids:
        try:
            process = psutil.Process(pid)
            with process.oneshot():
                resident = process.memory_info().rss
                times = process.cpu_times()
                process_threads = process.num_threads()
                io = _io_counters(process)
        except (psutil.NoSuchProcess, psutil.ZombieProcess, psutil.AccessDenied):
            continue  # it ended while it was read: nothing of it is counted
        count += 1
        rss += resident
        threads += process_threads
        cpu_s += times.user + times.system + times.children_user + times.children_system
        if io is not None:
            read_bytes = (read_bytes or 0) + io[0]
            write_bytes = (write_bytes or 0) + io[1]
        if resident > biggest_rss:
            biggest_rss, biggest = resident, process
    return ProcessFigures(rss, cpu_s, count, threads, read_bytes, write_bytes, _command(biggest))


def _io_counters(process: psutil.Process) -> tuple[int, int] | None:
    try:
        counters = process.io_counters()
    except (psutil.AccessDenied, AttributeError, NotImplementedError):
        return None  # /proc/PID/io is its owner's (and root's) to read
    return counters.read_bytes, counters.write_bytes


def _command(process: psutil.Process | None) -> str:
    if process is None:
        return ""
    try:
        words = process.cmdline()
        # One line: a `python3 -c` script's newlines would break every table it is shown in.
        text = " ".join(" ".join(words).split()) if words else process.name()
    except (psutil.NoSuchProcess, psutil.ZombieProcess, psutil.AccessDenied):
        return ""
    return text if len(text) <= CMD_CHARS else text[:CMD_CHARS - 1] + "…"
