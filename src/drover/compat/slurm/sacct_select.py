"""Which jobs and lines sacct prints: its selection options and its time window, with the rules
of slurmdb_job_cond_def_start_end (src/common/slurmdb_defs.c). Pure, given `now`.

The window: with -j and no -s, from the Epoch until now; with -s and no -j, at the instant now
(-S and -E both default to it); with both, from the Epoch until -S (or now); with neither, from
midnight until now. A job is in the window if it was submitted before its end and had not ended
before its start. With -s, it must have been in one of the states in the window: running or
suspended while the window lasted, pending then, or ended in one of the final states within it.
"""

from __future__ import annotations

import datetime as dt
import grp
from dataclasses import dataclass, replace

from drover.compat.slurm import timefmt
from drover.compat.slurm.common import Refused, split_list
from drover.compat.slurm.hostlist import expand
from drover.compat.slurm.jobs import COMPACT, FINAL, SlurmJob, slurm_jobs
from drover.compat.slurm.sacct_columns import Line, Units
from drover.core.units import parse_duration_s
from drover.protocol.api import JobInfo

STATE_NAMES = {**{name: name for name in COMPACT}, **{code: name for name, code in COMPACT.items()}}


@dataclass(frozen=True)
class JobRef:
    job_id: int
    index: int | None = None
    step: str | None = None


@dataclass
class Selection:
    refs: list[JobRef]
    start: float
    end: float
    states: set[str] | None = None
    users: set[str] | None = None
    names: list[str] | None = None
    partitions: list[str] | None = None
    nodes: set[str] | None = None
    cpus: tuple[int, int] | None = None
    node_counts: tuple[int, int] | None = None
    limit_min_s: int | None = None
    limit_max_s: int | None = None
    groups: set[int] | None = None
    reasons: set[str] | None = None
    qos: set[str] | None = None
    allocations: bool = False
    duplicates: bool = False
    split_array: bool = False
    truncate: bool = False

    @classmethod
    def from_options(cls, values: dict[str, list[str]], keys: list[str], now: float,
                     users: set[str] | None) -> Selection:
        refs = [ref for text in values.get("jobs", []) for ref in job_refs(text)]
        states = {state for text in values.get("state", []) for state in state_names(text)} or None
        start = _when(values["starttime"][-1], now) if "starttime" in values else None
        end = _when(values["endtime"][-1], now) if "endtime" in values else None
        if states:
            if start is None:
                start = 0.0 if refs else now
            if end is None:
                end = start if start else now
        else:
            if start is None:
                start = 0.0 if refs else _midnight(now)
            if end is None:
                end = now
        if end and start > end:
            raise Refused(f"Start time ({timefmt.date(start)}) requested is after end time ({timefmt.date(end)}).")
        last = {key: texts[-1] for key, texts in values.items()}
        return cls(
            refs=refs, start=start, end=end, states=states, users=users,
            names=[n for text in values.get("name", []) for n in split_list(text)] or None,
            partitions=[p for text in values.get("partition", []) for p in split_list(text)] or None,
            nodes=set(expand(last["nodelist"])) if "nodelist" in last else None,
            cpus=_range(last["ncpus"], "cpu") if "ncpus" in last else None,
            node_counts=_range(last["nnodes"], "node") if "nnodes" in last else None,
            limit_min_s=_limit(last["timelimit-min"]) if "timelimit-min" in last else None,
            limit_max_s=_limit(last["timelimit-max"]) if "timelimit-max" in last else None,
            groups=_groups(last["gid"]) if "gid" in last else None,
            reasons={r.lower() for r in split_list(last["reason"])} if "reason" in last else None,
            qos={q.lower() for q in split_list(last["qos"])} if "qos" in last else None,
            allocations="allocations" in keys or "t" in keys, duplicates="duplicates" in keys,
            split_array="array" in keys, truncate="truncate" in keys,
        )

    def may_want(self, summary: JobInfo) -> bool:
        """Whether a job of the listing (no tasks yet) can have a line: one submitted before the
        window ends and not ended before it starts, by one of the users and names asked for.
        Every state rule of the window implies this, so nothing wanted is left out."""
        if self.users is not None and summary.owner not in self.users:
            return False
        if self.names is not None and summary.name not in self.names:
            return False
        return summary.submitted_at <= self.end and (summary.ended_at is None or summary.ended_at >= self.start)

    def wants(self, job: SlurmJob) -> bool:
        if self.refs and not any(ref.job_id == job.job_id and (ref.index is None or ref.index == job.index)
                                 for ref in self.refs):
            return False
        if self.users is not None and job.user not in self.users:
            return False
        if self.names is not None and job.info.name not in self.names:
            return False
        if self.partitions is not None and job.info.queue not in self.partitions:
            return False
        if self.nodes is not None and job.node not in self.nodes:
            return False
        if self.cpus is not None and not self.cpus[0] <= job.info.cpus <= self.cpus[1]:
            return False
        if self.node_counts is not None and not self.node_counts[0] <= 1 <= self.node_counts[1]:
            return False
        limit = job.info.time_limit_s
        if self.limit_min_s is not None and (limit is not None and limit < self.limit_min_s):
            return False
        if self.limit_max_s is not None and (limit is None or limit > self.limit_max_s):
            return False
        if self.groups is not None and job.gid not in self.groups:
            return False
        if self.reasons is not None and job.reason.lower() not in self.reasons:
            return False
        if self.qos is not None and "normal" not in self.qos:
            return False
        return self._in_window(job)

    def _in_window(self, job: SlurmJob) -> bool:
        submitted, started, ended = job.info.submitted_at, job.start, job.end
        if self.states is None:
            return submitted <= self.end and (ended is None or ended >= self.start)
        for state in self.states:
            if state in ("RUNNING", "SUSPENDED") and started is not None and started <= self.end and (
                    ended is None or ended >= self.start) and (state == "RUNNING" or job.state == state):
                return True
            if state == "PENDING" and submitted <= self.end and (started is None or started >= self.start):
                return True
            if state in FINAL and job.state == state and ended is not None and self.start <= ended <= self.end:
                return True
            if state not in FINAL and state not in ("RUNNING", "SUSPENDED", "PENDING") and job.state == state:
                return True
        return False

    def wants_step(self, job: SlurmJob, step: str | None) -> bool:
        """Which lines of a chosen job: the allocation, then its `.batch` step unless -X. A ref
        naming a step asks for that step alone."""
        named = [ref for ref in self.refs if ref.job_id == job.job_id and ref.step is not None]
        if named:
            return any(ref.step == step for ref in named)
        return step is None or not self.allocations


