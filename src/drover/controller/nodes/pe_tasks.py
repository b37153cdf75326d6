"""Tasks of a running parallel job, started on the hosts of its allocation: GE's tight
integration (`qrsh -inherit HOST CMD` inside the job; `drover task start HOST -- CMD`).

Process flow: "If the job is a parallel job with a tight integration, this job specific spool
directory is created on each execution host involved in the execution of the job, for each task
a subdirectory <petaskid> is created that holds the task specific spool files."

A request is checked here (`check`): the caller is the job's owner, the job's task is RUNNING,
the host is one of its attempt's (the master or one of `Attempt.others`), the job's PE has
`control_slaves = true` (sge_pe(5): "only with a tightly integrated parallel environment"), and
the host has a slot free for it (`room_for_task`: as many tasks at once as the job holds slots
there, one fewer on the master when `job_is_first_task`, for the job script holds that one).
The task gets the next <petaskid> of its attempt ("1", "2", ...) and its node a StartPeTask.

Each task is a record of its attempt (`Attempt.pe_tasks`), committed before its node is told to
start it and again when its node reports its end, with the attempt's usage when the attempt has
ended (pe_usage.py), so that it is counted once, whatever restarts. A restarted controller
knows every task from its store. The tasks die with their attempt (`sweep`, `stopping` send
each host that ran one a StopPeTasks); orders for a node that is away wait for its return.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from drover.config_schema import ParallelEnvironmentSection
from drover.controller.effects import Outcome
from drover.controller.handlers import parallel_envs, pe_usage, reported_text
from drover.controller.nodes.node_channels import NodeChannels
from drover.controller.security.auth import Caller, Policy
from drover.controller.state import ControllerState
from drover.core.errors import BadRequest, Conflict, Forbidden, NotFound, Unavailable
from drover.core.ids import parse_attempt_name
from drover.core.job import Attempt, Job
from drover.core.job_state import JobState
from drover.protocol.node_channel import (
    PE_TASK_ACK,
    Ack,
    PeTaskExited,
    SignalAttempt,
    SignalPeTasks,
    StartPeTask,
    StopPeTasks,
)
from drover.records import AttemptOrder, ExitStatus, PeTaskRecord

KEEP_STOPPED_S = 600.0  # how long a stopped attempt's tasks are waited for (their usage is counted)
MAX_TASKS = 10_000  # per attempt: a runaway loop of qrsh -inherit is refused past it
LIVE = (JobState.RUNNING, JobState.SUSPENDED)
AttemptKey = tuple[int, int, int]
# What of the master's order a task does not take: GE's petasks run no prolog, epilog or PE
# procedure, stage nothing, mail nothing, and are no interactive or checkpointing job.
NotForTasks = Literal["pe_start", "pe_stop", "site_methods", "queue_prolog", "queue_epilog",
                      "pe_start_as_site", "pe_stop_as_site", "environments", "checkpoint", "done_output",
                      "queue_starter_method", "queue_suspend_method", "queue_resume_method",
                      "queue_terminate_method", "notify_s", "pe_hosts", "gres"]
NOT_FOR_TASKS: tuple[NotForTasks, ...] = get_args(NotForTasks)  # each optional in an AttemptOrder


def check(state: ControllerState, environments: Mapping[str, ParallelEnvironmentSection], policy: Policy,
          caller: Caller, job_id: int, index: int,
          host: str) -> tuple[Job, Attempt, ParallelEnvironmentSection]:
    """The running attempt a task may be started in, on `host`, and its job's PE; a clear
    refusal otherwise."""
    job = state.jobs.get(job_id)
    if job is None:
        raise Conflict(f"job {job_id} is not running: a task is started only inside a running job")
    policy.may_act_as_owner(caller, job.owner, job_id, "starting a task in its allocation")
    task = job.tasks.get(index)
    attempt = state.latest_attempt(task) if task is not None else None
    if task is None or attempt is None or task.state != JobState.RUNNING:
        now = task.state.value if task is not None else "pending"
        raise Conflict(f"job {job_id}.{index} is {now}: a task is started only inside a running job")
    held = parallel_envs.of_job(job)
    if held is None:
        raise Forbidden(f"job {job_id} is of no parallel environment: only a parallel job whose environment has "
                        "control_slaves = true starts tasks on its hosts")
    environment = environments.get(held[0])
    if environment is None or not environment.control_slaves:
        raise Forbidden(f"the parallel environment {held[0]} of job {job_id} has control_slaves = false: its "
                        "tasks are not started by Drover (sge_pe(5): tight integration needs control_slaves)")
    hosts = [attempt.node, *(node for node, _ in attempt.others)]
    if host not in hosts:
        raise Forbidden(f"host {host} is not in the allocation of job {job_id}.{index} ({', '.join(hosts)})")
    return job, attempt, environment


def task_order(master: AttemptOrder, host: str, cpu_ids: Sequence[int], memory_mib: int, petask: str,
               cwd: str | None, env: Mapping[str, str] | None, credential: str | None = None) -> AttemptOrder:
    """The master's order, made a task's on `host`: its CPUs and memory there, its working
    directory and environment, nothing of the master's methods."""
    config = master.copy()
    for key in NOT_FOR_TASKS:
        config.pop(key, None)
    config["node"], config["cpu_ids"], config["cpus"] = host, list(cpu_ids), len(cpu_ids) or master["cpus"]
    config["memory_mib"], config["pe_task"] = memory_mib, petask
    # Of the job's options, what runs around the job and after it is the master's alone; the
    # task's own signature, never the job's.
    config["job"] = {**master["job"], "stage_out": [], "mail_type": [], "mail_user": None, "pty": False,
                     "keep_spool": False, "prolog": None, "epilog": None, "credential": credential,
                     "environments": [], "zap": False, "done_output": None, "mail_output": False}
    if cwd:
        config["workdir"] = cwd
    if env is not None:
        config["environment"] = dict(env)
    return config


