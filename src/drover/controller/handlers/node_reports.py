"""What nodes tell the controller: hello (after every connect), started, exited, gone.

Every report is idempotent, keyed by the attempt: a repeated or late report never counts twice,
never brings back a cancelled task, and never lets a second attempt run.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from drover.controller.effects import Outcome, SendToNode
from drover.controller.handlers import checkpoints, pe_usage, promises, reported_text
from drover.controller.handlers.actions import migrate_task, stop_reason
from drover.controller.handlers.attempt_nodes import ran_on
from drover.controller.handlers.dispatch import OrderOptions, queue_nice, queue_of, start_order
from drover.controller.handlers.lifecycle import (
    change_task,
    drained_if_idle,
    end_job_if_done,
    release_attempt,
    start_before_end,
)
from drover.controller.state import ControllerState
from drover.core.accounting import never_ran
from drover.core.exit_status import (
    GRID_ENGINE,
    ExitSemantics,
    classify_exit,
    effective_exit_code,
    error_hold_cause,
    exit_facts,
    node_failure,
    outcome_reason,
    queue_failure,
    shell_status,
)
from drover.core.gres import devices_from_hello
from drover.core.ids import bounded_attempt_key, job_of_attempt
from drover.core.job import Attempt, Job, JobPayload, Task, with_given_up
from drover.core.job_state import JobState, Trigger
from drover.core.node import Node
from drover.core.node_state import NODE_TRANSITIONS, NodeState, NodeTrigger
from drover.protocol.node_channel import (
    HEARTBEAT_S,
    Ack,
    Enforced,
    Exited,
    Exiting,
    Hello,
    Progress,
    SignalAttempt,
    StagedOut,
    Started,
    StartPromisedNow,
    Suspended,
    Welcome,
)
from drover.records import CleanupProgress, ExitStatus, GivenUpStep
from drover.store.base import Store


def on_node_connected(state: ControllerState, hello: Hello, now: float, orders: OrderOptions, store: Store,
                      heartbeat_s: float = HEARTBEAT_S) -> Outcome:
    """`store`: where the scripts of the orders sent again are read (Store.job_payloads)."""
    outcome = Outcome(reschedule=True)
    node = state.nodes.get(hello.node)
    created = node is None
    if node is None:
        node = state.nodes[hello.node] = Node(hello.node, hello.cpus, hello.memory_mib, NodeState.DOWN, now)
    node.cpus, node.memory_mib, node.last_seen = hello.cpus, hello.memory_mib, now
    devices = devices_from_hello(hello.gres)
    # What its attempts hold is counted again against its devices now; a node made known by this
    # hello held nothing in the controller's accounting, though attempts stored may name it.
    if created or devices != node.devices:
        node.devices = devices
        state.recount_nodes()
    node.features = frozenset(hello.features)
    node.ends_at = hello.ends_at
    node.starts_in_place = hello.starts_in_place
    if node.state is NodeState.DOWN:
        node.apply(NodeTrigger.CONNECT)  # a node in ERROR stays so until an operator resumes it
        if node.drain is not None:  # drained before it went away: still drained
            node.apply(NodeTrigger.DRAIN)
            node.reason = node.drain
    outcome.changes.node(node)
    outcome.changes.event(now, "node_connected", node=node.name, cpus=node.cpus, memory_mib=node.memory_mib,
                          gres=hello.gres or None, features=hello.features or None)
    node.heard_at = now
    outcome.send(node.name, Welcome(node.name, heartbeat_s, staged_chunks=True))
    known = {item.attempt: item.running for item in hello.attempts}
    started_times = {item.attempt: item.started_at for item in hello.attempts if item.started_at is not None}
    promised = {item.attempt for item in hello.attempts if item.promised}  # held, not started
    # Its shepherd at work, its prologs running: the job starts (Started) or ends unstarted later.
    setting_up = {item.attempt for item in hello.attempts if item.job_started is False}
    moved = {item.attempt for item in hello.attempts if item.moved}  # started in place
    tasks = _sent_to(state, node, created)
    # The orders it never got are sent again: their jobs' payloads in one read.
    payloads = store.job_payloads(sorted({job.id for job, task in tasks if _order_lost(state, node, task, known)}))
    for job, task in tasks:
        try:
            _reattach(state, outcome, node, job, task, known, promised, now, orders, payloads, moved,
                      started_times, setting_up)
        except Exception as error:  # this job only: the shell fails it; the node's others go on
            outcome.fault(job.id, error, f"taking up its attempts again after node {node.name} said hello")
    # Attempts the node still runs that the controller has given up on (the node was lost for
    # too long, or the job was decided otherwise): stop them, so nothing runs unaccounted.
    for name, running in known.items():
        attempt = state.attempt_by_name(name)
        found = state.jobs[attempt.job_id].tasks.get(attempt.index) if attempt and attempt.job_id in state.jobs else None
        current = found is not None and attempt is not None and found.attempt == attempt.number and found.state.is_active
        # A name Drover could not have made is no attempt to stop, nor one to record an event of.
        if running and not current and bounded_attempt_key(name) is not None:
            outcome.send(node.name, SignalAttempt(name, "terminate", "stray"))
            outcome.changes.event(now, "stray_attempt_stopped", node=node.name, stopped=name)
    drained_if_idle(outcome, node, now)
    return outcome


def _sent_to(state: ControllerState, node: Node, created: bool) -> list[tuple[Job, Task]]:
    """The active tasks whose latest attempt was sent to `node`, in job and task order: those
    holding its room (its holders) and those promised there (followers hold none). Read from
    the node's own accounting, not by walking every job: a thousand nodes saying hello again
    after a failover each cost what they run, not what the whole cluster runs. A node this
    hello made known had no accounting of its own: every job is looked at."""
    if created:
        return [(job, task) for job in list(state.jobs.values()) for task in list(job.tasks.values())]
    keys = set(node.holders)
    keys.update(follower for follower in state.followers.values()
                if (attempt := state.attempts.get(follower)) is not None and attempt.node == node.name)
    found = []
    for key in sorted(keys):
        job = state.jobs.get(key[0])
        task = job.tasks.get(key[1]) if job is not None else None
        if job is not None and task is not None and task.attempt == key[2]:
            found.append((job, task))
    return found


def _order_lost(state: ControllerState, node: Node, task: Task, known: dict[str, bool]) -> bool:
    """Whether the task was sent to `node`, which does not know of it: its order is sent again
    (unless the node came back without its CPUs: it ends instead, and its script is not read)."""
    if task.state is JobState.DISPATCHED:
        attempt = state.latest_attempt(task)
        return (attempt is not None and attempt.node == node.name and attempt.name not in known
                and not _cpus_beyond(attempt, node))
    return False


def _reattach(state: ControllerState, outcome: Outcome, node: Node, job: Job, task: Task, known: dict[str, bool],
              promised: set[str], now: float, orders: OrderOptions, payloads: Mapping[int, JobPayload],
              moved: frozenset[str] | set[str] = frozenset(),
              started_times: Mapping[str, float] | None = None, setting_up: frozenset[str] | set[str] = frozenset()
              ) -> None:
    """One task's attempt on a node that said hello: its order sent again, lost or started (a
    promised one the node holds is neither: it starts when the one it follows ends). A promise
    told to start in place whose node has not said it started is told again (the order is
    ignored where it started meanwhile), unless the node came back without one of the CPUs it
    was to move to: the move is let go, and it stays a promise; one the node says started is
    taken as started, moved or not (`moved`: its Started report may have been lost). One the node
    does not know, on CPUs it came back without, is not sent again: it ends here, never started
    (_end_unstarted_beyond); a promise it holds on such CPUs is taken back; one that started runs
    on where its CPUs are pinned. `started_times`: when the node saw its attempts' jobs start, the
    start of one whose Started report never reached the store (never later than the hello).
    `setting_up`: the attempts whose shepherds have not started their jobs yet (prologs running):
    not counted started at the hello, which would record a start, and a run time, of a job that
    may never run."""
    attempt = state.latest_attempt(task)
    if attempt is None or attempt.node != node.name or not task.state.is_active:
        return
    stopping = task.stop_requested
    runs = known.get(attempt.name, False) and attempt.name not in promised  # started: `started` settles its move
    if not runs and promises.move_beyond(attempt, node):  # the node came back smaller: it would refuse the move
        promises.let_move_go(state, attempt, node)
        outcome.changes.attempt(attempt)
    # Told again to start in place only if its task is not being stopped (the stop below ends it
    # without a shepherd) and the node takes that order (one gone back to an earlier version would
    # refuse every frame carrying it).
    move_again = (StartPromisedNow(attempt.name, list(attempt.moving_to))
                  if attempt.moving_to is not None and not stopping and node.starts_in_place else None)
    if attempt.name not in known:
        if task.state is JobState.DISPATCHED and _cpus_beyond(attempt, node):
            # The node came back with fewer CPUs, without some of those the attempt was given:
            # it would refuse the order (execd/attempts.py), so the attempt ends here instead.
            _end_unstarted_beyond(state, outcome, job, task, attempt, node, now, orders.exits)
            return
        if task.state is JobState.DISPATCHED:
            # The order never arrived (or the node lost it before starting): send it again.
            payload = payloads.get(job.id)
            if payload is None:
                raise LookupError(f"the store holds no script for job {job.id}")
            outcome.send(node.name, start_order(job, payload, attempt, orders, queue_nice(state, job, orders),
                                                queue_of(state, job, orders)))
            if move_again is not None:
                outcome.send(node.name, move_again)
        else:
            lose_attempt(state, outcome, job, task, attempt, now, f"node {node.name} no longer knows the attempt",
                         orders.exits)
            return
    elif (known[attempt.name] and task.state is JobState.DISPATCHED and attempt.name not in promised
          and attempt.name not in setting_up):
        node_said = (started_times or {}).get(attempt.name)
        # Its Started report was lost: the start is the node's, where it says when (a node's clock
        # a little ahead puts no start after the hello).
        said = node_said if node_said is not None and math.isfinite(node_said) else None
        started = now if said is None else min(said, now)
        learned = {} if said is None else {"learned_from": "hello"}
        attempt.started_at = attempt.started_at or started
        was_promised = {"promised": True} if attempt.after is not None else {}  # the metrics count it now
        promises.started(state, job, attempt, attempt.name in moved)
        outcome.changes.attempt(attempt)
        change_task(outcome, task, Trigger.START, started, job, **was_promised, **learned)
    elif attempt.name in promised and attempt.moving_to is None and not stopping and _cpus_beyond(attempt, node):
        _take_back_beyond(outcome, task, attempt, node, now)
    elif attempt.name in promised and move_again is not None:
        outcome.send(node.name, move_again)
    if stopping:
        outcome.send(node.name, SignalAttempt(attempt.name, "terminate", stop_reason(task)))


def _cpus_beyond(attempt: Attempt, node: Node) -> list[int]:
    """The CPUs the attempt was given on `node` that the node no longer offers (it came back
    with fewer), lowest first."""
    return sorted(cpu for cpu in attempt.cpu_ids if cpu >= node.cpus)


def _end_unstarted_beyond(state: ControllerState, outcome: Outcome, job: Job, task: Task, attempt: Attempt,
                         node: Node, now: float, semantics: ExitSemantics = GRID_ENGINE) -> None:
    """A dispatched attempt its node does not know, on CPUs the node no longer offers: its order
    is not sent again (the node would refuse it). Nothing of it ran, so it ends as an attempt
    stopped before it started does, and its task waits again as after a requeue (a cancel or a
    hold asked for meanwhile is decided as such): its exit record has no exit status and no
    failure of the job's (core/accounting.never_ran: drover history and qacct show none, and a
    promise is counted neither started nor ended), and the requeue's event says why."""
    why = _came_back_without(node, _cpus_beyond(attempt, node))
    stopped: ExitStatus = {
        "exit_code": None, "signal": None, "failure": None, "timed_out": False, "terminated": True,
        "out_of_memory": False,
    }
    attempt.exit = stopped
    attempt.ended_at = now
    outcome.changes.attempt(attempt)
    if not (task.cancel_requested or task.hold_requested):
        task.requeue_requested = True  # as for a promise taken back: the controller's own requeue
    change_task(outcome, task, Trigger.EXIT, now, exit_code=None, signal=None, failure=None)
    _decide(state, outcome, job, task, attempt, stopped, now, semantics, why=why)


