"""What an attempt's end means for its task: one table of exit meanings. Pure.

Grid Engine's meanings are the default (see seeds/gridengine-shepherd-manpage.txt): a job that
exits 99 is requeued as a new attempt; one that exits 100 is put in error hold. Other exit codes
are the job's own business: 0 succeeds, anything else fails.

The order of the checks is the order of precedence: a cancelled job is CANCELLED whatever it
exited with (as in Slurm), a job killed at its time limit is TIMEOUT, one killed for memory is
OUT_OF_MEMORY, and a shepherd that could not start the job at all fails the attempt.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from drover.core.job_state import Trigger

REQUEUE_EXIT_CODE = 99
ERROR_HOLD_EXIT_CODE = 100


class ExitSemantics(StrEnum):
    GRID_ENGINE = "grid_engine"  # 99 requeues, 100 holds in error
    PLAIN = "plain"  # 0 succeeds, anything else fails


@dataclass(frozen=True, slots=True)
class ExitFacts:
    """What the shepherd recorded about an attempt, reduced to what decides its meaning."""

    exit_code: int | None  # the job's exit code, None if it was killed by a signal or never ran
    signal: int | None = None  # the signal that killed the job
    failure: str | None = None  # why the job could not be started (chdir, output file, exec)
    timed_out: bool = False
    out_of_memory: bool = False
    cancel_requested: bool = False


def classify_exit(facts: ExitFacts, semantics: ExitSemantics = ExitSemantics.GRID_ENGINE) -> Trigger:
    if facts.cancel_requested:
        return Trigger.CANCEL
    if facts.timed_out:
        return Trigger.TIME_OUT
    if facts.out_of_memory:
        return Trigger.RUN_OUT_OF_MEMORY
    if facts.failure is not None or facts.exit_code is None:
        return Trigger.FAIL
    if semantics is ExitSemantics.GRID_ENGINE:
        if facts.exit_code == REQUEUE_EXIT_CODE:
            return Trigger.REQUEUE
        if facts.exit_code == ERROR_HOLD_EXIT_CODE:
            return Trigger.ERROR_HOLD
    return Trigger.SUCCEED if facts.exit_code == 0 else Trigger.FAIL


def shell_status(exit_code: int | None, signal: int | None) -> int:
    """The status a shell would show: the exit code, or 128 + the signal that killed the job."""
    if signal is not None:
        return 128 + signal
    return exit_code if exit_code is not None else 1
