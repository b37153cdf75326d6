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

Each step records its completion in the attempt's `cleanup` record. A failed step stops the
pipeline; the next trigger (a retry timer with back-off, a reconnection to the controller, an
execd start) runs it again from the top, and every step already done is skipped — "everything
remembers how far it got", as the starter does.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from drover import mail
from drover.core.exit_status import classify_exit, exit_facts
from drover.core.job_state import Trigger
from drover.execd import attempt_records
from drover.execd.faults import NO_FAULTS, Faults
from drover.protocol.node_channel import Exited, Exiting, File, Progress, StagedOut
from drover.records import CleanupProgress, FinalRecord, Usage
from drover.shepherd.environment import SITE_PATH
from drover.spool import layout
from drover.spool.atomic import read_json, write_json

log = logging.getLogger("drover.execd")

STEPS = ("exit_hook", "stage_out", "record", "report", "mail", "remove")
FINAL = "final"
KEPT = "kept"  # under the spool root: attempts whose spool the job or the config keeps


@dataclass(frozen=True, slots=True)
class CleanupSettings:
    exit_hook: str | None = None  # a script of the site's; gets the final record on stdin
    exit_hook_timeout_s: float = 60.0
    keep_spool: bool = False  # keep every attempt's spool (under <spool>/kept/)
    smtp_host: str = "localhost"
    smtp_port: int = 25
    mail_tries: int = 5  # after this many failed tries, the mail is given up and the report goes on
    exit_hook_tries: int = 5  # the same for the site's exit hook
    stage_out_tries: int = 5  # the same for output files the controller, connected, does not take
    report_timeout_s: float = 10.0
    retry_first_s: float = 0.5
    retry_max_s: float = 30.0


class StepFailed(Exception):
    """A step did not complete; the message is what `drover show` displays."""


class Unreachable(StepFailed):
    """The controller is not connected: the step waits for it, and the try is not counted
    against the step's bound (a controller that is down must not cost a job its files)."""


