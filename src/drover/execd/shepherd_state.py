"""Whether a shepherd that ended its attempt is fit to serve the next one (warm_shepherds.py).

A shepherd is a process of its attempt's: it switches its effective ids to the owner's for the
owner's files and back, it enters the attempt's cgroup to start the job and leaves it, a job of
its own user takes its nice, CPUs and rlimits from it, and it opens the job's files. Each step
gives back what it took, and the next attempt must find the process exactly as a shepherd just
forked would be. So this is not taken on trust: before it serves again, the shepherd compares
what the kernel says of it now with what it said before its first attempt, and on any
difference it exits, as every shepherd did after its attempt before, and the fork server forks
a new one. What is compared:

  ids           real, effective and saved uid and gid, supplementary groups
  directory     the working directory, the umask
  scheduling    the nice value and the CPU affinity
  limits        every rlimit
  cgroups       /proc/self/cgroup, every hierarchy
  descriptors   the open descriptors (a leak is one descriptor more)
  threads       one thread, no child process left (nothing of the attempt runs on)
  signals       the mask (every signal blocked), the dispositions, no interval timer
  environment   the process's own environment
  terminal      its session, process group and controlling terminal (none), whether it is a
                child subreaper (the subreaper containment makes it one)

A shepherd also serves at most MAX_ATTEMPTS attempts, and not
once it holds much more memory than it did at first, so that what a long life leaves behind
(garbage the collector, off in shepherds, would have freed) never grows without bound.
"""

from __future__ import annotations

import _signal  # type: ignore[import-not-found]  # the C module under `signal`; it has no stub
import ctypes
import dataclasses
import os
import resource
import signal
from collections.abc import Callable
from dataclasses import dataclass

MAX_ATTEMPTS = 1000  # attempts one shepherd process serves at most
MAX_GROWTH_KIB = 32 * 1024  # anonymous resident memory beyond what it held at its first attempt

_RLIMITS = tuple(getattr(resource, name) for name in sorted(dir(resource)) if name.startswith("RLIMIT_"))
# The C function under signal.getsignal: the wrapper's enum conversions cost ten times the call.
_getsignal: Callable[[int], object] = _signal.getsignal
_SIGNALS = tuple(sorted(int(signum) for signum in signal.valid_signals()
                        if signum not in (signal.SIGKILL, signal.SIGSTOP)))


@dataclass(frozen=True, slots=True)
class ProcessState:
    """What the kernel says of this process that an attempt could have changed."""

    ids: tuple[object, ...]
    directory: tuple[str, int]
    scheduling: tuple[int, frozenset[int]]
    limits: tuple[tuple[int, int], ...]
    cgroups: bytes
    descriptors: frozenset[str]
    threads: int
    signals: tuple[object, ...]
    environment: dict[bytes, bytes]
    terminal: tuple[int, int, int, int]

    @classmethod
    def now(cls) -> ProcessState:
        umask = os.umask(0o077)
        os.umask(umask)
        with open("/proc/self/cgroup", "rb") as file:
            cgroups = file.read()
        return cls(
            ids=(os.getresuid(), os.getresgid(), tuple(sorted(os.getgroups()))),
            directory=(os.getcwd(), umask),
            scheduling=(os.getpriority(os.PRIO_PROCESS, 0), frozenset(os.sched_getaffinity(0))),
            limits=tuple(resource.getrlimit(which) for which in _RLIMITS),
            cgroups=cgroups,
            descriptors=frozenset(os.listdir("/proc/self/fd")),
            threads=len(os.listdir("/proc/self/task")),
            signals=(frozenset(signal.pthread_sigmask(signal.SIG_BLOCK, ())),
                     tuple(map(_getsignal, _SIGNALS)),
                     signal.getitimer(signal.ITIMER_REAL), signal.getitimer(signal.ITIMER_VIRTUAL),
                     signal.getitimer(signal.ITIMER_PROF)),
            environment=_environment(),
            terminal=(os.getsid(0), os.getpgid(0), _controlling_terminal(), _subreaper()),
        )

    def differences(self, other: ProcessState) -> list[str]:
        """The names of what differs between the two."""
        return [name for name in self.__slots__ if getattr(self, name) != getattr(other, name)]


def _environment() -> dict[bytes, bytes]:
    """The process's environment as bytes, as os.environ keeps it (its mapping's own dict:
    a tenth of the cost of decoding every entry)."""
    data = getattr(os.environ, "_data", None)
    return dict(data) if isinstance(data, dict) else {key.encode(): value.encode() for key, value in os.environ.items()}


def _controlling_terminal() -> int:
    """tty_nr of /proc/self/stat: the device of the controlling terminal, 0 for none."""
    with open("/proc/self/stat", "rb") as file:
        return int(file.read().rpartition(b")")[2].split()[4])


_PR_GET_CHILD_SUBREAPER = 37
_libc = ctypes.CDLL(None, use_errno=True)


def _subreaper() -> int:
    flag = ctypes.c_int(0)
    _libc.prctl(_PR_GET_CHILD_SUBREAPER, ctypes.byref(flag), 0, 0, 0)
    return flag.value


def resident_kib() -> int:
    """The process's own resident memory: its anonymous pages (statm's resident less its shared,
    the file-backed and shmem pages). Mapped files' pages come and go with the host's page cache,
    so they would say a shepherd shrank or grew when it did neither."""
    with open("/proc/self/statm", "rb") as file:
        fields = file.read().split()
    return (int(fields[1]) - int(fields[2])) * (os.sysconf("SC_PAGE_SIZE") // 1024)


@dataclass(slots=True)
class Fitness:
    """A shepherd's own record of how it started, against which each attempt's end is judged."""

    before: ProcessState
    resident_kib: int
    served: int = 0

    @classmethod
    def at_start(cls, without: list[int]) -> Fitness:
        """As the shepherd is now, but for the descriptors `without` (held for its first attempt)."""
        now = ProcessState.now()
        descriptors = now.descriptors - {str(fd) for fd in without}
        return cls(dataclasses.replace(now, descriptors=descriptors), resident_kib())

    def why_not_again(self) -> str | None:
        """None if the shepherd may serve another attempt after the one it served; else why not."""
        self.served += 1
        if self.served >= MAX_ATTEMPTS:
            return f"served {self.served} attempts"
        try:
            ended = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            pass  # no child left: as it should be
        else:
            return "a child process was left" if ended[0] == 0 else f"a child ({ended[0]}) ended after the attempt"
        if resident_kib() > self.resident_kib + MAX_GROWTH_KIB:
            return "its memory grew"
        differences = self.before.differences(ProcessState.now())
        return f"it differs in {', '.join(differences)}" if differences else None
