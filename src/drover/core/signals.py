"""The signals a user may send a job (`drover signal`, `scancel --signal`, `--signal SIG@T`,
`--checkpoint-signal`): those that mean something to a job. Pure.

The others are refused before they reach a node: SIGSEGV, SIGABRT, SIGBUS, SIGILL, SIGFPE,
SIGTRAP and SIGSYS report a fault of the receiver and mean nothing sent by a user; SIGCHLD, SIGIO
and SIGPIPE are the kernel's; SIGKILL and SIGSTOP cannot be caught but do mean something (the
node sends them to the job's process group). The node keeps its own line of defence
(execd/job_signals.py): this list is what the controller promises not to ask for.
"""

from __future__ import annotations

import signal

from drover.core.errors import BadRequest

JOB_SIGNALS = frozenset(signal.Signals[name] for name in (
    "SIGHUP", "SIGINT", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGALRM", "SIGTERM", "SIGCONT", "SIGSTOP",
    "SIGTSTP", "SIGKILL", "SIGWINCH", "SIGURG", "SIGTTIN", "SIGTTOU", "SIGXCPU", "SIGXFSZ", "SIGVTALRM",
    "SIGPROF", "SIGPWR",
))


def job_signal(text: str, option: str = "the signal") -> signal.Signals:
    """A signal by name (USR1, SIGUSR1, usr1) or number (10), if it is one a job may be sent."""
    word = text.strip().upper()
    found: signal.Signals | None
    if word.isascii() and word.isdigit() and len(word) <= 3:
        try:
            found = signal.Signals(int(word))
        except ValueError:
            found = None
    else:
        found = signal.Signals.__members__.get(word if word.startswith("SIG") else "SIG" + word)
    if found is None or found not in JOB_SIGNALS:
        allowed = " ".join(s.name[3:] for s in sorted(JOB_SIGNALS))
        raise BadRequest(f"{option}: {text!r} is not a signal a job may be sent; allowed: {allowed}")
    return found
