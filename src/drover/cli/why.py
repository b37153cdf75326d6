"""Why a job's tasks do not run, in words: the short note of `drover status` and the full
account of `drover why`. Pure: it reads plain API records (JobInfo, Event, NodeInfo) only.

The reasons are the ones the controller's planner recorded (`pending_reason`, and
`pending_explanation` with what exactly the job waits for); a held task's cause is read from
its latest hold event ("held": a user's hold, with who held it in `by`; "held_in_error": a
status 100 of the job or of a prolog or epilog, or a requeue the cluster holds, `requeue_held`,
the event's `cause` and `requeue_held` saying which), or its submission with --hold, and its
latest attempt.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from drover.protocol.api import AttemptInfo, DependencyOn, Event, JobInfo, NodeInfo, TaskInfo

# The controller skips planning while no node has a free CPU: a job submitted then has no reason yet.
UNPLANNED = "not planned yet (the scheduler plans it when a job ends or a node has room)"
HOLD_EVENTS = ("submitted", "held", "held_in_error", "released")
ENDED_STATES = frozenset({"completed", "failed", "cancelled", "timeout", "out_of_memory", "node_fail"})
ACTIVE_STATES = frozenset({"running", "suspended", "completing", "dispatched"})


def held_note(job: JobInfo) -> str:
    """The NOTE of `drover status` for a job with held tasks and none pending."""
    if job.array:  # the task counts before it say how many
        return f"release with drover release {job.id} (drover why {job.id} says why)"
    return f"held (release with drover release {job.id}; drover why {job.id} says why)"


def status_note(job: JobInfo) -> str:
    """The NOTE of `drover status`: why a pending or held job waits; an array's task counts."""
    summary = ", ".join(f"{count} {state}" for state, count in sorted(job.task_counts.items())) if job.array else ""
    reason = job.pending_explanation or ""
    if not reason and job.task_counts.get("held"):
        reason = held_note(job)
    elif not reason and job.task_counts.get("pending"):
        reason = UNPLANNED
    if job.array and reason:
        return f"{summary}; {reason}"
    return reason or summary


@dataclass(frozen=True, slots=True)
class Hold:
    """The latest hold event of one task (index) or of the never-dispatched tasks (None)."""

    kind: str  # "held" or "held_in_error"
    attempt: int | None
    by: str | None = None  # who held it (drover hold), when the event says
    submitted: bool = False  # held since its submission (--hold)
    # A hold in error: what exited how ("the node epilog exited with status 100"), and whether
    # the cluster's requeue_held made it (a requeue for a node's or queue's failure), as the
    # controller decided it (core/exit_status.error_hold_cause); None from an older controller.
    cause: str | None = None
    requeue_held: bool = False


def latest_holds(events: Sequence[Event]) -> dict[int | None, Hold]:
    """Task index (None: the job's never-dispatched tasks) → its latest hold, if still held."""
    holds: dict[int | None, Hold] = {}
    for event in sorted(events, key=lambda e: e.seq):
        if event.kind == "submitted" and event.detail.get("held"):
            holds[None] = Hold("held", None, submitted=True)
        elif event.kind in ("held", "held_in_error"):
            by, cause = event.detail.get("by"), event.detail.get("cause")
            holds[event.index] = Hold(event.kind, event.attempt, by if isinstance(by, str) else None,
                                      cause=cause if isinstance(cause, str) else None,
                                      requeue_held=event.detail.get("requeue_held") is True)
        elif event.kind == "released":
            holds.pop(event.index, None)
    return holds


def held_reason(ref: str, task: TaskInfo | None, hold: Hold | None, owner: str = "") -> str:
    """Why one held task (None: never dispatched) waits, and what to do; `ref` is what to release."""
    release = f"release it with drover release {ref}"
    if hold is not None and hold.submitted:
        return f"held since it was submitted (submitted with --hold); {release}"
    if hold is not None and hold.kind == "held" and hold.by:
        who = f"{hold.by} (drover hold)" if hold.by == owner or not owner else \
            f"{hold.by}, not its owner {owner} (an administrator's or operator's drover hold)"
        return f"held by {who}; {release}"
    last: AttemptInfo | None = task.attempts[-1] if task is not None and task.attempts else None
    if hold is not None and hold.kind == "held_in_error" and hold.cause is not None:
        number = f"attempt {hold.attempt}" if hold.attempt else "its attempt"
        where = f" on node {last.node}" if last is not None else ""
        if hold.requeue_held:
            return (f"held: requeued after {number} failed{where} ({hold.cause}), and the cluster holds such jobs "
                    f"(requeue_held); {release} to run it again")
        return (f"held in error: in {number}{where}, {hold.cause}, which asks for a hold "
                f"(fix the cause, then {release})")
    if hold is not None and hold.kind == "held_in_error":  # recorded without its cause
        if last is not None and last.exit_code == 100:
            return (f"held in error: attempt {last.number} exited with status 100, which asks for a hold "
                    f"(fix the cause, then {release})")
        cause = f" ({last.failure})" if last is not None and last.failure else ""
        where = f" on node {last.node}" if last is not None else ""
        number = f"attempt {last.number}" if last is not None else "its attempt"
        return f"held in error after {number} ended{where}{cause}; {release} to run it again"
    if last is not None:
        return f"held by a user after attempt {last.number} (drover hold, or drover requeue of a held job); {release}"
    return f"held by a user (drover hold, or submitted with --hold); {release}"


