"""After the job exits: HTCondor's staged cleanup (seeds/htcondor-starter-what-happens-when-a-job-
exits.txt), one pipeline per attempt.

    1. exit_hook   the site's exit hook runs with the final record on stdin
    2. stage_out   declared output files go back (through the controller)
    3. record      the final record is written to the spool, durably
    4. report      the controller is told, and acknowledges (idempotent on its side)
    5. mail        the owner is mailed, if they asked
    6. remove      the spool directory goes (or is kept, if the job or the config says so)

Mail comes after the report, as in the starter's own code path (JIC::notifyJobExit updates the
schedd, "and then" generates the notification email): a mail relay that is down never holds a
job's end back from its user, its dependants or the scheduler.

Each step records its completion in the attempt's `cleanup` record (`_recorded_alone`: the record
step in the final record it writes, in the same write; the report not when the spool's removal
follows at once). A failed step stops the
pipeline; the next trigger (a retry timer with back-off, a reconnection to the controller, an
execd start) runs it again from the top, and every step already done is skipped — "everything
remembers how far it got", as the starter does.

Cleanup never hangs. Every step has a timeout, and a failed try is retried after a back-off that
doubles from `retry_first_s` up to `retry_max_s` (`retry_delay`). Every step but the report has
a bound on its tries; a step that still fails then is given up: recorded with its tries and its
last error (the node's log, a `cleanup_failed` event, and the attempt's cleanup record, which
`drover show` prints after the job ended too), and the pipeline goes on (`next_move`):

    exit_hook  exit_hook_tries   a site's script that keeps failing must not hold the job's end
    stage_out  stage_out_tries   files the controller cannot keep are named and given up; tries
                                 while the controller is unreachable are not counted
    record     record_tries      the durable final record is the node's own copy: when its disk
                                 cannot take it (full, failing), the report goes on with what
                                 the shepherd recorded (exit status, usage), which the
                                 controller keeps durably itself
    report     no bound          the controller must learn how the job ended, or the job stays
                                 COMPLETING and its CPUs are never given back, and it may be
                                 down for hours. A try the controller does not acknowledge
                                 while connected counts for the back-off, so one that keeps
                                 refusing the report is asked again at most every
                                 `retry_max_s` (plus `report_timeout_s` waiting for its
                                 answer); while it is unreachable no try is counted, and its
                                 reconnection starts the pipeline again at once
    mail       mail_tries        after the report: nothing waits for it
    remove     remove_tries      a spool the node cannot delete (an immutable file, a mount
                                 inside it) is left for an operator as <spool>/removing.<attempt>,
                                 named in the log and in the event; the next execd start tries
                                 once more
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import functools
import hashlib
import logging
import os
import shutil
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from drover import mail
from drover.core.exit_status import ExitSemantics, classify_exit, exit_facts
from drover.core.job_state import Trigger
from drover.execd import attempt_records, output_index
from drover.execd.faults import NO_FAULTS, Faults
from drover.execd.record_encoding import encoded
from drover.open_files import with_limit_started_with
from drover.protocol.node_channel import (
    STAGE_OUT_CHUNK_BYTES,
    ChunkKept,
    Exited,
    Exiting,
    File,
    Progress,
    SentFile,
    StagedChunk,
    StagedOut,
)
from drover.records import AttemptConfig, CleanupProgress, FinalRecord, GivenUpStep, Usage
from drover.shepherd.environment import SITE_PATH
from drover.spool import file_system, layout
from drover.spool.atomic import write_atomically, write_json
from drover.spool.spare_reserves import SpareReserves

log = logging.getLogger("drover.execd")

STEPS = ("exit_hook", "stage_out", "record", "report", "mail", "remove")
CONTROLLER_STEPS = ("stage_out", "report")  # they wait for the controller: its reconnection retries them
FINAL = attempt_records.FINAL
KEPT = "kept"  # under the spool root: attempts whose spool the job or the config keeps
REMOVING = "removing."  # under the spool root, before the attempt's name: a spool on its way out
# A spool of records alone holds about 15; one with more is removed on a thread, whatever its disk.
FLAT_MAX = 64
# What a spool's records may hold, together, to be removed on the event loop: freeing a file's
# pages takes the time of its size (a GiB of tmpfs, a fifth of a second), so only a few records'
# worth is freed there, and only of files the node daemon owns (`_removed_flat`).
FLAT_MAX_BYTES = 1024 * 1024
CLEANUP_THREADS = 8  # the pipelines' own threads (disk, mail): shared with nothing else of the node's
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class CleanupSettings:
    exit_hook: str | None = None  # a script of the site's; gets the final record on stdin
    exit_hook_timeout_s: float = 60.0
    keep_spool: bool = False  # keep every attempt's spool (under <spool>/kept/)
    smtp_host: str = "localhost"
    smtp_port: int = 25
    mail_tries: int = 5  # after this many failed tries, the mail is given up and the pipeline goes on
    exit_hook_tries: int = 5  # the same for the site's exit hook
    stage_out_tries: int = 5  # the same for output files the controller, connected, does not take
    record_tries: int = 5  # the same for the durable final record
    remove_tries: int = 5  # the same for removing the spool
    # How long one try may take (the exit hook's is above; the report's and the stage-out's is
    # report_timeout_s): past it, the try has failed.
    mail_timeout_s: float = 60.0
    record_timeout_s: float = 60.0
    remove_timeout_s: float = 600.0  # a large scratch directory takes its time
    report_timeout_s: float = 10.0  # waiting for the controller's acknowledgement (report, stage-out)
    retry_first_s: float = 0.5
    retry_max_s: float = 30.0

    def tries(self, step: str) -> int | None:
        """The failed tries after which `step` is given up; None: it is tried until it succeeds."""
        bounds: dict[str, int | None] = {
            "exit_hook": self.exit_hook_tries, "stage_out": self.stage_out_tries, "record": self.record_tries,
            "report": None, "mail": self.mail_tries, "remove": self.remove_tries,
        }
        return bounds[step]


def retry_delay(tries: int, first_s: float, max_s: float) -> float:
    """The back-off after `tries` counted failures of a step: `first_s`, doubling with each
    further failure, never more than `max_s` (and never overflowing, however many tries)."""
    return min(first_s * 2.0 ** min(max(tries - 1, 0), 64), max_s)


@dataclass(frozen=True, slots=True)
class NextMove:
    """What the pipeline does after a failed try of a step."""

    tries: int  # the step's counted failed tries, this one included
    give_up: bool  # True: the step is given up and the pipeline goes on
    delay_s: float  # otherwise: when to try again


def next_move(settings: CleanupSettings, step: str, tries_before: int, counted: bool) -> NextMove:
    """After a failed try of `step` that had failed `tries_before` counted times already.
    `counted` is False for a try that could not reach the controller: it costs the step none of
    its tries, and the pipeline waits for the reconnection (the timer is only a safety net)."""
    tries = tries_before + 1 if counted else tries_before
    bound = settings.tries(step)
    if counted and bound is not None and tries >= bound:
        return NextMove(tries, True, 0.0)
    if not counted:
        return NextMove(tries, False, settings.retry_max_s)
    return NextMove(tries, False, retry_delay(tries, settings.retry_first_s, settings.retry_max_s))


class StepFailed(Exception):
    """A step did not complete; the message is what `drover show` displays."""


class Unreachable(StepFailed):
    """The controller is not connected: the step waits for it, and the try is not counted
    against the step's bound (a controller that is down must not cost a job its files)."""


