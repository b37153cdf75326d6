"""Promised attempts in the controller's accounting (the planner decides them:
scheduler/promises.py; the node keeps them: execd/attempts.py).

An attempt promised to follow another (`Attempt.after`) holds no room of its own while the one
it follows holds its own: the two share those CPUs, one after the other. When the followed
attempt gives its room back, its follower takes it at once, as its node starts it then; a
follower that ends before that (taken back by a cancel or a hold) gives nothing back, for it
held nothing. `ControllerState.followers` says who follows whom (controller/followers.py), in
memory only: rebuilt from the attempts' `after` whenever the nodes are recounted (a reload, a
failover).

A promise stranded by room freed beside it on its node (promises.stranded; the planner judges it
in its place in its order, scheduler/plan.py) is started there in
place: the controller picks the free CPUs, keeps them for it (`Attempt.moving_to`, stored, and
`ControllerState.moving`), and tells the node to start it now (StartPromisedNow). When the node
says it started, moved (promises.started), it follows no one and holds the new room; started as
promised before the order came, the room kept is simply let go.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from drover.controller.effects import Outcome
from drover.controller.followers import fast_attempt_key
from drover.controller.handlers import resource_requests
from drover.controller.state import ControllerState
from drover.core.job import Attempt, Job, Task
from drover.core.job_state import JobState
from drover.core.node import Node
from drover.core.resources import Resources
from drover.protocol.node_channel import SignalAttempt, StartPromisedNow
from drover.scheduler.plan import Start
from drover.scheduler.reasons import PendingReason
from drover.scheduler.snapshot import Stranded, Succession

log = logging.getLogger("drover.controller")


@dataclass(slots=True)
class Kept:
    """Free room on a node that no job may take in this pass, by its very CPUs and its memory:
    kept for the promises told to start there in place (the CPUs each was given), and for the
    tasks whose promise was taken back to start there, whose node has not said so yet (the
    lowest CPUs free when the pass keeps them: any would do, the task starts anew once its
    node has ended the promise, and the room is let go then)."""

    cpu_ids: frozenset[int] = frozenset()
    memory_mib: int = 0

    def add(self, cpu_ids: tuple[int, ...], memory_mib: int) -> None:
        self.cpu_ids = self.cpu_ids | frozenset(cpu_ids)
        self.memory_mib += memory_mib

    def left_of(self, free: Resources) -> Resources:
        """What of `free` is not kept (nothing below none: a node back smaller keeps what it can)."""
        return Resources(max(free.cpus - len(self.cpu_ids), 0), max(free.memory_mib - self.memory_mib, 0))

    def free_cpu_ids(self, free_cpu_ids: frozenset[int]) -> list[int]:
        """Of the free CPU ids, those not kept, lowest first."""
        return sorted(free_cpu_ids - self.cpu_ids)


def key_of(attempt: Attempt) -> tuple[int, int, int]:
    return (attempt.job_id, attempt.index, attempt.number)


def holds_room(state: ControllerState, attempt: Attempt) -> bool:
    """Whether the attempt holds its node's room: it follows no one, or the one it followed
    holds no more."""
    node = state.nodes.get(attempt.node)
    return node is not None and key_of(attempt) in node.holders


def waits_for(state: ControllerState, attempt: Attempt) -> bool:
    """Whether a promised attempt still waits for the one it follows to give back its room."""
    if attempt.after is None:
        return False
    followed = state.attempt_by_name(attempt.after)
    if followed is None:
        return False
    node = state.nodes.get(followed.node)
    return node is not None and key_of(followed) in node.holders


def take(state: ControllerState, job: Job, attempt: Attempt) -> None:
    """The attempt takes its room on its nodes (a parallel job's on each; devices on the master)."""
    for name, cpu_ids, memory_mib in attempt.rooms(job.resources.memory_mib):
        node = state.nodes.get(name)
        if node is not None:
            node.take(cpu_ids, memory_mib, attempt.gres if name == attempt.node else None, key_of(attempt))


def give_back(state: ControllerState, job: Job, attempt: Attempt) -> None:
    """The attempt gives back what it holds, and its follower, if one waits, takes the room."""
    if attempt.moving_to is not None:  # it ends before its node said it started in place: let the room go
        attempt.moving_to = None
        state.moving.discard(key_of(attempt))
    followed = fast_attempt_key(attempt.after) if attempt.after is not None else None
    if followed is not None and state.followers.get(followed) == key_of(attempt):
        state.followers.pop(followed)  # it ends before it started: it held nothing
        return
    for name, cpu_ids, memory_mib in attempt.rooms(job.resources.memory_mib):
        node = state.nodes.get(name)
        if node is not None:
            node.give_back(cpu_ids, memory_mib, attempt.gres if name == attempt.node else None, key_of(attempt))
    follower_key = state.followers.pop(key_of(attempt))
    follower = state.attempts.get(follower_key) if follower_key is not None else None
    follower_job = state.jobs.get(follower.job_id) if follower is not None else None
    if follower is not None and follower_job is not None:
        task = follower_job.tasks.get(follower.index)
        if task is not None and task.state.is_active and task.attempt == follower.number:
            take(state, follower_job, follower)


def successions(state: ControllerState, node: Node, kill_grace_s: float) -> tuple[Succession, ...]:
    """The attempts holding room on `node` that a task may be promised to follow: none follows
    them yet, they hold no devices, no whole node and no other node, and none is a promise told
    to start in place whose node has not said so (it holds the room of the one it followed for
    now, and will not run on those CPUs), and none holds a CPU the node no longer offers (it came
    back smaller: the follower would be given that CPU, which its node refuses). None on a node whose
    running attempts hold more than it now offers (it came back smaller, core/node.py): the room
    they give back pays that back first, and a follower would take it over at once."""
    if node.overdrawn != Resources():
        return ()
    found = []
    for key in node.holders:
        attempt, job = state.attempts.get(key), state.jobs.get(key[0])
        if (attempt is None or job is None or attempt.node != node.name or attempt.others or attempt.gres
                or key in state.followers or attempt.moving_to is not None or resource_requests.of_job(job).exclusive
                or any(cpu >= node.cpus for cpu in attempt.cpu_ids)):
            continue
        limit = job.spec.time_limit_s
        began = attempt.started_at or attempt.dispatched_at
        found.append(Succession(attempt.name, attempt.cpu_ids, job.resources.memory_mib,
                                began + limit + kill_grace_s if limit else math.inf))
    return tuple(sorted(found, key=lambda succession: succession.attempt))


Rank = Callable[[Job], tuple[float, float, int]]  # a job's place in the planner's order: lower first


def outranked(state: ControllerState, outcome: Outcome, reasons: Mapping[int, PendingReason], now: float,
              rank: Rank) -> None:
    """Take back a promise that a waiting job now outranks by its priority (submitted since with a
    higher priority, raised above it, or, with fair share or age weighed, risen above it): the
    first job in the planner's order that waits for room gets the room of the lowest-ranked
    promised task whose job's priority is below its own and whose room it fits, one a pass. The
    node ends that attempt before it starts and the task waits again, as a requeue (the stop's
    why), to be planned in its turn; nothing of it ran. `rank` is the planner's order (its
    multifactor priority where weights are set: the pass's Ranking, dispatch.job_rank), so that what is taken
    back is what the planner would not promise again.
    A job of the same priority that ranks first only by its submission does not take a promise
    back: it was not in line for the room when the promise was made (held by its array's
    %limit, a queue's or user's limit, a licence, a dependency or its begin time), and becoming
    eligible since puts it in line for the next room, as a start made a moment earlier would."""
    place = rank
    if not state.followers:
        return
    head = min((state.jobs[job_id] for job_id, reason in reasons.items()
                if reason is PendingReason.RESOURCES and job_id in state.jobs), key=place, default=None)
    if head is None:
        return
    priority = place(head)[0]
    candidates = []
    for followed_key, key in state.followers.items():
        follower, job, followed = state.attempts.get(key), state.jobs.get(key[0]), state.attempts.get(followed_key)
        task = job.tasks.get(key[1]) if job is not None else None
        if (follower is None or job is None or followed is None or task is None
                or not _still_promised(follower, task) or place(job)[0] <= priority):
            continue
        room = state.jobs.get(followed.job_id)
        if room is None or head.resources.cpus > len(followed.cpu_ids) or \
                head.resources.memory_mib > room.resources.memory_mib:
            continue
        candidates.append((place(job), follower, task))
    if not candidates:
        return
    _, follower, task = max(candidates, key=lambda candidate: candidate[0])
    _take_back(outcome, follower, task, now, by=head.id)


def stranded(state: ControllerState, placed: Callable[[Job], tuple[int, float | None]]) -> tuple[dict[str, Kept],
                                                                                          list[Stranded]]:
    """The promises stranded by room freed beside them on their node, which they fit (another
    attempt there ended before the one they follow, which may run for hours), for the planner
    to judge in their place in its order, as it judges a start (scheduler/plan.py): what this
    pass finds could start before one takes the room first; else it starts there in place
    (start_in_place). `placed`: a job's queue priority and run limit, its other terms there.
    And the room kept on each node: for the promises told to start there in place whose node
    has not said they started (moving_room), and for tasks whose promise was taken back to
    start there whose node has not said so, so that no job takes it meanwhile."""
    kept = moving_room(state)
    found: list[Stranded] = []
    for key in list(state.followers.values()):
        follower, job = state.attempts.get(key), state.jobs.get(key[0])
        task = job.tasks.get(key[1]) if job is not None else None
        if (follower is None or job is None or task is None or not _unstarted(follower, task)
                or follower.moving_to is not None):
            continue
        node = state.nodes.get(follower.node)
        need = Resources(job.resources.cpus, job.resources.memory_mib)
        if node is None or not node.state.accepts_work or not need.fits_in(_left(kept, node)):
            continue
        if task.requeue_requested and not (task.cancel_requested or task.hold_requested):
            _keep(kept, node, need)  # taken back, its node not yet heard
        elif _still_promised(follower, task):
            queue_priority, run_limit_s = placed(job)
            found.append(Stranded(job.id, task.index, node.name, need, job.owner, job.priority, job.submitted_at,
                                  queue_priority, run_limit_s, job.spec.queue,
                                  resource_requests.of_job(job).constraint))
    return kept, found


def start_in_place(state: ControllerState, outcome: Outcome, starts: Sequence[Start], now: float) -> None:
    """The stranded promises the planner gave the room free beside them: each node is told to
    start its promise there now, on those CPUs, as the same attempt (StartPromisedNow): no round
    trip, no new attempt; the CPUs are kept for it until its node says it started. A node whose
    hello did not say it takes that order (an earlier version) has the promise taken back
    instead, its room kept until the node has ended it, for the task to start there."""
    for start in starts:
        job = state.jobs.get(start.job)
        task = job.tasks.get(start.index) if job is not None else None
        follower = state.attempts.get((start.job, start.index, task.attempt)) if task is not None else None
        node = state.nodes.get(start.node)
        if task is None or follower is None or node is None or not _still_promised(follower, task):
            continue
        if node.starts_in_place:
            _start_in_place(state, outcome, follower, task, start.cpu_ids, now)
        else:  # a node daemon of an earlier version: taken back, the room kept (stranded)
            _take_back(outcome, follower, task, now, why=f"room is free on {node.name}: it starts there now")


def moving_room(state: ControllerState) -> dict[str, Kept]:
    """The room kept on each node for the promises told to start in place whose node has not
    said they started: their very CPUs, and their memory. `ControllerState.moving` names them
    (rebuilt from `Attempt.moving_to` on a reload or a failover); each leaves it as its move
    ends (`started`) or its attempt does (`give_back`)."""
    kept: dict[str, Kept] = {}
    for key in state.moving:
        attempt, job = state.attempts.get(key), state.jobs.get(key[0])
        if attempt is not None and job is not None and attempt.moving_to is not None:
            kept.setdefault(attempt.node, Kept()).add(attempt.moving_to, job.resources.memory_mib)
    return kept


def started(state: ControllerState, job: Job, attempt: Attempt, moved: bool) -> None:
    """A promise told to start in place has started (its node's Started report, or its hello).
    Moved: it follows no one now and holds its new CPUs; if the one it followed had ended first
    (its end handled before this report), it took that one's room then, and gives it back now.
    Not moved (the one it followed ended before the order came, and its node started it as
    promised): the room kept for it is let go. Either way the move is over."""
    target = attempt.moving_to
    if target is None:
        if moved:
            log.warning("attempt %s: its node says it started in place, which it was never told: ignored",
                        attempt.name)
        return
    key = key_of(attempt)
    attempt.moving_to = None
    state.moving.discard(key)
    if not moved:
        return
    followed = fast_attempt_key(attempt.after) if attempt.after is not None else None
    if followed is not None and state.followers.get(followed) == key:
        state.followers.pop(followed)  # it held nothing
    elif holds_room(state, attempt):  # the room of the one it followed, taken when that one ended
        node = state.nodes[attempt.node]
        node.give_back(attempt.cpu_ids, job.resources.memory_mib, None, key)
    attempt.cpu_ids = target
    attempt.after = None
    take(state, job, attempt)


def move_beyond(attempt: Attempt, node: Node) -> bool:
    """Whether the promise was told to start in place on a CPU its node no longer offers (it
    came back with fewer CPUs): the node refuses that order (execd/attempts.py), each time it
    is sent again."""
    return attempt.moving_to is not None and any(cpu >= node.cpus for cpu in attempt.moving_to)


def let_move_go(state: ControllerState, attempt: Attempt, node: Node) -> None:
    """The move of a promise told to start in place on CPUs its node no longer offers is let
    go: the room kept for it is free again, and it stays a promise, which its node starts when
    the attempt it follows ends (no later than it would have without the move). Kept, the room
    would stay free, for nothing, until then."""
    log.warning("attempt %s: not started in place on CPUs %s, which node %s no longer has (it offers %d now): "
                "it starts when %s ends", attempt.name, list(attempt.moving_to or ()), node.name, node.cpus,
                attempt.after)
    attempt.moving_to = None
    state.moving.discard(key_of(attempt))


def _left(kept: Mapping[str, Kept], node: Node) -> Resources:
    held = kept.get(node.name)
    return held.left_of(node.free) if held is not None else node.free


def _keep(kept: dict[str, Kept], node: Node, need: Resources) -> tuple[int, ...] | None:
    """Keep `need` on `node`, on the lowest of its free CPUs not kept yet: those CPUs, or None
    where too few are left."""
    free = kept.get(node.name, Kept()).free_cpu_ids(node.free_cpu_ids())
    if len(free) < need.cpus:
        return None
    cpu_ids = tuple(free[:need.cpus])
    kept.setdefault(node.name, Kept()).add(cpu_ids, need.memory_mib)
    return cpu_ids


def _start_in_place(state: ControllerState, outcome: Outcome, follower: Attempt, task: Task,
                    cpu_ids: tuple[int, ...], now: float) -> None:
    """Tell the node to start the promised attempt now on `cpu_ids`, kept for it until it says
    it started (stored: a controller that takes over keeps them too, and tells the node again)."""
    follower.moving_to = cpu_ids
    state.moving.add(key_of(follower))
    outcome.changes.attempt(follower)
    outcome.changes.event(now, "promise_started_in_place", task.job_id, task.index, task.attempt,
                          node=follower.node, cpu_ids=list(cpu_ids), instead_of=follower.after)
    outcome.send(follower.node, StartPromisedNow(follower.name, list(cpu_ids)))


def taken_back_on(state: ControllerState, outcome: Outcome, node: str, now: float, why: str,
                  queue: str | None = None) -> None:
    """Take back every promise not yet started on `node` (of `queue`'s jobs only, if named): the
    node was drained or went into error (or that queue did there), and a promise is a start that
    has not happened: it must not happen there now. Each task waits again, as a requeue."""
    for key in list(state.followers.values()):
        follower, job = state.attempts.get(key), state.jobs.get(key[0])
        task = job.tasks.get(key[1]) if job is not None else None
        if (follower is not None and job is not None and task is not None and follower.node == node
                and (queue is None or job.spec.queue == queue) and _still_promised(follower, task)):
            _take_back(outcome, follower, task, now, why=why)


def _unstarted(follower: Attempt, task: Task) -> bool:
    """The promised attempt is its task's, and has not started."""
    return follower.started_at is None and task.state is JobState.DISPATCHED and task.attempt == follower.number


def _still_promised(follower: Attempt, task: Task) -> bool:
    """The promised attempt has not started, it was not told to start in place (a start that
    may have happened on its node already: it is not taken back), and no stop of its task is
    under way."""
    return _unstarted(follower, task) and follower.moving_to is None and not task.stop_requested


def _take_back(outcome: Outcome, follower: Attempt, task: Task, now: float, **fields: object) -> None:
    """The node ends the promised attempt before it starts, and the task waits again as after a
    requeue (the stop's why): nothing of it ran."""
    task.requeue_requested = True
    outcome.changes.task(task)
    outcome.changes.event(now, "promise_taken_back", task.job_id, task.index, task.attempt, **fields)
    outcome.send(follower.node, SignalAttempt(follower.name, "terminate", "requeue"))
