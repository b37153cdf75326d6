"""Checkpoint environments, Grid Engine's checkpoint(5): parse, check and expand them. Pure.

An environment is a table of drover.toml, `[checkpoints.NAME]`, that a job names with
`drover submit --checkpoint NAME` (qsub -ckpt NAME). Its keys are checkpoint(5)'s:

  interface        "application-level": Drover runs the environment's commands (ckpt_command to
                   checkpoint, migr_command to migrate, clean_command after the job); the job
                   script runs again on a restart (checkpoint(5): the restart_command "is not used
                   (even if it is configured) but the job script is invoked in case of a restart
                   instead"). "userdefined": the job checkpoints itself when it gets the signal.
                   Grid Engine's kernel-level interfaces (hibernator, cpr, cray-ckpt) need the
                   checkpointing facility of an operating system Linux does not have, and
                   "transparent" a checkpointing library linked into the job (Condor's standard
                   universe, long gone): Drover refuses them by name.
  ckpt_command, migr_command, restart_command, clean_command
                   "none", or a command line whose first word is an absolute path; words are
                   split as a shell would (quotes), never run by a shell. GE's placeholders
                   ($host, $job_owner, $job_id, $job_name, $queue, $job_pid, $ckpt_dir,
                   $ckpt_signal; and $task_id) are replaced word by word, so a job's name can
                   never become two arguments or a shell command.
  ckpt_dir         where the checkpoints go (the job gets it as $SGE_CKPT_DIR); placeholders too
  signal           what the job gets to checkpoint ("none": no signal)
  when             letters: s (on the node daemon's shutdown), m (periodically, every
                   min_cpu_interval_s of the job's run time), x (when the job is suspended: it is
                   checkpointed, stopped and requeued: migrated), n (no checkpoint), r (requeued,
                   not checkpointed, when its node is lost)
  min_cpu_interval_s  the period of 'm' (GE keeps it in the queue; here, in the environment)
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass

from drover.core.errors import BadRequest
from drover.core.signals import job_signal
from drover.method_command import placeholder_names, substitute

INTERFACES = ("application-level", "userdefined")
NOT_OFFERED = {
    "transparent": "it needs a checkpointing library linked into the job (Condor's standard universe), "
                   "which Linux jobs do not have",
    "hibernator": "it is a kernel-level interface: Linux has no kernel checkpointing that Drover could drive",
    "cpr": "it is SGI IRIX's kernel-level checkpointing, which Linux does not have",
    "cray-ckpt": "it is Cray UNICOS's kernel-level checkpointing, which Linux does not have",
    "kernel": "Linux has no kernel checkpointing that Drover could drive",
}
OCCASIONS = {
    "s": "checkpointed when the node daemon shuts down",
    "m": "checkpointed every min_cpu_interval_s of its run time",
    "x": "checkpointed, stopped and requeued (migrated) when suspended",
    "n": "no checkpoint is performed",
    "r": "requeued, not checkpointed, when its node is lost",
}
PLACEHOLDERS = ("host", "job_owner", "job_id", "job_name", "queue", "job_pid", "ckpt_dir", "ckpt_signal", "task_id")
COMMANDS = ("ckpt_command", "migr_command", "restart_command", "clean_command")
MAX_INTERVAL_S = 366 * 86400

Command = tuple[str, ...]


class CheckpointError(BadRequest):
    """A checkpoint environment, or a job's request of one, that cannot be used."""


@dataclass(frozen=True, slots=True)
class Environment:
    """One `[checkpoints.NAME]`, checked."""

    name: str
    interface: str
    ckpt_command: Command | None
    migr_command: Command | None
    restart_command: Command | None  # checked, kept, never run in place of the job (see above)
    clean_command: Command | None
    ckpt_dir: str | None
    signal: str | None  # a signal name, "SIGUSR2"
    when: str
    min_cpu_interval_s: int

    def command(self, which: str) -> Command | None:
        """An interface-level command: the userdefined interface runs none (GE: CKPT_USER)."""
        return getattr(self, which) if self.interface == "application-level" else None


def parse_environment(name: str, interface: str, commands: Mapping[str, str], ckpt_dir: str | None,
                      signal: str, when: str, min_cpu_interval_s: int) -> Environment:
    """Check one `[checkpoints.NAME]`; CheckpointError says which key is wrong and why."""
    if not re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", name):
        raise CheckpointError(f"checkpoint environment name {name!r}: letters, digits, '_', '.', '-' only")
    if interface not in INTERFACES:
        why = NOT_OFFERED.get(interface.lower())
        offered = " or ".join(repr(i) for i in INTERFACES)
        raise CheckpointError(f"interface {interface!r} is not offered" + (f": {why}" if why else "")
                              + f"; use {offered}")
    parsed = {key: parse_command(commands.get(key, "none"), key) for key in COMMANDS}
    if ckpt_dir is not None:
        if not ckpt_dir.startswith("/") or "\0" in ckpt_dir:
            raise CheckpointError(f"ckpt_dir must be an absolute path, not {ckpt_dir!r}")
        _check_placeholders(ckpt_dir, "ckpt_dir", ("job_pid", "ckpt_dir"))
    try:
        signal_name = None if signal.strip().lower() == "none" else job_signal(signal, "signal").name
    except BadRequest as error:
        raise CheckpointError(str(error)) from None
    if signal_name in ("SIGKILL", "SIGSTOP", "SIGTERM", "SIGTSTP", "SIGCONT"):
        raise CheckpointError(f"signal {signal!r} stops or resumes the job; a checkpoint needs a signal the job can "
                              "catch, such as USR2")
    if interface == "userdefined" and signal_name is None:
        raise CheckpointError("the userdefined interface needs a signal: the job checkpoints itself when it gets it")
    if interface == "application-level" and signal_name is None and parsed["ckpt_command"] is None and (
            parsed["migr_command"] is None):
        raise CheckpointError("the application-level interface needs a ckpt_command, a migr_command or a signal")
    if not 1 <= min_cpu_interval_s <= MAX_INTERVAL_S:
        raise CheckpointError(f"min_cpu_interval_s must be between 1 and {MAX_INTERVAL_S}, not {min_cpu_interval_s}")
    return Environment(name, interface, parsed["ckpt_command"], parsed["migr_command"], parsed["restart_command"],
                       parsed["clean_command"], ckpt_dir, signal_name, parse_when(when, "when"), min_cpu_interval_s)