def _take_back_beyond(outcome: Outcome, task: Task, attempt: Attempt, node: Node, now: float) -> None:
    """A promise its node holds, on CPUs the node came back without: its node would not start it
    there (execd/attempts.py). It is taken back as any promise is (promises.taken_back_on): the
    node ends it before it starts, and the task waits again as after a requeue; nothing of it ran."""
    task.requeue_requested = True
    outcome.changes.task(task)
    outcome.changes.event(now, "promise_taken_back", task.job_id, task.index, task.attempt,
                          why=_came_back_without(node, _cpus_beyond(attempt, node)))
    outcome.send(node.name, SignalAttempt(attempt.name, "terminate", "requeue"))


def _came_back_without(node: Node, missing: list[int]) -> str:
    return (f"node {node.name} came back offering {node.cpus} CPU{'s' if node.cpus != 1 else ''}, without "
            f"CPU{'s' if len(missing) > 1 else ''} {','.join(map(str, missing))} of the attempt's: it never started")


def on_nodes_lost(state: ControllerState, now: float, timeout_s: float,
                  semantics: ExitSemantics = GRID_ENGINE) -> Outcome:
    """Nodes down for longer than `timeout_s`: their attempts are lost (NODE_FAIL), their CPUs
    freed. A node that comes back later is told to stop what it still runs of them."""
    outcome = Outcome()
    # Only nodes that still hold attempts: once a lost node's are ended, a node that stays
    # away costs the periodic check nothing (no scan of every job).
    lost = {name for name, node in state.nodes.items()
            if node.state is NodeState.DOWN and node.running and node.last_seen is not None
            and now - node.last_seen > timeout_s}
    if not lost:
        return outcome
    for job in list(state.jobs.values()):
        try:
            for task in list(job.tasks.values()):
                attempt = state.latest_attempt(task)
                if attempt is None or not task.state.is_active:
                    continue
                if attempt.node in lost:
                    lose_attempt(state, outcome, job, task, attempt, now, f"node {attempt.node} was lost", semantics)
                elif gone := sorted(lost & {other for other, _ in attempt.others}):
                    # One of a parallel job's other nodes: the job ends as if its master were lost
                    # (requeued or failed as its rerun policy says); its master is told to stop it.
                    if task.state is not JobState.COMPLETING:
                        outcome.send(attempt.node, SignalAttempt(attempt.name, "terminate", "stray"))
                    lose_attempt(state, outcome, job, task, attempt, now,
                                 f"node {gone[0]} of its parallel job was lost", semantics)
        except Exception as error:  # this job only: the shell fails it; the others go on
            outcome.fault(job.id, error, f"failing its attempts on lost node(s) {', '.join(sorted(lost))}")
    if outcome.changes or outcome.faults:
        outcome.reschedule = True
    return outcome