def _dependency_text(dep: DependencyOn, job_name: str) -> str:
    if dep.kind == "singleton":
        return f"no other job named {job_name!r} of its owner runs"
    target = f"job {dep.job}" + (f".{dep.task}" if dep.task is not None else "")
    if dep.per_task:
        target = f"the task of the same index of job {dep.job}"
    return {
        "after": f"{target} has started (or ended)",
        "afterok": f"{target} completes successfully",
        "afternotok": f"{target} fails",
        "afterany": f"{target} ends, however it ends",
        "afterburstbuffer": f"{target} ends",
    }.get(dep.kind, f"{target} meets {dep.kind}")


def pending_reason(job: JobInfo, nodes: Sequence[NodeInfo] | None = None, now: float | None = None) -> list[str]:
    """Why the job's pending tasks wait (the planner's reason in full) and what would change it."""
    reason = job.pending_reason
    said = job.pending_explanation or ""
    if reason is None:
        lines = [UNPLANNED]
        up = [node for node in nodes or () if node.state == "up"]
        if nodes is not None and not any(node.cpus > node.cpus_used for node in up):
            lines.append("no node up has a free CPU now, so the scheduler does not plan until one frees up")
        return lines
    if reason == "dependency":
        lines = [said or "waiting for the jobs it depends on"]
        joined = " or " if job.dependency_any else " and "
        if job.dependencies:
            lines.append("it starts when " + joined.join(_dependency_text(d, job.name) for d in job.dependencies))
        return lines
    if reason == "dependency_never_satisfied":
        return [said or "a dependency can never be met",
                f"it will never run: cancel it with drover cancel {job.id} (it was kept: --kill-on-invalid-dep no)"]
    if reason == "begin_time":
        from drover.cli.render import when

        left = ""
        if now is not None and job.begin_at is not None and job.begin_at > now:
            left = f" (in {_duration(job.begin_at - now)})"
        return [said or "waiting for its begin time",
                f"it starts no earlier than {when(job.begin_at)}{left}"]
    if reason == "array_limit":
        return [said or "as many of its tasks run as its %limit allows",
                f"at most {job.max_running} of its tasks run at once: the next starts when one of the "
                f"{job.task_counts.get('running', 0)} running ends"]
    need = f"{job.cpus} CPU(s)" + (f" and {job.memory_mib} MiB" if job.memory_mib else "")
    up = [node for node in nodes or () if node.state == "up"]
    if reason == "no_nodes":
        return [said or "no node is up",
                "it starts when a node is up: drover up starts a personal cluster; drover nodes shows the nodes"]
    if reason == "too_big":
        lines = [said or "no node that is up is large enough"]
        if up:
            cpus = max(node.cpus for node in up)
            memory = max(node.memory_mib for node in up)
            short = []
            if job.cpus > cpus:
                short.append(f"no node up has {job.cpus} CPUs: the largest has {cpus}")
            if job.memory_mib > memory:
                short.append(f"no node up has {job.memory_mib} MiB: the largest has {memory} MiB")
            lines.extend(short or [f"no one node up has both {need}"])
        lines.append("it starts when a node that large is up; or cancel it and ask for less")
        return lines
    if reason == "resources":
        lines = [said or "waiting for CPUs or memory to free up", f"it starts when a node has {need} free"]
        if up:
            free_cpus = max(node.cpus - node.cpus_used for node in up)
            free_mem = max(node.memory_mib - node.memory_mib_used for node in up)
            lines.append(f"now the most free on one node is {free_cpus} CPU(s) and {free_mem} MiB; "
                         "running jobs must end first")
        return lines
    if reason == "priority":
        return [said or "waiting behind jobs of higher priority or submitted earlier",
                f"it starts after the jobs ahead of it (priority {job.priority}); an operator can "
                f"raise it with drover alter --priority N {job.id}"]
    move = f"or move it to another queue: drover alter --queue QUEUE {job.id}"
    remedies = {
        "reserved": "room is kept for it on that node: it starts when the jobs there end, at their time "
                    "limits at the latest",
        "no_node_matches": "it starts when a node with what it asks for is up (drover nodes shows each node's "
                           f"generic resources and features); or cancel it and ask for what the nodes have; {move}",
        "licenses": "it starts when running jobs give licences back",
        "queue_stopped": f"it starts once queue {job.queue} is started again (drover queue start {job.queue}, by its "
                         f"owner or an operator); {move}",
        "queue_window": f"it starts when queue {job.queue}'s window opens (drover queue show {job.queue}); {move}",
        "queue_limit": f"the next starts when one of queue {job.queue}'s running tasks ends; {move}",
        "user_limit": f"the next starts when one of its owner's running tasks in queue {job.queue} ends; {move}",
        "pe_slots": "it starts when running jobs of its parallel environment give slots back (drover pe show NAME)",
        "planning_error": "the fault is the controller's, not the job's: an operator finds the error in the "
                          "controller's log; the job is planned again on every pass",
        "promised": "its node holds its order and starts it then, with no word of the controller's; a job "
                    "of higher priority may take its place first",
    }
    return [said or reason, *([remedies[reason]] if reason in remedies else [])]


