"""How a start order names the site's commands without carrying them (execd/site_methods.py
resolves the names on the node): the controller lists the methods its drover.toml sets for the
job's queue and parallel environment, each by the SHA-256 of its command, for the node's log and
refusals; and it passes on the signals an operator chose with `drover queue set`."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

from drover.config_schema import ParallelEnvironmentSection, QueueSection
from drover.core.parallel_env import parse_procedure
from drover.method_command import METHOD_NAMES, SignalMethod, parse_method

NONE = "NONE"  # an operator's `drover queue set Q suspend_method=NONE`: the node's [execd] one, else the default


def digest(command: str) -> str:
    """How an order names one of the controller's commands (for the node's log, never to run)."""
    return hashlib.sha256(command.encode()).hexdigest()


def configured_methods(queue: QueueSection | None, pe: ParallelEnvironmentSection | None) -> dict[str, str]:
    """What a drover.toml sets for a job's queue and parallel environment: order key → digest.
    The controller puts this in each order; the node refuses an order naming one it lacks."""
    named: dict[str, str] = {}
    if queue is not None:
        for key in ("prolog", "epilog", "starter_method", *METHOD_NAMES):
            value = getattr(queue, key)
            if value:
                named[f"queue_{key}"] = digest(value)
    if pe is not None:
        for key, value in (("pe_start", pe.start_proc_args), ("pe_stop", pe.stop_proc_args)):
            if parse_procedure(key, value) is not None:
                named[key] = digest(value or "")
    return named


def is_signal(method: str, text: str) -> bool:
    """A method's setting names a signal (not a command, nothing malformed)."""
    try:
        return isinstance(parse_method(method, text), SignalMethod)
    except ValueError:
        return False


def operator_signals(settings: Mapping[str, str]) -> dict[str, str]:
    """The queue methods `drover queue set` changed (a queue record's settings), as an order
    carries them: a signal, or NONE. A command set before commands were refused there is not
    sent: the node's drover.toml decides."""
    chosen = {}
    for method in METHOD_NAMES:
        text = settings.get(method, "").strip()
        if text.upper() == NONE:
            chosen[method] = NONE
        elif text and is_signal(method, text):
            chosen[method] = text
    return chosen
