"""What an attempt's end means for its task: one table of exit meanings. Pure.

Grid Engine's meanings are the default (see seeds/gridengine-shepherd-manpage.txt): EXIT_TABLE is
its exit table, per method (the job, prolog, PE start, PE stop, epilog) and per exit status. A
job that exits 99 is requeued as a new attempt; one that exits 100 is put in error hold. Other
exit codes are the job's own business: 0 succeeds, anything else fails. A failing site method
sets the job's queue in error on its node (the queue instance, queue@node) and, but for a PE
stop, requeues the job. [controller] forbid_reschedule and forbid_apperror (ExitSemantics) take
99 and 100 back to "Other", as Grid Engine's execd_params of the same names do.

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

from drover.core.job_state import Trigger
from drover.records import ExitStatus

REQUEUE_EXIT_CODE = 99
ERROR_HOLD_EXIT_CODE = 100
# A lost shepherd requeues attempts 1 to 3 (3 requeues); from attempt 4 on, the job fails. It
# counts every earlier attempt, whatever ended it: the bound needs no history beyond the number.
MAX_SYSTEM_FAILURE_ATTEMPT = 3


@dataclass(frozen=True, slots=True)
class ExitSemantics:
    """The cluster's switches on what an exit means ([controller] in drover.toml).

    `forbid_reschedule` and `forbid_apperror` are Grid Engine's execd_params of the same names: with
    the first, a status 99 (of the job, a prolog or an epilog) no longer requeues; with the second,
    a status 100 no longer puts the job in error hold: either is then an "Other" status of the
    table. With both, a job's status has its plain meaning: 0 succeeds, anything else fails
    (PLAIN). `requeue_held`: a job requeued for its node's failure (a failing prolog) waits held."""

    forbid_reschedule: bool = False
    forbid_apperror: bool = False
    requeue_held: bool = False

    @property
    def plain(self) -> bool:
        return self.forbid_reschedule and self.forbid_apperror


GRID_ENGINE = ExitSemantics()  # 99 requeues, 100 holds in error (the default)
PLAIN = ExitSemantics(forbid_reschedule=True, forbid_apperror=True)  # 0 succeeds, anything else fails


@dataclass(frozen=True, slots=True)
class ExitRow:
    """One row of Grid Engine's exit table: a method, a class of its exit status, what that does
    to the job, and whether it sets the queue instance (queue@node) in error."""

    method: str  # job, prolog, pe_start, pe_stop, epilog
    status: str  # "0", "99" (the man page's 1), "100" (its 2), or "other"
    job: Trigger | None  # None: nothing; the job's own status decides
    queue_error: bool
    seed: str  # the man page's words for the row


_RESCHEDULE = ("1 - Job script, prolog and epilog: When FORBID_RESCHEDULE is not set in the configuration, "
               "the job gets re-queued. Otherwise, see \"Other\".")
_APPERROR = ("2 - Job script, prolog and epilog: When FORBID_APPERROR is not set in the configuration, "
             "the job gets re-queued. Otherwise, see \"Other\".")
_SUCCESS = "0 - All methods: Operation was executed successfully."
_ALWAYS = "Other - Suspend, restart, terminate, clean, and migrate: Always successful."
_SET_UP = "Other - Prolog, epilog and parallel start: The queue is set to error state and the job is re-queued."

