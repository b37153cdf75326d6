"""The grouped commit of the nodes' reports: the frames of reports that come in one loop turn,
and the planner's pass they ask for, are handled at the turn's end and committed in one
transaction through the shell (controller/shell/transaction.py), with the guarantees of a handler run on its own.
Reports the store refuses that a node says only once are kept here and tried again.

A frame of reports that nothing waits on (`may_wait`: an attempt started, its job exited, a
cleanup step done) is held for the next frame or pass that needs a commit, for at most HOLD_S:
a node reports an attempt's start, its job's exit and its final report a few milliseconds apart,
and a commit of each on its own cost more than the three of them in one."""

from __future__ import annotations

import asyncio
import gc
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from drover.controller.effects import Outcome
from drover.controller.handlers.dispatch import OrderOptions, schedule
from drover.controller.handlers.node_reports import Report, ReportHandler, on_reports
from drover.controller.shell.transaction import Scope, Shell
from drover.core.exit_status import ExitSemantics
from drover.core.ids import job_of_attempt
from drover.protocol.node_channel import Exited, Exiting, Progress, StagedOut, Started
from drover.store.faults import StoreFault

log = logging.getLogger("drover.controller")
UNSAVED_REPORTS = 10_000  # per node: reports kept while the store refuses them (the oldest go first)
# The longest a frame that nothing waits on is held for company (`may_wait`): an attempt's start,
# its job's exit and its cleanup's final report come a few milliseconds apart on a busy node.
HOLD_S = 0.025
# A node's frame of reports, and when it came (the time its reports are handled at).
Frame = tuple[str, list[Report], float]


def may_wait(report: Report) -> bool:
    """Whether nothing waits on this report's commit but the reads that show it: no
    acknowledgement (the node sends it once and goes on), no pass (it frees nothing the planner
    could give), no user (an interactive job's terminal is waited for; a suspension was asked
    for). Such a report may be held a moment for the next one that needs a commit."""
    if isinstance(report, Started):
        return report.pty_socket is None and not report.moved
    if isinstance(report, Progress):
        return not report.given_up
    return isinstance(report, Exiting)


class _Reloaded(Exception):
    """The working set was reloaded from the store while a group was handled: the group's
    outcome names what is gone, and is dropped."""


class _Redo(Exception):
    """The planner set aside a job that the reports before it changed: its group is put back
    whole, and its reports handled again, committed without the pass."""

    def __init__(self, faulted: set[int], jobs: set[int]) -> None:
        super().__init__()
        self.faulted = faulted
        self.jobs = jobs  # every job the pass changed, and those it set aside


@dataclass(slots=True)
class _Memory:
    """What a group's handlers change in memory beyond its jobs and nodes, as it was before."""

    usage: dict[str, tuple[float, float]]  # fair share: an attempt's usage is added when it ends
    lost: dict[str, str] = field(default_factory=dict)  # the attempts given up that its reports name


