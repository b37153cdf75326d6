"""What nodes tell the controller: hello (after every connect), started, exited, gone.

Every report is idempotent, keyed by the attempt: a repeated or late report never counts twice,
never brings back a cancelled task, and never lets a second attempt run.
"""

from __future__ import annotations

from drover.controller.effects import Outcome
from drover.controller.handlers.dispatch import OrderOptions, start_order
from drover.controller.lifecycle import change_task, end_job_if_done, release_attempt
from drover.controller.state import ControllerState
from drover.core.exit_status import (
    classify_exit,
    effective_exit_code,
    exit_facts,
    node_failure,
    outcome_reason,
    shell_status,
)
from drover.core.job import Attempt, Job, Task
from drover.core.job_state import JobState, Trigger
from drover.core.node import Node
from drover.core.node_state import NODE_TRANSITIONS, NodeState, NodeTrigger
from drover.protocol.node_channel import (
    Ack,
    Exited,
    Exiting,
    Hello,
    Progress,
    SignalAttempt,
    StagedOut,
    Started,
    Suspended,
    Welcome,
)
from drover.records import CleanupProgress


def on_node_connected(state: ControllerState, hello: Hello, now: float, orders: OrderOptions) -> Outcome:
    outcome = Outcome(reschedule=True)
    node = state.nodes.get(hello.node)
    if node is None:
        node = state.nodes[hello.node] = Node(hello.node, hello.cpus, hello.memory_mib, NodeState.DOWN, now)
    node.cpus, node.memory_mib, node.last_seen = hello.cpus, hello.memory_mib, now
    if node.state is NodeState.DOWN:
        node.apply(NodeTrigger.CONNECT)  # a node in ERROR stays so until an operator resumes it
    outcome.changes.node(node)
    outcome.changes.event(now, "node_connected", node=node.name, cpus=node.cpus, memory_mib=node.memory_mib)
    outcome.send(node.name, Welcome(node.name))
    known = {item.attempt: item.running for item in hello.attempts}
    for job in list(state.jobs.values()):
        for task in list(job.tasks.values()):
            attempt = state.latest_attempt(task)
            if attempt is None or attempt.node != node.name or not task.state.is_active:
                continue
            if attempt.name not in known:
                if task.state is JobState.DISPATCHED:
                    # The order never arrived (or the node lost it before starting): send it again.
                    outcome.send(node.name, start_order(job, attempt, orders))
                else:
                    change_task(outcome, task, Trigger.LOSE_NODE, now, reason="the node no longer knows this attempt")
                    release_attempt(state, job, task)
                    end_job_if_done(state, outcome, job, now)
                    continue
            elif known[attempt.name] and task.state is JobState.DISPATCHED:
                attempt.started_at = attempt.started_at or now
                outcome.changes.attempt(attempt)
                change_task(outcome, task, Trigger.START, now, job)
            if task.cancel_requested or task.requeue_requested:
                why = "cancel" if task.cancel_requested else "requeue"
                outcome.send(node.name, SignalAttempt(attempt.name, "terminate", why))
    # Attempts the node still runs that the controller has given up on (the node was lost for
    # too long, or the job was decided otherwise): stop them, so nothing runs unaccounted.
    for name, running in known.items():
        attempt = state.attempt_by_name(name)
        found = state.jobs[attempt.job_id].tasks.get(attempt.index) if attempt and attempt.job_id in state.jobs else None
        current = found is not None and attempt is not None and found.attempt == attempt.number and found.state.is_active
        if running and not current:
            outcome.send(node.name, SignalAttempt(name, "terminate", "stray"))
            outcome.changes.event(now, "stray_attempt_stopped", node=node.name, stopped=name)
    return outcome