Order = StopPeTasks | SignalPeTasks


@dataclass(slots=True)
class Watched:
    """An attempt that started tasks: where, and which of them have not reported their end.
    Kept apart from the attempt's records, which leave the working set when the job ends."""

    key: AttemptKey
    hosts: set[str] = field(default_factory=set)
    running: dict[str, str] = field(default_factory=dict)  # petask → its host
    stopped_at: float | None = None  # when its hosts were told to stop its tasks


class PeTasks:
    """The attempts whose tasks are watched: not all of them have ended, or not all of their
    hosts were told that the attempt ended. The tasks themselves are their attempts' records."""

    def __init__(self, channels: NodeChannels, clock: Any = time.time) -> None:
        self.channels = channels
        self.clock = clock
        self.watched: dict[str, Watched] = {}
        self.missed: dict[str, list[Order]] = {}  # for each node away, the orders it missed, in order

    def load(self, state: ControllerState) -> None:
        """After the working set was (re)loaded: its attempts' tasks are watched again."""
        before = self.watched
        self.watched = {}
        for key, attempt in state.attempts.items():
            if attempt.pe_tasks:
                watched = self.watched[attempt.name] = Watched(key, {r["host"] for r in attempt.pe_tasks}, {
                    r["petask"]: r["host"] for r in attempt.pe_tasks if r["ended_at"] is None})
                if attempt.name in before:
                    watched.stopped_at = before[attempt.name].stopped_at

    def start(self, attempt: Attempt, host: str, argv: list[str], environment: ParallelEnvironmentSection,
              build: Callable[[str], StartPeTask]) -> tuple[Outcome, PeTaskRecord]:
        """A new task of `attempt` (of a job of `environment`) on `host`, as the handler's outcome:
        its record committed with the attempt, then its node sent the order `build(petask)` makes."""
        if not argv:
            raise BadRequest("give the task's command")
        if self.channels.channel(host) is None:
            raise Unavailable(f"node {host} is not connected")
        watched = self.watched.get(attempt.name)
        if watched is not None and watched.stopped_at is not None:
            raise Conflict(f"attempt {attempt.name} is ending: no task is started in it")
        if len(attempt.pe_tasks) >= MAX_TASKS:
            raise Conflict(f"attempt {attempt.name} has started {MAX_TASKS} tasks, the most one attempt starts")
        room_for_task(attempt, host, environment.job_is_first_task)
        petask = str(len(attempt.pe_tasks) + 1)
        record: PeTaskRecord = {"petask": petask, "host": host, "argv": list(argv), "started_at": self.clock(),
                                "ended_at": None, "exit": None, "usage": None,
                                "summed": environment.accounting_summary, "counted": False}
        attempt.pe_tasks.append(record)
        outcome = Outcome()
        outcome.changes.attempt(attempt)
        outcome.send(host, build(petask))
        watched = self.watched.setdefault(attempt.name, Watched((attempt.job_id, attempt.index, attempt.number)))
        watched.hosts.add(host)
        watched.running[petask] = host
        return outcome, record

    def stop_task(self, attempt: Attempt, petask: str) -> PeTaskRecord:
        """Stop one task (its caller, `qrsh -inherit` or `drover task start`, was interrupted, as
        Grid Engine's qrsh forwards its signals); its end is reported as any task's. One that
        ended, or whose attempt is stopping, is left as it is."""
        record = find(attempt, petask)
        watched = self.watched.get(attempt.name)
        if record["ended_at"] is not None or (watched is not None and watched.stopped_at is not None):
            return record
        if self.channels.channel(record["host"]) is None:
            raise Unavailable(f"node {record['host']} is not connected")
        self.channels.send(record["host"], StopPeTasks(attempt.name, petask))
        return record

    def ended(self, state: ControllerState, attempt: Attempt | None, node: str, message: PeTaskExited) -> Outcome:
        """A node's report of a task's end, as a handler's outcome: the task's record has its end
        and usage, counted in the attempt's usage at once if the attempt has ended (else when it
        ends); the node is acknowledged once that is committed, and a report it sends again is
        acknowledged and changes nothing. One node cannot report another's tasks."""
        outcome = Outcome()
        outcome.send(node, Ack([f"{message.attempt}/{message.petask}"], PE_TASK_ACK))
        message = reported_text.cleaned(message)  # its failure is shown as an attempt's is
        record = _record(attempt, message.petask) if attempt is not None else None
        watched = self.watched.get(attempt.name) if attempt is not None else None
        if record is None and watched is not None and watched.running.get(message.petask) == node:
            watched.running.pop(message.petask)  # its start was never committed: not waited for
        if attempt is None or record is None or record["host"] != node:
            return outcome
        if record["ended_at"] is None:
            record["ended_at"], record["exit"], record["usage"] = self.clock(), message.exit_status, message.usage
            if attempt.exit is not None:  # the attempt's record is made: the task is added to it
                attempt.usage = pe_usage.fold(attempt.usage, pe_usage.uncounted(attempt.pe_tasks))
            outcome.changes.attempt(attempt)
        if watched is not None:
            watched.running.pop(message.petask, None)
        if not _live(state, attempt.job_id, attempt.index, attempt.number):
            outcome.send(node, StopPeTasks(attempt.name))  # its directories on the node go
        return outcome

    def still_running(self, lost: PeTaskExited, node: str) -> None:
        """The end of a task its node does not know was not committed: it is waited for again, so
        the node's next hello ends it."""
        watched = self.watched.get(lost.attempt)
        if watched is not None:
            watched.running.setdefault(lost.petask, node)

    def stopping(self, message: object) -> None:
        """An order to a node: when it stops an attempt, its tasks are stopped at once on every
        host; when it suspends, resumes or signals it, so are its running tasks (GE's qmod -sj
        and qsig of a tightly integrated job). A checkpoint is the job script's alone."""
        watched = self.watched.get(message.attempt) if isinstance(message, SignalAttempt) else None
        if watched is None or not isinstance(message, SignalAttempt):
            return
        if message.action == "terminate":
            self._stop(message.attempt, watched)
        elif message.action not in ("checkpoint", "migrate") and watched.stopped_at is None:
            for host in sorted(set(watched.running.values())):
                self._send(host, SignalPeTasks(message.attempt, message.action))

    def sweep(self, state: ControllerState) -> None:
        """After each change: the tasks of every attempt that no longer runs are stopped, and an
        attempt whose tasks all ended (or were waited for KEEP_STOPPED_S) is no longer watched."""
        for name, watched in list(self.watched.items()):
            if _live(state, *watched.key):
                continue
            self._stop(name, watched)
            assert watched.stopped_at is not None
            if not watched.running or self.clock() - watched.stopped_at > KEEP_STOPPED_S:
                del self.watched[name]

    def _stop(self, name: str, watched: Watched) -> None:
        if watched.stopped_at is not None:
            return
        watched.stopped_at = self.clock()
        for host in sorted(watched.hosts):
            self._send(host, StopPeTasks(name))

    def _send(self, host: str, order: Order) -> None:
        if self.channels.channel(host) is not None:
            self.channels.send(host, order)
            return
        missed = self.missed.setdefault(host, [])
        if len(missed) < MAX_TASKS:
            missed.append(order)

    def node_connected(self, state: ControllerState, node: str, running: Sequence[str],
                       known: Sequence[str] | None = None) -> list[PeTaskExited]:
        """A node that missed orders for its tasks while it was away gets them now, in order; and
        the stop of every attempt that no longer runs whose tasks run there (`running`, from its
        hello) or have not all reported their end: again, for a node whose daemon restarted, and
        for the first time, for an attempt that ended while this controller was away.

        Returned: the ends of the tasks sent to the node that it does not know (`known`, from its
        hello: those it runs, and those whose end it has yet to see acknowledged). Each task's
        order is sent once, after its record is committed, on the node's channel of then, so one
        the node does not know at its next hello never arrived there, or its refusal was lost with
        a node daemon that died before sending it: it will not run, and its caller, waiting for
        its end, learns that it failed. None (a node daemon of an earlier version): no such end."""
        for order in self.missed.pop(node, []):
            self.channels.send(node, order)
        stale = {name for name, watched in self.watched.items()
                 if watched.stopped_at is not None and node in watched.running.values()}
        for name in running:
            try:
                key = parse_attempt_name(name)
            except ValueError:
                continue
            if not _live(state, *key):
                stale.add(name)
        for name in sorted(stale):
            self.channels.send(node, StopPeTasks(name))
        if known is None:
            return []
        told = set(known)
        return [PeTaskExited(name, petask, lost_on(node))
                for name, watched in sorted(self.watched.items())
                for petask, host in sorted(watched.running.items(), key=lambda item: int(item[0]))
                if host == node and f"{name}/{petask}" not in told]