class ReportGroup:
    """The frames of reports waiting for this loop turn's end, and the pass asked for."""

    def __init__(self, shell: Shell, orders: OrderOptions, exits: ExitSemantics, report_handler: ReportHandler,
                 retry: Callable[[str], None]) -> None:
        """`retry`: called with a node whose kept reports are due again (its frame, empty)."""
        self.shell = shell
        self.orders = orders
        self.exits = exits
        self._report_handler = report_handler
        self._retry = retry
        self._schedule_requested = False  # a planner pass is asked for: run with this turn's group
        self._group_queued = False  # the group of this loop turn is due (`_group`)
        # Nodes' frames of reports handled at the end of this loop turn, in the order they came
        # (one node's frames in a row as one), and committed with the pass they ask for.
        self._frames: list[Frame] = []
        self._grouping = False  # handling a group now: the handlers it runs (`fail`) do not settle
        self._wake: tuple[asyncio.TimerHandle, float] | None = None  # the pass at a begin time
        self._held: asyncio.TimerHandle | None = None  # frames that may wait: handled by this at the latest
        # Reports a node sends once (started, suspended, exiting, progress) that the store could
        # not take: tried again with the node's next frame, or on a timer (`keep_unsaved`).
        self.unsaved: dict[str, list[Report]] = {}
        self.unsaved_retry: dict[str, tuple[asyncio.TimerHandle, float]] = {}

    def add(self, node: str, reports: list[Report]) -> None:
        """A node's frame of reports (after those of its the store refused): handled and
        committed with the other frames of this loop turn and the pass they ask for, in one
        transaction (`_group`); a frame nothing waits on (`may_wait`) is held for the next
        group, or HOLD_S."""
        unsaved = self.unsaved.pop(node, None)
        if unsaved:
            reports = [*unsaved, *reports]
        if not reports:
            return
        # Each frame is handled at the time it came (a frame held for company is not recorded late).
        arrived = self.shell.clock()
        if self._frames and self._frames[-1][0] == node and self._frames[-1][2] == arrived:
            self._frames[-1][1].extend(reports)
        else:
            self._frames.append((node, reports, arrived))
        if self.shell.stopping is None and all(may_wait(report) for report in reports):
            self._hold()
        else:
            self._queue_group()

    def _hold(self) -> None:
        """The frames wait for the next group that comes anyway, or for HOLD_S."""
        if not self._group_queued and self._held is None:
            self._held = asyncio.get_running_loop().call_later(HOLD_S, self._held_due)

    def _held_due(self) -> None:
        self._held = None
        self._queue_group()

    def _end_hold(self) -> None:
        """The frames held are taken by a group now: their timer has nothing left to do."""
        if self._held is not None:
            self._held.cancel()
            self._held = None

    def release_held(self) -> None:
        """Handle the frames held for company at the end of this loop turn (the controller stops)."""
        if self._frames:
            self._queue_group()

    def node_gone(self, node: str) -> None:
        """Its channel closed: its next hello rebuilds what its kept reports said."""
        self.unsaved.pop(node, None)
        retry = self.unsaved_retry.pop(node, None)
        if retry is not None:
            retry[0].cancel()

    def request_schedule(self) -> None:
        """Plan once at the end of this loop turn, however many changes asked for it; the pass
        is committed with the reports handled then (`_group`)."""
        if self.shell.stopping is not None:
            return  # no pass runs any more (`_handle_group`)
        self._schedule_requested = True
        self._queue_group()

    def _queue_group(self) -> None:
        self._end_hold()  # the group takes the frames held
        if not self._group_queued:
            self._group_queued = True
            asyncio.get_running_loop().call_soon(self._group)

    def _group(self) -> None:
        """At the end of a loop turn: the nodes' frames of reports that came in it, then the
        planner's pass if anything asked for one, committed in one transaction."""
        self._group_queued = False
        plan, self._schedule_requested = self._schedule_requested, False
        try:
            self._handle_group(plan)
        except Exception:
            log.exception("handling the nodes' reports and planning failed")
        self._wake_for_begin_time()

    def settle(self) -> None:
        """Before any other handler: the reports waiting for this turn's group are handled and
        committed now, in the order they came; the pass they ask for stays for the turn's end."""
        if self._frames and not self._grouping:
            self._end_hold()
            try:
                self._handle_group(plan=False, may_plan=False)
            except Exception:
                log.exception("handling the nodes' reports failed")

    def _handle_group(self, plan: bool, may_plan: bool = True) -> None:
        """Handle the waiting frames of reports, in the order they came, then run a planner pass
        if `plan` or the reports ask for one (and `may_plan`; else it is asked for the turn's
        end); commit everything they changed in one transaction, and only then carry out what
        they ask (acknowledgements, orders, waiters woken, events published).

        The guarantees are those of each handler run on its own (`_run`): if the store refuses
        the commit, every job and node of the group is put back as the store has it and nothing
        of it is acknowledged (the nodes send their reports again; what they say once is kept
        and tried again, `_keep_unsaved`); a commit that fails for something one job's changes
        hold is tried job by job (`_commit`), and that job failed alone. A frame whose reports
        set a job aside ends its group: what it and the frames before it changed is committed
        and the job failed before the next frames are handled and the pass runs, as when each
        frame had a transaction of its own. The pass is never committed in part (its starts may
        take what a report freed): if a group with one is refused for something its changes
        hold, nothing of it was committed and all of it is put back; its frames are handled
        again, committed without the pass (job by job if need be), and the pass runs after."""
        if self.shell.stopping is not None:
            # A controller that has begun to stop starts nothing it would not follow: its nodes'
            # reports are still recorded, but no pass sends an order (the next controller plans).
            plan = may_plan = False
        try:
            self.shell.ready()  # nothing is handled on a working set that is not whole
        except StoreFault as fault:  # the store is still away: the reports wait for it
            log.error("%s", fault)
            frames, self._frames = self._frames, []
            self._keep_unsaved_frames(frames)
            return
        self._grouping = True
        alone = False  # the frames are handled again, without the pass: a group with it was refused
        try:
            while self._frames or plan:
                group, named, frames = Outcome(), set[int](), list[Frame]()
                memory = _Memory(self.shell.state.usage.saved())
                may_pass, alone, with_pass = may_plan and not alone, False, False
                try:
                    while self._frames and not group.faults:
                        node, reports, arrived = frame = self._frames.pop(0)
                        frames.append(frame)
                        self._handle_frame(group, named, memory, node, reports, arrived)
                    if group.reschedule:
                        group.reschedule = False
                        if may_plan:
                            plan = True
                        else:
                            self.request_schedule()
                    if plan and may_pass and not self._frames and not group.faults:
                        plan = self._schedule_requested = False  # this pass answers every call for one so far
                        with_pass = self._plan(group, named)
                except StoreFault as fault:  # a read of the store failed half way
                    log.error("%s", fault)
                    self.shell.put_back(Scope(frozenset(named), per_job=True), group)
                    self._forget(memory)
                    self._keep_unsaved_frames(frames)
                    continue
                except _Reloaded:
                    log.error("the working set was reloaded from the store: nothing of the reports handled with "
                              "the failed ones is acknowledged (every node says hello again)")
                    continue
                except _Redo as redo:
                    # Put back as one: the pass's job, restored alone, could take again what the
                    # pass gave others.
                    log.error("the planner set aside job(s) %s, which reports of the same turn changed; the reports "
                              "are handled again, committed without the pass", sorted(redo.faulted))
                    self.shell.put_back(Scope(frozenset(named | redo.jobs), per_job=True), group)
                    self._forget(memory)
                    alone = True
                else:
                    alone = self._commit_group(group, frozenset(named), frames, memory, with_pass)
                if alone:
                    self._frames[:0] = frames
                    plan = True
        finally:
            self._grouping = False
            if self._frames:  # left by an exception: the next turn takes them
                self._queue_group()

    def _handle_frame(self, group: Outcome, named: set[int], memory: _Memory, node: str,
                      reports: list[Report], arrived: float) -> None:
        jobs = frozenset(job_id for report in reports if (job_id := job_of_attempt(report.attempt)) is not None)
        named |= jobs  # put back with the group if the store refuses it
        lost = self.shell.state.lost_attempts
        if lost:  # what handling the reports forgets, should they be handled again
            memory.lost.update((report.attempt, lost[report.attempt]) for report in reports if report.attempt in lost)
        try:
            outcome = on_reports(self.shell.state, node, reports, arrived, self.exits,
                                 self._report_handler, self.shell.store)
        except StoreFault:
            raise
        except Exception:
            # Not a job's fault (those are set aside one by one): the jobs the frame names are put
            # back as the store has them, with what earlier frames of the group did to them, and
            # none of it is acknowledged; the reports that need it come again.
            log.exception("handling a frame of reports of node %s failed; the jobs it names were restored "
                          "from the store", node)
            group.drop_jobs(jobs)
            if not self.shell.put_back(Scope(jobs), None):
                raise _Reloaded from None
            return
        self.shell.state.changed(outcome.changes)  # the planner builds again the work of what they touched
        self._merge(group, outcome)

    def _plan(self, group: Outcome, named: set[int]) -> bool:
        """A planner pass over the working set as the group left it, added to the group; True if
        it changed anything. `named`: the jobs the group's reports name."""
        # A pass builds the planner's view of every job with pending work, all of it alive until
        # the pass ends, then freed by reference counting. With the cyclic collector on, so many
        # objects are promoted to its oldest generation during the pass that they set off full
        # collections over the whole working set: with 30,000 jobs queued, 54 of them, 5 s of a
        # 33 s run (bench B8). Paused for the pass (it never awaits), they are not promoted.
        collecting = gc.isenabled()
        gc.disable()
        started = time.perf_counter()
        try:
            outcome = schedule(self.shell.state, self.shell.clock(), self.shell.store, self.orders)
        except Exception as error:
            # A StoreFault ends the pass before it changes anything; anything else escaped the
            # planner's job-by-job isolation. The reports before it are committed all the same.
            if isinstance(error, StoreFault):
                log.error("scheduling failed: %s", error)
            else:
                log.exception("scheduling failed")
            if not self.shell.put_back(Scope(per_job=True), None):
                raise _Reloaded from None
            return False
        finally:
            self.shell.tallies.passed(time.perf_counter() - started)
            if collecting:
                gc.enable()
        if outcome.faults:
            faulted = {fault.job_id for fault in outcome.faults}
            if faulted & (named | group.changes.job_ids()):
                raise _Redo(faulted, faulted | outcome.changes.job_ids())
        self.shell.state.changed(outcome.changes)
        self._merge(group, outcome)
        return bool(outcome.changes)

    def _merge(self, group: Outcome, outcome: Outcome) -> None:
        """Add a handler's outcome to the group; the jobs it set aside are put back as the store
        has them, with what the group did to them before."""
        set_aside = group.merge(outcome)
        if set_aside and not self.shell.put_back(Scope(frozenset(set_aside), nodes=frozenset()), None):
            raise _Reloaded

    def _commit_group(self, group: Outcome, named: frozenset[int], frames: list[Frame],
                      memory: _Memory, with_pass: bool) -> bool:
        """Commit the group, then carry out its effects and fail the jobs it set aside. True if
        it held a pass and was refused for something its changes hold: then nothing of it was
        committed, all of it is put back, and its frames are to be handled again without the
        pass."""
        whole = with_pass and bool(frames)  # all or nothing
        scope = Scope(named, per_job=not whole)
        try:
            store_fault = self.shell.commit(group, scope, touched=True)
        except StoreFault as fault:
            log.error("%s", fault)
            self.shell.put_back(scope, group)
            self._forget(memory)
            self._keep_unsaved_frames(frames)
            return False
        except Exception:
            if whole:
                log.exception("a commit of reports with the planner's pass failed; the reports are handled again, "
                              "committed without the pass")
            else:
                log.exception("a commit failed; what it changed was restored from the store")
            self.shell.put_back(scope, group)
            self._forget(memory)
            return whole
        self.shell.carry_out(group)
        for job_fault in group.faults:
            self.shell.fail(job_fault)
        if store_fault is not None:
            self._keep_unsaved_frames(frames)
            return False
        for node in {frame[0] for frame in frames}:
            retry = self.unsaved_retry.pop(node, None)
            if retry is not None:
                retry[0].cancel()
        return False

    def _forget(self, memory: _Memory) -> None:
        """Undo what the group's handlers changed in memory beyond its jobs and nodes (a group
        that is not committed): its reports are handled again, as if for the first time."""
        self.shell.state.usage.restore(memory.usage)
        self.shell.state.lost_attempts.update(memory.lost)

    def _keep_unsaved_frames(self, frames: list[Frame]) -> None:
        by_node: dict[str, list[Report]] = {}
        for node, reports, _ in frames:
            by_node.setdefault(node, []).extend(reports)
        for node, reports in by_node.items():
            self.keep_unsaved(node, reports)

    def keep_unsaved(self, node: str, reports: list[Report]) -> None:
        """Keep what the node will not send again, and try it again with back-off (0.5 s,
        doubling to 30 s) while the node stays connected; its next hello rebuilds the rest."""
        once: list[Report] = [report for report in reports if not isinstance(report, Exited | StagedOut)]
        if not once or self.shell.channels.channel(node) is None:
            return
        if len(once) > UNSAVED_REPORTS:
            log.warning("node %s: %d reports the store refused are dropped (the oldest)", node,
                        len(once) - UNSAVED_REPORTS)
            once = once[-UNSAVED_REPORTS:]
        self.unsaved[node] = once
        previous = self.unsaved_retry.get(node)
        delay = min(previous[1] * 2, 30.0) if previous is not None else 0.5
        if previous is not None:
            previous[0].cancel()
        timer = asyncio.get_running_loop().call_later(delay, self._retry_unsaved, node)
        self.unsaved_retry[node] = (timer, delay)

    def _retry_unsaved(self, node: str) -> None:
        if node in self.unsaved:
            self._retry(node)

    def _wake_for_begin_time(self) -> None:
        """Plan again when the earliest begin time of a waiting job comes (sbatch --begin): the
        planner is pure and passes are run by changes, so nothing else would wake it then."""
        wake_at = self.shell.state.wake_at
        if self._wake is not None and (wake_at is None or self._wake[1] != wake_at):
            self._wake[0].cancel()
            self._wake = None
        if wake_at is not None and self._wake is None:
            delay = max(wake_at - self.shell.clock(), 0.0) + 0.01  # a little past it, so the job's time has come
            self._wake = (asyncio.get_running_loop().call_later(delay, self.request_schedule), wake_at)

