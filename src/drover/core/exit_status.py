"""What an attempt's end means for its task: one table of exit meanings. Pure.

Grid Engine's meanings are the default (see seeds/gridengine-shepherd-manpage.txt): a job that
exits 99 is requeued as a new attempt; one that exits 100 is put in error hold. Other exit codes
are the job's own business: 0 succeeds, anything else fails.

The order of the checks is the order of precedence: a cancelled job is CANCELLED whatever it
exited with (as in Slurm); one held while its prolog ran waits again, held (a user's hold, not
a failure of the job's); one asked to requeue waits again; a job killed at its time limit is
TIMEOUT, one killed for memory is OUT_OF_MEMORY, and a shepherd that could not start the job at
all fails the attempt.

A shepherd that died before recording how its job ended (killed outright, the OOM killer, a bug)
is the system's failure, not the job's (Slurm and Grid Engine requeue a job whose node failed it):
the job is requeued as a new attempt when it may run again (`drover submit --no-requeue`, qsub
`-r n` say it may not), at most until its attempt MAX_SYSTEM_FAILURE_ATTEMPT, so a job whose
shepherd always dies does not loop forever; otherwise it fails, with the reason. A node lost
while its attempt ran is the same kind of failure, with the same bound; a job that may not run
again then ends NODE_FAIL, as in Slurm.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from drover.core.job_state import Trigger
from drover.records import ExitStatus

REQUEUE_EXIT_CODE = 99
ERROR_HOLD_EXIT_CODE = 100
# A lost shepherd requeues attempts 1 to 3 (3 requeues); from attempt 4 on, the job fails. It
# counts every earlier attempt, whatever ended it: the bound needs no history beyond the number.
MAX_SYSTEM_FAILURE_ATTEMPT = 3


class ExitSemantics(StrEnum):
    GRID_ENGINE = "grid_engine"  # 99 requeues, 100 holds in error
    PLAIN = "plain"  # 0 succeeds, anything else fails


# What a failing prolog, epilog or parallel-environment method means (GE shepherd manpage:
# "Prolog, epilog and parallel start: the queue is set to error state and the job is re-queued.
# Parallel stop: the queue is set to error state, but the job is not re-queued"; Accelerator:
# "if the precmd exits with a status that is not 0, the job is done and failed").
# (step, level) → (what happens to the job, whether the node goes to ERROR)
METHOD_FAILURES: dict[tuple[str, str], tuple[Trigger | None, bool]] = {
    ("prolog", "node"): (Trigger.REQUEUE, True),
    ("prolog", "queue"): (Trigger.REQUEUE, True),  # GE sets the queue instance (queue@node) in error
    ("pe_start", "node"): (Trigger.REQUEUE, True),
    ("prolog", "job"): (Trigger.FAIL, False),
    ("pe_stop", "node"): (None, True),  # the job keeps its own exit status
    ("epilog", "node"): (None, True),
    ("epilog", "queue"): (None, True),
    ("epilog", "job"): (None, False),  # unless the job asked that its epilog's status be its own
}


@dataclass(frozen=True, slots=True)
class ExitFacts:
    """What the shepherd recorded about an attempt, reduced to what decides its meaning."""

    exit_code: int | None  # the job's exit code, None if it was killed by a signal or never ran
    signal: int | None = None  # the signal that killed the job
    failure: str | None = None  # why the job could not be started (chdir, output file, exec)
    timed_out: bool = False
    out_of_memory: bool = False
    cancel_requested: bool = False
    methods: tuple[tuple[str, str, int], ...] = ()  # (step, level, exit code) of the prolog/epilog/PE steps that ran
    epilog_sets_exit: bool = False  # Accelerator: the job's postcmd's status is the job's
    requeue_held: bool = False  # a requeue for a node's failure leaves the job held
    requeue_requested: bool = False  # someone asked that the running job go back to the queue
    hold_requested: bool = False  # someone held the task while its prolog ran: back to the queue, held
    shepherd_lost: bool = False  # the shepherd died without recording an end: a system failure
    node_fault: bool = False  # the node could not prepare the attempt: the job never started
    node_lost: bool = False  # the node was lost while the attempt ran: how it ended is unknown
    rerunnable: bool = True  # the job may run again after a system failure
    attempt_number: int = 1


def exit_facts(record: ExitStatus, cancel_requested: bool = False, epilog_sets_exit: bool = False,
               requeue_held: bool = False, requeue_requested: bool = False, *, rerunnable: bool = True,
               attempt_number: int = 1, hold_requested: bool = False) -> ExitFacts:
    """The facts of an exit record as plain data."""
    return ExitFacts(
        shepherd_lost=record.get("shepherd_lost", False), node_fault=record.get("node_fault", False),
        node_lost=record.get("node_lost", False),
        rerunnable=rerunnable, attempt_number=attempt_number,
        exit_code=record["exit_code"], signal=record["signal"], failure=record["failure"],
        timed_out=record["timed_out"], out_of_memory=record["out_of_memory"],
        cancel_requested=cancel_requested,
        methods=tuple((m["step"], m["level"], m["exit_code"]) for m in record.get("methods", ())),
        epilog_sets_exit=epilog_sets_exit, requeue_held=requeue_held, requeue_requested=requeue_requested,
        hold_requested=hold_requested,
    )


def effective_exit_code(facts: ExitFacts) -> int | None:
    """The job's exit code, or its epilog's, when the job asked for the Accelerator semantics."""
    if facts.epilog_sets_exit:
        for step, level, code in facts.methods:
            if (step, level) == ("epilog", "job"):
                return code
    return facts.exit_code


def node_failure(facts: ExitFacts) -> str | None:
    """Why the node should go to ERROR (a node-level method failed, or it could not prepare the
    attempt), or None."""
    if facts.node_fault:
        return facts.failure or "the node could not prepare the attempt"
    for step, level, code in facts.methods:
        if code != 0 and METHOD_FAILURES.get((step, level), (None, False))[1]:
            return f"the node's {step} exited with status {code}"
    return None


def classify_exit(facts: ExitFacts, semantics: ExitSemantics = ExitSemantics.GRID_ENGINE) -> Trigger:
    if facts.cancel_requested:
        return Trigger.CANCEL
    if facts.hold_requested:
        return Trigger.HOLD
    if facts.requeue_requested:
        return Trigger.REQUEUE
    if facts.node_fault:  # as a node's failing prolog: GE requeues the job
        return Trigger.ERROR_HOLD if facts.requeue_held else Trigger.REQUEUE
    if facts.shepherd_lost:
        return Trigger.REQUEUE if system_failure_requeues(facts) else Trigger.FAIL
    if facts.node_lost:  # Slurm requeues a batch job from a failed node; NODE_FAIL if it may not
        return Trigger.REQUEUE if system_failure_requeues(facts) else Trigger.LOSE_NODE
    for step, level, code in facts.methods:
        meaning = METHOD_FAILURES.get((step, level), (None, False))[0] if code != 0 else None
        if meaning is Trigger.REQUEUE and facts.requeue_held:
            return Trigger.ERROR_HOLD
        if meaning is not None:
            return meaning
    if facts.timed_out:
        return Trigger.TIME_OUT
    if facts.out_of_memory:
        return Trigger.RUN_OUT_OF_MEMORY
    exit_code = effective_exit_code(facts)
    if facts.failure is not None or exit_code is None:
        return Trigger.FAIL
    if semantics is ExitSemantics.GRID_ENGINE:
        if exit_code == REQUEUE_EXIT_CODE:
            return Trigger.REQUEUE
        if exit_code == ERROR_HOLD_EXIT_CODE:
            return Trigger.ERROR_HOLD
    return Trigger.SUCCEED if exit_code == 0 else Trigger.FAIL


def system_failure_requeues(facts: ExitFacts) -> bool:
    return facts.rerunnable and facts.attempt_number <= MAX_SYSTEM_FAILURE_ATTEMPT


def outcome_reason(facts: ExitFacts, trigger: Trigger) -> str | None:
    """Why a system failure ended as it did, for the task's event: None for any other exit."""
    if not (facts.shepherd_lost or facts.node_fault or facts.node_lost) or \
            trigger not in (Trigger.REQUEUE, Trigger.FAIL, Trigger.LOSE_NODE):
        return None
    if trigger is Trigger.REQUEUE:
        return f"{facts.failure}; requeued as a new attempt"
    if not facts.rerunnable:
        return f"{facts.failure}; the job is not rerunnable"
    return f"{facts.failure}; not requeued again after {facts.attempt_number} attempts"


def shell_status(exit_code: int | None, signal: int | None) -> int:
    """The status a shell would show: the exit code, or 128 + the signal that killed the job."""
    if signal is not None:
        return 128 + signal
    return exit_code if exit_code is not None else 1
