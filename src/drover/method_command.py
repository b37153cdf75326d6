"""Grid Engine's suspend_method, resume_method and terminate_method (queue_conf(5)): a signal, or
a command with its arguments. Pure: parsing, checking and placeholder expansion. Standard
library only, at the level of drover.records: drover.toml's schema checks the settings with it,
and the shepherd, which imports nothing of the core, reads and expands them with it.

queue_conf(5): "If no executable path is given, Grid Engine takes the specified parameter entries
as the signal to be delivered instead of the default signal. A signal must be either a positive
number or a signal name with the SIG prefix, as printed by kill -l (e.g. SIGTERM)." and "If an
executable path is given (it must be an absolute path starting with a "/"); then this command,
together with its arguments, is started ... The following special variables are expanded at
runtime": $host, $ja_task_id, $job_owner, $job_id, $job_name, $queue, $job_pid, $sge_cell,
$sge_root.

The command line is split into words as a shell would (shlex) when it is read, and each word's
placeholders are expanded afterwards: a job's name lands in one argument whatever characters it
holds, and no shell reads it. A command that needs a shell names one (/bin/sh -c '...').
"""

from __future__ import annotations

import re
import shlex
import signal
from collections.abc import Callable, Mapping
from dataclasses import dataclass

METHOD_NAMES = ("suspend_method", "resume_method", "terminate_method")
# queue_conf(5)'s placeholders, and $task_id, which Drover's own documents call the array index.
PLACEHOLDERS = ("host", "ja_task_id", "task_id", "job_owner", "job_id", "job_name", "queue", "job_pid",
                "sge_cell", "sge_root")
# A placeholder in any of Grid Engine's configured commands (methods, checkpoint(5)'s commands,
# sge_pe(5)'s procedures): $name or ${name}, the name spelled as a shell variable's. One
# definition for all of them: what a placeholder is must not depend on where it is written.
PLACEHOLDER = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")
MAX_METHOD_BYTES = 4096
MAX_NOTIFY_S = 3600  # a queue's notify time (qsub -notify): an hour at most


@dataclass(frozen=True, slots=True)
class SignalMethod:
    """Deliver this signal to the job's process group instead of the default action."""

    signum: int

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name


@dataclass(frozen=True, slots=True)
class CommandMethod:
    """Start this command (its words, placeholders not yet expanded) instead of signalling."""

    argv: tuple[str, ...]

    @property
    def path(self) -> str:
        return self.argv[0]


Method = SignalMethod | CommandMethod


def parse_method(name: str, text: str) -> Method:
    """A method's setting as a signal or a command. Raises ValueError, naming the method."""
    text = text.strip()
    if not text:
        raise ValueError(f"{name}: empty; leave it unset for the default")
    if len(text.encode()) > MAX_METHOD_BYTES:
        raise ValueError(f"{name}: longer than {MAX_METHOD_BYTES} bytes")
    if text.startswith("/"):
        try:
            words = tuple(shlex.split(text))
        except ValueError as error:
            raise ValueError(f"{name}: {text!r}: {error}") from None
        for word in words:
            for placeholder in placeholder_names(word):
                if placeholder not in PLACEHOLDERS:
                    raise ValueError(f"{name}: unknown placeholder ${placeholder}; known: "
                                     + ", ".join(f"${p}" for p in PLACEHOLDERS))
        if placeholder_names(words[0]):
            raise ValueError(f"{name}: the command's path {words[0]!r} may not hold a placeholder")
        return CommandMethod(words)
    return SignalMethod(parse_signal(name, text))


def parse_signal(name: str, text: str) -> int:
    """A signal by name with the SIG prefix (SIGUSR1) or a positive number, as queue_conf(5) says;
    SIGKILL and SIGSTOP too, which cannot be caught but can be sent."""
    if text.isdigit():
        number = int(text)
        valid = {int(s) for s in signal.valid_signals()}
        if number in valid:
            return number
        raise ValueError(f"{name}: {text} is not a signal number on this system")
    if text.upper().startswith("SIG") and text.upper() in signal.Signals.__members__:
        return int(signal.Signals[text.upper()])
    raise ValueError(f"{name}: unknown signal {text!r} (a name with the SIG prefix, as kill -l prints it, "
                     "or a number; a command needs an absolute path)")


def expand(argv: tuple[str, ...], facts: Mapping[str, object]) -> list[str]:
    """The command's words with each $placeholder (or ${placeholder}) replaced by its fact; one
    without a fact becomes empty."""

    def value(name: str) -> str:
        fact = facts.get(name)
        return "" if fact is None else str(fact)

    return [substitute(word, value) for word in argv]


def placeholder_names(text: str) -> list[str]:
    """The names of the placeholders in `text`, in order."""
    return [found[1] or found[2] for found in PLACEHOLDER.finditer(text)]


def substitute(text: str, value: Callable[[str], str | None]) -> str:
    """`text` with each placeholder replaced by `value(name)`; one for which that is None is
    left as it is (a value only a later step knows, such as the shepherd's $job_pid)."""

    def one(found: re.Match[str]) -> str:
        replaced = value(found[1] or found[2])
        return found[0] if replaced is None else replaced

    return PLACEHOLDER.sub(one, text)


def methods_in_effect(node: Mapping[str, str | None], queue: Mapping[str, str | None]) -> dict[str, Method]:
    """The methods an attempt uses: the queue's where it sets one, else the node's; a name left
    out keeps Drover's default action. Raises ValueError for a bad one, naming it."""
    chosen: dict[str, Method] = {}
    for name in METHOD_NAMES:
        text = queue.get(name) or node.get(name)
        if text:
            chosen[name] = parse_method(name, text)
    return chosen


def describe(method: Method) -> str:
    return method.name if isinstance(method, SignalMethod) else shlex.join(method.argv)
