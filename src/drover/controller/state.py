"""The controller's working set in memory: jobs not yet ended, their tasks and latest attempts,
and the nodes. Built from the store at start; changed only by handlers."""

from __future__ import annotations

from dataclasses import dataclass, field

from drover.controller.followers import Followers, fast_attempt_key
from drover.controller.handlers.fairshare import DecayedUsage
from drover.controller.handlers.work_cache import WorkCache
from drover.controller.tallies import Tallies
from drover.core.errors import NotFound
from drover.core.job import Attempt, Job, JobPayload, Task
from drover.core.job_state import JobState
from drover.core.node import Node
from drover.core.queues import Queue, QueueRecord
from drover.scheduler.reasons import Waiting
from drover.store.base import Changes, Store, WorkingSet

LOST_KEPT = 10_000
ARRAY_PAYLOADS_KEPT = 64 << 20  # bytes of array jobs' payloads kept between passes (state.array_payloads)


@dataclass(slots=True)
class ControllerState:
    jobs: dict[int, Job]
    attempts: dict[tuple[int, int, int], Attempt]
    nodes: dict[str, Node]
    next_job_id: int
    ended_states: dict[int, str] = field(default_factory=dict)  # jobs that ended, for dependencies
    pending_reasons: dict[int, Waiting] = field(default_factory=dict)
    wake_at: float | None = None  # the earliest begin time of a waiting job: plan again then
    # owner → [their jobs in the working set, those jobs' tasks, those jobs' payload bytes]: what
    # could be waiting, at most, so a submission far below the per-user limits is accepted without
    # counting (add_job, remove_job); the bytes are exact (every unfinished job is in the working set).
    owner_load: dict[str, list[int]] = field(default_factory=dict)
    # Attempts given up with their node (lose_attempt), by name → node: a report one of them
    # sends later, when its node comes back, is stale. In memory only, the newest LOST_KEPT.
    lost_attempts: dict[str, str] = field(default_factory=dict)
    # Every user's decayed usage, for fair share (controller/handlers/fairshare.py); in memory only.
    usage: DecayedUsage = field(default_factory=DecayedUsage)
    # Queues' records: what changed of drover.toml's, and users' own (core/queues.py); and the
    # queues in effect, made from them and drover.toml when first asked after a change.
    queues: dict[str, QueueRecord] = field(default_factory=dict)
    queues_in_effect: dict[str, Queue] | None = None
    # The planner's input kept between passes (work_cache.py): what changed is built again.
    work: WorkCache = field(default_factory=WorkCache)
    # What the metrics count (controller/tallies.py): the shell's, kept across reloads.
    tallies: Tallies = field(default_factory=Tallies)
    # Promised attempts (controller/handlers/promises.py): the attempt each follows → the
    # follower, while it waits for that one's room. Derived from the attempts' `after`.
    followers: Followers = field(default_factory=Followers)
    # Promises told to start in place whose node has not said they started (their attempts'
    # `moving_to`): the room they were given is kept for them (promises.moving_room).
    moving: set[tuple[int, int, int]] = field(default_factory=set)
    # The payloads (script, environment, staged files) of array jobs in the working set, as the
    # store holds them: a pass starting an array's next task reads its payload from here, not from
    # the store again (dispatch.payloads_of). Payloads never change once stored; at most
    # ARRAY_PAYLOADS_KEPT bytes are kept, in memory only, and a job leaving the working set drops its own.
    array_payloads: dict[int, JobPayload] = field(default_factory=dict)
    array_payload_bytes: int = 0

    def changed(self, changes: Changes) -> None:
        """A handler's changes, as they are committed: the planner builds again the work of the
        jobs they touch (work_cache.py); a queue's change can move every job."""
        if changes.queues:
            self.work.rebuild_all()
        else:
            self.work.touched(changes.job_ids())

    def lost(self, attempt: str, node: str) -> None:
        self.lost_attempts[attempt] = node
        while len(self.lost_attempts) > LOST_KEPT:
            del self.lost_attempts[next(iter(self.lost_attempts))]

    @classmethod
    def from_working_set(cls, working: WorkingSet) -> ControllerState:
        state = cls({}, working.attempts, working.nodes, working.next_job_id, queues=dict(working.queues))
        for job in working.jobs.values():
            state.add_job(job)
        state.recount_nodes()
        return state

    def recount_nodes(self) -> None:
        """Derive what each node holds (CPUs, memory, attempts) from the active tasks again: a
        promised attempt holds nothing while the attempt it follows is active (it waits, a
        follower; controller/handlers/promises.py)."""
        for node in self.nodes.values():
            node.used_cpu_ids.clear()
            node.used_devices.clear()
            node.holders.clear()
            node.used_memory_mib = node.running = 0
        self.followers.clear()
        self.moving.clear()
        active = {(job.id, task.index, task.attempt) for job in self.jobs.values() for task in job.tasks.values()
                  if task.state.is_active}
        for job in self.jobs.values():
            for task in job.tasks.values():
                if task.state.is_active:
                    attempt = self.attempts.get((job.id, task.index, task.attempt))
                    if attempt is None:
                        continue
                    if attempt.moving_to is not None:
                        self.moving.add((attempt.job_id, attempt.index, attempt.number))
                    followed = self.attempt_by_name(attempt.after) if attempt.after else None
                    if followed is not None and (followed.job_id, followed.index, followed.number) in active:
                        self.followers.add((followed.job_id, followed.index, followed.number),
                                           (attempt.job_id, attempt.index, attempt.number), followed.node)
                        continue
                    for name, cpu_ids, memory_mib in attempt.rooms(job.resources.memory_mib):
                        holder = self.nodes.get(name)
                        if holder is not None:  # devices are held on the master only
                            holder.take(cpu_ids, memory_mib, attempt.gres if name == attempt.node else None,
                                        (attempt.job_id, attempt.index, attempt.number))

    def add_job(self, job: Job) -> None:
        self.jobs[job.id] = job
        load = self.owner_load.setdefault(job.owner, [0, 0, 0])
        load[0] += 1
        load[1] += job.indices.count
        load[2] += job.payload_bytes

    def remove_job(self, job_id: int) -> Job | None:
        job = self.jobs.pop(job_id, None)
        if job is not None:
            if self.array_payloads.pop(job_id, None) is not None:
                self.array_payload_bytes -= job.payload_bytes
            load = self.owner_load[job.owner]
            load[0] -= 1
            load[1] -= job.indices.count
            load[2] -= job.payload_bytes
        return job

    def keep_payload(self, job: Job, payload: JobPayload) -> None:
        """Keep an array job's payload for its next tasks' starts, while ARRAY_PAYLOADS_KEPT allows."""
        if (job.is_array and job.id in self.jobs and job.id not in self.array_payloads
                and self.array_payload_bytes + job.payload_bytes <= ARRAY_PAYLOADS_KEPT):
            self.array_payloads[job.id] = payload
            self.array_payload_bytes += job.payload_bytes

    def held(self) -> list[tuple[Job, Attempt]]:
        """The attempts holding room on a node now, with their jobs: what the nodes' holders
        name, so a planning pass reads the running tasks without walking every task."""
        found = []
        for node in self.nodes.values():
            for key in node.holders:
                job, attempt = self.jobs.get(key[0]), self.attempts.get(key)
                if job is not None and attempt is not None and attempt.node == node.name:
                    found.append((job, attempt))  # a parallel job's once, at its master
        return found

    def job(self, job_id: int) -> Job:
        try:
            return self.jobs[job_id]
        except KeyError:
            raise NotFound(f"job {job_id} is not active (it ended, or never existed)") from None

    def latest_attempt(self, task: Task) -> Attempt | None:
        return self.attempts.get((task.job_id, task.index, task.attempt))

    def attempt_by_name(self, name: str) -> Attempt | None:
        key = fast_attempt_key(name)
        return self.attempts.get(key) if key is not None else None

    def ended_state(self, job_id: int, store: Store) -> str | None:
        """The final state of a job that ended, or None if it has not (or does not exist)."""
        if job_id in self.jobs:
            return None
        if job_id not in self.ended_states:
            self.ended_states.update(store.ended_job_states([job_id]))
        return self.ended_states.get(job_id)

    def check_invariants(self) -> None:
        """Raise AssertionError if the working set contradicts itself (tests call this)."""
        used: dict[str, set[int]] = {name: set() for name in self.nodes}
        devices: dict[str, set[tuple[str, int]]] = {}
        waiting = set(self.followers.values())  # promised attempts: they hold nothing yet
        on_node: dict[str, int] = {}
        for followed, follower in self.followers.items():
            ahead = self.attempts.get(followed)
            assert ahead is not None and (follower_attempt := self.attempts.get(follower)) is not None \
                and follower_attempt.after == ahead.name and follower_attempt.node == ahead.node, \
                f"{follower} is said to follow {followed}, which it does not"
            on_node[ahead.node] = on_node.get(ahead.node, 0) + 1
        for name in {*on_node, *self.nodes}:
            assert self.followers.followed_on(name) == on_node.get(name, 0), f"node {name}'s promises are miscounted"
        for job in self.jobs.values():
            for task in job.tasks.values():
                if task.state.is_active and (job.id, task.index, task.attempt) not in waiting:
                    attempt = self.latest_attempt(task)
                    assert attempt is not None, f"active task {job.id}.{task.index} has no attempt"
                    for name, cpu_ids, _ in attempt.rooms(job.resources.memory_mib):
                        overlap = used.setdefault(name, set()) & set(cpu_ids)
                        assert not overlap, f"CPUs {overlap} of {name} used twice"
                        used[name].update(cpu_ids)
                    held = {(name, index) for name, indices in attempt.gres.items() for index in indices}
                    twice = devices.setdefault(attempt.node, set()) & held
                    assert not twice, f"devices {sorted(twice)} of {attempt.node} given twice"
                    devices[attempt.node].update(held)
                assert task.state is not JobState.DISPATCHED or task.attempt > 0
                # reasons to be frozen are an attempt's: none once it has ended (core/suspension.py)
                assert not task.suspended_by or task.state in (JobState.DISPATCHED, JobState.RUNNING,
                                                               JobState.SUSPENDED), \
                    f"task {job.id}.{task.index} is {task.state.value} but suspended by {sorted(task.suspended_by)}"
        holders: dict[str, set[tuple[int, int, int]]] = {}
        for job in self.jobs.values():
            for task in job.tasks.values():
                attempt = self.latest_attempt(task) if task.state.is_active else None
                if attempt is not None and (job.id, task.index, attempt.number) not in waiting:
                    for name in (attempt.node, *(other for other, _ in attempt.others)):
                        holders.setdefault(name, set()).add((job.id, task.index, attempt.number))
        kept: dict[str, set[int]] = {}  # the CPUs kept for the promises told to start in place
        for job in self.jobs.values():
            for task in job.tasks.values():
                attempt = self.latest_attempt(task) if task.state.is_active else None
                if attempt is not None and attempt.moving_to is not None:
                    key = (job.id, task.index, attempt.number)
                    assert key in self.moving, f"{key} is told to start in place, but no room is kept for it"
                    taken = (kept.setdefault(attempt.node, set()) | used.get(attempt.node, set())) \
                        & set(attempt.moving_to)
                    assert not taken, f"CPUs {taken} of {attempt.node} kept for {key} are taken"
                    kept[attempt.node].update(attempt.moving_to)
        for key in self.moving:  # each let go as its move or its attempt ends (handlers/promises.py)
            moving = self.attempts.get(key)
            of_job = self.jobs.get(key[0])
            its_task = of_job.tasks.get(key[1]) if of_job is not None else None
            assert its_task is not None and its_task.state.is_active and its_task.attempt == key[2] \
                and moving is not None and moving.moving_to is not None, \
                f"room is kept for {key} to start in place, which it is not told to"
        for name, node in self.nodes.items():
            assert node.used_cpu_ids == used.get(name, set()), f"node {name} CPU accounting is off"
            assert node.holders == holders.get(name, set()), f"node {name}'s attempts are off"
        for job in self.jobs.values():  # what a pass reads of its tasks (core/job.py TaskTally)
            counted: dict[JobState, int] = {}
            for task in job.tasks.values():
                counted[task.state] = counted.get(task.state, 0) + 1
            tally = job.tally()
            assert {state: n for state, n in tally.by_state.items() if n} == counted \
                and tally.pending == {index for index, task in job.tasks.items() if task.state is JobState.PENDING}, \
                f"job {job.id}'s tally of its tasks is off"
        load: dict[str, list[int]] = {}
        for job in self.jobs.values():
            owner = load.setdefault(job.owner, [0, 0, 0])
            owner[0] += 1
            owner[1] += job.indices.count
            owner[2] += job.payload_bytes
        assert {k: v for k, v in self.owner_load.items() if v != [0, 0, 0]} == load, "per-owner load is off"
        self.work.check()