def lose_attempt(state: ControllerState, outcome: Outcome, job: Job, task: Task, attempt: Attempt, now: float,
                 why: str, semantics: ExitSemantics = GRID_ENGINE) -> None:
    """An attempt whose node is gone (or came back without it): ended here, since its node
    cannot say how. One whose job had already exited (COMPLETING: its cleanup was under way) is
    decided from the exit it reported, so a job that ran is never run again; one still running
    is a system failure, requeued as a new attempt when the job may run again (at most until
    MAX_SYSTEM_FAILURE_ATTEMPT), else NODE_FAIL. Fencing: the node is told to stop the attempt
    if it ever comes back (on_node_connected), and its late report is stale (_exited)."""
    if task.state is JobState.COMPLETING and attempt.exit is not None:
        _decide(state, outcome, job, task, attempt, attempt.exit, now, semantics, why=f"{why} during the job's cleanup")
        return
    lost: ExitStatus = {
        "exit_code": None, "signal": None, "failure": why, "timed_out": False, "terminated": False,
        "out_of_memory": False, "node_lost": True,
    }
    attempt.exit = lost
    attempt.ended_at = now
    outcome.changes.attempt(attempt)
    state.lost(attempt.name, attempt.node)
    if task.state is not JobState.COMPLETING:
        change_task(outcome, task, Trigger.EXIT, now, failure=why)
    _decide(state, outcome, job, task, attempt, lost, now, semantics)