def on_nodes_lost(state: ControllerState, now: float, timeout_s: float) -> Outcome:
    """Nodes down for longer than `timeout_s`: their attempts are lost (NODE_FAIL), their CPUs
    freed. A node that comes back later is told to stop what it still runs of them."""
    outcome = Outcome()
    lost = {name for name, node in state.nodes.items()
            if node.state in (NodeState.DOWN,) and node.last_seen is not None and now - node.last_seen > timeout_s}
    if not lost:
        return outcome
    for job in list(state.jobs.values()):
        for task in list(job.tasks.values()):
            attempt = state.latest_attempt(task)
            if attempt is not None and attempt.node in lost and task.state.is_active:
                change_task(outcome, task, Trigger.LOSE_NODE, now, reason=f"node {attempt.node} was lost")
                release_attempt(state, job, task)
                end_job_if_done(state, outcome, job, now)
    if outcome.changes:
        outcome.reschedule = True
    return outcome


def on_node_disconnected(state: ControllerState, name: str, now: float) -> Outcome:
    outcome = Outcome()
    node = state.nodes.get(name)
    if node is not None and node.state not in (NodeState.DOWN, NodeState.ERROR):
        node.apply(NodeTrigger.DISCONNECT)
        node.last_seen = now
        outcome.changes.node(node)
        outcome.changes.event(now, "node_disconnected", node=name)
    return outcome


def on_reports(state: ControllerState, node: str,
               reports: list[Started | Suspended | Exiting | Progress | StagedOut | Exited], now: float,
               requeue_held: bool = False) -> Outcome:
    """One frame of reports from a node: handled, and committed, together."""
    outcome = Outcome()
    acknowledged: list[str] = []
    for report in reports:
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
            outcome.send(node, Ack([report.attempt], "stage_out"))
        else:
            _exited(state, outcome, report, now, requeue_held)
            acknowledged.append(report.attempt)
    if acknowledged:
        outcome.send(node, Ack(acknowledged))
    return outcome


def resume_node(state: ControllerState, name: str, now: float) -> Outcome:
    """An operator clears a node's ERROR (or ends its drain): it takes work again."""
    from drover.core.errors import Conflict, NotFound

    node = state.nodes.get(name)
    if node is None:
        raise NotFound(f"node {name} does not exist")
    if not can_node(node.state, NodeTrigger.RESUME):
        raise Conflict(f"node {name} is {node.state.value}; only a node in error or drained can be resumed")
    outcome = Outcome(reschedule=True)
    node.apply(NodeTrigger.RESUME)
    node.reason = None
    outcome.changes.node(node)
    outcome.changes.event(now, "node_resumed", node=name)
    return outcome


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


def _attempt_name(name: str) -> tuple[int, int, int] | None:
    """(job, index, attempt) of an attempt's name "<job>.<task>.<attempt>", None if it is not one."""
    parts = name.split(".")
    if len(parts) != 3 or not all(part.isascii() and part.isdigit() for part in parts):
        return None
    job_id, index, number = (int(part) for part in parts)
    return job_id, index, number


def _started(state: ControllerState, outcome: Outcome, report: Started, now: float) -> None:
    job, task, attempt = _current(state, report.attempt)
    if task is None or attempt is None or task.state is not JobState.DISPATCHED:
        return  # late or repeated
    attempt.started_at = report.started_at
    attempt.pty_socket = report.pty_socket
    outcome.changes.attempt(attempt)
    change_task(outcome, task, Trigger.START, now, job, job_pid=report.job_pid)


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
    attempt.usage = report.usage
    attempt.started_at = attempt.started_at or report.started_at
    attempt.ended_at = report.usage["ended_at"] if report.usage else now
    outcome.changes.attempt(attempt)
    if task is None or task.state not in (JobState.DISPATCHED, JobState.RUNNING, JobState.SUSPENDED):
        return  # an attempt the task has moved on from: keep its record, change nothing else
    job_spec = state.jobs[attempt.job_id].spec
    effective = effective_exit_code(exit_facts(record, epilog_sets_exit=bool(job_spec.get("epilog_sets_exit"))))
    task.exit_status = shell_status(effective, record["signal"] if effective == record["exit_code"] else None)
    change_task(
        outcome, task, Trigger.EXIT, now, exit_code=record["exit_code"], signal=record["signal"],
        failure=record["failure"],
    )


