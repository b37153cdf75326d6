"""Tell a live shepherd from a dead one whose pid was reused: a pid plus the process's start time
(field 22 of /proc/PID/stat, in clock ticks since boot) names one process for the life of the host."""

from __future__ import annotations


def _stat(pid: int) -> list[bytes] | None:
    """/proc/PID/stat from field 3 (the state) on, or None if there is no such process."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as file:
            data = file.read()
    except (FileNotFoundError, ProcessLookupError):
        return None
    # The command name (field 2) is in parentheses and may hold spaces: split after its end.
    return data[data.rindex(b")") + 2 :].split()


def read_starttime(pid: int) -> int | None:
    fields = _stat(pid)
    return int(fields[19]) if fields else None  # field 22 overall; fields[0] here is field 3


def is_alive(pid: int, starttime: int | None) -> bool:
    """True if `pid` runs and, when `starttime` is given, is the process that started then.
    A zombie counts as gone."""
    fields = _stat(pid)
    if fields is None or fields[0] in (b"Z", b"X"):
        return False
    return starttime is None or int(fields[19]) == starttime


def format_pid_record(pid: int, starttime: int) -> bytes:
    return f"{pid} {starttime}\n".encode()


def read_pid_record(path: str) -> tuple[int, int | None] | None:
    """The (pid, starttime) of a `pid` record, or None if it has not been written."""
    try:
        with open(path, "rb") as file:
            words = file.read().split()
    except FileNotFoundError:
        return None
    if not words:
        return None
    return int(words[0]), int(words[1]) if len(words) > 1 else None