def on_node_disconnected(state: ControllerState, name: str, now: float) -> Outcome:
    outcome = Outcome()
    node = state.nodes.get(name)
    if node is not None and node.state not in (NodeState.DOWN, NodeState.ERROR):
        node.apply(NodeTrigger.DISCONNECT)
        node.last_seen = now
        outcome.changes.node(node)
        outcome.changes.event(now, "node_disconnected", node=name)
    return outcome


Report = Started | Suspended | Exiting | Progress | StagedOut | Exited | Enforced
# How one report is handled (handle_report); the fault-injection seam wraps it when it is on
# (controller/faults.py). on_reports isolates each job's reports around it.
ReportHandler = Callable[[ControllerState, Outcome, Report, float, ExitSemantics], None]


def on_reports(state: ControllerState, node: str, reports: list[Report], now: float,
               semantics: ExitSemantics = GRID_ENGINE, handle: ReportHandler | None = None,
               store: Store | None = None) -> Outcome:
    """One frame of reports from a node: handled job by job, and committed together. `store`:
    where the node of an attempt the working set no longer holds is read (`_stored_nodes`); without
    it, no node speaks for such an attempt.

    An exception while handling one job's reports sets that job aside (Outcome.fault): the
    nodes they touched are put back as they were here, nothing of the job is committed or sent,
    and the shell puts the job back as the store has it and fails it with the reason. The other
    jobs' reports go on, and the node's channel stays. The reports of the job set aside are
    acknowledged with its failure, so the node does not send them again and again."""
    handle = handle or handle_report
    outcome = Outcome()
    acks: dict[str, list[str]] = {}
    stored = _stored_nodes(state, reports, store)
    for job_id, group in _by_job(reports).items():
        if job_id is not None:
            touched = _node_states(state, group)
            report = group[0]
            try:
                for report in group:
                    # A node speaks for the attempts sent to it only (its channel is its own):
                    # another node's report of one is acknowledged below and changes nothing. To an
                    # attempt the working set no longer holds, its own node adds only the record of a
                    # late cleanup step given up (the store says which node that is: `stored`).
                    if ran_on(state, node, report.attempt, stored.get):
                        # Its text cleaned before anything keeps it (reported_text.py); the
                        # acknowledgement below names what the node sent.
                        handle(state, outcome, reported_text.cleaned(report), now, semantics)
            except Exception as error:
                for held, node_state, reason, queue_errors in touched:
                    held.state, held.reason, held.queue_errors = node_state, reason, queue_errors
                where = f"handling the {report_kind(report)} report of attempt {report.attempt} from node {node}"
                outcome.fault(job_id, error, where, _acks(node, group))
                continue
        for report in group:  # reports that name no attempt change nothing, and are acknowledged
            kind = ack_kind(report)
            if kind is not None:
                acks.setdefault(kind, []).append(report.attempt)
    for kind, names in acks.items():
        outcome.send(node, Ack(names, kind))
    return outcome