# Grid Engine's exit table (seeds/gridengine-shepherd-manpage.txt, "The following exit values are
# returned"), for the site's methods (the node's and the queue's) and the job; docs/seeds.md
# quotes it. The man page's values 1 and 2 are the shepherd's own, for a method that asked to be
# rescheduled (it exited 99) or to be put in error (it exited 100); a job "re-queued" in error
# waits in Drover's error hold (Grid Engine's Eqw) until `drover release` or `qmod -cj`.
EXIT_TABLE: tuple[ExitRow, ...] = (
    ExitRow("job", "0", Trigger.SUCCEED, False, _SUCCESS),
    ExitRow("job", "99", Trigger.REQUEUE, False, _RESCHEDULE),
    ExitRow("job", "100", Trigger.ERROR_HOLD, False, _APPERROR),
    ExitRow("job", "other", Trigger.FAIL, False,
            "Other - Job script: This is the exit status of the job itself. No action is taken upon this exit "
            "status because the meaning of this exit status is not known."),
    ExitRow("prolog", "0", None, False, _SUCCESS),
    ExitRow("prolog", "99", Trigger.REQUEUE, False, _RESCHEDULE),
    ExitRow("prolog", "100", Trigger.ERROR_HOLD, False, _APPERROR),
    ExitRow("prolog", "other", Trigger.REQUEUE, True, _SET_UP),
    ExitRow("pe_start", "0", None, False, _SUCCESS),
    ExitRow("pe_start", "other", Trigger.REQUEUE, True, _SET_UP),
    ExitRow("pe_stop", "0", None, False, _SUCCESS),
    ExitRow("pe_stop", "other", None, True,
            "Other - Parallel stop: The queue is set to error state, but the job is not re-queued. It is assumed "
            "that the job itself ran successfully and only the clean up script failed."),
    ExitRow("epilog", "0", None, False, _SUCCESS),
    ExitRow("epilog", "99", Trigger.REQUEUE, False, _RESCHEDULE),
    ExitRow("epilog", "100", Trigger.ERROR_HOLD, False, _APPERROR),
    ExitRow("epilog", "other", Trigger.REQUEUE, True, _SET_UP),
    # The methods that act on a running job (queue_conf(5) suspend_method, resume_method,
    # terminate_method; the checkpoint environment's restart, clean, migrate and checkpoint
    # commands): whatever they exit with changes nothing; the shepherd writes it in the trace.
    # The man page does not name resume: it is the other half of suspend, and reads its row.
    *(row for method in ("suspend", "resume", "restart", "terminate", "clean", "migrate") for row in (
        ExitRow(method, "0", None, False, _SUCCESS),
        ExitRow(method, "other", None, False, _ALWAYS))),
    ExitRow("checkpoint", "0", None, False, _SUCCESS),
    ExitRow("checkpoint", "other", None, False,
            "Other - Checkpoint: Success, except for kernel checkpointing: checkpoint was not successful, did not "
            "happen (but migration will happen by Grid Engine)."),
)
EXIT_ROWS: dict[tuple[str, str], ExitRow] = {(row.method, row.status): row for row in EXIT_TABLE}
# The methods to which the man page gives the values 1 and 2 (99 and 100): for the others, any
# status but 0 is "Other".
ASKING_METHODS = frozenset({"job", "prolog", "epilog"})

# The job's own prolog and epilog (--prolog, --epilog) are the Accelerator's precmd and postcmd,
# not Grid Engine's methods: "if the precmd exits with a status that is not 0, the job is done
# and failed"; the postcmd's status is the job's when the job asked for it (epilog_sets_exit), and
# then the job's rows above read it. Neither ever sets a queue in error: they are the job's.
JOB_METHODS: dict[str, Trigger | None] = {"prolog": Trigger.FAIL, "epilog": None}


def status_class(method: str, code: int, semantics: ExitSemantics = GRID_ENGINE) -> str:
    """Which row of the table a method's (or the job's) exit status falls in."""
    if code == 0:
        return "0"
    if method in ASKING_METHODS:
        if code == REQUEUE_EXIT_CODE and not semantics.forbid_reschedule:
            return "99"
        if code == ERROR_HOLD_EXIT_CODE and not semantics.forbid_apperror:
            return "100"
    return "other"


def exit_row(method: str, code: int, semantics: ExitSemantics = GRID_ENGINE) -> ExitRow:
    return EXIT_ROWS[method, status_class(method, code, semantics)]