class Cleanup:
    """The pipelines of the attempts that ended on this node."""

    def __init__(self, root: str, settings: CleanupSettings, send: Callable[[Any], None],
                 faults: Faults = NO_FAULTS, connected: Callable[[], bool] = lambda: True,
                 chunks: Callable[[], bool] = lambda: True, in_memory: bool | None = None,
                 spares: SpareReserves | None = None) -> None:
        self.root = root
        self.spares = spares  # where a removed spool's reserve goes, for the node's next attempt
        # A spool in memory (tmpfs, its default): the final record and the removal of a spool of
        # records alone are written and removed on the event loop, where a hand-off to a thread
        # and back would cost more than the work (spool/file_system.py); on a disk, on threads.
        self.in_memory = file_system.in_memory(root) if in_memory is None else in_memory
        self.settings = settings
        self.send = send
        self.connected = connected  # whether the controller's channel is up
        self.chunks = chunks  # whether it takes staged-out files in chunks (an earlier version: whole)
        self.faults = faults  # for fault-injection tests only (execd/faults.py)
        self.pending: dict[str, layout.SpoolDir] = {}
        # Each pending pipeline's attempt records, each read from the spool at most once.
        self._ended: dict[str, attempt_records.Ended] = {}
        # Attempts whose spool this node made in this process (`made_here`): no earlier execd
        # wrote a cleanup record or a mark that the node left in it; and the marks that the node
        # left made before their cleanup began (`node_left`).
        self._made_here: set[str] = set()
        self._configs: dict[str, AttemptConfig] = {}  # the configs it wrote, of those
        self._left: dict[str, str] = {}
        # Each pending pipeline's progress, as recorded in its spool and kept here too: the
        # spool may be gone half way through removing it, or its disk unwritable.
        self._progress: dict[str, CleanupProgress] = {}
        # Steps given up that the controller has not acknowledged yet, by attempt and step: sent
        # again on reconnecting (those after the report are said nowhere else).
        self._untold: dict[tuple[str, str], Progress] = {}
        self._running: set[str] = set()
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._acks: dict[tuple[str, str], asyncio.Future[None]] = {}
        # What each of those waits for the acknowledgement of: sent again on reconnecting, since
        # what is sent while the channel is down is dropped.
        self._awaiting: dict[tuple[str, str], Any] = {}
        # Staged-out files: the chunk awaiting its answer, by attempt and record; and how much
        # of each file the controller holds, for the next try to go on from there.
        self._chunks: dict[tuple[str, str], asyncio.Future[ChunkKept]] = {}
        self._sent: dict[str, dict[str, int]] = {}
        self._loop = asyncio.get_running_loop()
        # Their own, not the loop's default executor: whatever else of the node's uses that one
        # (name lookups, anything that may wait on something slow) never delays a job's end.
        self._threads = ThreadPoolExecutor(CLEANUP_THREADS, thread_name_prefix="drover-cleanup")

    def made_here(self, name: str, config: AttemptConfig | None = None) -> None:
        """This node made the attempt's spool, in this process: its cleanup reads no record back
        that only an earlier execd could have written there (its progress, its mark that the
        node left), and that this one holds in memory; nor the `config` it wrote there, if given
        (the shepherd only reads it)."""
        self._made_here.add(name)
        if config is not None:
            self._configs[name] = config

    def config_rewritten(self, name: str, config: AttemptConfig | None) -> None:
        """The node wrote the attempt's config again (started in place, on other CPUs); None:
        what it wrote is not a config, and the cleanup reads the record back, as an earlier
        process's (which then says it is unreadable)."""
        if name not in self._configs:
            return
        if config is None:
            del self._configs[name]
        else:
            self._configs[name] = config

    def node_left(self, name: str, why: str) -> None:
        """The node marked the attempt as ended by its leaving (attempt_records.NODE_LEFT)."""
        ended = self._ended.get(name)
        if ended is not None:
            ended.leave(why)
        else:
            self._left[name] = why

    def begin(self, spool: layout.SpoolDir) -> None:
        """The shepherd is gone and its records are final: tell the controller, start cleaning."""
        if spool.name in self.pending:
            return
        made_here = spool.name in self._made_here
        self._made_here.discard(spool.name)
        config = self._configs.pop(spool.name, None)
        left = self._left.pop(spool.name, None)
        if made_here:
            progress: CleanupProgress = {"done": [], "step": None, "tries": 0, "error": None}
        else:  # an earlier execd's: it may have begun, and marked it
            progress = attempt_records.cleanup_progress(spool)
            left = left or attempt_records.node_left(spool)
        if all(step in progress["done"] for step in STEPS):
            # Its removal was given up: the spool stays where it is for an operator.
            log.warning("attempt %s: its spool %s is left for an operator (it could not be removed)",
                        spool.name, spool.path)
            return
        ended = self._ended[spool.name] = attempt_records.Ended(spool, left, config)
        self.pending[spool.name] = spool
        self._progress[spool.name] = progress
        self.send(_exiting(ended))
        self.trigger(spool.name)

    def trigger(self, name: str) -> None:
        timer = self._timers.pop(name, None)
        if timer is not None:
            timer.cancel()
        if name in self.pending and name not in self._running:
            self._running.add(name)
            self._loop.create_task(self._run(name))

    def trigger_all(self) -> None:
        """A reconnection: every pipeline waiting for the controller tries again now. One
        backing off from a failure of the node's own (an exit hook, its disk, the mail relay)
        keeps its timer, so a channel that comes and goes does not use its tries up."""
        for told in list(self._untold.values()):
            self.send(told)
        for (name, kind), message in list(self._awaiting.items()):
            if kind == "report" and name in self.pending:  # read again: a node that leaves marks it
                message = self._awaiting[name, kind] = _exited(self._ended[name], self._progress[name])
            self.send(message)
        for name in list(self.pending):
            progress = self._progress.get(name)
            if progress is None or "report" not in progress["done"]:
                self.send(_exiting(self._ended[name]))
            if progress is None or progress["step"] is None or progress["step"] in CONTROLLER_STEPS:
                self.trigger(name)

    def acknowledged(self, names: list[str], kind: str = "report") -> None:
        for name in names:
            if kind.startswith("given_up:"):
                self._untold.pop((name, kind.removeprefix("given_up:")), None)
                continue
            waiter = self._acks.get((name, kind))
            if waiter is not None and not waiter.done():
                waiter.set_result(None)

    def known(self) -> list[str]:
        return list(self.pending)

    def reported(self, name: str) -> bool:
        """Whether the controller acknowledged the attempt's final report."""
        progress = self._progress.get(name)
        return progress is not None and "report" in progress["done"]

    def remove_leftovers(self) -> None:
        """At start: spools an earlier execd was removing when it stopped, or gave up on, are
        tried once more, in the background."""
        try:
            leftovers = [entry.path for entry in os.scandir(self.root)
                         if entry.name.startswith(REMOVING) and entry.is_dir(follow_symlinks=False)]
        except OSError:
            return
        for path in leftovers:
            self._loop.create_task(self._remove_leftover(path))

    async def _remove_leftover(self, path: str) -> None:
        try:
            await self._loop.run_in_executor(self._threads, _remove_tree, path)
        except (StepFailed, OSError) as failure:
            log.warning("%s; it is left for an operator", failure)
        else:
            log.info("removed %s, left by an earlier execd", path)

    # -- one pipeline -------------------------------------------------------------------------

    async def _run(self, name: str) -> None:
        spool = self.pending[name]
        progress = self._progress.get(name)
        if progress is None:
            progress = self._progress[name] = attempt_records.cleanup_progress(spool)
        try:
            for step in STEPS:
                if step in progress["done"]:
                    continue
                await self.faults.before_cleanup_step(spool, step)
                try:
                    did_something = await _STEP_FUNCTIONS[step](self, spool, progress)
                except Exception as failure:
                    if not self._failed(spool, progress, step, failure):
                        return  # stopped here; a timer (or the controller's reconnection) resumes it
                    did_something = True  # given up: said, recorded, and the pipeline goes on
                retried = progress["tries"] > 0
                progress["done"].append(step)
                progress["step"], progress["tries"], progress["error"] = None, 0, None
                if (did_something or retried) and self._recorded_alone(spool, step, progress):
                    _remember(spool, progress)
            del self.pending[name]
            del self._progress[name]
            del self._ended[name]
            self._sent.pop(name, None)
        except Exception:
            log.exception("attempt %s: cleanup failed unexpectedly; will try again", name)
            self._timers[name] = self._loop.call_later(self.settings.retry_max_s, self.trigger, name)
        finally:
            self._running.discard(name)

    def _failed(self, spool: layout.SpoolDir, progress: CleanupProgress, step: str, failure: Exception) -> bool:
        """A try of `step` failed: stop the pipeline and set its retry, or, after the step's
        bounded tries, give the step up. True when it was given up."""
        if isinstance(failure, StepFailed):
            reason = str(failure)
        elif isinstance(failure, OSError):  # the node's disk (full, failing)
            reason = _os_error(failure)
        else:  # a bug: said in full in the log, and bounded like any failure
            log.error("attempt %s: cleanup step %s failed unexpectedly", spool.name, step, exc_info=failure)
            reason = f"unexpected error: {failure!r}"
        move = next_move(self.settings, step, progress["tries"], counted=not isinstance(failure, Unreachable))
        if move.give_up:
            entry: GivenUpStep = {"step": step, "tries": move.tries, "error": reason}
            progress["given_up"] = [*(e for e in progress.get("given_up", []) if e["step"] != step), entry]
            left = (f"; the spool is left at {self._removing(spool)} for an operator"
                    if step == "remove" and os.path.isdir(self._removing(spool)) else "")
            log.warning("attempt %s: giving up cleanup step %s after %d tries: %s%s",
                        spool.name, step, move.tries, reason, left)
            told = Progress(spool.name, [*progress["done"], step], step, move.tries, reason, given_up=True)
            self._untold[spool.name, step] = told  # until the controller acknowledges it
            self.send(told)
            return True
        progress["step"], progress["tries"], progress["error"] = step, move.tries, reason
        if os.path.isdir(spool.path):
            _remember(spool, progress)
        self.send(Progress(spool.name, list(progress["done"]), step, move.tries, reason))
        log.info("attempt %s: cleanup step %s failed (try %d), again in %.1fs: %s",
                 spool.name, step, move.tries, move.delay_s, reason)
        self._timers[spool.name] = self._loop.call_later(move.delay_s, self.trigger, spool.name)
        return False

    async def _in_thread(self, work: Callable[[], T], timeout_s: float, what: str) -> T:
        """`work` on one of the pipelines' threads, so a disk or a relay that hangs holds neither
        the event loop nor, after `timeout_s`, the pipeline (the thread is left to finish on its own)."""
        try:
            return await asyncio.wait_for(self._loop.run_in_executor(self._threads, work), timeout_s)
        except TimeoutError:
            raise StepFailed(f"{what} did not finish in {timeout_s:.0f}s") from None

    def _recorded_alone(self, spool: layout.SpoolDir, step: str, progress: CleanupProgress) -> bool:
        """Whether the completion of `step`, which did something, is written to the `cleanup`
        record now. Steps that did nothing are safe to run again: only real work is recorded, and
        after `remove` the spool is gone (unless its removal was given up). Two completions are
        not written on their own: the record step's is in the final record, written with it in
        the same durable write (`_record`); the report's, when nothing that may wait comes
        between it and the spool's removal (no mail, a spool not kept), so that a node killed in
        that instant only repeats the report, which the controller takes once whatever comes
        again (controller/handlers/node_reports.py)."""
        if step == "record":
            alone = any(entry["step"] == "record" for entry in progress.get("given_up", []))
        elif step == "report":
            config = self._ended[spool.name].config()
            alone = (config is None or bool(config["job"]["mail_user"]) or self.settings.keep_spool
                     or config["job"]["keep_spool"])
        else:
            alone = True
        return alone and os.path.isdir(spool.path)  # looked at last: most often the answer is no before

    def _removing(self, spool: layout.SpoolDir) -> str:
        return os.path.join(self.root, REMOVING + spool.name)

    # -- the steps ----------------------------------------------------------------------------

    def _final(self, spool: layout.SpoolDir) -> FinalRecord:
        """The attempt's final record, built once for the exit hook, the record and the mail
        (again only when the node marks the attempt as left meanwhile)."""
        ended = self._ended[spool.name]
        if ended.final is None:
            ended.final = _final_record(ended)
        return ended.final

    async def _exit_hook(self, spool: layout.SpoolDir, progress: CleanupProgress) -> bool:
        """Step 1: the site's exit hook, with the final record on stdin."""
        if not self.settings.exit_hook:
            return False
        record = self._final(spool)
        try:
            process = await asyncio.create_subprocess_exec(
                *with_limit_started_with([self.settings.exit_hook]), stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
                env={"PATH": SITE_PATH, "LANG": "C"}, cwd="/",  # the site's script: nothing of the job's
            )
        except OSError as error:
            raise StepFailed(f"cannot run the exit hook {self.settings.exit_hook}: {error.strerror}") from None
        try:
            stderr = await asyncio.wait_for(_hook_ran(process, _dumps(record)), self.settings.exit_hook_timeout_s)
        except TimeoutError:
            process.kill()
            await process.wait()
            raise StepFailed(f"the exit hook did not finish in {self.settings.exit_hook_timeout_s:.0f}s") from None
        if process.returncode != 0:
            tail = stderr.decode(errors="replace").strip().splitlines()[-1:] or [""]
            raise StepFailed(f"the exit hook exited with status {process.returncode}: {tail[0]}")
        return True

    async def _stage_out(self, spool: layout.SpoolDir, progress: CleanupProgress) -> bool:
        """Step 2: the declared output files, and the job's output when it ran in a scratch
        directory, go to the controller, which keeps them for the submitter. The shepherd
        collected them into the spool as the job's owner (shepherd/main.py `_stage_out`); here
        they are only read from the spool, which is the node's own. Each file goes in chunks,
        one at a time, each answered before the next (`_send_file`), so no frame of the
        channel is big whatever the files are, and a retry goes on where the last try stopped;
        then the StagedOut names them all."""
        config = self._ended[spool.name].config()
        if config is not None and not config["job"]["stage_out"] and not config.get("scratch"):
            return False  # the shepherd collects nothing for it (shepherd/transfer.py)
        collected = attempt_records.staged_out(spool)
        if not collected:
            return False
        sent: list[SentFile] = []
        refused = [f"{entry['name']}: {entry['reason']}" for entry in collected["refused"]]
        limit = int(config.get("stage_out_limit_bytes", 0)) if config else 0
        skipped = [f"{name}: {_over_node_limit(limit)}" for name in collected["skipped"]]
        if not self.chunks():  # a controller of an earlier version: the files whole, in the report
            whole = [File(entry["name"], _read(os.path.join(spool.record(layout.STAGED_OUT_DIR), entry["record"])),
                          entry["mode"]) for entry in collected["files"]]
            await self._acknowledged(spool.name, "stage_out", StagedOut(spool.name, whole, skipped, refused))
            return True
        for entry in collected["files"]:
            path = os.path.join(spool.record(layout.STAGED_OUT_DIR), entry["record"])
            size, digest = await self._in_thread(functools.partial(_size_and_digest, path), self.settings.record_timeout_s,
                                            f"reading {path}")
            refusal = await self._send_file(spool.name, entry["record"], path, size)
            if refusal is not None:
                refused.append(f"{entry['name']}: {refusal}")
                continue
            sent.append(SentFile(entry["name"], entry["record"], size, digest, entry["mode"]))
        await self._acknowledged(spool.name, "stage_out",
                                 StagedOut(spool.name, [], skipped, refused, sent=sent))
        self._sent.pop(spool.name, None)
        return True

    async def _send_file(self, name: str, record: str, path: str, size: int) -> str | None:
        """Send one file of attempt `name` in chunks from where the controller says it is; the
        controller's refusal of it, or None once it holds all of it."""
        offsets = self._sent.setdefault(name, {})
        offset = min(offsets.get(record, 0), size)
        with open(path, "rb") as file:
            while True:
                data = os.pread(file.fileno(), min(STAGE_OUT_CHUNK_BYTES, size - offset), offset)
                answer = await self._chunk_answered(StagedChunk(name, record, offset, data, size))
                if answer.refused is not None:
                    return answer.refused
                if answer.error is not None:
                    raise StepFailed(answer.error)
                if answer.have >= size:
                    offsets[record] = size
                    return None
                if answer.have == offset and not data:
                    raise StepFailed(f"{path} is shorter than it was ({offset} of {size} bytes)")
                offset = offsets[record] = answer.have

    async def _chunk_answered(self, chunk: StagedChunk) -> ChunkKept:
        """Send a chunk and wait for the controller's answer to it."""
        key = (chunk.attempt, chunk.record)
        waiter: asyncio.Future[ChunkKept] = self._loop.create_future()
        self._chunks[key] = waiter
        self.send(chunk)
        try:
            return await asyncio.wait_for(waiter, self.settings.report_timeout_s)
        except TimeoutError:
            if not self.connected():
                raise Unreachable("the controller is not connected; waiting for it") from None
            raise StepFailed("the controller has not answered a chunk of the files") from None
        finally:
            if self._chunks.get(key) is waiter:
                del self._chunks[key]

    def chunk_kept(self, answer: ChunkKept) -> None:
        """The controller's answer to a chunk of a staged-out file."""
        waiter = self._chunks.get((answer.attempt, answer.record))
        if waiter is not None and not waiter.done():
            waiter.set_result(answer)

    async def _acknowledged(self, name: str, kind: str, message: Any) -> None:
        """Send `message` and wait for the controller's acknowledgement of it."""
        waiter = self._acks[name, kind] = self._loop.create_future()
        self._awaiting[name, kind] = message
        self.send(message)
        try:
            await asyncio.wait_for(waiter, self.settings.report_timeout_s)
        except TimeoutError:
            if not self.connected():
                raise Unreachable("the controller is not connected; waiting for it") from None
            raise StepFailed("the controller has not acknowledged") from None
        finally:
            self._acks.pop((name, kind), None)
            self._awaiting.pop((name, kind), None)

    async def _record(self, spool: layout.SpoolDir, progress: CleanupProgress) -> bool:
        """Step 3: the final record, durably (it must outlive the execd and, on a disk, the
        machine: a spool in memory outlives the execd but no machine, so it is not flushed), with
        the cleanup's progress as it is once this step is done: one write for both, read back by
        attempt_records.cleanup_progress."""
        done: CleanupProgress = {**progress, "done": [*progress["done"], "record"], "step": None, "tries": 0,
                                 "error": None}
        record: FinalRecord = {**self._final(spool), "cleanup": done}

        def write() -> None:
            write_json(spool.record(FINAL), record, durable=not self.in_memory, encode=encoded)

        if self.in_memory:
            write()  # a few microseconds of the kernel's: no device to wait for
        else:
            await self._in_thread(write, self.settings.record_timeout_s, "writing the final record")
        return True

    async def _mail(self, spool: layout.SpoolDir, progress: CleanupProgress) -> bool:
        """Step 5: mail the owner, if asked."""
        config = self._ended[spool.name].config()
        if config is None or not config["job"]["mail_user"]:
            return False
        record = self._final(spool)
        exit_status, usage, event = record["exit_status"], record["usage"], record["outcome"]
        if not mail.wants(config["job"]["mail_type"], event, config["is_array"]):
            return False
        subject, body = mail.summary(
            config["job_id"], config["task_index"] if config["is_array"] else None, config["name"],
            {"END": "ended", "FAIL": "failed", "REQUEUE": "was requeued"}.get(event, event.lower()),
            {"exit code": exit_status["exit_code"], "signal": exit_status["signal"],
             "failure": exit_status["failure"], "node": config["node"],
             "attempt": config["attempt_number"], "wall time": _seconds(usage, "wall_s"),
             "user CPU": _seconds(usage, "user_cpu_s"), "max RSS KiB": (usage["max_rss_kib"] or "not known") if usage else None,
             "output": config.get("done_output") or config["stdout"]},
        )
        if config["job"]["mail_output"]:  # jobd's mailoutput: the shepherd copied it as the owner
            body += _mailed_output(spool)
        host, port, to = self.settings.smtp_host, self.settings.smtp_port, config["job"]["mail_user"]
        relay = f"{host}:{port}"
        try:
            await self._in_thread(lambda: mail.send(host, port, to, subject, body),
                             self.settings.mail_timeout_s, f"sending mail through {relay}")
        except StepFailed:
            raise
        except Exception as error:
            raise StepFailed(f"cannot send mail through {relay}: {error}") from None
        return True

    async def _report(self, spool: layout.SpoolDir, progress: CleanupProgress) -> bool:
        """Step 4: tell the controller; done once it acknowledges. The exit and usage records
        are the shepherd's, so the report goes on when the final record was given up."""
        await self._acknowledged(spool.name, "report", _exited(self._ended[spool.name], progress))
        return True

    async def _remove(self, spool: layout.SpoolDir, progress: CleanupProgress) -> bool:
        """Step 6: remove the spool, unless the job or the config keeps it (jobd's zapthisjob).
        It is first renamed out of the attempts' names, in one step, so that whatever cannot be
        deleted never looks like an attempt to a restarted execd (which would resume or re-run
        it); a retry finds it under that name."""
        removing = self._removing(spool)
        entries = _entries(spool.path)  # None: moved aside already, by an earlier try
        if entries is not None:
            config = self._ended[spool.name].config()
            try:
                if config is not None:  # where its output is, for `drover logs` once the spool is gone
                    output_index.remember(self.root, spool.name, config)
                if self.settings.keep_spool or (config and config["job"]["keep_spool"]):
                    kept = os.path.join(self.root, KEPT)
                    os.makedirs(kept, mode=0o700, exist_ok=True)  # root's (or the node user's) only
                    os.rename(spool.path, os.path.join(kept, spool.name))
                    return True
                if any(directory and layout.PETASK_ID.fullmatch(name) for name, directory in entries):
                    # Tasks of the job (GE's tight integration) may still run on this node and
                    # write their records beneath: moving the directory would pull it from under
                    # them. Their handler removes it after the last of them (pe_tasks.py).
                    await self._in_thread(lambda: _remove_all_but_tasks(spool.path), self.settings.remove_timeout_s,
                                     f"removing {spool.path}")
                    return True
                if (self.spares is not None and (layout.RESERVE, False) in entries
                        and self.spares.keep(spool.path, spool.name)):
                    entries.remove((layout.RESERVE, False))
                os.rename(spool.path, removing)
            except OSError as error:
                raise StepFailed(f"cannot move the spool {spool.path} aside: {_os_error(error)}") from None
            # Records alone (no working directory, no staged-out copies): a few unlinks, here.
            if (self.in_memory and len(entries) <= FLAT_MAX and not any(directory for _, directory in entries)
                    and _removed_flat(removing, [name for name, _ in entries])):
                return True
        await self._in_thread(lambda: _remove_tree(removing), self.settings.remove_timeout_s, f"removing {removing}")
        return True


