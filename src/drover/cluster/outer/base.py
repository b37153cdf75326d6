"""What Drover needs from an outer scheduler (Slurm, ...) to run nodes inside its allocations.

Each outer scheduler is one module here with one class implementing `OuterScheduler`: pure
functions that build its commands' argument lists and read their output, so each is unit-tested
on its command lines (tests/unit/cluster/test_outer_slurm.py). The controller's allocator runs
the commands (in a thread, with a timeout) and the worker (`drover alloc worker`, inside the
allocation) reads its environment. To add one: write the module, add it to `by_name` below and
its name to core/allocations.MANAGERS, and test its command lines.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from drover.core.allocations import AllocationState


@dataclass(frozen=True, slots=True)
class Request:
    """One allocation to ask for."""

    name: str  # its job name in the outer scheduler
    workers: int  # nodes
    time_limit_s: float
    script: str  # the path of the script it runs (written by the allocator)
    output: str  # where the outer scheduler writes the script's output (%j: its job id)
    partition: str | None = None
    extra_args: tuple[str, ...] = ()


class Refused(Exception):
    """The outer scheduler refused a command; the message is its own words."""


class OuterScheduler(Protocol):
    name: str

    def submit(self, request: Request) -> list[str]:
        """The command that asks for the allocation."""

    def submitted_id(self, stdout: str) -> str:
        """The allocation's id from the submit command's output; Refused if there is none."""

    def status(self, name_prefix: str, user: str) -> list[str]:
        """The command that lists the live allocations of this cluster and user."""

    def states(self, stdout: str) -> dict[str, AllocationState]:
        """Each listed allocation's state (those not listed have ended)."""

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
    raise ValueError(f"unknown outer scheduler {name!r}")