def _stored_nodes(state: ControllerState, reports: list[Report], store: Store | None) -> dict[str, str]:
    """The node each Progress report's attempt was sent to, where the working set no longer holds
    it: read from the store, for all of the frame's reports at once. Only a Progress report does
    anything to an attempt whose job has ended (a late cleanup step given up); the other kinds
    change nothing once the working set has let the attempt go, and asking the store for each of
    them cost a query a frame (a tenth of the controller's time with 200 nodes)."""
    keys = {name: key for report in reports
            if isinstance(report, Progress) and state.attempt_by_name(name := report.attempt) is None
            and name not in state.lost_attempts and (key := bounded_attempt_key(name)) is not None}
    if not keys or store is None:
        return {}
    nodes = store.attempt_nodes(sorted(set(keys.values())))
    return {name: nodes[key] for name, key in keys.items() if key in nodes}


def handle_report(state: ControllerState, outcome: Outcome, report: Report, now: float,
                  semantics: ExitSemantics = GRID_ENGINE) -> None:
    if isinstance(report, Started):
        _started(state, outcome, report, now)
    elif isinstance(report, Suspended):
        _suspended(state, outcome, report, now)
    elif isinstance(report, Exiting):
        _exiting(state, outcome, report, now)
    elif isinstance(report, Progress):
        _progress(state, outcome, report, now)
    elif isinstance(report, StagedOut):
        _staged_out(state, outcome, report, now)
    elif isinstance(report, Enforced):
        _enforced(state, outcome, report, now)
    else:
        _exited(state, outcome, report, now, semantics)


def ack_kind(report: Report) -> str | None:
    """What the node waits to hear once the report is recorded (an Ack of this kind), if anything."""
    if isinstance(report, Exited):
        return "report"
    if isinstance(report, StagedOut):
        return "stage_out"
    if isinstance(report, Progress) and report.given_up:
        return f"given_up:{report.step}"
    return None


def report_kind(report: Report) -> str:
    """The report's kind as the node channel spells it: started, exited…"""
    return str(report.__struct_config__.tag)


def _acks(node: str, reports: list[Report]) -> tuple[SendToNode, ...]:
    return tuple(SendToNode(node, Ack([report.attempt], kind)) for report in reports
                 if (kind := ack_kind(report)) is not None)


def _by_job(reports: list[Report]) -> dict[int | None, list[Report]]:
    """The reports by the job their attempt belongs to, each job's in the order they came. Read
    within what the store holds, not by the in-memory followers.fast_attempt_key: a group's job
    is the one a fault restores from the store and fails, among the jobs the shell named for the
    frame with the same reading (shell/report_group.py); a name of 20 digits, or one int() reads
    as another attempt's (' 7', '1_0'), is in no job's group."""
    groups: dict[int | None, list[Report]] = {}
    for report in reports:
        groups.setdefault(job_of_attempt(report.attempt), []).append(report)
    return groups


def _node_states(state: ControllerState,
                 reports: list[Report]) -> list[tuple[Node, NodeState, str | None, dict[str, str]]]:
    """The nodes the reports' attempts ran on, with what handling them may change (a node that
    could not prepare an attempt goes to ERROR, a failing prolog sets a queue in error there), to
    put back if the handling fails."""
    nodes = {attempt.node for report in reports if (attempt := state.attempt_by_name(report.attempt))}
    return [(node, node.state, node.reason, dict(node.queue_errors))
            for name in nodes if (node := state.nodes.get(name))]


def resume_node(state: ControllerState, name: str, now: float, queue: str | None = None) -> Outcome:
    """An operator clears a node's ERROR, or ends its drain: it takes work again (a node that
    is down keeps no drain for when it comes back); the queue instances in error on it are
    cleared too. With `queue`, only that queue's error on the node is cleared (Grid Engine's
    `qmod -c queue@node`)."""
    from drover.core.errors import Conflict

    node = _node_named(state, name)
    outcome = Outcome(reschedule=True)
    if queue is not None:
        if queue not in node.queue_errors:
            in_error = ", ".join(sorted(node.queue_errors)) or "none"
            raise Conflict(f"queue {queue} is not in error on node {name} (queues in error there: {in_error})")
        del node.queue_errors[queue]
        outcome.changes.node(node)
        outcome.changes.event(now, "queue_error_cleared", node=name, queue=queue)
        return outcome
    cleared = sorted(node.queue_errors)
    if node.state is NodeState.DOWN and node.drain is not None:
        node.drain = node.reason = None
    elif can_node(node.state, NodeTrigger.RESUME):
        node.apply(NodeTrigger.RESUME)
        node.drain = node.reason = None
    elif not cleared:
        raise Conflict(f"node {name} is {node.state.value}; only a node in error, draining or drained, or with "
                       "a queue in error, can be resumed")
    node.queue_errors.clear()
    outcome.changes.node(node)
    if cleared:
        outcome.changes.event(now, "node_resumed", node=name, queues=cleared)
    else:
        outcome.changes.event(now, "node_resumed", node=name)
    return outcome


