"""A job (what a user asked for), its tasks (what is scheduled) and attempts (one run on a node).

Mutable records with slots, kept in the controller's working set and persisted by the store.
A task's state changes only through `Task.apply`, which consults the transition table, and a
job's task records are added through `Job.add_task`: both keep the job's `TaskTally`.
Never-dispatched tasks of an array are not records: they are the positions from `fresh_from` on
in the job's `indices`, all in `fresh_state`, so a 100,000-task array costs one row until its
tasks start.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypedDict

from drover.core.arrays import TaskIndices
from drover.core.dependencies import Dependencies
from drover.core.job_spec import JobSpec
from drover.core.job_state import JobState, Trigger, next_state
from drover.core.resources import Resources
from drover.core.suspension import NONE, Reasons
from drover.records import CleanupProgress, ExitStatus, GivenUpStep, PeTaskRecord, Usage


class StagedFileRecord(TypedDict):
    name: str  # relative to the job's working directory
    data: str  # base64
    mode: int


class JobPayload(TypedDict):
    """What a job runs and hands its node, which only its node reads: its script, environment and
    staged-in files. Up to megabytes a job, so kept in the store alone (its own table) and read
    when an attempt's order is made, never held in the controller's working set."""

    script: str
    environment: dict[str, str]
    stage_in: list[StagedFileRecord]


PAYLOAD_KEYS = ("script", "environment", "stage_in")


def payload_bytes(payload: JobPayload) -> int:
    """What a job's payload weighs against its owner's limit (Limits.max_job_bytes_per_user):
    the script's bytes, the environment's as a process gets it, the staged files' as sent."""
    return (len(payload["script"].encode())
            + sum(len(name.encode()) + len(value.encode()) + 2 for name, value in payload["environment"].items())
            + sum(len(staged["name"].encode()) + len(staged["data"]) for staged in payload["stage_in"]))


def split_payload(spec: dict[str, Any]) -> JobPayload | None:
    """Take the payload out of a spec stored by an older Drover, which kept it there (None for
    a spec without one): the spec is left with what the working set keeps."""
    if "script" not in spec:
        return None
    return {"script": spec.pop("script"), "environment": spec.pop("environment", None) or {},
            "stage_in": spec.pop("stage_in", None) or []}


class _Counted:
    """The tally a task record is counted in (TaskTally): a slot, not a field, so that what
    compares, copies or encodes the record never sees it."""

    __slots__ = ("_tally",)
    _tally: TaskTally | None

    def _counted_in(self, tally: TaskTally | None) -> None:
        self._tally = tally


@dataclass(slots=True)
class Task(_Counted):
    job_id: int
    index: int
    state: JobState
    state_since: float
    attempt: int = 0  # number of the latest attempt; 0 before the first dispatch
    cancel_requested: bool = False  # a request, not a state: acted on when the attempt reports
    exit_status: int | None = None  # of the latest attempt, as a shell shows it
    requeue_requested: bool = False  # like cancel_requested: back to the queue when it reports
    hold_requested: bool = False  # a hold of a task whose job had not started: held when it reports
    # Why its attempt is to be frozen: its own suspend, its queue instance's, both (core/suspension.py).
    suspended_by: Reasons = NONE

    def __post_init__(self) -> None:
        self._counted_in(None)  # in its job's tally once counted

    @property
    def stop_requested(self) -> bool:
        """A cancel, a requeue (a migration is one) or a hold of its attempt is under way: the
        task's node was told to stop it, and its report of the end decides what follows."""
        return self.cancel_requested or self.requeue_requested or self.hold_requested

    def apply(self, trigger: Trigger, now: float) -> JobState:
        """Move to the state the table gives for `trigger`; raise IllegalTransition otherwise."""
        before = self.state
        self.state = next_state(self.state, trigger)
        if self._tally is not None:
            self._tally.moved(self.index, before, self.state)
        self.state_since = now
        if trigger is Trigger.DISPATCH:
            self.attempt += 1
        if self.state not in _ATTEMPT_LIVES:  # its attempt's end ends its suspensions: the next starts free
            self.suspended_by = NONE
        return self.state