def parse_command(text: str, what: str) -> Command | None:
    """"none", or a command line starting with an absolute path, split into words."""
    if text.strip().lower() == "none":
        return None
    try:
        words = tuple(shlex.split(text))
    except ValueError as error:
        raise CheckpointError(f"{what} {text!r}: {error}") from None
    if not words or not words[0].startswith("/") or "\0" in text:
        raise CheckpointError(f"{what} must be 'none' or a command starting with an absolute path, not {text!r}")
    if placeholder_names(words[0]):
        raise CheckpointError(f"{what}: the program must be named as it is, not with a placeholder ({words[0]!r})")
    _check_placeholders(text, what)
    return words


def _check_placeholders(text: str, what: str, refused: tuple[str, ...] = ()) -> None:
    for name in placeholder_names(text):
        if name not in PLACEHOLDERS or name in refused:
            allowed = " ".join("$" + p for p in PLACEHOLDERS if p not in refused)
            raise CheckpointError(f"{what}: unknown placeholder ${name}; known: {allowed}")


def parse_when(text: str, what: str = "-c") -> str:
    """checkpoint(5)'s `when`, or qsub -c's letters: some of s m x n r, each once; 'n' alone."""
    letters = text.strip()
    unknown = sorted(set(letters) - set(OCCASIONS))
    if not letters or unknown:
        raise CheckpointError(f"{what} {text!r}: use letters of s (shutdown), m (periodically), x (suspend), "
                              "n (never), r (requeue on node loss)")
    if len(set(letters)) != len(letters):
        raise CheckpointError(f"{what} {text!r}: each letter once")
    if "n" in letters and len(letters) > 1:
        raise CheckpointError(f"{what} {text!r}: n (no checkpoint) goes alone")
    return "".join(letter for letter in "smxnr" if letter in letters)


def parse_occasion(text: str) -> tuple[str | None, int | None]:
    """qsub -c: occasion letters, or an interval (hh:mm:ss, or Drover's 90s, 10m, 2h): (when,
    interval_s), one of them None."""
    word = text.strip()
    if word and set(word) <= set(OCCASIONS):
        return parse_when(word), None
    from drover.core.units import parse_duration_s

    try:
        seconds = parse_duration_s(word)
    except BadRequest:
        raise CheckpointError(f"-c {text!r}: occasion letters (s, m, x, n, r) or an interval hh:mm:ss") from None
    if not 1 <= seconds <= MAX_INTERVAL_S:
        raise CheckpointError(f"-c {text!r}: the interval must be between 1 s and {MAX_INTERVAL_S} s")
    return None, seconds


def in_effect(environment: Environment, when: str | None, interval_s: int | None) -> tuple[str, int | None]:
    """The job's occasions and its period of checkpoints. qsub(1): -c "overwrites the definitions
    of the when parameter"; an interval means 'm', and "the maximum of <interval> and the
    queue's minimum CPU interval is used"."""
    occasions = when if when is not None else environment.when
    if interval_s is not None and when is None:  # an interval asks for periodic checkpoints
        occasions = "".join(letter for letter in "smxr" if letter in occasions or letter == "m")
    if "m" not in occasions:
        return occasions, None
    return occasions, max(interval_s or 0, environment.min_cpu_interval_s)


def expand(command: Command, values: Mapping[str, str]) -> list[str]:
    """Each word with its placeholders replaced; a placeholder without a value stays as it is
    (the shepherd replaces $job_pid, which only it knows)."""
    return [substitute(word, values.get) for word in command]


def values_for(environment: Environment, *, job_id: int, task_id: int, job_name: str, owner: str, host: str,
               queue: str) -> dict[str, str]:
    """What the placeholders stand for in one attempt (all but $job_pid)."""
    values = {"host": host, "job_owner": owner, "job_id": str(job_id), "job_name": job_name, "queue": queue,
              "task_id": str(task_id), "ckpt_signal": environment.signal or "none"}
    values["ckpt_dir"] = expand((environment.ckpt_dir,), values)[0] if environment.ckpt_dir else ""
    return values


def for_attempt(environment: Environment, values: Mapping[str, str], when: str, interval_s: int | None,
                restarted: bool) -> dict[str, object]:
    """The environment as one attempt's shepherd gets it (records.AttemptCheckpoint)."""
    def command(which: str) -> list[str] | None:
        found = environment.command(which)
        return expand(found, values) if found is not None else None

    return {
        "name": environment.name,
        "interface": environment.interface,
        "ckpt_command": command("ckpt_command"),
        "migr_command": command("migr_command"),
        "clean_command": command("clean_command"),
        "ckpt_dir": values.get("ckpt_dir") or None,
        "signal": environment.signal,
        "when": when,
        "interval_s": interval_s,
        "restarted": restarted,
    }
