"""Tasks of a running parallel job, started on the hosts of its allocation: GE's tight
integration (`qrsh -inherit HOST CMD` inside the job; `drover task start HOST -- CMD`).

Process flow: "If the job is a parallel job with a tight integration, this job specific spool
directory is created on each execution host involved in the execution of the job, for each task
a subdirectory <petaskid> is created that holds the task specific spool files."

A request is checked here (`check`): the caller is the job's owner, the job's task is RUNNING,
the host is one of its attempt's (the master or one of `Attempt.others`), and the job's PE has
`control_slaves = true` (sge_pe(5): "only with a tightly integrated parallel environment").
The task gets the next <petaskid> of its attempt ("1", "2", ...) and its node a StartPeTask.

The tasks are kept in memory only, with their attempt: they die with it (`sweep`, `stopping`
send each host that ran one a StopPeTasks), and a restarted controller knows none of them (the
nodes end theirs when their execd restarts; a task whose controller restarted runs on until its
attempt ends, and its end is not heard). A stopped attempt's tasks are kept until each reported
its end, or KEEP_STOPPED_S: their usage is counted in the attempt's (pe_usage.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from drover.config_schema import ParallelEnvironmentSection
from drover.controller import parallel_envs, pe_usage
from drover.controller.auth import Caller, Policy
from drover.controller.node_channels import NodeChannels
from drover.controller.state import ControllerState
from drover.core.errors import BadRequest, Conflict, Forbidden, NotFound, Unavailable
from drover.core.job import Attempt, Job
from drover.core.job_state import JobState
from drover.protocol.node_channel import (
    PeTaskExited,
    SignalAttempt,
    SignalPeTasks,
    StartPeTask,
    StopPeTasks,
)
from drover.records import AttemptOrder, ExitStatus, Usage

KEEP_STOPPED_S = 600.0  # how long a stopped attempt's tasks are waited for (their usage is counted)
MAX_TASKS = 10_000  # per attempt: a runaway loop of qrsh -inherit is refused past it
LIVE = (JobState.RUNNING, JobState.SUSPENDED)
# What of the master's order a task does not take: GE's petasks run no prolog, epilog or PE
# procedure, stage nothing, mail nothing, and are no interactive or checkpointing job.
NOT_FOR_TASKS = ("pe_start", "pe_stop",
                 "pe_start_as_site", "pe_stop_as_site", "environments", "checkpoint", "zap", "done_output",
                 "done_output_pattern", "mail_output", "queue_starter_method", "queue_suspend_method",
                 "queue_resume_method", "queue_terminate_method", "notify_s", "pe_hosts", "gres")


@dataclass(slots=True)
class PeTask:
    petask: str
    host: str
    argv: list[str]
    started_at: float
    exit_status: ExitStatus | None = None
    usage: Usage | None = None
    ended_at: float | None = None


@dataclass(slots=True)
class AttemptTasks:
    job_id: int
    index: int
    number: int
    tasks: dict[str, PeTask] = field(default_factory=dict)
    next_id: int = 1
    stopped: bool = False
    stopped_at: float | None = None  # kept a while after, for its tasks' ends (and usage) to arrive


def check(state: ControllerState, environments: Mapping[str, ParallelEnvironmentSection], policy: Policy,
          caller: Caller, job_id: int, index: int, host: str) -> tuple[Job, Attempt]:
    """The running attempt a task may be started in, on `host`; a clear refusal otherwise."""
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
    return job, attempt


def task_order(master: AttemptOrder, host: str, cpu_ids: Sequence[int], memory_mib: int, petask: str,
               cwd: str | None, env: Mapping[str, str] | None, credential: str | None = None) -> AttemptOrder:
    """The master's order, made a task's on `host`: its CPUs and memory there, its working
    directory and environment, nothing of the master's methods."""
    config: dict[str, Any] = {key: value for key, value in master.items() if key not in NOT_FOR_TASKS}
    config.update(node=host, cpu_ids=list(cpu_ids), cpus=len(cpu_ids) or master["cpus"], memory_mib=memory_mib,
                  pe_task=petask, stage_out=[], mail_type=[], mail_user=None, pty=False, keep_spool=False,
                  job_prolog=None, job_epilog=None, queue_prolog=None, queue_epilog=None,
                  credential=credential)  # the task's own signature, never the job's
    if cwd:
        config["workdir"] = cwd
    if env is not None:
        config["environment"] = dict(env)
    return config  # type: ignore[return-value]  # AttemptOrder's keys, less some optional ones