def lines_of(info: JobInfo, selection: Selection, now: float, units: Units) -> list[Line]:
    out: list[Line] = []
    window = (selection.start, selection.end or now) if selection.truncate else None
    for job in slurm_jobs(info, now, split_pending=selection.split_array):
        if not selection.wants(job):
            continue
        for version in _attempts(info, job) if selection.duplicates else [job]:
            for step in (None, "batch"):
                if step is not None and version.start is None:
                    continue  # a job that never ran has no batch step
                if selection.wants_step(version, step):
                    out.append(Line(version, step, units, window=window))
    return out


def _attempts(info: JobInfo, job: SlurmJob) -> list[SlurmJob]:
    """Each attempt of a task as its own record, as sacct -D shows a requeued job's runs."""
    task = next((t for t in info.tasks if t.index == (job.index if job.index is not None else 0)), None)
    if task is None or len(task.attempts) < 2:
        return [job]
    earlier = [replace(job, attempt=attempt, state="REQUEUED", attempts=attempt.number)
               for attempt in task.attempts[:-1]]
    return [*earlier, job]


def job_refs(text: str) -> list[JobRef]:
    refs = []
    for word in split_list(text):
        body, dot, step = word.partition(".")
        job, _, index = body.partition("_")
        if not (job.isascii() and job.isdigit()) or (index and not (index.isascii() and index.isdigit())) or (dot and not step):
            raise Refused(f"Bad job/step specified: {word}")
        refs.append(JobRef(int(job), int(index) if index else None, step or None))
    return refs


def state_names(text: str) -> set[str]:
    names = set()
    for word in split_list(text):
        name = STATE_NAMES.get(word.upper())
        if name is None:
            raise Refused(f"unrecognized job state value: {word}")
        names.add(name)
    return names


def _when(text: str, now: float) -> float:
    try:
        return timefmt.parse(text, now)
    except timefmt.BadTime:
        raise Refused(f"Invalid time specification (pos=0): {text}") from None


def _midnight(now: float) -> float:
    today = dt.datetime.fromtimestamp(now)
    return today.replace(hour=0, minute=0, second=0, microsecond=0).timestamp()


def _range(text: str, what: str) -> tuple[int, int]:
    low, dash, high = text.partition("-")
    if not (low.isascii() and low.isdigit()) or (dash and not (high.isascii() and high.isdigit())):
        raise Refused(f"invalid {what} range -{'I' if what == 'cpu' else 'i'} '{text}'")
    return int(low), int(high) if dash else int(low)


def _limit(text: str) -> int:
    try:
        return parse_duration_s(text)
    except Exception:
        raise Refused("Invalid time limit specification") from None


def _groups(text: str) -> set[int]:
    out = set()
    for word in split_list(text):
        try:
            out.add(int(word) if (word.isascii() and word.isdigit()) else grp.getgrnam(word).gr_gid)
        except KeyError:
            raise Refused(f"Invalid group id: {word}") from None
    return out