def method_meaning(step: str, level: str, code: int,
                   semantics: ExitSemantics = GRID_ENGINE) -> tuple[Trigger | None, bool]:
    """What a prolog, PE start, PE stop or epilog that exited `code` does: to the job (None:
    nothing), and whether it sets the job's queue in error on the node. The site's methods (the
    node's, configured in [execd], and the queue's) follow Grid Engine's table: the man page says
    "the queue is set to error state" whichever configuration the script came from."""
    if level == "job":
        return (JOB_METHODS.get(step) if code != 0 else None), False
    row = EXIT_ROWS.get((step, status_class(step, code, semantics)))
    return (row.job, row.queue_error) if row is not None else (None, False)  # a step the table does not name


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
    node_lost: bool = False  # the node was lost (or left for good) while the attempt ran
    rerunnable: bool = True  # the job may run again after a system failure
    attempt_number: int = 1


def exit_facts(record: ExitStatus, cancel_requested: bool = False, epilog_sets_exit: bool = False,
               requeue_held: bool = False, requeue_requested: bool = False, *, rerunnable: bool = True,
               attempt_number: int = 1, hold_requested: bool = False) -> ExitFacts:
    """The facts of an exit record as plain data."""
    return ExitFacts(
        shepherd_lost=record.get("shepherd_lost", False), node_fault=record.get("node_fault", False),
        node_lost=record.get("node_lost", False) or record.get("node_left", False),
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
    """Why the node should go to ERROR (it could not prepare the attempt), or None. A failing
    method sets a queue instance in error instead (queue_failure)."""
    if facts.node_fault:
        return facts.failure or "the node could not prepare the attempt"
    return None


def queue_failure(facts: ExitFacts, semantics: ExitSemantics = GRID_ENGINE) -> str | None:
    """Why the job's queue should go to error on the node (a row of the table that says "the
    queue is set to error state"), or None."""
    for step, level, code in facts.methods:
        if method_meaning(step, level, code, semantics)[1]:
            return f"the {level} {step} exited with status {code}"
    return None


def classify_exit(facts: ExitFacts, semantics: ExitSemantics = GRID_ENGINE) -> Trigger:
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
    for step, level, code in facts.methods:  # the first method that means something, in firing order
        meaning, queue_error = method_meaning(step, level, code, semantics)
        if meaning is Trigger.REQUEUE and queue_error and facts.requeue_held:
            return Trigger.ERROR_HOLD  # requeued for the node's failure, and the cluster holds those
        if meaning is not None:
            return meaning
    if facts.timed_out:
        return Trigger.TIME_OUT
    if facts.out_of_memory:
        return Trigger.RUN_OUT_OF_MEMORY
    exit_code = effective_exit_code(facts)
    if facts.failure is not None or exit_code is None:
        return Trigger.FAIL
    meaning = exit_row("job", exit_code, semantics).job
    assert meaning is not None  # every job row says what happens to the job
    return meaning


def error_hold_cause(facts: ExitFacts, semantics: ExitSemantics = GRID_ENGINE) -> tuple[str, bool]:
    """Why `classify_exit` held a task in error, in its order: what exited how, and whether the
    hold is the cluster's `requeue_held` (a requeue for the node's or the queue's failure) rather
    than a status 100 that asked for it. For the `held_in_error` event, which `drover why` reads."""
    if facts.node_fault:
        return facts.failure or "the node could not prepare the attempt", True
    for step, level, code in facts.methods:
        meaning, queue_error = method_meaning(step, level, code, semantics)
        if meaning is Trigger.REQUEUE and queue_error and facts.requeue_held:
            return f"the {level} {step} exited with status {code}", True
        if meaning is Trigger.ERROR_HOLD:
            return f"the {level} {step} exited with status {code}", False
        if meaning is not None:
            break
    exit_code = effective_exit_code(facts)
    source = "the job's epilog" if facts.epilog_sets_exit and exit_code != facts.exit_code else "the job"
    return f"{source} exited with status {exit_code}", False


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