class PeTasks:
    def __init__(self, channels: NodeChannels, clock: Any = time.time) -> None:
        self.channels = channels
        self.clock = clock
        self.attempts: dict[str, AttemptTasks] = {}
        # Stops for nodes that were not connected when their attempt ended: sent when they are again.
        self.unsent: dict[str, set[str]] = {}
        # The ended tasks' usage not yet counted in their attempt's (pe_usage.py; the working
        # set's `pe_usage`).
        self.ended: pe_usage.Ended = {}

    def start(self, attempt: Attempt, host: str, argv: list[str], build: Callable[[str], StartPeTask]) -> PeTask:
        """Record a new task of `attempt` on `host` and send its node the order `build(petask)` makes."""
        if not argv:
            raise BadRequest("give the task's command")
        if self.channels.channel(host) is None:
            raise Unavailable(f"node {host} is not connected")
        tasks = self.attempts.get(attempt.name)
        if tasks is None or (tasks.job_id, tasks.index, tasks.number) != (attempt.job_id, attempt.index,
                                                                         attempt.number):
            tasks = self.attempts[attempt.name] = AttemptTasks(attempt.job_id, attempt.index, attempt.number)
        if tasks.stopped:
            raise Conflict(f"attempt {attempt.name} is ending: no task is started in it")
        if len(tasks.tasks) >= MAX_TASKS:
            raise Conflict(f"attempt {attempt.name} has started {MAX_TASKS} tasks, the most one attempt starts")
        petask = str(tasks.next_id)
        tasks.next_id += 1
        task = tasks.tasks[petask] = PeTask(petask, host, list(argv), self.clock())
        self.channels.send(host, build(petask))
        return task

    def find(self, attempt: str, petask: str) -> PeTask:
        tasks = self.attempts.get(attempt)
        task = tasks.tasks.get(petask) if tasks is not None else None
        if task is None:
            raise NotFound(f"no task {petask} of attempt {attempt} (tasks are known while their job runs)")
        return task

    def stop_task(self, attempt: str, petask: str) -> PeTask:
        """Stop one task (its caller, `qrsh -inherit` or `drover task start`, was interrupted, as
        Grid Engine's qrsh forwards its signals); its end is reported as any task's. One that
        ended, or whose attempt is stopping, is left as it is."""
        task = self.find(attempt, petask)
        if task.exit_status is not None or self.attempts[attempt].stopped:
            return task
        if self.channels.channel(task.host) is None:
            raise Unavailable(f"node {task.host} is not connected")
        self.channels.send(task.host, StopPeTasks(attempt, petask))
        return task

    def take(self, node: str, messages: Sequence[Any]) -> list[str]:
        """A node's reports of its tasks' ends (one node cannot report another's tasks); the
        attempts whose tasks' usage grew, to be counted in the attempt's (`ended`)."""
        grew: list[str] = []
        for message in messages:
            if not isinstance(message, PeTaskExited):
                continue
            tasks = self.attempts.get(message.attempt)
            task = tasks.tasks.get(message.petask) if tasks is not None else None
            if task is None or task.host != node or task.exit_status is not None:
                continue
            task.exit_status, task.usage, task.ended_at = message.exit_status, message.usage, self.clock()
            if message.usage is not None:
                pe_usage.add(self.ended, message.attempt, message.usage)
                grew.append(message.attempt)
            if tasks is not None and tasks.stopped and all(t.exit_status is not None for t in tasks.tasks.values()):
                del self.attempts[message.attempt]  # its last task's end: nothing more to wait for
        return grew

    def stopping(self, message: object) -> None:
        """An order to a node: when it stops an attempt, its tasks are stopped at once on every
        host; when it suspends, resumes or signals it, so are its running tasks (GE's qmod -sj
        and qsig of a tightly integrated job). A checkpoint is the job script's alone."""
        if not isinstance(message, SignalAttempt):
            return
        if message.action == "terminate":
            self._stop(message.attempt)
        elif message.action not in ("checkpoint", "migrate"):
            self._signal(message.attempt, message.action)

    def _signal(self, attempt: str, action: str) -> None:
        tasks = self.attempts.get(attempt)
        if tasks is None or tasks.stopped:
            return
        for host in sorted({task.host for task in tasks.tasks.values() if task.exit_status is None}):
            if self.channels.channel(host) is not None:  # a node away misses it (its tasks end with the job)
                self.channels.send(host, SignalPeTasks(attempt, action))

    def sweep(self, state: ControllerState) -> None:
        """After each change: the tasks of every attempt that no longer runs are stopped."""
        for name, tasks in list(self.attempts.items()):
            job = state.jobs.get(tasks.job_id)
            task = job.tasks.get(tasks.index) if job is not None else None
            if task is None or task.attempt != tasks.number or task.state not in LIVE:
                self._stop(name)
                waited = self.clock() - (tasks.stopped_at or 0.0) > KEEP_STOPPED_S
                if waited or all(t.exit_status is not None for t in tasks.tasks.values()):
                    del self.attempts[name]

    def _stop(self, attempt: str) -> None:
        tasks = self.attempts.get(attempt)
        if tasks is None or tasks.stopped:
            return
        tasks.stopped, tasks.stopped_at = True, self.clock()
        for host in sorted({task.host for task in tasks.tasks.values()}):
            if self.channels.channel(host) is None:
                waiting = self.unsent.setdefault(host, set())
                if len(waiting) < MAX_TASKS:
                    waiting.add(attempt)
            else:
                self.channels.send(host, StopPeTasks(attempt))

    def node_connected(self, node: str) -> None:
        """A node that missed the stops of its tasks' attempts while it was away gets them now."""
        for attempt in sorted(self.unsent.pop(node, ())):
            self.channels.send(node, StopPeTasks(attempt))
