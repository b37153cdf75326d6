"""HTCondor's job event log ("user log", `log = FILE` in a submit file), in its text format: each
event a header line `NNN (cluster.proc.subproc) YYYY-MM-DD HH:MM:SS text`, its body lines, then
a line of three dots, as condor_event.cpp writes them, so that htcondor.JobEventLog and
condor_wait read them event by event.

Pure: each function returns an event's text; the caller (condor_submit, follow.py) appends it to
the file as the job's owner.
"""

from __future__ import annotations

import os
import stat
import time
from dataclasses import dataclass

SUBMIT, EXECUTE, EVICTED, TERMINATED, IMAGE_SIZE, SHADOW_EXCEPTION = 0, 1, 4, 5, 6, 7
ABORTED, SUSPENDED, UNSUSPENDED, HELD, RELEASED, FILE_TRANSFER = 9, 10, 11, 12, 13, 40
SEPARATOR = "...\n"

TRANSFER_INPUT_STARTED = "Started transferring input files"
TRANSFER_INPUT_FINISHED = "Finished transferring input files"
TRANSFER_OUTPUT_STARTED = "Started transferring output files"
TRANSFER_OUTPUT_FINISHED = "Finished transferring output files"


def header(number: int, cluster: int, proc: int, when: float) -> str:
    """ISO dates in local time, as HTCondor's default (DEFAULT_USERLOG_FORMAT_OPTIONS) writes them."""
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(when))
    return f"{number:03d} ({cluster:03d}.{proc:03d}.000) {stamp} "


def submitted(cluster: int, proc: int, when: float, host: str) -> str:
    return header(SUBMIT, cluster, proc, when) + f"Job submitted from host: {host}\n" + SEPARATOR


def executing(cluster: int, proc: int, when: float, host: str, slot: str) -> str:
    return header(EXECUTE, cluster, proc, when) + f"Job executing on host: {host}\n\tSlotName: {slot}\n" + SEPARATOR


def file_transfer(cluster: int, proc: int, when: float, what: str, host: str | None = None,
                  queued_s: int | None = None) -> str:
    body = what + "\n"
    if queued_s is not None:
        body += f"\tSeconds spent in queue: {queued_s}\n"
    if host:
        body += f"\tTransferring to host: {host}\n"
    return header(FILE_TRANSFER, cluster, proc, when) + body + SEPARATOR


def image_size(cluster: int, proc: int, when: float, peak_kib: int, rss_kib: int | None = None) -> str:
    """006: the peak memory as the image size and MemoryUsage, and the resident set now (the
    peak again once the job has ended)."""
    memory_mb = (peak_kib + 1023) // 1024
    rss = peak_kib if rss_kib is None else rss_kib
    return (header(IMAGE_SIZE, cluster, proc, when) + f"Image size of job updated: {peak_kib}\n"
            f"\t{memory_mb}  -  MemoryUsage of job (MB)\n\t{rss}  -  ResidentSetSize of job (KB)\n"
            + SEPARATOR)


def _rusage(user_s: float, sys_s: float) -> str:
    def part(seconds: float) -> str:
        whole = int(seconds)
        days, whole = divmod(whole, 86400)
        hours, whole = divmod(whole, 3600)
        minutes, whole = divmod(whole, 60)
        return f"{days} {hours:02d}:{minutes:02d}:{whole:02d}"

    return f"\tUsr {part(user_s)}, Sys {part(sys_s)}"


@dataclass(frozen=True)
class Usage:
    user_s: float = 0.0
    sys_s: float = 0.0
    memory_kib: int | None = None  # the attempt's peak (common.memory_kib); None: not known


@dataclass(frozen=True)
class Request:
    cpus: int
    memory_mb: int
    disk_kb: int = 0
    gpus: int = 0


def terminated(cluster: int, proc: int, when: float, return_value: int | None, signal: int | None,
               usage: Usage, request: Request, sent_bytes: int = 0, received_bytes: int = 0) -> str:
    """005: a normal termination with its return value, or an abnormal one with its signal; the
    usage of this run (and of all runs: Drover's attempt), then the resources table."""
    if signal is not None:
        body = f"\t(0) Abnormal termination (signal {signal})\n\t(0) No core file\n\t"
    else:
        body = f"\t(1) Normal termination (return value {return_value or 0})\n\t"
    run = _rusage(usage.user_s, usage.sys_s)
    body += (f"{run}  -  Run Remote Usage\n\t{_rusage(0, 0)}  -  Run Local Usage\n\t"
             f"{run}  -  Total Remote Usage\n\t{_rusage(0, 0)}  -  Total Local Usage\n")
    body += (f"\t{sent_bytes}  -  Run Bytes Sent By Job\n\t{received_bytes}  -  Run Bytes Received By Job\n"
             f"\t{sent_bytes}  -  Total Bytes Sent By Job\n\t{received_bytes}  -  Total Bytes Received By Job\n")
    body += _resources(usage, request)
    return header(TERMINATED, cluster, proc, when) + "Job terminated.\n" + body + SEPARATOR


