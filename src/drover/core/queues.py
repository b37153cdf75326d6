"""Queues as the controller runs them: drover.toml's [queues.NAME] with what operators and owners
changed since (`drover queue stop|start|drain|set`), and the queues users made themselves. Pure.

jobd's queues have an owner, a priority, a nice and a state; Grid Engine's cluster queues are
enabled or disabled and have a calendar; Slurm's partitions are UP, DOWN, DRAIN or INACTIVE. A
Drover queue has two switches, after Slurm:
- starting: its jobs may start (`drover queue stop` turns it off: Slurm's DOWN, `qmod -d`);
- accepting: it takes new jobs (`drover queue drain` turns it off: Slurm's DRAIN).
Both off is INACTIVE; `drover queue start` turns both on. Its time window, when it has one, also
keeps its jobs from starting outside it (Grid Engine's calendars, jobd's night queues).

Settings are written as `drover queue set` takes them (text: KEY=VALUE), checked by `parse_setting`;
a change is kept as that text, so what an operator typed is what `drover queue show` shows.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum

from drover.core.limits import MAX_MEMORY_MIB, MAX_TIME_LIMIT_S
from drover.core.queue_windows import Window, parse_window
from drover.core.units import parse_duration_s, parse_memory_mib
from drover.method_command import MAX_NOTIFY_S, METHOD_NAMES, CommandMethod, parse_method

DEFAULT = "default"
MAX_QUEUES_PER_USER = 20  # queues one user may make (`[controller] user_queues`)
MAX_LIMIT = 1_000_000


class QueueState(StrEnum):
    OPEN = "open"  # takes jobs, starts them
    STOPPED = "stopped"  # takes jobs, starts none (Slurm's DOWN, Grid Engine's disabled)
    DRAINING = "draining"  # starts the jobs it has, takes no new ones (Slurm's DRAIN)
    INACTIVE = "inactive"  # neither (Slurm's INACTIVE)


@dataclass(frozen=True, slots=True)
class QueueRecord:
    """What the store keeps of a queue beyond drover.toml: its switches, why they were turned,
    its changed settings, and for a queue made with `drover queue create`, who made it."""

    name: str
    starting: bool = True
    accepting: bool = True
    reason: str | None = None
    settings: Mapping[str, str] = field(default_factory=dict)  # KEY → text, as `drover queue set` took it
    created_by: str | None = None  # a queue made with `drover queue create`; None: drover.toml's or default
    changed_at: float = 0.0

    @property
    def state(self) -> QueueState:
        if self.starting:
            return QueueState.OPEN if self.accepting else QueueState.DRAINING
        return QueueState.STOPPED if self.accepting else QueueState.INACTIVE

    def switched(self, action: str, reason: str, now: float) -> QueueRecord:
        """After `drover queue stop|start|drain`."""
        if action == "stop":
            return replace(self, starting=False, reason=reason or self.reason, changed_at=now)
        if action == "drain":
            return replace(self, accepting=False, reason=reason or self.reason, changed_at=now)
        if action == "start":
            return replace(self, starting=True, accepting=True, reason=None, changed_at=now)
        raise ValueError(f"unknown queue action {action!r}; known: stop, start, drain")


@dataclass(frozen=True, slots=True)
class Queue:
    """A queue's settings in effect."""

    name: str
    record: QueueRecord
    owner: str | None = None
    priority: int = 0
    nice: int = 0
    nodes: tuple[str, ...] | None = None  # name patterns; None: every node
    max_running: int | None = None
    max_running_per_user: int | None = None
    max_memory_mib: int | None = None
    default_time_s: int | None = None
    max_time_s: int | None = None
    window: Window | None = None
    prolog: str | None = None
    epilog: str | None = None
    mail_finished: bool = False  # jobd's: mail when its last job finishes
    defined_in: str = "built in"
    # Grid Engine's queue_conf(5) suspend_method, resume_method, terminate_method (None: the
    # node's, else the default) and notify, for jobs submitted with --notify (docs/methods.md).
    suspend_method: str | None = None
    resume_method: str | None = None
    terminate_method: str | None = None
    notify_s: int = 60

    @property
    def state(self) -> QueueState:
        return self.record.state

    def node_names(self, names: Iterable[str]) -> frozenset[str] | None:
        """The nodes (of `names`) its jobs may use; None: every node."""
        if self.nodes is None:
            return None
        return frozenset(name for name in names if any(fnmatch.fnmatchcase(name, pattern) for pattern in self.nodes))

    def may_manage(self, user: str) -> bool:
        """Its owner manages it (the cluster's operators manage every queue)."""
        return self.owner is not None and self.owner == user


# The settings `drover queue set` takes, with the drover.toml key each stands for.
SETTINGS = {
    "priority": "priority", "nice": "nice", "nodes": "nodes", "max_running": "max_running",
    "max_running_per_user": "max_running_per_user", "max_memory": "max_memory_mib",
    "default_time": "default_time_s", "max_time": "max_time_s", "window": "window", "owner": "owner",
    "mail_finished": "mail_finished",
    # Grid Engine's queue_conf(5) methods and notify (docs/methods.md): operators only, and a
    # signal or NONE only: a command would run as the owner of every job of the queue, so it is
    # root's, in drover.toml.
    "suspend_method": "suspend_method", "resume_method": "resume_method", "terminate_method": "terminate_method",
    "notify": "notify_s",
}
# What the owner of a queue may change on it; the rest (where its jobs run, how they weigh
# against everyone else's, what they may ask for) stays the operators'.
OWNER_SETTINGS = frozenset({"nice", "max_running", "max_running_per_user", "default_time", "window", "mail_finished"})
# Limits a change may lift altogether (Slurm's MaxTime=UNLIMITED).
UNLIMITED_SETTINGS = frozenset({"max_running", "max_running_per_user", "max_memory", "default_time", "max_time"})
UNLIMITED = frozenset({"UNLIMITED", "INFINITE", "NONE"})


