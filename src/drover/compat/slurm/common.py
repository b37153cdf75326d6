"""What the Slurm front ends share: messages in Slurm's words, users, job lists, the version."""

from __future__ import annotations

import os
import pwd
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

from drover.compat.optiontable import Option, UsageError, parse_gnu
from drover.core.units import format_duration

if TYPE_CHECKING:
    from drover.client.client import Client
    from drover.protocol.api import JobInfo

# The Slurm release whose commands the front ends follow, as `--version` prints it: tools read it
# to choose between spellings of options and output.
VERSION = "slurm 23.11.0"

# Drover's task states in Slurm's words (squeue's compact codes, sacct's long ones).
STATES = {
    "pending": ("PD", "PENDING"), "held": ("PD", "PENDING"), "dispatched": ("R", "RUNNING"),
    "running": ("R", "RUNNING"), "suspended": ("S", "SUSPENDED"), "completing": ("CG", "COMPLETING"),
    "completed": ("CD", "COMPLETED"), "failed": ("F", "FAILED"), "cancelled": ("CA", "CANCELLED"),
    "timeout": ("TO", "TIMEOUT"), "out_of_memory": ("OOM", "OUT_OF_MEMORY"), "node_fail": ("NF", "NODE_FAIL"),
}


# slurm_strerror(SLURMCTLD_COMMUNICATIONS_CONNECTION_ERROR): what every Slurm command says when no
# controller answers (the commands never start one).
CONNECT_FAILURE = "Unable to contact slurm controller (connect failure)"


def slurm_words(error: BaseException) -> str:
    """A Drover error as a Slurm command says it: no cluster answering is Slurm's connect
    failure; anything else, Drover's own words."""
    from drover.core.errors import Unreachable

    return CONNECT_FAILURE if isinstance(error, Unreachable) else str(error)


class Refused(Exception):
    """A command line the real command refuses: the message is printed, the exit status is 1."""


def iterate_seconds(text: str | None) -> int:
    """-i/--iterate, read as squeue and sinfo read it (atoi): its leading digits, else 0, which
    they refuse."""
    digits = ""
    for char in (text or "").strip():
        if not ("0" <= char <= "9") or len(digits) > 9:
            break
        digits += char
    return int(digits or "0")


def command_line(command: str, argv: list[str] | None, options: Sequence[Option],
                 hint: bool = True) -> tuple[list[tuple[Option, str | None]], list[str]] | int:
    """The options and operands as getopt_long gives them (operands permuted, as the query
    commands' getopt does); or the exit status when there is nothing more to do: a command line
    getopt refuses (reported in its words), or `--autocomplete` (answered). (`squeue | head -1`
    ends quietly through the installed command's wrapper, cli/pipes.py; SIGPIPE stays ignored,
    so a connection the controller closes is an error the command reports, not a silent death.)"""
    try:
        found, operands = parse_gnu(sys.argv[1:] if argv is None else argv, options, permute=True)
    except UsageError as error:
        return usage_error(command, str(error), hint=hint)
    completion = autocomplete(found, options)
    return (found, operands) if completion is None else completion


def reported(command: str, body: Callable[[], int]) -> int:
    """Run `body`; a refusal (Refused, UnknownField) or the cluster's error ends the command with
    `COMMAND: error: MESSAGE` and status 1, as the real command's errors do."""
    from drover.compat.slurm.printfields import UnknownField
    from drover.core.errors import DroverError

    try:
        return body()
    except (Refused, UnknownField, DroverError) as error:
        print(f"{command}: error: {slurm_words(error)}", file=sys.stderr)
        return 1


def autocomplete(found: list[tuple[Option, str | None]], options: Iterable[Option]) -> int | None:
    """`--autocomplete=PREFIX` (what bash completion sends): every long option that starts with
    PREFIX, one a line, `=` after those that take a value; then exit 0. None if not asked."""
    prefix = next((value for option, value in found if option.key == "autocomplete"), None)
    if prefix is None:
        return None
    for option in options:
        for name in option.names:
            if name.startswith("--") and name.startswith(prefix) and name != "--autocomplete":
                print(name + ("=" if option.arity.value == "required" else ""))
    return 0


