"""The attempts on this node: start them, signal them, notice their ends, report, clean up.

The spool directory is the contract: everything here can be rebuilt from it, which is how a
restarted execd re-attaches to the jobs its predecessor started (`recover`). Shepherds do not
depend on the execd; the execd watches each shepherd with a pidfd and hears hints from them on
a datagram socket.

A promised attempt (an order with `after`: the controller gave it the room of an attempt still
running here) is prepared at once, its spool written whole, and started the moment the shepherd
of the attempt it follows is gone, so the slot never waits for the controller between the two.
Until then it is known as live; a stop ends it without a shepherd (an exit record saying it was
stopped before it started), and its `after` record brings it back as promised after a restart.
The controller may tell it to start now, in place, on room freed beside it (StartPromisedNow):
its `moved` record says on which CPUs first, then its config is rewritten, its `after` record
removed, and it starts at once; a restart finds the `moved` record and finishes the move.

Every attempt is pinned to CPUs the node offers (its hello's count), each once: a start order on
any other is refused before anything of it is made. A restarted execd that offers fewer CPUs
ends, unstarted, what it finds prepared on one it no longer offers, when it would start it: at
once (a move it recorded, a spool written whose shepherd it had not started), or, for a promise,
when the attempt it follows ends, unless the controller took it back or moved it first. Started,
its shepherd could not pin it, and would run it on every CPU.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import os
import secrets
import shutil
import socket
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from drover.execd import attempt_records, lost_shepherd
from drover.execd.cleanup import Cleanup
from drover.execd.identities import Identities
from drover.execd.job_signals import delivery, signal_by_record
from drover.execd.record_encoding import encoded
from drover.protocol.node_channel import (
    Exited,
    KnownAttempt,
    SignalAttempt,
    StartAttempt,
    Started,
    StartPromisedNow,
    Suspended,
)
from drover.records import AttemptConfig, ExitStatus, NodeOptions, config_in_current_layout
from drover.spool import layout
from drover.spool.atomic import read_json, read_text, write_atomically, write_json
from drover.spool.outcome import make_reserve
from drover.spool.own_directory import own_directory
from drover.spool.process import is_alive, read_pid_record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from drover.execd.signatures import SignedJobs
    from drover.execd.site_methods import SiteMethods
    from drover.spool.spare_reserves import SpareReserves

log = logging.getLogger("drover.execd")
SCRATCH = "work"  # in an attempt's spool: the working directory of a job that has none here
# What the node sets itself, for a parallel task it starts (pe_tasks.py): the shepherd, as root,
# makes the cgroup `containment_name` names, so an order (the controller's) never carries them.
NODE_OWN_KEYS = ("containment_name", "pe_task")


class Spawner(Protocol):
    """What starts a shepherd for a spool directory and returns its pid (the fork server)."""

    def spawn(self, spool_dir: str, lifeline: int | None = None, released: int | None = None) -> int:
        """With `lifeline`, the attempt ends when that pipe's other end reads end of file; its
        shepherd may go on to serve another attempt once `release`d (warm_shepherds.py).
        `released`: a shepherd released with this order, as by `release` just before it."""

    def release(self, pid: int) -> None:
        """This execd saw the attempt of shepherd `pid`, started with a lifeline, end."""

    def wait_status(self, pid: int) -> int | None:
        """How a shepherd it started ended, if it can tell."""


JUST_ENDED_S = 2.0  # a job that ended this soon before its node left ended as it left (leave_cluster)
STARTED_LOOK_S = 0.2  # after a shepherd starts, its records are first looked at this soon...
STARTED_LOOK_MAX_S = 5.0  # ...then twice as late each time, up to this
PTY_SOCKET = "pty.sock"  # an interactive job's terminal, in its spool (shepherd/pty_relay.py)
MAX_CPU_ID = 1 << 16  # a CPU id an order may name at most where the node's count is not given


@dataclass(frozen=True, slots=True)
class SignalFacts:
    """What delivering a signal needs of an attempt's config: whether the job can checkpoint,
    and its own checkpoint signal."""

    checkpoints: bool
    checkpoint_signal: str | None

    @classmethod
    def of(cls, config: Mapping[str, Any]) -> SignalFacts:
        return cls("checkpoint" in config, config["job"]["checkpoint_signal"])


@dataclass(slots=True)
class LiveAttempt:
    spool: layout.SpoolDir
    shepherd_pid: int
    pidfd: int | None = None
    lifeline: int | None = None  # read end: end of file when the shepherd is done with the attempt
    started_sent: bool = False
    moved: bool = False  # started in place (StartPromisedNow), on CPUs its order did not name
    started_at: float | None = None  # when its Started report said its job started
    # Kept from the config this execd wrote, or read once at the first signal (an attempt
    # re-attached after a restart): the config is not read again at each signal.
    signal_facts: SignalFacts | None = None


class Attempts:
    def __init__(self, root: str, spawner: Spawner, send: Callable[[Any], None], cleanup: Cleanup,
                 node_options: NodeOptions, signed_jobs: SignedJobs | None = None,
                 site: SiteMethods | None = None, cpus: int = MAX_CPU_ID,
                 spares: SpareReserves | None = None) -> None:
        from drover.execd.site_methods import SiteMethods

        self.root = root
        # The CPUs this node offers (its hello's count): the controller's CPU ids here are below
        # it, and an order to start in place on another is refused (a CPU the node does not offer
        # is another's work's, or one the host does not have: the shepherd would then run the
        # job on every CPU).
        self.cpus = cpus
        self.node_options = node_options  # the [execd] options every attempt's shepherd reads
        # The site's commands (queue and PE methods, named and checkpoint environments): this
        # node's drover.toml's, never the order's. None: a node that defines none.
        self.site = site if site is not None else SiteMethods("drover.toml")
        self.signed_jobs = signed_jobs  # require_signed_jobs: each order's signature checked first
        self.identities = Identities()
        self.spawner = spawner
        self.send = send  # to the controller; dropped while disconnected
        self.cleanup = cleanup  # what happens after a job exits
        self.spares = spares  # reserves of ended attempts, which the cleanup keeps for the next
        self.live: dict[str, LiveAttempt] = {}
        # Promised attempts, prepared and waiting: name → its spool; the attempt each follows
        # → the names of those that start when its shepherd is gone, in the order promised; and
        # each promise → the attempt it follows, so that one taken back leaves its own list alone.
        self.promised: dict[str, layout.SpoolDir] = {}
        # What the signals of the attempts prepared here need of their config, until they start.
        self._signal_facts: dict[str, SignalFacts] = {}
        self._following: dict[str, list[str]] = {}
        self._follows: dict[str, str] = {}
        # Promises an earlier execd prepared on a CPU this node no longer offers (it restarted
        # offering fewer): name → why it cannot start, should the attempt it follows end first.
        self._unplaced_promises: dict[str, str] = {}
        # Why this node leaves its cluster for good, once it does (leave_cluster): every attempt
        # here is ended, and every order that still comes ends at once.
        self.leaving: str | None = None
        self.leaving_at: float | None = None  # when it began to leave: the end its Hello says from then on
        self._loop = asyncio.get_running_loop()
        # Made and checked without following a link (the execd's start did so already); root's
        # is traversable by all: jobs run as their owners read their scripts below.
        own_directory(root, 0o711 if os.geteuid() == 0 else 0o700, set_mode=os.geteuid() == 0)
        self._notify = self._bind_notify_socket()

    # -- start-up -----------------------------------------------------------------------------

    def _bind_notify_socket(self) -> socket.socket:
        """The socket the shepherds' hints come to. Only the execd's own user may send to it: a
        "started" hint carries the job's pid, which the execd reports as it comes. It is bound
        under a name no one else can guess (the spool's root is not listable by others), made
        the owner's alone, and only then renamed into place, so that no other user connects to
        it in between, whatever the umask the execd was started with."""
        path = os.path.join(self.root, layout.NOTIFY_SOCKET)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        # As long as the socket's own name: a path that fits a socket's address still does.
        unguessable = os.path.join(self.root, secrets.token_hex(len(layout.NOTIFY_SOCKET) // 2))
        sock.bind(unguessable)
        os.chmod(unguessable, 0o600)
        os.rename(unguessable, path)
        sock.setblocking(False)
        self._loop.add_reader(sock.fileno(), self._on_notify)
        return sock

    def recover(self) -> None:
        """Re-attach to what the spool holds, as left by an earlier execd."""
        self.cleanup.remove_leftovers()  # spools it was removing (`removing.*`), tried once more
        never_started = []
        for name in layout.attempt_names(self.root):
            spool = layout.SpoolDir(self.root, name)
            if os.path.exists(spool.record(layout.EXIT_STATUS)):
                self.cleanup.begin(spool)
                continue
            pid_record = read_pid_record(spool.record(layout.PID))
            if pid_record is not None and is_alive(*pid_record):
                log.info("attempt %s: re-attached to shepherd %d", name, pid_record[0])
                self._watch(spool, pid_record[0], moved=os.path.exists(spool.record(layout.MOVED)))
            elif pid_record is not None:
                self._shepherd_lost(spool, None)  # it died while no execd watched: how, no one knows
                self.cleanup.begin(spool)
            elif os.path.exists(spool.record(layout.CONFIG)):
                never_started.append(spool)
            else:
                shutil.rmtree(spool.path, ignore_errors=True)  # half-written order: it will be resent
        # Once every live shepherd is watched again: a promise waits on, the rest start now.
        for spool in never_started:
            moved = _moved_to(spool)
            after = read_text(spool.record(layout.AFTER)) if moved is None else None
            unplaced = self._unplaced(spool, moved)
            if unplaced is not None and not (after and after in self.live):
                self._end_unplaced(spool, unplaced)  # it would start now, where it cannot be pinned
            elif moved is not None:  # told to start in place before the restart: the move is finished
                self._start_in_place(spool, moved)
            else:
                if unplaced is not None:
                    # A promise that waits: the controller, whom the hello tells how many CPUs the
                    # node offers now, takes it back meanwhile (or moves it onto CPUs the node
                    # has); should the attempt it follows end first, it ends then, unstarted.
                    self._unplaced_promises[spool.name] = unplaced
                self._start_or_wait(spool, after)

    def known(self) -> list[KnownAttempt]:
        return [KnownAttempt(name, True, moved=live.moved, started_at=live.started_at,
                             job_started=live.started_at is not None or os.path.exists(live.spool.record(layout.JOB_PID)))
                for name, live in self.live.items()] + [
            KnownAttempt(name, True, promised=True) for name in self.promised] + [
            KnownAttempt(name, False) for name in self.cleanup.known()
        ]

    # -- orders -------------------------------------------------------------------------------

    def start(self, order: StartAttempt) -> None:
        if not layout.is_attempt_name(order.attempt) or (order.after is not None
                                                         and not layout.is_attempt_name(order.after)):
            # No spool can be made of it, so no report can be sent: the controller never sends
            # one; a controller taken over might, to make root write where it points.
            log.warning("refused an order that names no attempt: %r (after %r)", order.attempt[:80],
                        (order.after or "")[:80])
            return
        spool = layout.SpoolDir(self.root, order.attempt)
        if order.attempt in self.live or order.attempt in self.cleanup.pending or spool.exists():
            return  # a repeated order: this attempt is known already
        unplaced = cpus_refusal(order.config.get("cpu_ids", []), self.cpus)
        if unplaced is not None:
            # Refused before anything of it is made: the shepherd could not pin the job, and would
            # run it on every CPU. The controller places attempts within the count of the node's
            # hello, and ends itself a never-started one its node came back with too few CPUs for
            # (node_reports.py); a controller taken over might send any.
            self._never_started(order.attempt, f"the node refused the order's CPUs: {unplaced}")
            return
        try:
            refusal, config = self._prepare(spool, order)
            if refusal:
                _write_failure(spool, refusal)
        except OSError as error:
            self._not_prepared(spool, error)
            return
        self.cleanup.made_here(spool.name, config)
        if refusal:
            self.cleanup.begin(spool)
            return
        if self.leaving is not None:
            self._end_unstarted(spool, self.leaving)
            return
        self._start_or_wait(spool, order.after)

    def _start_or_wait(self, spool: layout.SpoolDir, after: str | None) -> None:
        """Start the attempt now, or, promised the room of an attempt whose shepherd still runs
        here, when that shepherd is gone."""
        if after and after in self.live:
            log.info("attempt %s: promised, starts when %s ends", spool.name, after)
            self.promised[spool.name] = spool
            self._following.setdefault(after, []).append(spool.name)
            self._follows[spool.name] = after
        else:
            self._spawn(spool)

    def start_promised_now(self, order: StartPromisedNow) -> None:
        """Start a promised attempt now on the CPUs the order gives (room freed beside it),
        instead of when the attempt it follows ends. An attempt no longer promised here started
        already (the one it followed ended first: the controller hears it started as promised),
        or ended: the order is ignored, so a repeat after a reconnect is harmless."""
        spool = self.promised.get(order.attempt)
        if spool is None:
            log.info("attempt %s: not promised here (started or ended already): not started in place",
                     order.attempt[:80])
            return
        try:
            config = read_json(spool.record(layout.CONFIG)) or {}
        except (OSError, ValueError) as error:
            log.warning("attempt %s: cannot start in place: its config: %s", order.attempt, error)
            return  # it stays promised, and starts when the attempt it follows ends
        held = config.get("cpu_ids") or []
        cpu_ids = order.cpu_ids
        if len(cpu_ids) != len(held) or cpus_refusal(cpu_ids, self.cpus) is not None:
            log.warning("attempt %s: refused to start in place on CPUs %r: it holds %d, of the node's %d",
                        order.attempt, cpu_ids[:16], len(held), self.cpus)
            return
        try:
            # The intent first: a restart between the records finds it and finishes the move.
            write_json(spool.record(layout.MOVED), sorted(cpu_ids))
        except OSError as error:
            log.warning("attempt %s: cannot start in place: %s", order.attempt, error.strerror or error)
            return
        self._take_promise(order.attempt, starts=True)
        self._start_in_place(spool, sorted(cpu_ids))

    def _start_in_place(self, spool: layout.SpoolDir, cpu_ids: list[int]) -> None:
        """Rewrite the config's CPUs (as the spool writes it: whole, then renamed into place) and
        forget what it followed, then start it: the shepherd pins it, and takes its slot's
        cpuset, by the config's CPUs."""
        try:
            config = read_json(spool.record(layout.CONFIG)) or {}
            if config.get("cpu_ids") != cpu_ids:
                config["cpu_ids"] = cpu_ids
                write_json(spool.record(layout.CONFIG), config)
                # Held by the cleanup only where this process wrote it; checked as a config read
                # back is (one that is not goes, and the cleanup reads it as any spool's).
                self.cleanup.config_rewritten(spool.name, attempt_records.valid_config(config))
            with contextlib.suppress(FileNotFoundError):
                os.unlink(spool.record(layout.AFTER))
        except (OSError, ValueError) as error:
            reason = error.strerror if isinstance(error, OSError) and error.strerror else error
            why = f"the node could not start the promised attempt in place: {reason}"
            log.error("attempt %s: %s", spool.name, why)
            self._signal_facts.pop(spool.name, None)
            _write_failure(spool, why)
            self.cleanup.begin(spool)
            return
        log.info("attempt %s: started in place on CPUs %s", spool.name, cpu_ids)
        self._spawn(spool, moved=True)

    def _prepare(self, spool: layout.SpoolDir, order: StartAttempt) -> tuple[str | None, AttemptConfig | None]:
        """Write the attempt's spool; return why the job may not run here, if it may not, and the
        config written (None where none was: refused before)."""
        as_root = os.geteuid() == 0
        os.mkdir(spool.path, 0o711 if as_root else 0o700)  # a job run as its owner reads its script here
        carried = [key for key in NODE_OWN_KEYS if key in order.config]
        if carried:
            why = f"the order carries {', '.join(carried)}, which only the node sets (for a parallel task it starts)"
            log.warning("attempt %s refused: %s", order.attempt, why)
            return why, None  # a controller taken over would name a cgroup where root makes and removes it
        if self.signed_jobs is not None:
            unsigned = self.signed_jobs.refusal(order)
            if unsigned is not None:
                return unsigned, None  # nothing of the job is written: only why it did not run
        unknown = self.site.refusal(order.config)
        if unknown is not None:
            log.warning("attempt %s refused: %s", order.attempt, unknown)
            return unknown, None  # nothing runs: the order asked for commands this node does not give
        identity, refusal = self.identities.for_job(order.config["owner"])
        config: AttemptConfig = {**order.config, **self.node_options, "identity": identity, "scratch": False}
        self.site.fill(config)  # type: ignore[arg-type]  # the site's commands: this node's drover.toml's
        if not config["workdir"]:
            # The job runs in a scratch directory of its own (its submitter's files are not
            # here); its output goes back through the controller.
            config["workdir"] = os.path.join(spool.path, SCRATCH)
            config["scratch"] = True
            os.mkdir(config["workdir"], 0o700)
            if identity is not None:
                os.chown(config["workdir"], identity["uid"], identity["gid"])
            config["stdout"] = os.path.join(config["workdir"], config["stdout"])
            if config["stderr"]:
                config["stderr"] = os.path.join(config["workdir"], config["stderr"])
        write_atomically(spool.record(layout.JOB_SCRIPT), order.script.encode(), mode=0o500)
        if identity is not None:
            os.chown(spool.record(layout.JOB_SCRIPT), identity["uid"], identity["gid"])
        if order.stage_in:
            # Into the spool, not the working directory: the shepherd writes them there as the
            # job's owner (root never writes where a user points).
            write_json(spool.record(layout.STAGE_IN), [
                {"name": f.name, "mode": f.mode, "data": base64.b64encode(f.data).decode()} for f in order.stage_in])
        # Room for the records of how the job ends, even on a full disk: an ended attempt's, where
        # the disk has room for one; else allocated, which refuses the attempt on a full disk.
        if self.spares is None or not self.spares.take(spool):
            make_reserve(spool)
        if order.after:
            write_atomically(spool.record(layout.AFTER), order.after.encode())
        # Last: its presence means complete. Private (as every record): it holds the job's environment.
        write_json(spool.record(layout.CONFIG), config, encode=encoded)
        if refusal is None:
            self._signal_facts[spool.name] = SignalFacts.of(config)
        return refusal, config

    def _not_prepared(self, spool: layout.SpoolDir, error: OSError) -> None:
        """The node could not write the attempt's spool (most often: the disk is full), so the
        job never started."""
        shutil.rmtree(spool.path, ignore_errors=True)
        self._never_started(spool.name, f"the node could not prepare the attempt in {spool.path}: "
                                        f"{error.strerror or error}")

    def _never_started(self, name: str, why: str) -> None:
        """The node could not set the attempt up, and nothing of it is left here. The controller
        is told at once (there is no spool to clean up after): it puts this node in ERROR and
        requeues the job, as after a node's failing prolog. Should the report be lost with the
        channel, the node's next hello does not name the attempt, and its order comes again."""
        log.error("attempt %s: %s", name, why)
        exit_status: ExitStatus = {
            "exit_code": None, "signal": None, "failure": why, "timed_out": False, "terminated": False,
            "out_of_memory": False, "node_fault": True,
        }
        self.send(Exited(name, exit_status, None, None, done=[]))

    def _unplaced(self, spool: layout.SpoolDir, moved: list[int] | None) -> str | None:
        """Why an attempt prepared by an earlier execd cannot start on the CPUs it would be pinned
        to (those of its move, if it was told to start in place, else its config's), if it cannot:
        the node restarted offering fewer CPUs than it held then."""
        if moved is not None:
            return cpus_refusal(moved, self.cpus)
        try:
            config = read_json(spool.record(layout.CONFIG))
        except (OSError, ValueError):
            return None  # its shepherd says what is wrong with its config, as for any attempt
        return cpus_refusal(config.get("cpu_ids", []), self.cpus) if isinstance(config, dict) else None

    def _end_unplaced(self, spool: layout.SpoolDir, unplaced: str) -> None:
        """An attempt an earlier execd prepared, never started, on a CPU this node no longer
        offers, at the moment it would start: it ends as one the node could not set up, without a
        shepherd, and its report goes to the controller as any other (which requeues it, as after
        `_never_started`)."""
        why = f"the node could not start the attempt after its restart: {unplaced}"
        log.error("attempt %s: %s", spool.name, why)
        _write_failure(spool, why, node_fault=True)
        self.cleanup.begin(spool)

    def signal(self, order: SignalAttempt) -> None:
        if order.attempt in self.promised:
            self._signal_promised(order)
            return
        live = self.live.get(order.attempt)
        if live is None:
            return  # ended already; its exit report is on its way
        if os.path.exists(live.spool.record(layout.SHEPHERD_ABOUT_TO_EXIT)):
            # GE's "shepherd_about_to_exit": the job and its epilogs are done, only its records
            # are being written; a signal would find nothing of it, and SIGTERM would be traced as
            # ignored. Its exit report is on its way.
            log.info("attempt %s: %s not delivered: the shepherd is about to exit", order.attempt, order.action)
            return
        # The shepherd's signal contract, and nothing else (job_signals.py).
        if live.signal_facts is None:
            live.signal_facts = SignalFacts.of(
                config_in_current_layout(read_json(live.spool.record(layout.CONFIG)) or {}))
        facts = live.signal_facts
        # A job that cannot checkpoint (its environment left drover.toml) is stopped for its requeue.
        action = "terminate" if order.action == "migrate" and not facts.checkpoints else order.action
        deliver = delivery(action, facts.checkpoint_signal)
        if deliver is None:
            log.warning("attempt %s: refused to deliver %r: not a signal for the job", order.attempt, order.action)
            return
        signum, by_record = deliver
        if action in ("terminate", "migrate") and order.why:
            # What the stop means, for the cleanup's classification (the mail must say what the
            # controller will decide): the shepherd only records that it was asked to stop.
            write_json(live.spool.record(layout.STOP_REQUEST), {"why": order.why})
        try:
            if by_record:
                signal_by_record(live.spool, live.shepherd_pid, signum)
            else:
                os.kill(live.shepherd_pid, signum)  # before the job starts, the shepherd keeps it
        except ProcessLookupError:
            return
        if order.action in ("suspend", "resume"):
            self.send(Suspended(order.attempt, order.action == "suspend"))

    def _signal_promised(self, order: SignalAttempt) -> None:
        """A stop takes a promise back: the attempt ends without a shepherd, stopped before it
        started, and its end is reported as any other (the controller classifies it by what it
        asked: a cancel, a hold, a requeue). Nothing else reaches a job that has not started."""
        if order.action not in ("terminate", "migrate"):
            log.info("attempt %s: %s not delivered: promised, not started", order.attempt, order.action)
            return
        spool = self._take_promise(order.attempt)
        if order.why:
            write_json(spool.record(layout.STOP_REQUEST), {"why": order.why})
        _write_stopped(spool)
        log.info("attempt %s: promise taken back (%s) before it started", order.attempt, order.why or order.action)
        self.cleanup.begin(spool)

    # -- leaving the cluster ------------------------------------------------------------------

    def leave_cluster(self, why: str) -> None:
        """The node leaves its cluster for good (execd/leaving.py): unlike a stopping execd's, its
        attempts do not run on for a successor to re-attach to. Each is ended as the controller
        ends a lost node's: a promised one at once, a running one by its shepherd's terminate
        sequence (warning signal, kill grace, SIGKILL); each exit record then says the node
        left (attempt_records.NODE_LEFT), and its report goes to the controller as any other."""
        self.leaving, self.leaving_at = why, time.time()
        for name in list(self.promised):
            self._end_unstarted(self._take_promise(name), why)
        for name, live in list(self.live.items()):
            if os.path.exists(live.spool.record(layout.EXIT_STATUS)):
                continue  # it ended already: its own end is reported
            self._mark_left(live.spool, why)
            self.signal(SignalAttempt(name, "terminate"))
        # The outer scheduler signals every process of its allocation as it ends it: a job may
        # have died of that signal a moment before this execd got its own. Not yet reported, it
        # ended as the node left too (the controller takes the final report's word for it).
        now = time.time()
        for name, spool in list(self.cleanup.pending.items()):
            if self.cleanup.reported(name) or name in self.live:
                continue
            try:
                ended = os.stat(spool.record(layout.EXIT_STATUS)).st_mtime
            except OSError:
                continue
            if now - ended <= JUST_ENDED_S:
                self._mark_left(spool, why)

    def _take_promise(self, name: str, starts: bool = False) -> layout.SpoolDir:
        """A promised attempt no longer held as promised, nor started when the one it follows
        ends: it will not start, or it `starts` now, in place. What its signals need of its config
        goes with a promise that will not start; one that starts keeps it for its shepherd's
        signals (_spawn takes it): the move rewrites its CPUs only."""
        spool = self.promised.pop(name)
        self._unplaced_promises.pop(name, None)  # taken back, or started in place on CPUs it was given
        if not starts:
            self._signal_facts.pop(name, None)
        followed = self._follows.pop(name)
        names = self._following[followed]
        names.remove(name)
        if not names:
            del self._following[followed]
        return spool

    def _mark_left(self, spool: layout.SpoolDir, why: str) -> None:
        """Record in the spool, for an execd started after this one, and tell the cleanup, which
        holds it (it reads the mark of an attempt this process started from memory, not the spool)."""
        try:
            write_atomically(spool.record(attempt_records.NODE_LEFT), why.encode())
        except OSError as error:
            log.warning("attempt %s: cannot record why the node leaves: %s", spool.name, error.strerror or error)
            return
        self.cleanup.node_left(spool.name, why)

    def _end_unstarted(self, spool: layout.SpoolDir, why: str) -> None:
        self._signal_facts.pop(spool.name, None)
        self._mark_left(spool, why)
        _write_stopped(spool)
        log.info("attempt %s: ended before it started: %s", spool.name, why)
        self.cleanup.begin(spool)

    # -- watching -----------------------------------------------------------------------------

    def _spawn(self, spool: layout.SpoolDir, moved: bool = False, released: int | None = None) -> None:
        """`released`: the shepherd of the attempt that just ended, released with this order (or
        alone, if no order can be sent): once given here, released here, exactly once."""
        facts = self._signal_facts.pop(spool.name, None)
        # The attempt's lifeline: its end of file is the attempt's end, whether the shepherd
        # closed it after its records or died; the shepherd itself may serve another attempt.
        try:
            lifeline, given = os.pipe2(os.O_CLOEXEC)
        except BaseException:
            if released is not None:  # sent once, by the order or here: a second could free it mid-attempt
                self.spawner.release(released)
            raise
        try:
            pid = self.spawner.spawn(spool.path, lifeline=given, released=released)
        except Exception as error:  # the fork server could not fork: the attempt fails, visibly
            os.close(lifeline)
            log.error("attempt %s: could not start a shepherd: %s", spool.name, error)
            _write_failure(spool, f"the node could not start a shepherd: {error}")
            self.cleanup.begin(spool)
            return
        finally:
            os.close(given)
        self._watch(spool, pid, facts, moved, lifeline)

    def _watch(self, spool: layout.SpoolDir, pid: int, signal_facts: SignalFacts | None = None,
               moved: bool = False, lifeline: int | None = None) -> None:
        """Watch the attempt's shepherd: through its lifeline where it has one (this execd
        started it), else through a pidfd (an attempt re-attached after a restart)."""
        live = self.live[spool.name] = LiveAttempt(spool, pid, signal_facts=signal_facts, moved=moved)
        if lifeline is not None:
            live.lifeline = lifeline
            os.set_blocking(lifeline, False)  # _at_end reads it
            self._loop.add_reader(lifeline, self._shepherd_gone, spool.name)
        else:
            try:
                live.pidfd = os.pidfd_open(pid)
            except ProcessLookupError:
                self._loop.call_soon(self._shepherd_gone, spool.name)
                return
            self._loop.add_reader(live.pidfd, self._shepherd_gone, spool.name)
        if os.path.exists(spool.record(layout.JOB_PID)):
            self._report_started(live)
        else:
            self._loop.call_later(STARTED_LOOK_S, self._look_for_start, spool.name, STARTED_LOOK_S)

    def _look_for_start(self, name: str, delay: float) -> None:
        """The shepherd's "started" hint is a datagram, and a burst of them overflows the
        socket's queue (net.unix.max_dgram_qlen, 10 by default: with 100 jobs starting at once,
        86 hints were lost and those jobs showed as dispatched while they ran). So the records
        are looked at too, less and less often, until the job has started or its shepherd is gone."""
        live = self.live.get(name)
        if live is None or live.started_sent:
            return
        self._report_started(live)
        if not live.started_sent:
            self._loop.call_later(delay, self._look_for_start, name, min(delay * 2, STARTED_LOOK_MAX_S))

    def _on_notify(self) -> None:
        while True:
            try:
                data = self._notify.recv(512)
            except BlockingIOError:
                return
            kind, _, rest = data.decode(errors="replace").partition(" ")
            name, *details = rest.split(" ")
            live = self.live.get(name)
            if live is None:
                continue
            if kind == "started":
                self._report_started(live, _started_hint(details))
            elif kind == "exited":
                self._shepherd_gone(name)

    def _report_started(self, live: LiveAttempt, hint: tuple[int, bool] | None = None) -> None:
        """`hint`: the job's pid and whether it has a terminal, as the shepherd's "started" hint
        carries them; without (a lost hint, a shepherd that sends none, an attempt re-attached
        after a restart), they are read from the records."""
        if live.started_sent:
            return
        pty = live.spool.record(PTY_SOCKET)
        if hint is not None:
            job_pid, has_pty = hint
        else:
            recorded = read_text(live.spool.record(layout.JOB_PID))
            if recorded is None:
                return
            job_pid, has_pty = int(recorded.split()[0]), os.path.exists(pty)
        live.started_sent = True
        live.started_at = time.time()
        self.send(Started(live.spool.name, job_pid, live.started_at, pty if has_pty else None, moved=live.moved))

    def _shepherd_gone(self, name: str) -> None:
        live = self.live.get(name)
        if live is None:
            return
        if not os.path.exists(live.spool.record(layout.EXIT_STATUS)):
            if live.pidfd is not None and is_alive(live.shepherd_pid, None):
                return  # a hint came early; the pidfd will tell when the shepherd is gone
            if live.lifeline is not None and not _at_end(live.lifeline):
                return  # a hint came early; the lifeline will tell when the attempt is over
            self._shepherd_lost(live.spool, live.shepherd_pid)
        del self.live[name]
        self._stop_watching(live)
        # Forgotten as this attempt's: no signal of ours for it can reach the pid from here, so
        # its shepherd may serve the next attempt (the one following, often: released with its
        # order, in one message to the fork server).
        released = live.shepherd_pid if live.lifeline is not None else None
        try:
            for following in self._following.pop(name, []):  # its room is free: the promises start first
                del self._follows[following]
                spool = self.promised.pop(following)
                unplaced = self._unplaced_promises.pop(following, None)
                if unplaced is not None:
                    self._end_unplaced(spool, unplaced)
                else:
                    handed, released = released, None
                    self._spawn(spool, released=handed)  # sends it, with the order or alone
        finally:
            # Whatever failed on the way (a full disk, no descriptor left), the shepherd is
            # released: unreleased, it would wait idle and be counted as coming back for good.
            if released is not None:
                self.spawner.release(released)
        self.cleanup.begin(live.spool)

    def _stop_watching(self, live: LiveAttempt) -> None:
        for fd in (live.pidfd, live.lifeline):
            if fd is not None:
                self._loop.remove_reader(fd)
                os.close(fd)

    def _shepherd_lost(self, spool: layout.SpoolDir, shepherd_pid: int | None) -> None:
        """The shepherd died without recording an end: end everything in the attempt's
        containment, remove its cgroups, and record a system failure (lost_shepherd.py)."""
        wait_status = None
        if shepherd_pid is not None and hasattr(self.spawner, "wait_status"):
            wait_status = self.spawner.wait_status(shepherd_pid)
        lost_shepherd.end_attempt(spool)
        log.warning("attempt %s: %s", spool.name, lost_shepherd.record_loss(spool, wait_status))

    def close(self) -> None:
        for live in self.live.values():
            self._stop_watching(live)
        self._loop.remove_reader(self._notify.fileno())
        self._notify.close()
        if self.spares is not None:
            self.spares.close()
        # A stopped node leaves nothing behind in a spool it no longer serves (it is often on
        # /dev/shm): the socket goes, and the spool root too when no attempt is left in it.
        with contextlib.suppress(OSError):
            os.unlink(os.path.join(self.root, layout.NOTIFY_SOCKET))
            os.rmdir(self.root)


def _at_end(lifeline: int) -> bool:
    """Whether the lifeline's write end is closed. The shepherd writes nothing to it; what a
    process of the same user wrote into it (through /proc, on a node that is not root's) is
    read away, and says nothing."""
    while True:
        try:
            if not os.read(lifeline, 4096):
                return True
        except BlockingIOError:
            return False


def _moved_to(spool: layout.SpoolDir) -> list[int] | None:
    """The CPUs a promised attempt was told to start in place on (its `moved` record), if it was."""
    moved = read_json(spool.record(layout.MOVED))
    if isinstance(moved, list) and all(isinstance(cpu, int) for cpu in moved):
        return moved
    return None


def _write_stopped(spool: layout.SpoolDir) -> None:
    """The exit record of an attempt stopped before its shepherd started."""
    write_json(spool.record(layout.EXIT_STATUS), {
        "exit_code": None, "signal": None, "failure": None, "timed_out": False,
        "terminated": True, "out_of_memory": False,
    })


def _started_hint(details: list[str]) -> tuple[int, bool] | None:
    """The job's pid and whether it has a terminal, from a "started" hint's details ("<pid>" or
    "<pid> pty"); None from a shepherd that sends none (one of an earlier version)."""
    if not details or not (details[0].isascii() and details[0].isdigit()):
        return None
    return int(details[0]), "pty" in details[1:]


def cpus_refusal(cpu_ids: object, cpus: int) -> str | None:
    """Why an attempt cannot be pinned to `cpu_ids` on a node that offers `cpus` CPUs (ids 0 to
    cpus - 1), or None where it can: a CPU the node does not offer is another's work's, or one the
    host does not have (the shepherd would then run the job on every CPU), and a CPU named twice
    would have the attempt hold fewer CPUs than it counts."""
    if not isinstance(cpu_ids, list):
        return "its CPUs are not a list of CPU ids"
    seen: set[int] = set()
    for cpu in cpu_ids:
        if not isinstance(cpu, int) or isinstance(cpu, bool) or not 0 <= cpu < cpus:
            offered = "CPU 0" if cpus == 1 else f"CPUs 0 to {cpus - 1}"
            return f"{_cpu_named(cpu)} is not one this node offers (it offers {offered})"
        if cpu in seen:
            return f"CPU {cpu} is named twice"
        seen.add(cpu)
    return None


def _cpu_named(cpu: object) -> str:
    """A CPU id as a failure shows it: an int of thousands of digits (the decoder lets them
    through) is not written out."""
    if isinstance(cpu, int) and not isinstance(cpu, bool):
        return f"CPU {cpu}" if abs(cpu) < 1 << 32 else "a CPU id out of any range"
    return f"a CPU id of type {type(cpu).__name__}"


def _write_failure(spool: layout.SpoolDir, failure: str, node_fault: bool = False) -> None:
    """The exit record of an attempt that did not start; `node_fault`: the node could not set it
    up (the controller puts the node in ERROR and requeues the job)."""
    write_atomically(spool.record(layout.ERROR), (failure + "\n").encode())
    record: ExitStatus = {
        "exit_code": None, "signal": None, "failure": failure, "timed_out": False,
        "terminated": False, "out_of_memory": False,
    }
    if node_fault:
        record["node_fault"] = True
    write_json(spool.record(layout.EXIT_STATUS), record)
