"""What HTCondor's front ends share: their command lines (`-name value`, unambiguous prefixes),
job ids as `cluster.proc`, the job status numbers, and how a command says an error."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from dataclasses import dataclass

from drover.compat.optiontable import Arity, Option
from drover.core.errors import DroverError, Unreachable

# HTCondor's JobStatus numbers (condor_q -af JobStatus; the job ad's attribute).
IDLE, RUNNING, REMOVED, COMPLETED, HELD, TRANSFERRING_OUTPUT, SUSPENDED = 1, 2, 3, 4, 5, 6, 7
STATUS_LETTER = {IDLE: "I", RUNNING: "R", REMOVED: "X", COMPLETED: "C", HELD: "H", TRANSFERRING_OUTPUT: ">",
                 SUSPENDED: "S"}

# Drover's task states as JobStatus: a failed or timed-out job ended as HTCondor's completed
# jobs do (with its exit code); a cancelled one was removed.
_STATUS = {"pending": IDLE, "held": HELD, "dispatched": RUNNING, "running": RUNNING, "completing": TRANSFERRING_OUTPUT,
           "suspended": SUSPENDED, "completed": COMPLETED, "failed": COMPLETED, "timeout": COMPLETED,
           "cancelled": REMOVED, "node_fail": COMPLETED, "out_of_memory": COMPLETED}


def job_status(state: str) -> int:
    return _STATUS.get(state, COMPLETED)


def memory_kib(max_rss_kib: int, cgroup_peak_bytes: int | None) -> int | None:
    """An ended attempt's memory as ImageSize, MemoryUsage and a 006 event take it: its max RSS, or,
    where that is 0 (not known: docs/accounting.md, Max RSS), the peak its cgroup measured; None
    where neither is known, and HTCondor leaves the figure out."""
    if max_rss_kib > 0:
        return max_rss_kib
    if cgroup_peak_bytes:
        return (cgroup_peak_bytes + 1023) // 1024
    return None


class CondorUsageError(Exception):
    """A command line the real command refuses: its words, and its exit status."""

    def __init__(self, message: str, status: int = 1) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Given:
    option: Option
    value: str | None
    spelled: str  # as typed: `-af:jr` keeps its `:jr`

    @property
    def key(self) -> str:
        return self.option.names[0].lstrip("-")


def parse(command: str, argv: list[str], options: Iterable[Option]) -> tuple[list[Given], list[str]]:
    """HTCondor's tools' command lines: single-dash words, each option abbreviated to any prefix
    that is no other's (`-const` for `-constraint`), `-af:jr` an option with its modifiers after a
    colon; what does not begin with `-` is an operand, anywhere."""
    table = list(options)
    found: list[Given] = []
    operands: list[str] = []
    i = 0
    while i < len(argv):
        word = argv[i]
        i += 1
        if not word.startswith("-") or word == "-":
            operands.append(word)
            continue
        name = word.split(":", 1)[0].lstrip("-")
        option = _lookup(command, name, word, table)
        if option.arity is Arity.NONE:
            found.append(Given(option, None, word))
        elif option.arity is Arity.TWO:
            if i + 1 >= len(argv):
                raise CondorUsageError(f"{command}: {word} requires two arguments")
            found.append(Given(option, argv[i] + "\0" + argv[i + 1], word))
            i += 2
        else:
            if i >= len(argv):
                raise CondorUsageError(f"{command}: {word} requires another argument")
            found.append(Given(option, argv[i], word))
            i += 1
    return found, operands


def _lookup(command: str, name: str, word: str, table: list[Option]) -> Option:
    exact = [o for o in table if any(n.lstrip("-") == name for n in o.names)]
    if exact:
        return exact[0]
    prefixed = {id(o): o for o in table for n in o.names if name and n.lstrip("-").startswith(name)}
    if len(prefixed) == 1:
        return next(iter(prefixed.values()))
    raise CondorUsageError(f"Error: unrecognized argument {word}" if not prefixed
                           else f"{command}: {word} is ambiguous")


def last(given: list[Given], key: str) -> Given | None:
    return next((g for g in reversed(given) if g.key == key), None)


def every(given: list[Given], key: str) -> list[str]:
    return [g.value or "" for g in given if g.key == key]


def user_name() -> str:
    import pwd

    return pwd.getpwuid(os.getuid()).pw_name


def failed(command: str, error: DroverError) -> int:
    """An error of the cluster; one that does not answer as HTCondor's tools say a schedd they
    cannot reach."""
    if isinstance(error, Unreachable):
        address = schedd_address()
        print(f"\n-- Failed to fetch ads from: {address} : {_host()}\nCEDAR:6001:Failed to connect to {address}",
              file=sys.stderr)
        return 1
    print(f"{command}: {error}", file=sys.stderr)
    return 1


def _host() -> str:
    import socket

    return socket.gethostname()


def schedd_address() -> str:
    """The `<ip:port?...>` the events name the submit host by: this host, where Drover's
    controller is found."""
    import socket

    host = socket.gethostname()
    try:
        address = socket.gethostbyname(host)
    except OSError:
        address = "127.0.0.1"
    return f"<{address}:9618?addrs={address}-9618&alias={host}&noUDP&sock=schedd_drover>"


def node_address(node: str) -> str:
    import socket

    try:
        address = socket.gethostbyname(node)
    except OSError:
        address = "127.0.0.1"
    return f"<{address}:9618?addrs={address}-9618&alias={node}&noUDP&sock=startd_drover>"