def drain_node(state: ControllerState, name: str, reason: str, now: float) -> Outcome:
    """An operator drains a node: it starts nothing new, what it runs ends as it would, and it
    is DRAINED once idle (Slurm's scontrol update State=DRAIN, Grid Engine's qmod -d). The drain
    holds across the node's disconnects and restarts until `drover node resume`."""
    from drover.core.errors import Conflict
    from drover.core.shown_text import check_reason

    check_reason(reason)
    node = _node_named(state, name)
    if node.state is NodeState.ERROR:
        raise Conflict(f"node {name} is in error ({node.reason}); resume it first, or leave it: it takes no work")
    node.drain = node.reason = reason or "drained by an operator"
    outcome = Outcome()
    if node.state is NodeState.UP:
        node.apply(NodeTrigger.DRAIN)
    outcome.changes.node(node)
    outcome.changes.event(now, "node_drain", node=name, reason=node.drain)
    promises.taken_back_on(state, outcome, name, now, "the node is draining")
    drained_if_idle(outcome, node, now)
    return outcome


def _node_named(state: ControllerState, name: str) -> Node:
    from drover.core.errors import NotFound

    node = state.nodes.get(name)
    if node is None:
        raise NotFound(f"node {name} does not exist (`drover nodes` lists them)")
    return node


def can_node(state: NodeState, trigger: NodeTrigger) -> bool:
    return (state, trigger) in NODE_TRANSITIONS


def _current(state: ControllerState, name: str) -> tuple[Job, Task, Attempt] | tuple[None, None, Attempt | None]:
    """The attempt, with its job and task if it is still the task's latest attempt."""
    attempt = state.attempt_by_name(name)
    if attempt is None:
        return None, None, None
    job = state.jobs[attempt.job_id]
    task = job.tasks[attempt.index]
    if task.attempt != attempt.number:
        return None, None, attempt
    return job, task, attempt




def _started(state: ControllerState, outcome: Outcome, report: Started, now: float) -> None:
    job, task, attempt = _current(state, report.attempt)
    if task is None or attempt is None or task.state is not JobState.DISPATCHED:
        return  # late or repeated
    attempt.started_at = report.started_at
    attempt.pty_socket = report.pty_socket
    promised = {"promised": True} if attempt.after is not None else {}  # the metrics count it as it starts
    if job is not None:
        promises.started(state, job, attempt, report.moved)  # a promise told to start in place
    outcome.changes.attempt(attempt)
    change_task(outcome, task, Trigger.START, now, job, job_pid=report.job_pid, **promised)
    if task.suspended_by:  # its queue instance was suspended while its prolog ran: frozen as it starts
        if job is not None and checkpoints.migrates_on_suspend(job):
            migrate_task(state, outcome, task, now)
        else:
            outcome.send(attempt.node, SignalAttempt(attempt.name, "suspend"))


def _suspended(state: ControllerState, outcome: Outcome, report: Suspended, now: float) -> None:
    job, task, _ = _current(state, report.attempt)
    wanted = (JobState.RUNNING, Trigger.SUSPEND) if report.suspended else (JobState.SUSPENDED, Trigger.RESUME)
    if task is not None and task.state is wanted[0]:
        change_task(outcome, task, wanted[1], now, job)


def _exiting(state: ControllerState, outcome: Outcome, report: Exiting | Exited, now: float) -> None:
    """The job exited: record how (once), and the task becomes COMPLETING."""
    job, task, attempt = _current(state, report.attempt)
    if attempt is None or attempt.exit is not None:
        return
    record = report.exit_status
    attempt.exit = record
    # Its tasks that ended before it are counted in its usage (pe_usage.py).
    attempt.usage = pe_usage.fold(report.usage, pe_usage.uncounted(attempt.pe_tasks))
    attempt.started_at = attempt.started_at or report.started_at
    attempt.ended_at = report.usage["ended_at"] if report.usage else now
    owner = state.jobs[attempt.job_id].owner if attempt.job_id in state.jobs else None
    if owner is not None:  # for fair share: the CPUs it held for as long as it ran
        began = attempt.started_at or attempt.dispatched_at
        state.usage.add(owner, len(attempt.cpu_ids) * max(attempt.ended_at - began, 0.0), attempt.ended_at)
    outcome.changes.attempt(attempt)
    if task is None or task.state not in (JobState.DISPATCHED, JobState.RUNNING, JobState.SUSPENDED):
        return  # an attempt the task has moved on from: keep its record, change nothing else
    if job is not None:
        start_before_end(outcome, job, task, attempt, report.started_at, now, report_kind(report))
    job_spec = state.jobs[attempt.job_id].spec
    effective = effective_exit_code(exit_facts(record, epilog_sets_exit=job_spec.epilog_sets_exit))
    task.exit_status = shell_status(effective, record["signal"] if effective == record["exit_code"] else None)
    change_task(
        outcome, task, Trigger.EXIT, now, exit_code=record["exit_code"], signal=record["signal"],
        failure=record["failure"],
    )