def lost_on(node: str) -> ExitStatus:
    """The end of a task its node never ran, or whose refusal never came."""
    return {"exit_code": None, "signal": None, "timed_out": False, "terminated": False, "out_of_memory": False,
            "failure": f"node {node} does not know the task: its order, or its refusal, was lost"}


def _live(state: ControllerState, job_id: int, index: int, number: int) -> bool:
    """The attempt is its task's current one, and runs (or is suspended)."""
    job = state.jobs.get(job_id)
    task = job.tasks.get(index) if job is not None else None
    return task is not None and task.attempt == number and task.state in LIVE


def _record(attempt: Attempt, petask: str) -> PeTaskRecord | None:
    return next((r for r in attempt.pe_tasks if r["petask"] == petask), None)


def find(attempt: Attempt, petask: str) -> PeTaskRecord:
    record = _record(attempt, petask)
    if record is None:
        raise NotFound(f"no task {petask} of attempt {attempt.name}")
    return record


def room_for_task(attempt: Attempt, host: str, job_is_first_task: bool) -> None:
    """GE runs as many tasks of a job at once on a host as the job holds slots there; on the
    master, one fewer when the PE's job_is_first_task is true, for the job script holds that
    slot (so an mpirun that starts a task for every slot needs job_is_first_task = false)."""
    slots = len(attempt.cpu_ids) if host == attempt.node else next(
        (len(cpu_ids) for node, cpu_ids in attempt.others if node == host), 0)
    first = job_is_first_task and host == attempt.node
    running = sum(1 for r in attempt.pe_tasks if r["host"] == host and r["ended_at"] is None)
    if running + first >= slots:
        held = f"{slots} slot{'s' if slots != 1 else ''}"
        script = ", one of them the job script's (job_is_first_task = true)" if first else ""
        raise Conflict(f"job {attempt.job_id}.{attempt.index} holds {held} on {host}{script}, and each runs a "
                       f"task already: no task is started there until one ends")