_ATTEMPT_LIVES = frozenset({JobState.DISPATCHED, JobState.RUNNING, JobState.SUSPENDED})


class TaskTally:
    """A job's task records counted by state, kept up to date as they change (`Task.apply`)
    and as records are added (`Job.add_task`). A planner pass reads an array's running count
    and its requeued tasks here: walking every record instead cost each pass the array's size,
    so an array of N tasks that frees one slot at a time cost N²/2 steps in all."""

    __slots__ = ("tasks", "size", "by_state", "pending")

    def __init__(self, tasks: dict[int, Task]) -> None:
        self.tasks = tasks  # the dict counted: a job given another (loaded again) is counted again
        self.size = 0
        self.by_state: dict[JobState, int] = {}
        self.pending: set[int] = set()  # requeued task records waiting to start again
        for task in tasks.values():
            self.add(task)

    def add(self, task: Task) -> None:
        task._counted_in(self)
        self.size += 1
        self._count(task.index, task.state, 1)

    def moved(self, index: int, before: JobState, after: JobState) -> None:
        self._count(index, before, -1)
        self._count(index, after, 1)

    def _count(self, index: int, state: JobState, n: int) -> None:
        self.by_state[state] = self.by_state.get(state, 0) + n
        if state is JobState.PENDING:
            if n > 0:
                self.pending.add(index)
            else:
                self.pending.discard(index)

    @property
    def active(self) -> int:
        """Records that hold room on a node (JobState.is_active)."""
        return sum(n for state, n in self.by_state.items() if state.is_active)

    def requeued(self) -> tuple[int, ...]:
        """The indices of the records in PENDING, in order."""
        return tuple(sorted(self.pending))