def _progress(state: ControllerState, outcome: Outcome, report: Progress, now: float) -> None:
    """A failed try of a cleanup step (the pipeline waits and tries again), or a step given up
    after its bounded tries (the pipeline went on): each is a cleanup_failed event. A step given
    up stays with the attempt, after the job ended too, for `drover show`."""
    given_up: list[GivenUpStep] = []
    error = report.error
    if report.given_up and report.step is not None:
        given_up = [{"step": report.step, "tries": report.tries, "error": report.error or "unknown"}]
        error = f"{report.step} given up: {report.error}"
    _, _, attempt = _current(state, report.attempt)
    key = bounded_attempt_key(report.attempt)
    if attempt is not None:
        if given_up:  # the pipeline goes on: it is not stopped at this step
            _record_cleanup(outcome, attempt, report.done, now, given_up=given_up)
        else:
            _record_cleanup(outcome, attempt, report.done, now, step=report.step, tries=report.tries, error=error)
        key = attempt.job_id, attempt.index, attempt.number
    elif key is not None and given_up:
        # A step after the report (mail, removing the spool) of a job that has ended since.
        outcome.changes.given_up_step(*key, given_up[0])
    if error and key is not None:
        outcome.changes.event(now, "cleanup_failed", *key, step=report.step, tries=report.tries, error=error,
                              **({"given_up": True} if given_up else {}))


ENFORCED_ACTIONS = frozenset({"reniced", "memory_warning", "killed_over_memory"})
EVENT_FIELDS = frozenset({"time", "kind", "job_id", "index", "attempt", "node"})  # the event's own, not the node's


def _enforced(state: ControllerState, outcome: Outcome, report: Enforced, now: float) -> None:
    """The node acted on an attempt over its reservation (execd/enforcement.py): an event of the
    job with the figures, for `drover show` and `drover why`. Nothing else changes: an attempt
    killed over its memory ends as its exit report says (OUT_OF_MEMORY)."""
    key = bounded_attempt_key(report.attempt)
    if key is None or report.action not in ENFORCED_ACTIONS or key[0] not in state.jobs:
        return  # not an attempt's name, an action this controller does not know, or a job gone
    _, _, attempt = _current(state, report.attempt)
    node = attempt.node if attempt is not None else None
    detail: dict[str, Any] = {name: value for name, value in report.detail.items() if name not in EVENT_FIELDS}
    outcome.changes.event(now, report.action, *key, node=node, **detail)


def _staged_out(state: ControllerState, outcome: Outcome, report: StagedOut, now: float) -> None:
    """The files themselves are on disk already (the service writes them before this runs)."""
    _, _, attempt = _current(state, report.attempt)
    if attempt is None or (attempt.cleanup and "staged_out" in attempt.cleanup):
        return
    attempt.cleanup = attempt.cleanup or {"done": [], "step": None, "tries": 0, "error": None}
    attempt.cleanup["staged_out"] = report.names()
    outcome.changes.attempt(attempt)
    outcome.changes.event(now, "staged_out", attempt.job_id, attempt.index, attempt.number,
                          files=report.names(), skipped=report.skipped or None,
                          refused=report.refused or None)


def _record_cleanup(outcome: Outcome, attempt: Attempt, done: list[str], now: float, step: str | None = None,
                    tries: int = 0, error: str | None = None, given_up: list[GivenUpStep] | None = None) -> None:
    """Remember the node's cleanup progress; each step done becomes one event, once. The files
    kept and the steps given up so far stay: a later report only adds to them."""
    before = set(attempt.cleanup["done"]) if attempt.cleanup else set()
    progress: CleanupProgress = {"done": done, "step": step, "tries": tries, "error": error}
    if attempt.cleanup and "staged_out" in attempt.cleanup:
        progress["staged_out"] = attempt.cleanup["staged_out"]
    if attempt.cleanup and "given_up" in attempt.cleanup:
        progress["given_up"] = attempt.cleanup["given_up"]
    attempt.cleanup = with_given_up(progress, given_up or [])
    outcome.changes.attempt(attempt)
    not_done = {entry["step"] for entry in attempt.cleanup.get("given_up", [])}  # said as cleanup_failed
    for step in done:
        if step not in before and step not in not_done:
            outcome.changes.event(now, "cleanup_step", attempt.job_id, attempt.index, attempt.number, step=step)