class Cleanup:
    """The pipelines of the attempts that ended on this node."""

    def __init__(self, root: str, settings: CleanupSettings, send: Callable[[Any], None],
                 faults: Faults = NO_FAULTS, connected: Callable[[], bool] = lambda: True) -> None:
        self.root = root
        self.settings = settings
        self.send = send
        self.connected = connected  # whether the controller's channel is up
        self.faults = faults  # for fault-injection tests only (execd/faults.py)
        self.pending: dict[str, layout.SpoolDir] = {}
        self._running: set[str] = set()
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._acks: dict[tuple[str, str], asyncio.Future[None]] = {}
        self._loop = asyncio.get_running_loop()

    def begin(self, spool: layout.SpoolDir) -> None:
        """The shepherd is gone and its records are final: tell the controller, start cleaning."""
        if spool.name in self.pending:
            return
        self.pending[spool.name] = spool
        self.send(_exiting(spool))
        self.trigger(spool.name)

    def trigger(self, name: str) -> None:
        timer = self._timers.pop(name, None)
        if timer is not None:
            timer.cancel()
        if name in self.pending and name not in self._running:
            self._running.add(name)
            self._loop.create_task(self._run(name))

    def trigger_all(self) -> None:
        """A reconnection: every stopped pipeline tries again now."""
        for name in list(self.pending):
            self.send(_exiting(self.pending[name]))
            self.trigger(name)

    def acknowledged(self, names: list[str], kind: str = "report") -> None:
        for name in names:
            waiter = self._acks.get((name, kind))
            if waiter is not None and not waiter.done():
                waiter.set_result(None)

    def known(self) -> list[str]:
        return list(self.pending)

    # -- one pipeline -------------------------------------------------------------------------

    async def _run(self, name: str) -> None:
        spool = self.pending[name]
        progress = attempt_records.cleanup_progress(spool)
        try:
            for step in STEPS:
                if step in progress["done"]:
                    continue
                await self.faults.before_cleanup_step(spool, step)
                try:
                    did_something = await _STEP_FUNCTIONS[step](self, spool, progress)
                except (StepFailed, OSError) as failure:  # OSError: the node's disk (full, failing)
                    counted = not isinstance(failure, Unreachable)
                    progress["step"], progress["error"] = step, str(failure)
                    if counted:
                        progress["tries"] += 1
                    _remember(spool, progress)
                    self.send(Progress(name, list(progress["done"]), step, progress["tries"], str(failure)))
                    delay = min(self.settings.retry_first_s * 2 ** max(progress["tries"] - 1, 0),
                                self.settings.retry_max_s)
                    log.info("attempt %s: cleanup step %s failed (try %d), again in %.1fs: %s",
                             name, step, progress["tries"], delay, failure)
                    self._timers[name] = self._loop.call_later(delay, self.trigger, name)
                    return
                retried = progress["tries"] > 0
                progress["done"].append(step)
                progress["step"], progress["tries"], progress["error"] = None, 0, None
                if (did_something or retried) and step != "remove":
                    # Steps that did nothing are safe to run again; only real work is recorded.
                    write_json(spool.record(layout.CLEANUP), progress)
            del self.pending[name]
        except Exception:
            log.exception("attempt %s: cleanup failed unexpectedly; will try again", name)
            self._timers[name] = self._loop.call_later(self.settings.retry_max_s, self.trigger, name)
        finally:
            self._running.discard(name)

    # -- the steps ----------------------------------------------------------------------------

    async def _exit_hook(self, spool: layout.SpoolDir, progress: CleanupProgress) -> bool:
        """Step 1: the site's exit hook, with the final record on stdin."""
        if not self.settings.exit_hook:
            return False
        record = _final_record(spool)
        try:
            process = await asyncio.create_subprocess_exec(
                self.settings.exit_hook, stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
                env={"PATH": SITE_PATH, "LANG": "C"}, cwd="/",  # the site's script: nothing of the job's
            )
            _, stderr = await asyncio.wait_for(
                process.communicate(_dumps(record)), self.settings.exit_hook_timeout_s
            )
        except TimeoutError:
            process.kill()
            await process.wait()
            return self._give_up_after(spool, progress, "exit_hook", self.settings.exit_hook_tries,
                                       f"the exit hook did not finish in {self.settings.exit_hook_timeout_s:.0f}s")
        except OSError as error:
            return self._give_up_after(spool, progress, "exit_hook", self.settings.exit_hook_tries,
                                       f"cannot run the exit hook {self.settings.exit_hook}: {error.strerror}")
        if process.returncode != 0:
            tail = stderr.decode(errors="replace").strip().splitlines()[-1:] or [""]
            return self._give_up_after(spool, progress, "exit_hook", self.settings.exit_hook_tries,
                                       f"the exit hook exited with status {process.returncode}: {tail[0]}")
        return True

    def _give_up_after(self, spool: layout.SpoolDir, progress: CleanupProgress, step: str, tries: int,
                       failure: str) -> bool:
        """A step that failed: retried (StepFailed) until it has failed `tries` times; then given
        up, said in a cleanup_failed event, and the pipeline goes on, so the controller still
        learns how the job ended: a site's script or relay that keeps failing never holds a job
        in COMPLETING for ever."""
        if progress["tries"] + 1 < tries:
            raise StepFailed(failure)
        log.warning("attempt %s: giving up step %s after %d tries: %s", spool.name, step, progress["tries"] + 1, failure)
        self.send(Progress(spool.name, list(progress["done"]), step, progress["tries"] + 1, f"{step} given up: {failure}"))
        return True

    async def _stage_out(self, spool: layout.SpoolDir, progress: CleanupProgress) -> bool:
        """Step 2: the declared output files, and the job's output when it ran in a scratch
        directory, go to the controller, which keeps them for the submitter. The shepherd
        collected them into the spool as the job's owner (shepherd/main.py `_stage_out`); here
        they are only read from the spool, which is the node's own."""
        collected = attempt_records.staged_out(spool)
        if not collected:
            return False
        files = []
        for entry in collected["files"]:
            with open(os.path.join(spool.record(layout.STAGED_OUT_DIR), entry["record"]), "rb") as file:
                files.append(File(entry["name"], file.read(), entry["mode"]))
        refused = [f"{entry['name']}: {entry['reason']}" for entry in collected["refused"]]
        try:
            await self._acknowledged(spool.name, "stage_out", StagedOut(spool.name, files, collected["skipped"], refused))
        except Unreachable:
            raise
        except StepFailed as failure:
            return self._give_up_after(spool, progress, "stage_out", self.settings.stage_out_tries, str(failure))
        return True

    async def _acknowledged(self, name: str, kind: str, message: Any) -> None:
        """Send `message` and wait for the controller's acknowledgement of it."""
        waiter = self._acks[name, kind] = self._loop.create_future()
        self.send(message)
        try:
            await asyncio.wait_for(waiter, self.settings.report_timeout_s)
        except TimeoutError:
            if not self.connected():
                raise Unreachable("the controller is not connected; waiting for it") from None
            raise StepFailed("the controller has not acknowledged") from None
        finally:
            self._acks.pop((name, kind), None)

    async def _record(self, spool: layout.SpoolDir, progress: CleanupProgress) -> bool:
        """Step 3: the final record, durably (it must outlive the execd and the machine)."""
        write_json(spool.record(FINAL), _final_record(spool), durable=True)
        return True

    async def _mail(self, spool: layout.SpoolDir, progress: CleanupProgress) -> bool:
        """Step 5: mail the owner, if asked. A relay that keeps failing is tried `mail_tries` times
        (with back-off); then the mail is given up, and the failure is reported as an event."""
        record = _final_record(spool)
        config, exit_status, usage = record["config"], record["exit_status"], record["usage"]
        event = record["outcome"]
        if config is None or not config["mail_user"] or not mail.wants(config["mail_type"], event, config["is_array"]):
            return False
        subject, body = mail.summary(
            config["job_id"], config["task_index"] if config["is_array"] else None, config["name"],
            {"END": "ended", "FAIL": "failed", "REQUEUE": "was requeued"}.get(event, event.lower()),
            {"exit code": exit_status["exit_code"], "signal": exit_status["signal"],
             "failure": exit_status["failure"], "node": config["node"],
             "attempt": config["attempt_number"], "wall time": _seconds(usage, "wall_s"),
             "user CPU": _seconds(usage, "user_cpu_s"), "max RSS KiB": usage["max_rss_kib"] if usage else None,
             "output": config["stdout"]},
        )
        try:
            await asyncio.to_thread(mail.send, self.settings.smtp_host, self.settings.smtp_port,
                                    config["mail_user"], subject, body)
        except Exception as error:
            return self._give_up_after(spool, progress, "mail", self.settings.mail_tries,
                                       f"cannot send mail through {self.settings.smtp_host}:{self.settings.smtp_port}: {error}")
        return True

    async def _report(self, spool: layout.SpoolDir, progress: CleanupProgress) -> bool:
        """Step 4: tell the controller; done once it acknowledges."""
        usage = attempt_records.usage(spool)
        report = Exited(spool.name, attempt_records.exit_status(spool), usage,
                        usage["started_at"] if usage else None, done=[*progress["done"], "report"])
        await self._acknowledged(spool.name, "report", report)
        return True

    async def _remove(self, spool: layout.SpoolDir, progress: CleanupProgress) -> bool:
        """Step 6: remove the spool, unless the job or the config keeps it (jobd's zapthisjob)."""
        config = attempt_records.config(spool)
        if self.settings.keep_spool or (config and config["keep_spool"]):
            kept = os.path.join(self.root, KEPT)
            os.makedirs(kept, mode=0o700, exist_ok=True)  # root's (or the node user's) only
            os.rename(spool.path, os.path.join(kept, spool.name))
        else:
            shutil.rmtree(spool.path, ignore_errors=True)
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