_STEP_FUNCTIONS = {
    "exit_hook": Cleanup._exit_hook,
    "stage_out": Cleanup._stage_out,
    "record": Cleanup._record,
    "report": Cleanup._report,
    "mail": Cleanup._mail,
    "remove": Cleanup._remove,
}
assert tuple(_STEP_FUNCTIONS) == STEPS


async def _hook_ran(process: asyncio.subprocess.Process, record: bytes) -> bytes:
    """Give the exit hook its record on stdin while reading its stderr; its stderr once it
    exited. A hook that exits without reading its record is judged by its exit status alone
    (the pipe it closed fails as BrokenPipeError, or, under uvloop, RuntimeError)."""
    assert process.stdin is not None and process.stderr is not None
    stdin = process.stdin

    async def feed() -> None:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError, RuntimeError):
            stdin.write(record)
            await stdin.drain()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError, RuntimeError):
            stdin.close()

    _, stderr = await asyncio.gather(feed(), process.stderr.read())
    await process.wait()
    return stderr


def _remember(spool: layout.SpoolDir, progress: CleanupProgress) -> None:
    """Record the progress, if the disk lets us: the pipeline keeps it in memory too, and a
    restarted execd that finds an older record only repeats a step (which each step allows)."""
    try:
        write_json(spool.record(layout.CLEANUP), progress)
    except OSError as error:
        log.warning("attempt %s: cannot record the cleanup's progress: %s", spool.name, error.strerror)


