"""A shepherd serves another attempt only if the kernel says it is as it was before its first
(execd/shepherd_state.py): each change an attempt could leave is found, in a child process of
this test (whose own state is left alone)."""

from __future__ import annotations

import ctypes
import gc
import os
import resource
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable

import pytest

from drover.execd.shepherd_state import Fitness


def verdict_in_child(change: Callable[[], object]) -> str:
    """Fitness taken in a fresh child, `change` made, then why it may not serve again ("" if it may)."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.close(read_end)
            # As in a shepherd, the collector is off: garbage this test's process left (a worker
            # that ran other tests first) must not be freed between the two measures.
            gc.collect()
            gc.disable()
            fitness = Fitness.at_start(without=[])
            change()
            os.write(write_end, (fitness.why_not_again() or "").encode())
            code = 0
        finally:
            os._exit(code)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as reader:
        said = reader.read().decode()
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    return said


def _sleeping_thread() -> None:
    threading.Thread(target=time.sleep, args=(5,), daemon=True).start()


def _core_limit_changed() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_CORE)
    resource.setrlimit(resource.RLIMIT_CORE, (1 if soft == 0 else 0, hard))


def _child_left() -> None:
    if os.fork() == 0:
        time.sleep(5)
        os._exit(0)


CHANGES: dict[str, tuple[Callable[[], object], str]] = {
    "nothing": (lambda: None, ""),
    "umask": (lambda: os.umask(0o002), "directory"),
    "working directory": (lambda: os.chdir("/tmp"), "directory"),
    "nice": (lambda: os.setpriority(os.PRIO_PROCESS, 0, 5), "scheduling"),
    "affinity": (lambda: os.sched_setaffinity(0, {min(os.sched_getaffinity(0))}), "scheduling"),
    "a descriptor left open": (lambda: os.open("/dev/null", os.O_RDONLY), "descriptors"),
    "a signal handled": (lambda: signal.signal(signal.SIGUSR2, lambda *_: None), "signals"),
    "a signal blocked": (lambda: signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR2}), "signals"),
    "an interval timer": (lambda: signal.setitimer(signal.ITIMER_REAL, 60), "signals"),
    "the environment": (lambda: os.environ.__setitem__("DROVER_LEFT_BEHIND", "1"), "environment"),
    "a soft limit": (_core_limit_changed, "limits"),
    "a thread": (_sleeping_thread, "threads"),
    "a child process": (_child_left, "a child process was left"),
    "a session of its own": (os.setsid, "terminal"),
    "a child subreaper": (lambda: ctypes.CDLL(None).prctl(36, 1, 0, 0, 0), "terminal"),  # PR_SET_CHILD_SUBREAPER
}


@pytest.mark.parametrize("what", sorted(CHANGES))
def test_each_change_an_attempt_could_leave_is_found(what: str) -> None:
    change, expected = CHANGES[what]
    if what == "affinity" and len(os.sched_getaffinity(0)) < 2:
        pytest.skip("one CPU: no narrower affinity to set")
    said = verdict_in_child(change)
    if expected:
        assert expected in said
    else:
        assert said == ""


# In a fresh interpreter, as small as a shepherd forked from the fork server: a child forked
# from this test's worker starts from whatever the tests before left in it (its heap, its
# threads' arenas), which it may give back while it grows, and the measure says less.
GROWN = """
import gc, sys
gc.disable()
from drover.execd.shepherd_state import Fitness, resident_kib
fitness = Fitness.at_start(without=[])
first = resident_kib()
grown = b"x" * (64 * 1024 * 1024)
print(fitness.why_not_again() or "", first, resident_kib(), sep="|")
"""


def test_memory_grown_past_the_bound_ends_it() -> None:
    result = subprocess.run([sys.executable, "-c", GROWN], capture_output=True, text=True, timeout=60,
                            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert result.returncode == 0, result.stderr
    said, before_kib, after_kib = result.stdout.strip().split("|")
    assert said == "its memory grew", (before_kib, after_kib)