def _remember(spool: layout.SpoolDir, progress: CleanupProgress) -> None:
    """Record a failed try, if the disk lets us: the count only paces the retries."""
    try:
        write_json(spool.record(layout.CLEANUP), progress)
    except OSError as error:
        log.warning("attempt %s: cannot record the cleanup's progress: %s", spool.name, error.strerror)


def _exiting(spool: layout.SpoolDir) -> Exiting:
    usage = attempt_records.usage(spool)
    return Exiting(spool.name, attempt_records.exit_status(spool), usage, usage["started_at"] if usage else None)


def _final_record(spool: layout.SpoolDir) -> FinalRecord:
    exit_status, usage = attempt_records.exit_status(spool), attempt_records.usage(spool)
    config = attempt_records.config(spool)
    # The same facts the controller classifies with: a stop asked for by a requeue is a requeue,
    # by a cancel (or of an attempt the controller gave up on) a cancel.
    why = (read_json(spool.record(layout.STOP_REQUEST)) or {}).get("why", "cancel")
    terminated = exit_status["terminated"]
    facts = exit_facts(exit_status, cancel_requested=terminated and why != "requeue",
                       requeue_requested=terminated and why == "requeue",
                       epilog_sets_exit=bool(config and config["epilog_sets_exit"]),
                       rerunnable=config["rerunnable"] if config else True,
                       attempt_number=config["attempt_number"] if config else 1)
    trigger = classify_exit(facts)
    outcome = "REQUEUE" if trigger is Trigger.REQUEUE else ("END" if trigger is Trigger.SUCCEED else "FAIL")
    return {"attempt": spool.name, "config": config, "exit_status": exit_status, "usage": usage,
            "outcome": outcome, "recorded_at": time.time()}


def _dumps(value: Any) -> bytes:
    import json

    return json.dumps(value, separators=(",", ":")).encode()


def _seconds(usage: Usage | None, key: Literal["user_cpu_s", "sys_cpu_s", "wall_s"]) -> str | None:
    return f"{usage[key]:.2f}s" if usage else None
