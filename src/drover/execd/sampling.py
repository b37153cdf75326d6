"""Sampling of the running attempts (jobd's stat_mem and stat_load): every `sample_s`, what each
one uses, kept in its rings (sample_history.py) and sent to the controller in one message.

One message per round carries the latest sample of every attempt (never one per sample per
job), so a node with a hundred jobs sends one small frame every `sample_s`. A round only reads
files (the cgroup's counters, /proc through psutil); a process or cgroup that vanishes while it
is read counts for nothing, and an attempt that ended is forgotten at the next round.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from drover.execd import attempt_records
from drover.execd.attempts import LiveAttempt
from drover.execd.cgroup_usage import CgroupFigures, read_cgroup
from drover.execd.enforcement import Enforcer
from drover.execd.process_usage import ProcessFigures, descendants, parents, read_processes
from drover.execd.sample_history import SampleHistory
from drover.protocol.node_channel import Sample, Samples
from drover.records import ContainmentRecord
from drover.spool import layout

log = logging.getLogger("drover.execd")
MIN_PERIOD_S = 0.1  # a smaller sample_s would keep the node busy sampling


PROCESSES_EVERY = 5  # samples between two reads of a cgroup-counted attempt's processes


@dataclass(slots=True)
class Tracked:
    """What the sampler remembers of one attempt between rounds."""

    started_at: float  # when the job started: its job_pid record's time
    containment: ContainmentRecord | None = None  # read until the shepherd has written it, then kept
    last: tuple[float, float] | None = None  # (wall time, CPU seconds) at the previous sample
    history: SampleHistory = field(default_factory=SampleHistory)
    pids: list[int] = field(default_factory=list)  # its processes at the latest sample
    processes: ProcessFigures | None = None  # its processes as last read, one by one
    rounds: int = 0  # samples taken


class Sampler:
    def __init__(self, live: Mapping[str, LiveAttempt], send: Callable[[Any], None], period_s: float,
                 clock: Callable[[], float] = time.time, enforcer: Enforcer | None = None) -> None:
        """`live`: the node's running attempts (Attempts.live), read at each round. `enforcer`:
        checks each sampled attempt's use against its reservation after the round."""
        self.live = live
        self.send = send
        self.period_s = max(period_s, MIN_PERIOD_S)
        self.clock = clock
        self.tracked: dict[str, Tracked] = {}
        self._sent_any = False
        self.enforcer = enforcer

    async def run_forever(self) -> None:
        while True:
            await asyncio.sleep(self.period_s)
            try:
                self.round()
            except Exception:  # a bug in one round must not end sampling, nor the node
                log.exception("sampling the running jobs failed")

    def round(self) -> list[Sample]:
        """Sample every running attempt once, send the batch, and return it."""
        for name in [name for name in self.tracked if name not in self.live]:
            del self.tracked[name]  # ended: its rings go with it
            if self.enforcer is not None:
                self.enforcer.forget(name)
        started = [live for live in self.live.values() if live.started_sent]
        parent_of = parents() if any(self._without_cgroup(live) for live in started) else {}
        samples = [sample for live in started if (sample := self.sample(live, parent_of)) is not None]
        # An empty batch is sent once, after the last attempt ended: the controller learns that
        # the node runs nothing any more without waiting for the attempts' exit reports.
        if samples or self._sent_any:
            self.send(Samples(samples))
        self._sent_any = bool(samples)
        if self.enforcer is not None:
            self._enforce(started, {sample.attempt for sample in samples})
        return samples

    def _enforce(self, started: list[LiveAttempt], sampled: set[str]) -> None:
        assert self.enforcer is not None
        for live in started:
            tracked = self.tracked.get(live.spool.name)
            if tracked is None or live.spool.name not in sampled:
                continue
            try:
                self.enforcer.check(live.spool, tracked.containment, tracked.history.short, tracked.pids)
            except Exception:  # this attempt only: the others are checked all the same
                log.exception("checking attempt %s against its reservation failed", live.spool.name)

    def sample(self, live: LiveAttempt, parent_of: Mapping[int, int]) -> Sample | None:
        tracked = self._tracked(live)
        if tracked is None:
            return None
        now = self.clock()
        cgroup = read_cgroup(tracked.containment)
        # Never the shepherd itself, which sits in the attempt's cgroup while it starts the job
        # or the job's own methods: its children's CPU holds every job it reaped before, for
        # other attempts too (a shepherd serves several: warm_shepherds.py).
        pids = [pid for pid in cgroup.pids if pid != live.shepherd_pid] if (
            cgroup is not None and cgroup.pids is not None) else descendants(live.shepherd_pid, parent_of)
        # Where a cgroup counts the memory and CPU, the processes are read one by one (for their
        # threads, I/O and the biggest one's command) only every PROCESSES_EVERY samples, or when
        # they changed: reading each through /proc was most of the node's cost of sampling.
        counted = cgroup is not None and cgroup.memory_bytes is not None and cgroup.cpu_s is not None
        if (counted and tracked.processes is not None and pids == tracked.pids
                and tracked.rounds % PROCESSES_EVERY):
            processes = tracked.processes
        else:
            processes = tracked.processes = read_processes(pids)
        tracked.rounds += 1
        cpu_s = cgroup.cpu_s if cgroup is not None and cgroup.cpu_s is not None else processes.cpu_s
        memory = _memory(cgroup, processes.rss_bytes)
        if tracked.last is None:  # the first sample: CPU since the job started
            cpu = cpu_s / max(now - tracked.started_at, 1e-3)
        else:
            wall_then, cpu_then = tracked.last
            # Clamped: the CPU of a process that ended unseen by a listed parent leaves the sum.
            cpu = max(cpu_s - cpu_then, 0.0) / max(now - wall_then, 1e-3)
        tracked.last = (now, cpu_s)
        tracked.pids = pids
        history = tracked.history
        sample = Sample(
            attempt=live.spool.name, at=now, memory_bytes=memory, rss_bytes=processes.rss_bytes,
            peak_bytes=max(history.peak_bytes, memory, (cgroup.peak_bytes or 0) if cgroup else 0),
            cpu=round(cpu, 3), cpu_average=round(cpu_s / max(now - tracked.started_at, 1e-3), 3),
            memory_average_bytes=(history.memory_sum + memory) // (history.taken + 1),
            processes=processes.processes, threads=processes.threads, read_bytes=processes.read_bytes,
            write_bytes=processes.write_bytes, cmd=processes.cmd,
        )
        history.add(sample)
        return sample

    def history(self, attempt: str) -> SampleHistory | None:
        tracked = self.tracked.get(attempt)
        return tracked.history if tracked is not None else None

    def _tracked(self, live: LiveAttempt) -> Tracked | None:
        tracked = self.tracked.get(live.spool.name)
        if tracked is None:
            try:
                started_at = os.stat(live.spool.record(layout.JOB_PID)).st_mtime
            except OSError:
                return None  # its spool is being cleaned up: it is no longer running
            tracked = self.tracked[live.spool.name] = Tracked(started_at)
        if tracked.containment is None:
            tracked.containment = attempt_records.containment(live.spool)
        return tracked

    def _without_cgroup(self, live: LiveAttempt) -> bool:
        tracked = self.tracked.get(live.spool.name)
        record = tracked.containment if tracked is not None else attempt_records.containment(live.spool)
        return record is None or not record["cgroups"]


def _memory(cgroup: CgroupFigures | None, rss_bytes: int) -> int:
    """The cgroup's charge where its memory is accounted (what a limit acts on), else the RSS."""
    if cgroup is not None and cgroup.memory_bytes is not None:
        return cgroup.memory_bytes
    return rss_bytes