def parse_setting(key: str, text: str) -> object:
    """One setting's value from its text ("" is never passed here: it clears a change). Raises
    ValueError with what is wrong."""
    if key not in SETTINGS:
        raise ValueError(f"unknown queue setting {key!r}; known: {', '.join(SETTINGS)}")
    text = text.strip()
    if key in UNLIMITED_SETTINGS and text.upper() in UNLIMITED:
        return None  # no limit, whatever drover.toml says
    if key == "priority":
        return _whole(key, text, 0, 1_000_000)
    if key == "nice":
        return _whole(key, text, 0, 19)
    if key in ("max_running", "max_running_per_user"):
        return _whole(key, text, 1, MAX_LIMIT)
    if key == "max_memory":
        value = parse_memory_mib(text)
        if not 1 <= value <= MAX_MEMORY_MIB:
            raise ValueError(f"max_memory must be between 1M and {MAX_MEMORY_MIB}M")
        return value
    if key in ("default_time", "max_time"):
        seconds = parse_duration_s(text)
        if not 1 <= seconds <= MAX_TIME_LIMIT_S:
            raise ValueError(f"{key} must be between 1 second and {MAX_TIME_LIMIT_S} seconds")
        return seconds
    if key == "window":
        return parse_window(text)
    if key == "nodes":
        patterns = tuple(part.strip() for part in text.split(",") if part.strip())
        if not patterns or any(any(c in pattern for c in " \t\n/") for pattern in patterns):
            raise ValueError(f"nodes takes node names or patterns (node*, gpu[1-4]), comma separated, not {text!r}")
        return patterns
    if key == "mail_finished":
        if text.lower() not in ("yes", "no", "true", "false", "on", "off"):
            raise ValueError(f"mail_finished takes yes or no, not {text!r}")
        return text.lower() in ("yes", "true", "on")
    if key in METHOD_NAMES:
        if text.upper() == "NONE":
            return None  # Drover's default action, whatever drover.toml says
        if isinstance(parse_method(key, text), CommandMethod):
            raise ValueError(command_refused(key))
        return text
    if key == "notify":
        seconds = int(text) if text.isdigit() else parse_duration_s(text)
        if not 0 <= seconds <= MAX_NOTIFY_S:
            raise ValueError(f"notify must be between 0 and {MAX_NOTIFY_S} seconds (a number of seconds, or "
                             f"HH:MM:SS), not {text!r}")
        return seconds
    if key == "owner":
        if not text or any(c in text for c in " \t\n:/"):
            raise ValueError(f"owner takes a user name, not {text!r}")
        return text
    raise AssertionError(key)


def command_refused(key: str) -> str:
    """Why `drover queue set` takes no command: it would run as the owner of every job of the
    queue, and commands are root's, in each node's drover.toml."""
    return (f"{key} takes a signal (SIGUSR1, a number) or NONE here; a command runs as the owner of each job of "
            f"the queue, so it is set by root in drover.toml ([queues.NAME] {key}) on each node, not with "
            "`drover queue set`")


def _whole(key: str, text: str, low: int, high: int) -> int:
    if not text.lstrip("-").isdigit() or not low <= int(text) <= high:
        raise ValueError(f"{key} takes a whole number from {low} to {high}, not {text!r}")
    return int(text)


def effective(name: str, section: object | None, record: QueueRecord | None) -> Queue:
    """The queue in effect: drover.toml's section (a config_schema.QueueSection, or None), then
    the record's changed settings over it."""
    record = record or QueueRecord(name)
    values: dict[str, object] = {}
    if section is not None:
        for key in ("owner", "priority", "nice", "max_running", "max_running_per_user", "max_memory_mib",
                    "default_time_s", "max_time_s", "prolog", "epilog", "mail_finished", *METHOD_NAMES, "notify_s"):
            values[key] = getattr(section, key, None)
        nodes = getattr(section, "nodes", None)
        values["nodes"] = tuple(nodes) if nodes is not None else None
        window = getattr(section, "window", None)
        values["window"] = parse_window(window) if window else None
    values = {key: value for key, value in values.items() if value is not None}
    for key, text in record.settings.items():
        if key in METHOD_NAMES and text.strip().startswith("/"):
            continue  # a command kept from before `drover queue set` refused them: drover.toml's holds
        values[SETTINGS[key]] = parse_setting(key, text)  # None: a limit lifted
    defined_in = ("drover queue create" if record.created_by is not None else
                  "drover.toml" if section is not None else "built in")
    if record.created_by is not None and "owner" not in record.settings:
        values["owner"] = record.created_by
    return Queue(name, record, defined_in=defined_in, **values)  # type: ignore[arg-type]  # values by setting name: each parsed to its field's type


def check_name(name: str) -> None:
    """A queue's name: what `--queue`, `-q` and `-p` can name, and a Slurm partition can be."""
    if not name or len(name) > 64 or not all(c.isalnum() or c in "_.-" for c in name) or name[0] in ".-":
        raise ValueError(f"a queue's name is 1 to 64 letters, digits, _ . - (not first . or -), not {name!r}")