def _resources(usage: Usage, request: Request) -> str:
    """The `Partitionable Resources` table of formatUsageAd: Usage, Request, Allocated; a usage
    not known is left empty, as formatUsageAd leaves one the ad lacks."""
    cpu_s = usage.user_s + usage.sys_s
    rows = [("Cpus", f"{cpu_s:.2f}" if cpu_s else "0", str(request.cpus), str(request.cpus)),
            ("Disk (KB)", "0", str(request.disk_kb), str(request.disk_kb)),
            ("Memory (MB)", str((usage.memory_kib + 1023) // 1024) if usage.memory_kib is not None else "",
             str(request.memory_mb), str(request.memory_mb))]
    if request.gpus:
        rows.insert(2, ("Gpus (Average)", "", str(request.gpus), str(request.gpus)))
    use_width = max(8, *(len(r[1]) for r in rows))
    out = f"\tPartitionable Resources : {'Usage':>{use_width}} {'Request':>8} {'Allocated':>9} \n"
    width = len("Memory (MB)") + 1 + 8
    for label, used, requested, allocated in rows:
        out += f"\t   {label:<{width}} : {used:>{use_width}} {requested:>8} {allocated:>9} \n"
    return out


def aborted(cluster: int, proc: int, when: float, reason: str) -> str:
    return header(ABORTED, cluster, proc, when) + f"Job was aborted.\n\t{reason}\n" + SEPARATOR


def held(cluster: int, proc: int, when: float, reason: str, code: int, subcode: int = 0) -> str:
    return (header(HELD, cluster, proc, when) + f"Job was held.\n\t{reason or 'Reason unspecified'}\n"
            f"\tCode {code} Subcode {subcode}\n" + SEPARATOR)


def released(cluster: int, proc: int, when: float, reason: str) -> str:
    return header(RELEASED, cluster, proc, when) + f"Job was released.\n\t{reason}\n" + SEPARATOR


def suspended(cluster: int, proc: int, when: float, processes: int = 1) -> str:
    return (header(SUSPENDED, cluster, proc, when) + "Job was suspended.\n\t"
            f"Number of processes actually suspended: {processes}\n" + SEPARATOR)


def unsuspended(cluster: int, proc: int, when: float) -> str:
    return header(UNSUSPENDED, cluster, proc, when) + "Job was unsuspended.\n" + SEPARATOR


def shadow_exception(cluster: int, proc: int, when: float, message: str) -> str:
    return (header(SHADOW_EXCEPTION, cluster, proc, when) + f"Shadow exception!\n\t{message}\n"
            "\t0  -  Run Bytes Sent By Job\n\t0  -  Run Bytes Received By Job\n" + SEPARATOR)


def evicted(cluster: int, proc: int, when: float, reason: str) -> str:
    return (header(EVICTED, cluster, proc, when) + "Job was evicted.\n\t(0) CPU times\n"
            f"\t{_rusage(0, 0)}  -  Run Remote Usage\n\t{_rusage(0, 0)}  -  Run Local Usage\n"
            f"\t0  -  Run Bytes Sent By Job\n\t0  -  Run Bytes Received By Job\n\tReason: {reason}\n" + SEPARATOR)


def append(path: str, text: str) -> None:
    """Append events to the log as whoever runs this (the job's owner): a regular file only (a
    FIFO or device is refused, never waited on), created 0644 as condor_submit creates it; one
    write, so readers never see half an event."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
    fd = os.open(path, flags, 0o644)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path} is not a regular file")
        data = memoryview(text.encode())
        while data:
            data = data[os.write(fd, data):]
    finally:
        os.close(fd)


# -- reading (condor_wait) ----------------------------------------------------------------------

@dataclass(frozen=True)
class Event:
    number: int
    cluster: int
    proc: int
    when: str
    text: str  # the header's text and the body


def read_events(text: str) -> tuple[list[Event], str]:
    """The complete events of a log's text, and what follows the last `...` (an event still being
    written: read again later)."""
    events: list[Event] = []
    lines = text.split("\n")
    current: list[str] = []
    consumed = 0
    offset = 0
    for line in lines[:-1]:
        offset += len(line) + 1
        if line == "...":
            if current:
                event = _event(current)
                if event is not None:
                    events.append(event)
            current = []
            consumed = offset
        else:
            current.append(line)
    return events, text[consumed:]


def _event(lines: list[str]) -> Event | None:
    first = lines[0]
    try:
        number = int(first[:3])
        ident = first[first.index("(") + 1:first.index(")")]
        cluster, proc = (int(part) for part in ident.split(".")[:2])
    except ValueError:
        return None
    rest = first[first.index(")") + 2:]
    when = " ".join(rest.split(" ")[:2])
    return Event(number, cluster, proc, when, "\n".join([rest[len(when) + 1:], *lines[1:]]))
