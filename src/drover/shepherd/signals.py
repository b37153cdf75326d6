"""The shepherd's signals: no signal anyone sends can kill it.

GE shepherd, Initialization, first step: "Setup signal handlers and signal masks" — before it
reads its configuration. So `SignalInbox()` is the first thing the shepherd does, and the fork
server forks it with every signal blocked, so that nothing lands in between. From then on every
catchable signal is either

  handled  a handler that does nothing but wake the supervising loop (Python's wakeup fd carries
           the signal's number); the loop decides what it means (supervise.py). A handled signal
           reverts to its default in the job: exec resets caught signals.
  blocked  the synchronous faults (FAULTS). A handler would loop forever on a real fault (the
           faulting instruction runs again when it returns); a blocked real fault is still fatal
           (the kernel unblocks and defaults it), while one sent with kill() waits in the pending
           set, where `drain_faults` finds it, with its sender, for the trace.
  default  SIGCHLD only: its default action is to ignore it, and SIG_IGN would make the kernel
           reap the job before wait4 could measure it.

The job and the methods (prolog, epilog) start with the default disposition of every signal and
an empty mask: `reset_for_exec` runs between fork and exec.
"""

from __future__ import annotations

import _signal  # type: ignore[import-not-found]  # the C module under `signal`; it has no stub
import os
import signal
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager

# The signal module's wrappers turn every number into an enum and back, and try to make one of
# each handler (an exception for every function): ~3 µs a call, a tenth of that underneath. The
# shepherd sets about 60 dispositions per attempt, and its child sets them back: the C functions
# take plain ints (0.15 -> 0.014 ms for the 54 handled signals on this machine).
_set_disposition: Callable[[int, object], object] = _signal.signal
_set_mask: Callable[[int, Iterable[int]], set[int]] = _signal.pthread_sigmask
_DEFAULT: object = _signal.SIG_DFL

UNCATCHABLE = frozenset({signal.SIGKILL, signal.SIGSTOP})
FAULTS = frozenset({signal.SIGSEGV, signal.SIGBUS, signal.SIGILL, signal.SIGFPE, signal.SIGTRAP, signal.SIGSYS})
LEFT_DEFAULT = frozenset({signal.SIGCHLD})
CATCHABLE = frozenset(signal.valid_signals()) - UNCATCHABLE
HANDLED = CATCHABLE - FAULTS - LEFT_DEFAULT
_HANDLED_NUMBERS = tuple(sorted(int(signum) for signum in HANDLED))
_CATCHABLE_NUMBERS = tuple(sorted(int(signum) for signum in CATCHABLE))
_FAULT_NUMBERS = tuple(sorted(int(signum) for signum in FAULTS))


class SignalInbox:
    """Install the shepherd's dispositions (see the module's docstring); hand over what came."""

    def __init__(self) -> None:
        self._read_fd, self._write_fd = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self._early: list[int] = []  # what came before the job started, kept for supervise
        signal.set_wakeup_fd(self._write_fd, warn_on_full_buffer=False)  # each signal's number lands here
        # What each was before, for `close`: a handler must exist for the wakeup fd to fire.
        self._before = [(signum, _set_disposition(signum, _wake)) for signum in _HANDLED_NUMBERS]
        self._before.append((signal.SIGCHLD, _set_disposition(signal.SIGCHLD, _DEFAULT)))
        # Last: what was blocked until now (the fork server forks with all blocked) arrives now.
        _set_mask(signal.SIG_SETMASK, _FAULT_NUMBERS)

    def fileno(self) -> int:
        return self._read_fd

    def close(self) -> None:
        """Back to how a shepherd waits for its order (the fork server forks it so): every signal
        blocked, each disposition as it was, the inbox's pipe closed. A shepherd that serves
        another attempt after this one (execd/warm_shepherds.py) starts it as a new one would."""
        block_all()
        signal.set_wakeup_fd(-1)
        for signum, before in self._before:
            _set_disposition(signum, _DEFAULT if before is None else before)  # None: set outside Python
        os.close(self._read_fd)
        os.close(self._write_fd)

    def drain(self) -> list[int]:
        """The numbers of the handled signals that came since the last call."""
        early, self._early = self._early, []
        try:
            return early + list(os.read(self._read_fd, 512))
        except BlockingIOError:
            return early

    def stop_requested(self) -> bool:
        """Whether a SIGTERM (stop the job) has come; what came stays for `drain`."""
        self._early = self.drain()
        return signal.SIGTERM in self._early

    def drain_faults(self) -> list[str]:
        """Fault signals someone sent with kill(), taken from the pending set: lines for the trace."""
        lines: list[str] = []
        while True:
            info = signal.sigtimedwait(FAULTS, 0)
            if info is None:
                return lines
            lines.append(f"{time.time():.6f} ignored {signal.Signals(info.si_signo).name}"
                         f" from pid {info.si_pid} (uid {info.si_uid})")


def discard_pending() -> int:
    """Take every blocked signal that waits in the pending set, and drop it: what was sent to a
    shepherd between two attempts was meant for neither. How many were dropped."""
    dropped = 0
    while signal.sigtimedwait(CATCHABLE, 0) is not None:
        dropped += 1
    return dropped


def signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"SIGRTMIN+{signum - signal.SIGRTMIN}" if signum >= signal.SIGRTMIN else f"signal {signum}"


def reset_for_exec() -> None:
    """In a child between fork and exec (Popen's preexec_fn): every disposition to its default
    and an empty mask, so the job, prolog and epilog inherit nothing of the shepherd's."""
    signal.set_wakeup_fd(-1)
    for signum in _CATCHABLE_NUMBERS:
        _set_disposition(signum, _DEFAULT)
    _set_mask(signal.SIG_SETMASK, ())


def block_all() -> set[int]:
    """Block every catchable signal; the mask as it was (the fork server forks in between)."""
    return _set_mask(signal.SIG_BLOCK, _CATCHABLE_NUMBERS)


@contextmanager
def held_signals() -> Iterator[None]:
    """Hold every signal while a child is forked: the child starts with all of them blocked, so
    none can run the shepherd's handler in it (and wake the shepherd's loop) before
    `reset_for_exec` has put them back to their defaults. They reach the shepherd afterwards."""
    before = block_all()
    try:
        yield
    finally:
        _set_mask(signal.SIG_SETMASK, before)


def _wake(signum: int, frame: object) -> None:
    """Do nothing: the wakeup fd carries the signal to the supervising loop."""