def _progress(state: ControllerState, outcome: Outcome, report: Progress, now: float) -> None:
    _, _, attempt = _current(state, report.attempt)
    if attempt is None:
        # A step after the report (the mail) of a job that has ended since: its failure is
        # still said, as an event of the job's.
        ended = _attempt_name(report.attempt)
        if report.error and ended is not None:
            outcome.changes.event(now, "cleanup_failed", *ended, step=report.step, tries=report.tries,
                                  error=report.error)
        return
    _record_cleanup(outcome, attempt, report.done, now, step=report.step, tries=report.tries, error=report.error)
    if report.error:
        outcome.changes.event(now, "cleanup_failed", attempt.job_id, attempt.index, attempt.number,
                              step=report.step, tries=report.tries, error=report.error)


def _staged_out(state: ControllerState, outcome: Outcome, report: StagedOut, now: float) -> None:
    """The files themselves are on disk already (the service writes them before this runs)."""
    _, _, attempt = _current(state, report.attempt)
    if attempt is None or (attempt.cleanup and "staged_out" in attempt.cleanup):
        return
    attempt.cleanup = attempt.cleanup or {"done": [], "step": None, "tries": 0, "error": None}
    attempt.cleanup["staged_out"] = [f.name for f in report.files]
    outcome.changes.attempt(attempt)
    outcome.changes.event(now, "staged_out", attempt.job_id, attempt.index, attempt.number,
                          files=[f.name for f in report.files], skipped=report.skipped or None,
                          refused=report.refused or None)


def _record_cleanup(outcome: Outcome, attempt: Attempt, done: list[str], now: float, step: str | None = None,
                    tries: int = 0, error: str | None = None) -> None:
    """Remember the node's cleanup progress; each step done becomes one event, once."""
    before = set(attempt.cleanup["done"]) if attempt.cleanup else set()
    progress: CleanupProgress = {"done": done, "step": step, "tries": tries, "error": error}
    if attempt.cleanup and "staged_out" in attempt.cleanup:
        progress["staged_out"] = attempt.cleanup["staged_out"]
    attempt.cleanup = progress
    outcome.changes.attempt(attempt)
    for step in done:
        if step not in before:
            outcome.changes.event(now, "cleanup_step", attempt.job_id, attempt.index, attempt.number, step=step)


def _exited(state: ControllerState, outcome: Outcome, report: Exited, now: float,
            requeue_held: bool = False) -> None:
    """Cleanup step 5, the final report: the task's outcome is decided here, exactly once."""
    _exiting(state, outcome, report, now)
    job, task, attempt = _current(state, report.attempt)
    if attempt is not None and report.done:
        _record_cleanup(outcome, attempt, report.done, now)
    if job is None or task is None or attempt is None or task.state is not JobState.COMPLETING:
        return  # decided already (or the task moved on): acknowledge again only
    record = attempt.exit or report.exit_status
    facts = exit_facts(record, task.cancel_requested, bool(job.spec.get("epilog_sets_exit")), requeue_held,
                       task.requeue_requested, rerunnable=bool(job.spec.get("rerunnable", True)),
                       attempt_number=attempt.number)
    reason = node_failure(facts)
    node = state.nodes.get(attempt.node)
    if reason and node is not None and can_node(node.state, NodeTrigger.FAIL):
        node.apply(NodeTrigger.FAIL)
        node.reason = f"{reason} (attempt {attempt.name})"
        outcome.changes.node(node)
        outcome.changes.event(now, "node_error", attempt.job_id, attempt.index, attempt.number,
                              node=node.name, reason=node.reason)
    trigger = classify_exit(facts)
    why = outcome_reason(facts, trigger)
    after = change_task(outcome, task, trigger, now, reason=why) if why else change_task(outcome, task, trigger, now)
    release_attempt(state, job, task)
    if after is JobState.PENDING:
        task.cancel_requested = task.requeue_requested = False
    end_job_if_done(state, outcome, job, now)
    outcome.reschedule = True