def _remove_all_but_tasks(path: str) -> None:
    """Remove an attempt's records but its PE tasks' subdirectories, and mark the directory as
    kept for them alone; where none is left by then, the whole directory."""
    write_atomically(os.path.join(path, layout.MADE_FOR_TASKS), b"")
    tasks = set(layout.petask_names(path))
    for entry in os.scandir(path):
        if entry.name in tasks or entry.name == layout.MADE_FOR_TASKS:
            continue
        if entry.is_dir(follow_symlinks=False):
            _remove_tree(entry.path)
        else:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(entry.path)
    if not layout.petask_names(path):  # the tasks ended, and their handler took theirs, meanwhile
        _remove_tree(path)


def _entries(path: str) -> list[tuple[str, bool]] | None:
    """The names in a spool directory, each with whether it is a directory (not following a
    link); None where the directory is not there."""
    try:
        with os.scandir(path) as listing:
            return [(entry.name, entry.is_dir(follow_symlinks=False)) for entry in listing]
    except (FileNotFoundError, NotADirectoryError):
        return None


def _removed_flat(path: str, names: list[str]) -> bool:
    """Remove a directory that held only `names`, files all; False where anything is left (the
    caller then removes what is, as any spool, and says what cannot be). Each is unlinked by its
    name in the directory opened once (not followed, were it a link), as rmtree does.

    Only where each is the node daemon's own and all hold at most FLAT_MAX_BYTES: a file of the
    job's owner (its `job_script`, which the owner may make writable and grow to any size while
    it exists) could make the unlink, on the event loop, free as many pages as the owner chose;
    such a spool is left whole to the caller's thread, which removes it as any other."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            own, blocks = os.geteuid(), 0
            for name in names:
                try:
                    info = os.stat(name, dir_fd=fd, follow_symlinks=False)
                except FileNotFoundError:
                    continue
                blocks += info.st_blocks
                if info.st_uid != own or blocks * 512 > FLAT_MAX_BYTES:
                    return False
            for name in names:
                try:
                    os.unlink(name, dir_fd=fd)
                except FileNotFoundError:
                    pass
        finally:
            os.close(fd)
        os.rmdir(path)
    except OSError:
        return False
    return True


def _remove_tree(path: str) -> None:
    """Delete `path` and everything in it, going on past what cannot be deleted; then raise
    StepFailed naming the first thing left, if anything is."""
    left: list[tuple[str, OSError]] = []

    def note(_function: Any, failed: str, info: Any) -> None:
        error = info[1]
        if isinstance(error, FileNotFoundError):  # gone already (an earlier try still running)
            return
        if left and getattr(error, "errno", None) == errno.ENOTEMPTY:  # a directory holding what is named
            return
        left.append((failed, error))

    shutil.rmtree(path, onerror=note)
    if left:
        failed, error = left[0]
        more = f" (and {len(left) - 1} more)" if len(left) > 1 else ""
        raise StepFailed(f"cannot remove the spool {path}: {failed}: {error.strerror or error}{more}")


def _over_node_limit(limit_bytes: int) -> str:
    """Why a file the shepherd did not copy was not sent: the node's own limit."""
    mib = 1024 * 1024
    amount = f"{limit_bytes // mib} MiB" if limit_bytes and limit_bytes % mib == 0 else f"{limit_bytes} bytes"
    return (f"over the node's limit of {amount} staged out per attempt (stage_out_limit_bytes in [execd] "
            "of drover.toml); not sent")