@dataclass(slots=True)
class Attempt:
    job_id: int
    index: int
    number: int
    node: str
    cpu_ids: tuple[int, ...]
    dispatched_at: float
    started_at: float | None = None
    ended_at: float | None = None
    exit: ExitStatus | None = None  # as the node reported it; never rewritten once set
    usage: Usage | None = None
    cleanup: CleanupProgress | None = None  # as far as the node's cleanup pipeline got
    pty_socket: str | None = None  # an interactive attempt's terminal relay (kept in memory only)
    gres: dict[str, tuple[int, ...]] = field(default_factory=dict)  # the devices it holds: name → indices
    # A parallel job's other nodes and the CPUs it holds on each (`node` is its master, which runs
    # the job script); empty for a job on one node.
    others: tuple[tuple[str, tuple[int, ...]], ...] = ()
    # The tasks it started on its hosts (a tightly integrated parallel job), in the order started.
    pe_tasks: list[PeTaskRecord] = field(default_factory=list)
    # A promise: the attempt (on the same node) whose room it was given before that one ended.
    # Its node starts it when that attempt's shepherd is gone; until that attempt gives its room
    # back, this one holds none of its own (controller/handlers/promises.py).
    after: str | None = None
    # A promise the controller told its node to start now, in place, on these CPUs (room freed
    # beside it), until the node says it started: kept for it meanwhile, and the order sent
    # again when the node reconnects (controller/handlers/promises.py).
    moving_to: tuple[int, ...] | None = None

    @property
    def name(self) -> str:
        return f"{self.job_id}.{self.index}.{self.number}"

    def rooms(self, memory_mib: int) -> list[tuple[str, tuple[int, ...], int]]:
        """Each node the attempt holds room on, with its CPUs and memory there: the master first.
        A job of one node holds all its memory there; a job on several, each slot's share
        (`memory_mib` over its CPUs, rounded up, as the planner counts it) on each node."""
        if not self.others:
            return [(self.node, self.cpu_ids, memory_mib)]
        held = [(self.node, self.cpu_ids), *self.others]
        slots = sum(len(cpu_ids) for _, cpu_ids in held)
        share = -(-memory_mib // slots) if slots else 0
        return [(node, cpu_ids, share * len(cpu_ids)) for node, cpu_ids in held]


def with_given_up(progress: CleanupProgress | None, steps: list[GivenUpStep]) -> CleanupProgress:
    """`progress` (a copy) with `steps` among its given-up steps: one entry a step, the newest
    report of it kept, so a report the node repeats changes nothing."""
    result: CleanupProgress = (progress.copy() if progress is not None
                               else {"done": [], "step": None, "tries": 0, "error": None})
    if steps or "given_up" in result:
        named = {entry["step"] for entry in steps}
        result["given_up"] = [*(e for e in result.get("given_up", []) if e["step"] not in named), *steps]
    return result


class _Tallied:
    """A job's TaskTally of its `tasks` (Job.tally): a slot, not a field, like _Counted's."""

    __slots__ = ("_tally",)
    _tally: TaskTally | None

    def _keep_tally(self, tally: TaskTally | None) -> None:
        self._tally = tally


@dataclass(slots=True)
class Job(_Tallied):
    id: int
    owner: str
    name: str
    submitted_at: float
    priority: int
    resources: Resources
    indices: TaskIndices
    is_array: bool
    max_running: int | None
    dependencies: Dependencies  # the jobs it waits for (core/dependencies.py)
    spec: JobSpec  # what the user asked for beyond what the scheduler reads (core/job_spec.py)
    fresh_from: int = 0
    fresh_state: JobState = JobState.PENDING
    fresh_skip: set[int] = field(default_factory=set)  # indices past fresh_from that have records
    ended_at: float | None = None
    state: JobState | None = None  # the job as a whole, set when it ends
    end_reason: str | None = None  # why the controller ended the job itself (an internal error)
    # The node that appends to the job's event log as its owner, when the controller cannot
    # become the owner (controller/upkeep/event_log.py); None: the controller's own writer does.
    event_log_node: str | None = None
    begin_at: float | None = None  # it starts no earlier than this (sbatch --begin, qsub -a)
    tasks: dict[int, Task] = field(default_factory=dict)
    payload_bytes: int = 0  # of its payload (JobPayload), which the store holds: its owner's limit counts it

    def __post_init__(self) -> None:
        self._keep_tally(None)  # counted when first asked for (tally())

    @property
    def fresh_count(self) -> int:
        """Never-dispatched tasks that have no record."""
        return max(self.indices.count - self.fresh_from - len(self.fresh_skip), 0)

    def take_fresh(self, index: int) -> None:
        """`index` now has a record: take it out of the never-dispatched range."""
        if index not in self.indices:
            raise ValueError(f"job {self.id} has no task {index}")
        position = self.indices.position(index)
        if position == self.fresh_from:
            self.fresh_from += 1
            while self.fresh_from < self.indices.count:
                following = self.indices.at(self.fresh_from)
                if following not in self.fresh_skip:
                    break
                self.fresh_skip.discard(following)
                self.fresh_from += 1
        elif position > self.fresh_from:
            self.fresh_skip.add(index)

    def add_task(self, task: Task) -> None:
        """A new task record (its index had none): counted in the tally as it is added."""
        tally = self._tally
        valid = tally is not None and tally.tasks is self.tasks and tally.size == len(self.tasks)
        replaced = task.index in self.tasks
        self.tasks[task.index] = task
        if tally is not None and valid and not replaced:
            tally.add(task)
        elif replaced:
            self._keep_tally(None)

    def tally(self) -> TaskTally:
        """The task records counted by state. Counted again (once) when `tasks` was replaced or
        given a record other than through `add_task`."""
        tally = self._tally
        if tally is None or tally.tasks is not self.tasks or tally.size != len(self.tasks):
            tally = TaskTally(self.tasks)
            self._keep_tally(tally)
        return tally

    def task_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for task in self.tasks.values():
            counts[task.state.value] = counts.get(task.state.value, 0) + 1
        if self.fresh_count:
            counts[self.fresh_state.value] = counts.get(self.fresh_state.value, 0) + self.fresh_count
        return counts

    @property
    def is_done(self) -> bool:
        fresh_done = self.fresh_count == 0 or self.fresh_state.is_final
        return fresh_done and all(task.state.is_final for task in self.tasks.values())