def warn(command: str, message: str) -> None:
    print(f"{command}: warning: {message}", file=sys.stderr)


def fail(command: str, message: str, code: int = 1) -> int:
    print(f"{command}: error: {message}", file=sys.stderr)
    return code


def usage_error(command: str, message: str, hint: bool = True) -> int:
    """What getopt prints for a command line it refuses, then the real command's hint (sacct
    and sstat give none)."""
    print(f"{command}: {message}", file=sys.stderr)
    if hint:
        print(f'Try "{command} --help" for more information', file=sys.stderr)
    return 1


def approximated(command: str, option: Option, environ: dict[str, str]) -> None:
    """An option Drover honours only in part: a warning on stderr, or, with
    DROVER_COMPAT_STRICT=1, a refusal (docs/compat.md: Strictness)."""
    if environ.get("DROVER_COMPAT_STRICT") == "1":
        raise Refused(f"{option.names[-1]} is only approximated by Drover ({option.note}); "
                      "refused because DROVER_COMPAT_STRICT is set")
    warn(command, f"{option.names[-1]}: {option.note}")


def slurm_id(job_id: int, index: int, is_array: bool) -> str:
    return f"{job_id}_{index}" if is_array else str(job_id)


def elapsed(seconds: float | None) -> str:
    """Slurm's [D-]HH:MM:SS (always with hours, as sacct prints)."""
    if seconds is None:
        return "00:00:00"
    text = format_duration(seconds)
    return text if text.count(":") == 2 else "00:" + text


def current_user() -> str:
    return pwd.getpwuid(os.getuid()).pw_name


def user_names(text: str, invalid: Callable[[str], None] | None = None, message: str = "Invalid user: {}"
               ) -> set[str]:
    """A comma-separated list of user names or ids, as Slurm's commands take them. An unknown
    user is refused with `message`, or passed to `invalid` (squeue reports it and goes on)."""
    names: set[str] = set()
    for word in filter(None, (w.strip() for w in text.split(","))):
        try:
            names.add(pwd.getpwuid(int(word)).pw_name if (word.isascii() and word.isdigit()) else pwd.getpwnam(word).pw_name)
        except (KeyError, ValueError):
            if invalid is None:
                raise Refused(message.format(word)) from None
            invalid(word)
    return names


def split_list(text: str) -> list[str]:
    return [word.strip() for word in text.split(",") if word.strip()]


def environment_defaults(options: Iterable[Option], variables: dict[str, str], environ: dict[str, str]
                         ) -> list[tuple[Option, str | None]]:
    """Options set by input environment variables (SQUEUE_STATES=...), as if given first on the
    command line: `variables` maps a variable to the option key it stands for."""
    by_key = {option.key: option for option in options}
    out: list[tuple[Option, str | None]] = []
    for variable, key in variables.items():
        if variable in environ:
            option = by_key[key]
            out.append((option, environ[variable] if option.arity.value != "none" else None))
    return out


def recent(infos: list[JobInfo], now: float, min_job_age_s: int) -> list[JobInfo]:
    """The jobs Slurm still knows: those not ended, and those ended at most MinJobAge ago (the
    cluster's [compat] min_job_age_s)."""
    return [info for info in infos if info.ended_at is None or now - info.ended_at <= min_job_age_s]


def load_jobs(client: Client, ids: list[int] | None, include_ended: bool, user: str | None = None,
              keep: Callable[[JobInfo], bool] | None = None) -> list[JobInfo]:
    """The jobs, each with its tasks: those named (unknown ones left out), or all of them; `keep`
    chooses among the listing's summaries before their tasks are fetched."""
    from drover.core.errors import NotFound

    wanted = ids if ids is not None else [
        job.id for job in client.jobs(include_ended=include_ended, user=user, limit=100000)
        if keep is None or keep(job)]
    found = []
    for job_id in wanted:
        try:
            found.append(client.job(job_id))
        except NotFound:  # never known, or gone since the listing
            continue
    return found
