"""What Drover needs from an outer scheduler (Slurm, PBS, LSF) to run nodes inside its allocations.

Each outer scheduler is one module here with one class implementing `OuterScheduler`: pure
functions that build its commands' argument lists and read their output, so each is unit-tested
on its command lines (tests/unit/cluster/test_outer_slurm.py, test_outer_pbs.py,
test_outer_lsf.py). The controller's allocator runs the commands (in a thread, with a timeout)
and the worker (`drover alloc worker`, inside the allocation) reads its environment. To add one:
write the module, add it to `by_name` below and its name to core/allocations.MANAGERS, and test
its command lines (docs/inside-slurm.md, "Adding another outer scheduler").
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from drover.core.allocations import AllocationState

NODE_INDEX = "DROVER_NODE_INDEX"


@dataclass(frozen=True, slots=True)
class Request:
    """One allocation to ask for."""

    name: str  # its job name in the outer scheduler
    workers: int  # nodes
    time_limit_s: float
    script: str  # the path of the script it runs (written by the allocator)
    output: str  # where the outer scheduler writes the script's output (%j: its job id)
    partition: str | None = None  # Slurm's partition, PBS's or LSF's queue
    extra_args: tuple[str, ...] = ()
    # What every node's worker needs in its environment (the join token): the submit command
    # runs with it in its own environment, for the schedulers whose launchers on the other
    # nodes give a task the job's environment rather than the batch script's.
    environment: Mapping[str, str] = field(default_factory=dict)


class Refused(Exception):
    """The outer scheduler refused a command; the message is its own words."""


class OuterScheduler(Protocol):
    name: str
    # True: the submit command reads the batch script on its standard input (LSF's `bsub <
    # script`); False: it takes the script's path as its last argument.
    script_on_stdin: bool

    def submit(self, request: Request) -> list[str]:
        """The command that asks for the allocation."""

    def submitted_id(self, stdout: str) -> str:
        """The allocation's id from the submit command's output; Refused if there is none."""

    def output_file(self, output: str, name: str, allocation_id: str) -> str:
        """Where the allocation's output went, given the request's `output` and `name`."""

    def status(self, name_prefix: str, user: str, ids: Sequence[str]) -> list[str]:
        """The command that lists these live allocations (of this cluster, `name_prefix`, and
        this user)."""

    def answered(self, code: int, stdout: str, stderr: str) -> bool:
        """Whether the status command's output can be read: a command that exits non-zero
        only because some of the ids are no longer known still answered for the others."""

    def states(self, stdout: str) -> dict[str, AllocationState]:
        """Each listed allocation's state: QUEUED or RUNNING while it lives, ENDED or FAILED once
        it is over (those not listed have ended too)."""

    def cancel(self, ids: Sequence[str]) -> list[str]:
        """The command that ends these allocations."""

    def script(self, worker: Sequence[str], workers: int, environment: Mapping[str, str]) -> str:
        """The batch script: exports `environment`, then starts `worker` once on each of the
        allocation's nodes."""

    def allocation_id(self, environ: Mapping[str, str]) -> str | None:
        """Inside an allocation: its id."""

    def node_index(self, environ: Mapping[str, str]) -> int:
        """Inside an allocation: which of its nodes this is, from 0."""

    def time_left(self, allocation_id: str) -> list[str]:
        """The command that says how long the allocation has left."""

    def seconds_left(self, stdout: str) -> float | None:
        """Its output in seconds; None if it says nothing usable."""


def given_index(environ: Mapping[str, str]) -> int | None:
    """The node's index the batch script gave the worker it started there ($DROVER_NODE_INDEX),
    where the outer scheduler's own launcher does not number its tasks."""
    given = environ.get(NODE_INDEX, "")
    return int(given) if given.isascii() and given.isdigit() else None


def quoted(argv: Sequence[str]) -> str:
    return " ".join(shlex.quote(arg) for arg in argv)


def exports(environment: Mapping[str, str]) -> str:
    """Shell lines that export each name (checked: letters, digits, _) with its value, quoted."""
    lines = []
    for name, value in sorted(environment.items()):
        if not name.replace("_", "a").isalnum() or not name.isascii():
            raise ValueError(f"{name!r} is not an environment variable's name")
        lines.append(f"export {name}={shlex.quote(value)}\n")
    return "".join(lines)


def by_name(name: str) -> OuterScheduler:
    if name == "slurm":
        from drover.cluster.outer.slurm import Slurm

        return Slurm()
    if name == "pbs":
        from drover.cluster.outer.pbs import Pbs

        return Pbs()
    if name == "lsf":
        from drover.cluster.outer.lsf import Lsf

        return Lsf()
    raise ValueError(f"unknown outer scheduler {name!r}")