def _exited(state: ControllerState, outcome: Outcome, report: Exited, now: float,
            semantics: ExitSemantics = GRID_ENGINE) -> None:
    """Cleanup step 5, the final report: the task's outcome is decided here, exactly once."""
    _exiting(state, outcome, report, now)
    job, task, attempt = _current(state, report.attempt)
    if attempt is not None and report.done:
        # The pipeline is past every step before this one; those given up stay said.
        _record_cleanup(outcome, attempt, report.done, now, given_up=report.given_up)
    lost_on = state.lost_attempts.pop(report.attempt, None)
    if lost_on is not None:
        # The node was given up on while this attempt ran, and the task decided without it
        # (requeued, or NODE_FAIL): its report is stale. Said, and counted nowhere.
        named = bounded_attempt_key(report.attempt)
        if named is not None:
            outcome.changes.event(now, "stale_report", *named, node=lost_on,
                                  exit_code=report.exit_status["exit_code"], signal=report.exit_status["signal"])
        return
    if attempt is not None and attempt.exit is not None and attempt.exit.get("node_lost"):
        return  # stale too, from before a controller restart: counted nowhere
    if job is None or task is None or attempt is None or task.state is not JobState.COMPLETING:
        return  # decided already (or the task moved on): acknowledge again only
    if report.exit_status.get("node_left") and attempt.exit is not None and not attempt.exit.get("node_left"):
        # The outer scheduler's signal reached the job a moment before its node began to leave
        # (execd/leaving.py): its final record says so, and it is decided as the node's loss.
        attempt.exit = report.exit_status
        outcome.changes.attempt(attempt)
    _decide(state, outcome, job, task, attempt, attempt.exit or report.exit_status, now, semantics)


def _decide(state: ControllerState, outcome: Outcome, job: Job, task: Task, attempt: Attempt, record: ExitStatus,
            now: float, semantics: ExitSemantics = GRID_ENGINE, why: str | None = None) -> None:
    """The task's outcome from its COMPLETING attempt's exit record, once: its new state (Grid
    Engine's exit table, core/exit_status.EXIT_TABLE), its queue's error on the node if a method
    failed, the node's ERROR if it could not prepare the attempt, and the job's end."""
    facts = exit_facts(record, task.cancel_requested, job.spec.epilog_sets_exit, semantics.requeue_held,
                       task.requeue_requested, rerunnable=job.spec.rerunnable,
                       attempt_number=attempt.number, hold_requested=task.hold_requested)
    reason = node_failure(facts)
    node = state.nodes.get(attempt.node)
    if reason and node is not None and can_node(node.state, NodeTrigger.FAIL):
        node.apply(NodeTrigger.FAIL)
        node.reason = f"{reason} (attempt {attempt.name})"
        outcome.changes.node(node)
        outcome.changes.event(now, "node_error", attempt.job_id, attempt.index, attempt.number,
                              node=node.name, reason=node.reason)
        promises.taken_back_on(state, outcome, node.name, now, "the node is in error")
    queue, failed = job.spec.queue, queue_failure(facts, semantics)
    if failed and node is not None and queue not in node.queue_errors:
        node.queue_errors[queue] = f"{failed} (attempt {attempt.name})"
        outcome.changes.node(node)
        outcome.changes.event(now, "queue_error", attempt.job_id, attempt.index, attempt.number,
                              node=node.name, queue=queue, reason=node.queue_errors[queue])
        promises.taken_back_on(state, outcome, node.name, now, f"queue {queue} is in error there", queue=queue)
    trigger = classify_exit(facts, semantics)
    why = outcome_reason(facts, trigger) or why
    detail: dict[str, Any] = {"reason": why} if why else {}
    if trigger is Trigger.ERROR_HOLD:  # what `drover why` says of the hold: what exited how, and whose rule
        detail["cause"], detail["requeue_held"] = error_hold_cause(facts, semantics)
    if attempt.after is not None and never_ran(attempt.started_at, record["exit_code"], record["signal"],
                                               record.get("failure")):
        # A promise that ended before it started with nothing gone wrong (taken back): the metrics
        # count it neither started nor ended, as drover history and qacct show it with no exit
        # status of its own. One that ended otherwise before it started (it failed to set up, its
        # node was lost, taken back first or not) ran as a failed attempt there, and counts as both.
        detail["promise_unstarted"] = True
    after = change_task(outcome, task, trigger, now, **detail)
    release_attempt(state, job, task)
    if after in (JobState.PENDING, JobState.HELD):
        task.cancel_requested = task.requeue_requested = task.hold_requested = False
    end_job_if_done(state, outcome, job, now)
    outcome.reschedule = True