def explain(job: JobInfo, events: Sequence[Event] = (), nodes: Sequence[NodeInfo] | None = None,
            now: float | None = None) -> list[str]:
    """`drover why JOB`: every line, for a job with its tasks (GET /v1/jobs/{id})."""
    title = f"Job {job.id} ({job.name}) is {job.state.upper()}"
    if job.ended_at is not None or job.state in ENDED_STATES:
        extra = f", exit status {job.exit_status}" if job.exit_status is not None else ""
        reason = f": {job.end_reason}" if job.end_reason else ""
        lines = [f"{title}: it has ended{extra}{reason}; nothing waits"]
        if job.state == "out_of_memory":
            lines.append(f"{out_of_memory_text(job.memory_mib)}; ask for more with --mem")
        return lines
    lines = [title]
    pending = job.task_counts.get("pending", 0)
    held = job.task_counts.get("held", 0)
    active = sum(job.task_counts.get(state, 0) for state in ACTIVE_STATES)
    if active:
        lines.append(f"{active} task(s) running or starting")
        for event in events:  # what the node did to running tasks over their reservation
            if event.kind in ENFORCED_EVENTS:
                label = f"task {job.id}.{event.index}" if job.array and event.index is not None else "it"
                lines.append(f"  {label}: {enforced_line(event)}")
    if not pending and not held:
        lines.append("no task waits" + ("; it is running" if active else ""))
        return lines
    if pending:
        label = f"{pending} task(s) pending" if job.array else "pending"
        lines.append(f"{label}:")
        lines.extend(f"  {line}" for line in pending_reason(job, nodes, now))
    if held:
        holds = latest_holds(events)
        recorded = [task for task in job.tasks if task.state == "held"]
        unrecorded = held - len(recorded)
        if unrecorded > 0:
            label = f"{unrecorded} task(s) never started, held" if job.array else "held"
            lines.append(f"{label}: " + held_reason(str(job.id), None, holds.get(None), job.owner))
        for task in recorded:
            label = f"task {job.id}.{task.index}" if job.array else "held"
            ref = f"{job.id}.{task.index}" if job.array else str(job.id)
            hold = holds.get(task.index) or (holds.get(None) if not task.attempts else None)
            lines.append(f"{label}: {held_reason(ref, task, hold, job.owner)}")
    return lines


ENFORCED_EVENTS = frozenset({"reniced", "memory_warning", "killed_over_memory"})


def out_of_memory_text(memory_mib: int) -> str:
    """What an attempt that ran out of memory did, in plain words: the kernel's out-of-memory
    killer at its cgroup limit, or the node over its hard limit, both follow its --mem."""
    if memory_mib <= 0:
        return "out of memory: the node's memory ran out (it asked for none: --mem)"
    return f"out of memory: it used more than its {memory_mib} MiB memory limit (--mem {memory_mib}M)"


def enforced_line(event: Event) -> str:
    """One action of the node on an attempt over its reservation, with its figures and why."""
    d = event.detail
    if event.kind == "reniced" and d.get("reason") == "cpu":
        why = f"it used {d.get('cpu')} CPUs on average, over its {d.get('cpus')} reserved (limit {d.get('limit')})"
    elif event.kind == "reniced":
        why = f"it used {d.get('memory_mib')} MiB of memory, over the {d.get('requested_mib')} MiB it requested"
    if event.kind == "reniced":
        return f"reniced from {d.get('nice_from')} to {d.get('nice_to')}: {why}"
    if event.kind == "memory_warning":
        return f"memory warning: it used {d.get('memory_mib')} MiB, over the {d.get('requested_mib')} MiB it requested"
    return (f"killed over its memory: {d.get('memory_mib')} MiB, over its limit of {d.get('limit_mib')} MiB "
            f"(requested {d.get('requested_mib')} MiB)")


def _duration(seconds: float) -> str:
    whole = int(seconds)
    if whole < 120:
        return f"{whole}s"
    if whole < 7200:
        return f"{whole // 60}m"
    return f"{whole // 3600}h{whole % 3600 // 60:02d}m"
