"""Tasks of a running parallel job on this node: GE's tight integration (`qrsh -inherit`).

Process flow, spool files: "If the job is a parallel job with a tight integration, this job
specific spool directory is created on each execution host involved in the execution of the
job, for each task a subdirectory <petaskid> is created that holds the task specific spool
files." So a task lives in spool/<job>.<task>.<attempt>/<petaskid>/: on the master's host inside
the attempt's own spool directory, on another host of the job in one made here for its tasks.
The node, as root, only creates directories beneath its own spool; the task's shepherd (forked
by the fork server, like an attempt's) runs the command as the job's owner, its output in the
task's `out/` directory, which the owner owns (read back by NodeRelays as the owner).

A task's shepherd runs the firing sequence with `pe_task` set: no prolog, epilog or PE
procedure, its own cgroup (<attempt>.<petaskid>). Its end is reported (PeTaskExited) until the
controller acknowledges it, again on each reconnection; its directory stays until then, so that
a restarted execd reports it again. A suspend, resume or signal of the job reaches it through its
shepherd (`signal`). Tasks outlive their execd, as jobs do: the next one re-attaches to their
shepherds (`recover`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import signal
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from drover.core.ids import attempt_name
from drover.execd import lost_shepherd
from drover.execd.attempts import MAX_CPU_ID, Spawner, cpus_refusal
from drover.execd.identities import Identities
from drover.execd.job_signals import delivery, signal_by_record
from drover.protocol.node_channel import PeTaskExited, SignalPeTasks, StartPeTask, StopPeTasks
from drover.records import AttemptConfig, ExitStatus, NodeOptions
from drover.spool import layout
from drover.spool.atomic import read_json, write_atomically, write_json
from drover.spool.process import is_alive, read_pid_record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from drover.execd.signatures import SignedJobs
    from drover.execd.site_methods import SiteMethods

log = logging.getLogger("drover.execd")
PETASK_ID = layout.PETASK_ID
OUTPUT_DIR = "out"  # in a task's directory: the owner's, where its stdout and stderr go
MADE_FOR_TASKS = layout.MADE_FOR_TASKS  # in an attempt directory this node made, or kept, for tasks only
NOT_FOR_TASKS = ("terminate", "checkpoint", "migrate")  # a stop is StopPeTasks'; a checkpoint the job's
STOPPED_KEPT = 1000  # the attempts told to stop that are remembered, so a late start is refused


@dataclass(slots=True)
class LiveTask:
    attempt: str
    petask: str
    spool: layout.SpoolDir  # spool/<attempt>/<petask>
    shepherd_pid: int
    pidfd: int | None = None


class PeTasks:
    def __init__(self, root: str, spawner: Spawner, send: Callable[[Any], None], node_options: NodeOptions,
                 identities: Identities, signed_jobs: SignedJobs | None, site: SiteMethods | None = None,
                 cpus: int = MAX_CPU_ID) -> None:
        from drover.execd.site_methods import SiteMethods

        self.site = site if site is not None else SiteMethods("drover.toml")  # commands an order carries are refused
        self.root = root
        self.cpus = cpus  # the CPUs this node offers (its hello's count), as Attempts has them
        self.spawner = spawner
        self.send = send
        self.node_options = node_options
        self.identities = identities
        self.signed_jobs = signed_jobs  # require_signed_jobs: each task's signature checked first
        self.live: dict[tuple[str, str], LiveTask] = {}
        self.stopped: set[str] = set()  # attempts whose tasks were told to stop
        self.unacked: dict[tuple[str, str], PeTaskExited] = {}  # ends reported, not yet recorded by the controller
        # An attempt directory recover() could not read: the tasks in it, running or not, are
        # not known here, so the hello names none (known() is None) rather than have the
        # controller end tasks that may run on.
        self.unread: set[str] = set()
        self._loop = asyncio.get_running_loop()

    def attempts(self) -> list[str]:
        """The attempts whose tasks run here (said in each hello)."""
        return sorted({task.attempt for task in self.live.values()})

    def known(self) -> list[str] | None:
        """The tasks this node knows, "<attempt>/<petask>" (said in each hello): those running,
        and those whose end is reported until the controller acknowledges it (refusals too).
        None where a directory of tasks could not be read when the node daemon started."""
        if self.unread:
            return None
        return sorted(f"{attempt}/{petask}" for attempt, petask in {*self.live, *self.unacked})

    def task_dir(self, attempt: str, petask: str) -> str | None:
        if not layout.is_attempt_name(attempt) or not PETASK_ID.fullmatch(petask):
            return None
        return os.path.join(self.root, attempt, petask)

    # -- orders -------------------------------------------------------------------------------

    def start(self, order: StartPeTask) -> None:
        path = self.task_dir(order.attempt, order.petask)
        if path is None:  # the controller never sends one; a controller taken over might, to make root write there
            log.warning("refused a parallel task's order that names no attempt or task: %r, task %r",
                        order.attempt[:80], order.petask[:80])
            return
        if (order.attempt, order.petask) in self.live or os.path.exists(path):
            return  # a repeated order
        if order.attempt in self.stopped:
            self._refused(order, "the job's attempt ended on this node")
            return
        misplaced = self._placement_refusal(order)
        if misplaced is not None:
            self._refused(order, misplaced)
            return
        if self.signed_jobs is not None:
            unsigned = self.signed_jobs.pe_task_refusal(order)
            if unsigned is not None:
                self._refused(order, unsigned)
                return
        carried = self.site.refusal(order.config)  # a task runs no method: only commands carried are refused
        if carried is not None:
            self._refused(order, carried)
            return
        identity, refusal = self.identities.for_job(order.config["owner"])
        if refusal is not None:
            self._refused(order, refusal)
            return
        attempt_dir = os.path.join(self.root, order.attempt)
        as_root = os.geteuid() == 0
        try:
            if not os.path.isdir(attempt_dir):
                # "created on each execution host involved in the execution of the job"
                os.mkdir(attempt_dir, 0o711 if as_root else 0o700)
                write_atomically(os.path.join(attempt_dir, MADE_FOR_TASKS), b"")
            os.mkdir(path, 0o711 if as_root else 0o700)  # the owner's job reaches its TMPDIR below
            spool = layout.SpoolDir(attempt_dir, order.petask)
            out = os.path.join(path, OUTPUT_DIR)
            os.mkdir(out, 0o700)
            if identity is not None:
                os.chown(out, identity["uid"], identity["gid"])
            config: AttemptConfig = {**order.config, **self.node_options, "identity": identity, "scratch": False}
            config["pe_task"] = order.petask
            config["containment_name"] = f"{order.attempt}.{order.petask}"
            config["stdout"] = os.path.join(out, "stdout")
            config["stderr"] = os.path.join(out, "stderr")
            config["job"] = {**config["job"], "open_mode": "truncate"}
            write_atomically(spool.record(layout.JOB_SCRIPT), order.script.encode(), mode=0o500)
            if identity is not None:
                os.chown(spool.record(layout.JOB_SCRIPT), identity["uid"], identity["gid"])
            write_json(spool.record(layout.CONFIG), config)  # last: its presence means complete
            pid = self.spawner.spawn(path)
        except Exception as error:  # the disk is full, the fork server cannot fork: the task fails, visibly
            log.error("attempt %s: could not start task %s: %s", order.attempt, order.petask, error)
            shutil.rmtree(path, ignore_errors=True)
            self._refused(order, f"the node could not start the task: {error}")
            return
        log.info("attempt %s: task %s started (shepherd %d)", order.attempt, order.petask, pid)
        self._watch(LiveTask(order.attempt, order.petask, spool, pid))

    def _placement_refusal(self, order: StartPeTask) -> str | None:
        """Why the task may not run where its order puts it, or None. Its CPUs, as a start order's
        (attempts.cpus_refusal): one the node does not offer, or one named twice, and the shepherd
        would run the task on every CPU. Its config must be of the attempt the order names (the
        owner's signature of a task binds its job, not the directory it runs in). On the job's
        master host, where the attempt's own record is, a task runs within its attempt: on the
        attempt's CPUs (those it was moved to, where it started in place) and as the attempt's
        owner. The controller orders no other
        (controller/nodes/pe_tasks.py, task_order: the job's room on the host); a controller
        taken over might, to put a task on another job's CPUs, or another user's inside this job.

        A node that came back offering fewer CPUs keeps running the attempts that started on
        those it no longer offers, pinned there (controller/handlers/node_reports.py, _reattach),
        and the controller orders their tasks on the same CPUs: a task is let onto such a CPU
        where it is the attempt's own by this node's record: on the master host the attempt's
        (its spool), elsewhere one an earlier task of the attempt was started on here (the task
        directories, kept while the attempt runs). A CPU of no record is refused as before."""
        config = order.config
        named = attempt_name(config["job_id"], config["task_index"], config["attempt_number"])
        if config["attempt"] != order.attempt or named != order.attempt:
            return f"the order is for attempt {order.attempt}, and its config for {config['attempt'][:80]} ({named[:80]})"
        cpu_ids = config.get("cpu_ids", [])
        master = self._master_record(order.attempt)
        unplaced = cpus_refusal(cpu_ids, self.cpus)
        if unplaced is not None:
            held = master[0] if master is not None else self._share_here(order.attempt)
            if not _within_own(cpu_ids, self.cpus, held):
                return f"the node refused the task's CPUs: {unplaced}"
        if master is None:
            return None  # a host of the job's that is not its master's: the order's CPUs are the job's room here
        held, owner = master
        outside = sorted(set(config["cpu_ids"]) - set(held))
        if outside:
            return (f"the node refused the task's CPUs: {', '.join(f'CPU {cpu}' for cpu in outside[:8])} "
                    f"{'is' if len(outside) == 1 else 'are'} not the attempt's (it holds {_cpus_named(held)})")
        if config["owner"] != owner:
            return f"the task is {config['owner'][:80]}'s, and its attempt {owner[:80]}'s"
        return None

    def _master_record(self, attempt: str) -> tuple[list[int], str] | None:
        """The CPUs and owner of the attempt, where this node runs it (its master's spool, not a
        directory made for tasks only); None elsewhere."""
        spool = layout.SpoolDir(self.root, attempt)
        if os.path.exists(os.path.join(spool.path, MADE_FOR_TASKS)):
            return None
        try:
            config = read_json(spool.record(layout.CONFIG))
            moved = read_json(spool.record(layout.MOVED))
        except (OSError, ValueError):
            return [], ""  # the attempt is here, its records unreadable: no task runs within it
        if not isinstance(config, dict):
            return None  # no attempt of that name here: a host of the job's tasks only
        held = moved if isinstance(moved, list) else config.get("cpu_ids", [])
        return [cpu for cpu in held if isinstance(cpu, int)], str(config.get("owner", ""))

    def _share_here(self, attempt: str) -> list[int]:
        """The CPUs this node started tasks of the attempt on, on a host of the job's that is not
        its master's: the configs it wrote in the tasks' directories (read only where an order
        names a CPU the node no longer offers)."""
        attempt_dir = os.path.join(self.root, attempt)
        held: set[int] = set()
        try:
            petasks = [entry.name for entry in os.scandir(attempt_dir) if PETASK_ID.fullmatch(entry.name)]
        except OSError:
            return []
        for petask in petasks:
            try:
                config = read_json(layout.SpoolDir(attempt_dir, petask).record(layout.CONFIG))
            except (OSError, ValueError):
                continue
            cpus = config.get("cpu_ids") if isinstance(config, dict) else None
            if isinstance(cpus, list):
                held.update(cpu for cpu in cpus if isinstance(cpu, int) and not isinstance(cpu, bool))
        return sorted(held)

    def stop(self, order: StopPeTasks) -> None:
        """The attempt ended: each of its tasks' shepherds is told to stop its task (SIGTERM: the
        warning signal, the grace, SIGKILL, then everything in its cgroup killed)."""
        if not layout.is_attempt_name(order.attempt):
            return
        if order.petask is not None:  # one task, its caller interrupted: the attempt goes on
            task = self.live.get((order.attempt, order.petask))
            if task is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(task.shepherd_pid, signal.SIGTERM)
            return
        self.stopped.add(order.attempt)
        if len(self.stopped) > STOPPED_KEPT:  # only a late order needs them: the oldest go
            self.stopped.discard(min(self.stopped, key=_attempt_key))
        running = [task for task in self.live.values() if task.attempt == order.attempt]
        for task in running:
            try:
                os.kill(task.shepherd_pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        if not running:
            self._remove_if_done(order.attempt)

    def signal(self, order: SignalPeTasks) -> None:
        """The attempt was suspended, resumed or signalled: so is each of its tasks here, by its
        shepherd's signal contract and nothing else (job_signals.py), as the job's master is. A
        stop is StopPeTasks' and a checkpoint the job script's: neither is taken here."""
        if not layout.is_attempt_name(order.attempt):
            return
        deliver = None if order.action in NOT_FOR_TASKS else delivery(order.action)
        if deliver is None:
            log.warning("attempt %s: refused to deliver %r to its tasks", order.attempt, order.action)
            return
        signum, by_record = deliver
        for task in [task for task in self.live.values() if task.attempt == order.attempt]:
            try:
                if by_record:
                    signal_by_record(task.spool, task.shepherd_pid, signum)
                else:
                    os.kill(task.shepherd_pid, signum)
            except ProcessLookupError:
                pass  # it ended: its end is reported

    # -- watching -----------------------------------------------------------------------------

    def _watch(self, task: LiveTask) -> None:
        self.live[task.attempt, task.petask] = task
        try:
            task.pidfd = os.pidfd_open(task.shepherd_pid)
        except ProcessLookupError:
            self._loop.call_soon(self._gone, task.attempt, task.petask)
            return
        self._loop.add_reader(task.pidfd, self._gone, task.attempt, task.petask)

    def _gone(self, attempt: str, petask: str) -> None:
        task = self.live.pop((attempt, petask), None)
        if task is None:
            return
        if task.pidfd is not None:
            self._loop.remove_reader(task.pidfd)
            os.close(task.pidfd)
        exit_status = read_json(task.spool.record(layout.EXIT_STATUS))
        if exit_status is None:  # the shepherd died without a record: end what it left
            _end_contained(task)
            exit_status = _failed("the task's shepherd was lost")
        # The usage is in the exit record, reported apart from it; a task's shepherd of an
        # earlier Drover wrote it in a record of its own (attempt_records.usage).
        usage = exit_status.pop("usage", None) if isinstance(exit_status, dict) else None
        if usage is None:
            usage = read_json(task.spool.record(layout.USAGE))
        self._report(PeTaskExited(attempt, petask, exit_status, usage))

    def _report(self, message: PeTaskExited) -> None:
        self.unacked[message.attempt, message.petask] = message
        self.send(message)

    def acknowledged(self, names: list[str]) -> None:
        """The controller recorded these ends ("<attempt>/<petask>"): they are not sent again, and
        a stopped attempt's directories go once nothing of them is left to report."""
        for name in names:
            attempt, _, petask = name.rpartition("/")
            if self.unacked.pop((attempt, petask), None) is not None and attempt in self.stopped:
                self._remove_if_done(attempt)

    def resend(self) -> None:
        """On each connection: the ends the controller has not acknowledged, again."""
        for message in list(self.unacked.values()):
            self.send(message)

    def _remove_if_done(self, attempt: str) -> None:
        if not any(t.attempt == attempt for t in self.live.values()):
            self._remove(attempt)

    def _remove(self, attempt: str) -> None:
        """The ended attempt's task directories go, but those of ends the controller has not
        acknowledged; a directory made only for them goes with the last (the master's own spool
        directory is its cleanup's to remove)."""
        attempt_dir = os.path.join(self.root, attempt)
        try:
            names = [entry.name for entry in os.scandir(attempt_dir) if PETASK_ID.fullmatch(entry.name)]
        except OSError:
            return
        kept = [name for name in names if (attempt, name) in self.unacked]
        for name in names:
            if name not in kept:
                shutil.rmtree(os.path.join(attempt_dir, name), ignore_errors=True)
        if not kept and os.path.exists(os.path.join(attempt_dir, MADE_FOR_TASKS)):
            shutil.rmtree(attempt_dir, ignore_errors=True)

    def recover(self) -> None:
        """At the execd's start: re-attach to the tasks its predecessor started whose shepherds
        run; report the ends of the others again (the controller acknowledges an end it has,
        and then tells this node to remove what is left)."""
        for name in layout.attempt_names(self.root):
            attempt_dir = os.path.join(self.root, name)
            try:
                petasks = [entry.name for entry in os.scandir(attempt_dir) if PETASK_ID.fullmatch(entry.name)]
            except (FileNotFoundError, NotADirectoryError):
                continue  # removed meanwhile, or no directory
            except OSError as error:
                log.error("attempt %s: its tasks' directory cannot be read (%s): the tasks of no attempt are "
                          "named to the controller until the node daemon starts again", name, error)
                self.unread.add(name)
                continue
            for petask in sorted(petasks, key=int):
                self._recover_task(LiveTask(name, petask, layout.SpoolDir(attempt_dir, petask), 0))

    def _recover_task(self, task: LiveTask) -> None:
        pid_record = read_pid_record(task.spool.record(layout.PID))
        if not os.path.exists(task.spool.record(layout.EXIT_STATUS)) and pid_record is not None \
                and is_alive(*pid_record):
            log.info("attempt %s: re-attached to task %s (shepherd %d)", task.attempt, task.petask, pid_record[0])
            task.shepherd_pid = pid_record[0]
            self._watch(task)
            return
        # It ended, or its shepherd died while no execd watched (or never started): its end is
        # reported again, from its records.
        self.live[task.attempt, task.petask] = task
        self._gone(task.attempt, task.petask)

    def _refused(self, order: StartPeTask, why: str) -> None:
        log.warning("attempt %s: task %s not started: %s", order.attempt[:80], order.petask[:80], why)
        self._report(PeTaskExited(order.attempt, order.petask, _failed(why)))

    def close(self) -> None:
        for task in self.live.values():
            if task.pidfd is not None:
                self._loop.remove_reader(task.pidfd)
                os.close(task.pidfd)


def _within_own(cpu_ids: object, offered: int, held: list[int]) -> bool:
    """Whether each CPU id is one the node offers or one of the attempt's own by the node's record
    (`held`), none named twice."""
    if cpus_refusal(cpu_ids, MAX_CPU_ID) is not None or not isinstance(cpu_ids, list):
        return False
    own = set(held)
    return all(cpu < offered or cpu in own for cpu in cpu_ids)


def _cpus_named(cpu_ids: list[int]) -> str:
    if not cpu_ids:
        return "none"
    return ("CPU " if len(cpu_ids) == 1 else "CPUs ") + ", ".join(str(cpu) for cpu in sorted(cpu_ids)[:16])


def _attempt_key(name: str) -> tuple[int, ...]:
    return tuple(int(part) for part in name.split("."))


def _end_contained(task: LiveTask) -> None:
    """SIGKILL what is in the task's cgroup and remove it (lost_shepherd.end_attempt, which checks
    that a cgroup is the one named for the task before it touches it)."""
    named = layout.SpoolDir(task.spool.root, task.petask)
    named.name = f"{task.attempt}.{task.petask}"  # the cgroup's name; `path` stays the task's directory
    try:
        lost_shepherd.end_attempt(named)
    except OSError as error:
        log.warning("attempt %s: task %s: cannot end what is left of it: %s", task.attempt, task.petask, error)


def _failed(why: str) -> ExitStatus:
    return {"exit_code": None, "signal": None, "failure": why, "timed_out": False, "terminated": False,
            "out_of_memory": False}