def _read(path: str) -> bytes:
    with open(path, "rb") as file:
        return file.read()


def _size_and_digest(path: str) -> tuple[int, str]:
    with open(path, "rb") as file:
        digest = hashlib.file_digest(file, "sha256")
        return file.tell(), digest.hexdigest()


def _os_error(error: OSError) -> str:
    return f"{error.filename}: {error.strerror}" if error.filename and error.strerror else str(error)


def _exiting(ended: attempt_records.Ended) -> Exiting:
    usage = ended.usage()
    return Exiting(ended.spool.name, ended.exit_status(), usage, usage["started_at"] if usage else None)


def _exited(ended: attempt_records.Ended, progress: CleanupProgress) -> Exited:
    usage = ended.usage()
    return Exited(ended.spool.name, ended.exit_status(), usage, usage["started_at"] if usage else None,
                  done=[*progress["done"], "report"], given_up=list(progress.get("given_up", [])))


def _final_record(ended: attempt_records.Ended) -> FinalRecord:
    exit_status, usage, config = ended.exit_status(), ended.usage(), ended.config()
    # Ended as its node left: decided as a node's loss (node_left), not as a cancel.
    terminated = exit_status["terminated"] and not exit_status.get("node_left")
    # The same facts the controller classifies with: a stop asked for by a requeue (or a hold: it
    # goes back to the queue, held) is a requeue, by a cancel (or of an attempt the controller
    # gave up on) a cancel.
    why = ended.stop_why() if terminated else "cancel"
    facts = exit_facts(exit_status, cancel_requested=terminated and why not in ("requeue", "hold"),
                       requeue_requested=terminated and why in ("requeue", "hold"),
                       epilog_sets_exit=bool(config and config["job"]["epilog_sets_exit"]),
                       rerunnable=config["job"]["rerunnable"] if config else True,
                       attempt_number=config["attempt_number"] if config else 1)
    semantics = ExitSemantics(forbid_reschedule=bool(config and config.get("forbid_reschedule")),
                              forbid_apperror=bool(config and config.get("forbid_apperror")))
    trigger = classify_exit(facts, semantics)
    outcome = "REQUEUE" if trigger is Trigger.REQUEUE else ("END" if trigger is Trigger.SUCCEED else "FAIL")
    return {"attempt": ended.spool.name, "config": config, "exit_status": exit_status, "usage": usage,
            "outcome": outcome, "recorded_at": time.time()}


def _mailed_output(spool: layout.SpoolDir) -> str:
    """The job's output for its end mail: what the shepherd read of it, as its owner, into the
    spool (shepherd/outputs.py); the node reads only its own spool."""
    try:
        with open(spool.record(layout.MAIL_OUTPUT), "rb") as file:
            text = file.read().decode(errors="replace")
    except FileNotFoundError:
        return "\nThe job's output could not be read (its trace says why).\n"
    return "\nThe job's output:\n\n" + (text if text else "(empty)\n")


def _dumps(value: Any) -> bytes:
    import json

    return json.dumps(value, separators=(",", ":")).encode()


def _seconds(usage: Usage | None, key: Literal["user_cpu_s", "sys_cpu_s", "wall_s"]) -> str | None:
    return f"{usage[key]:.2f}s" if usage else None
