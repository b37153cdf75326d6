"""Every field of `sacct --helpformat`, with its default width, as src/sacct/sacct.c's field
table has them, and what Drover fills it with. Pure.

A line is an allocation (the job, or one array task) or a step of it. Drover records one step
for each batch job, `.batch`, which carries what the shepherd measured (MaxRSS, CPU times);
the allocation's line leaves those empty, as Slurm's does. Fields Drover has nothing for
(accounts, energy, disk I/O, federations, reservations) print empty, as for a job without them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from drover.compat.slurm import timefmt
from drover.compat.slurm.jobs import SlurmJob
from drover.compat.slurm.printfields import Field
from drover.compat.slurm.units import MEGA, NONE, convert


@dataclass(frozen=True)
class Units:
    """The sizes' spelling: --noconvert keeps them as they are, --units=X chooses the letter."""

    keep: bool = False
    target: str | None = None

    def size(self, number: float, unit: int) -> str:
        return convert(number, unit, keep=self.keep, target=self.target)


@dataclass(frozen=True)
class Line:
    job: SlurmJob
    step: str | None  # None for the allocation, else "batch"
    units: Units = Units()
    cancelled_by: int | None = None  # who cancelled it, for "CANCELLED by UID"
    window: tuple[float, float] | None = None  # --truncate: times are cut to the -S/-E window

    @property
    def started(self) -> bool:
        return self.job.start is not None

    @property
    def start(self) -> float | None:
        if self.job.start is None or self.window is None:
            return self.job.start
        return max(self.job.start, self.window[0])

    @property
    def end(self) -> float | None:
        if self.job.end is None or self.window is None:
            return self.job.end
        return min(self.job.end, self.window[1])

    @property
    def elapsed(self) -> float:
        if self.start is None:
            return 0.0
        return max((self.end or self.job.now) - self.start, 0.0)


def _alloc(value: Callable[[Line], str | None]) -> Callable[[Line], str | None]:
    return lambda line: value(line) if line.step is None else None


def _step(value: Callable[[Line], str | None]) -> Callable[[Line], str | None]:
    return lambda line: value(line) if line.step is not None and line.started else None


def _nothing(line: Line) -> str | None:
    return None


def _state(line: Line) -> str:
    job = line.job
    if job.state == "CANCELLED" and line.step is None:
        return f"CANCELLED by {line.cancelled_by if line.cancelled_by is not None else job.uid or 0}"
    if line.step is not None and job.state in ("TIMEOUT",):
        return "CANCELLED"  # the batch step of a job past its limit was killed, as Slurm shows it
    return job.state


def _exit_code(line: Line) -> str:
    job = line.job
    if line.step is None and job.state in ("TIMEOUT", "CANCELLED") and not job.exit_code:
        return "0:0"
    return f"{job.exit_code}:{job.signal}"


def _job_id(line: Line) -> str:
    base = line.job.job_id_text
    return f"{base}.{line.step}" if line.step else base


def _job_id_raw(line: Line) -> str:
    base = str(line.job.job_id)
    return f"{base}.{line.step}" if line.step else base


def _cpu(line: Line, which: str) -> str | None:
    usage = line.job.usage
    if usage is None:
        return "00:00:00" if line.started or line.step is None else None
    seconds = {"user": usage.user_cpu_s, "sys": usage.sys_cpu_s}.get(which, usage.user_cpu_s + usage.sys_cpu_s)
    return timefmt.hms_fraction(seconds)


def _rss(line: Line) -> str | None:
    usage = line.job.usage
    return line.units.size(usage.max_rss_kib * 1024, NONE) if usage is not None else "0"


def _pages(line: Line) -> str | None:
    usage = line.job.usage
    return str(usage.major_faults) if usage is not None else "0"


def _tres(line: Line) -> str | None:
    job = line.job
    if line.step is None and not line.started and line.job.state != "PENDING":
        return None
    mem = line.units.size(job.info.memory_mib, MEGA)
    parts = [f"billing={job.info.cpus}", f"cpu={job.info.cpus}"] + (
        [f"mem={mem}"] if job.info.memory_mib else []) + ["node=1"]
    return ",".join(parts)


def _tres_usage(line: Line) -> str | None:
    usage = line.job.usage
    if usage is None:
        return None
    return (f"cpu={timefmt.hms(usage.user_cpu_s + usage.sys_cpu_s)},"
            f"mem={line.units.size(usage.max_rss_kib * 1024, NONE)},pages={usage.major_faults}")


def _date(stamp: float | None) -> str:
    return timefmt.date(stamp)


def _planned(line: Line) -> float:
    job = line.job
    began = job.start or (job.now if job.state == "PENDING" else job.info.submitted_at)
    return max(began - job.info.submitted_at, 0.0)


def _limit(line: Line) -> str | None:
    return timefmt.hms(line.job.info.time_limit_s) if line.job.info.time_limit_s else "UNLIMITED"


def _node(line: Line) -> str | None:
    return line.job.node or "None assigned"


FIELDS: list[Field[Line]] = [
    Field(10, "Account", _nothing),
    Field(15, "AdminComment", _nothing),
    Field(10, "AllocCPUS", lambda x: str(x.job.info.cpus) if x.started else "0"),
    Field(10, "AllocNodes", lambda x: "1" if x.started else "0"),
    Field(10, "AllocTRES", lambda x: _tres(x) if x.started else None),
    Field(7, "AssocID", lambda x: "0"),
    Field(10, "AveCPU", _step(lambda x: timefmt.hms(x.job.usage.user_cpu_s + x.job.usage.sys_cpu_s)
                               if x.job.usage else "00:00:00")),
    Field(10, "AveCPUFreq", _step(lambda x: "0")),
    Field(14, "AveDiskRead", _step(lambda x: "0")),
    Field(14, "AveDiskWrite", _step(lambda x: "0")),
    Field(10, "AvePages", _step(_pages)),
    Field(10, "AveRSS", _step(_rss)),
    Field(10, "AveVMSize", _step(lambda x: "0")),
    Field(16, "BlockID", _nothing),
    Field(10, "Cluster", lambda x: "drover"),
    Field(14, "Comment", _nothing),
    Field(19, "Constraints", _nothing),
    Field(14, "ConsumedEnergy", lambda x: "0"),
    Field(17, "ConsumedEnergyRaw", lambda x: "0"),
    Field(19, "Container", _nothing),
    Field(10, "CPUTime", lambda x: timefmt.hms(x.elapsed * x.job.info.cpus)),
    Field(10, "CPUTimeRAW", lambda x: str(int(x.elapsed * x.job.info.cpus))),
    Field(-21, "DBIndex", _nothing),
    Field(15, "DerivedExitCode", _alloc(lambda x: f"{x.job.exit_code}:{x.job.signal}")),
    Field(10, "Elapsed", lambda x: timefmt.hms(x.elapsed)),
    Field(10, "ElapsedRaw", lambda x: str(int(x.elapsed))),
    Field(19, "Eligible", lambda x: _date(x.job.info.submitted_at) if x.step is None else _date(x.start)),
    Field(19, "End", lambda x: _date(x.end)),
    Field(14, "Exclusive", _nothing),
    Field(8, "ExitCode", _exit_code),
    Field(14, "Extra", _nothing),
    Field(8, "FailedNode", _nothing),
    Field(19, "Flags", _alloc(lambda x: "SchedMain")),
    Field(6, "GID", lambda x: str(x.job.gid) if x.job.gid is not None else None),
    Field(9, "Group", lambda x: x.job.group),
    Field(-12, "JobID", _job_id),
    Field(-12, "JobIDRaw", _job_id_raw),
    Field(10, "JobName", lambda x: x.job.info.name if x.step is None else x.step),
    Field(9, "Layout", _step(lambda x: "Unknown")),
    Field(10, "Licenses", _nothing),
    Field(12, "MaxDiskRead", _step(lambda x: "0")),
    Field(15, "MaxDiskReadNode", _step(_node)),
    Field(15, "MaxDiskReadTask", _step(lambda x: "0")),
    Field(12, "MaxDiskWrite", _step(lambda x: "0")),
    Field(16, "MaxDiskWriteNode", _step(_node)),
    Field(16, "MaxDiskWriteTask", _step(lambda x: "0")),
    Field(8, "MaxPages", _step(_pages)),
    Field(12, "MaxPagesNode", _step(_node)),
    Field(14, "MaxPagesTask", _step(lambda x: "0")),
    Field(10, "MaxRSS", _step(_rss)),
    Field(10, "MaxRSSNode", _step(_node)),
    Field(10, "MaxRSSTask", _step(lambda x: "0")),
    Field(10, "MaxVMSize", _step(lambda x: "0")),
    Field(14, "MaxVMSizeNode", _step(_node)),
    Field(14, "MaxVMSizeTask", _step(lambda x: "0")),
    Field(12, "McsLabel", _nothing),
    Field(10, "MinCPU", _step(lambda x: timefmt.hms(x.job.usage.user_cpu_s + x.job.usage.sys_cpu_s)
                               if x.job.usage else "00:00:00")),
    Field(10, "MinCPUNode", _step(_node)),
    Field(10, "MinCPUTask", _step(lambda x: "0")),
    Field(10, "NCPUS", lambda x: str(x.job.info.cpus)),
    Field(8, "NNodes", lambda x: "1"),
    Field(15, "NodeList", _node),
    Field(8, "NTasks", _step(lambda x: "1")),
    Field(14, "OriginalSLUID", _nothing),
    Field(14, "OverSubscribe", _alloc(lambda x: "OK")),
    Field(10, "Partition", _alloc(lambda x: x.job.info.queue)),
    Field(10, "Planned", _alloc(lambda x: timefmt.hms(_planned(x)))),
    Field(10, "PlannedCPU", _alloc(lambda x: timefmt.hms(_planned(x) * x.job.info.cpus))),
    Field(13, "PlannedCPURAW", _alloc(lambda x: str(int(_planned(x) * x.job.info.cpus)))),
    Field(10, "Priority", _alloc(lambda x: str(x.job.info.priority))),
    Field(10, "QOS", _alloc(lambda x: "normal")),
    Field(6, "QOSRAW", _alloc(lambda x: "1")),
    Field(10, "QOSREQ", _alloc(lambda x: "normal")),
    Field(22, "Reason", _alloc(lambda x: x.job.reason)),
    Field(10, "ReqCPUFreq", lambda x: "Unknown"),
    Field(13, "ReqCPUFreqGov", lambda x: "Unknown"),
    Field(13, "ReqCPUFreqMax", lambda x: "Unknown"),
    Field(13, "ReqCPUFreqMin", lambda x: "Unknown"),
    Field(8, "ReqCPUS", lambda x: str(x.job.info.cpus)),
    Field(10, "ReqMem", _alloc(lambda x: x.units.size(x.job.info.memory_mib, MEGA))),
    Field(8, "ReqNodes", _alloc(lambda x: "1")),
    Field(10, "ReqTRES", _alloc(_tres)),
    Field(20, "Reservation", _nothing),
    Field(8, "ReservationId", _nothing),
    Field(20, "ReqReservation", _nothing),
    Field(8, "Restarts", _alloc(lambda x: str(max(x.job.attempts - 1, 0)))),
    Field(11, "SegmentSize", _nothing),
    Field(14, "SLUID", _nothing),
    Field(19, "Start", lambda x: _date(x.start)),
    Field(10, "State", _state),
    Field(20, "StdErr", _alloc(lambda x: x.job.stderr or x.job.stdout or x.job.info.output)),
    Field(20, "StdIn", _alloc(lambda x: "/dev/null")),
    Field(20, "StdOut", _alloc(lambda x: x.job.stdout or x.job.info.output)),
    Field(19, "Submit", lambda x: _date(x.job.info.submitted_at) if x.step is None else _date(x.start)),
    Field(20, "SubmitLine", _nothing),
    Field(10, "Suspended", lambda x: "00:00:00"),
    Field(15, "SystemComment", _nothing),
    Field(10, "SystemCPU", lambda x: _cpu(x, "sys")),
    Field(10, "Timelimit", _alloc(_limit)),
    Field(10, "TimelimitRaw", _alloc(lambda x: str(-(-x.job.info.time_limit_s // 60)) if x.job.info.time_limit_s
                                     else "UNLIMITED")),
    Field(10, "TotalCPU", lambda x: _cpu(x, "total")),
    Field(14, "TRESUsageInAve", _step(_tres_usage)),
    Field(14, "TRESUsageInMax", _step(_tres_usage)),
    Field(18, "TRESUsageInMaxNode", _step(lambda x: f"cpu={x.job.node},mem={x.job.node},pages={x.job.node}")),
    Field(18, "TRESUsageInMaxTask", _step(lambda x: "cpu=0,mem=0,pages=0")),
    Field(14, "TRESUsageInMin", _step(_tres_usage)),
    Field(18, "TRESUsageInMinNode", _step(lambda x: f"cpu={x.job.node},mem={x.job.node},pages={x.job.node}")),
    Field(18, "TRESUsageInMinTask", _step(lambda x: "cpu=0,mem=0,pages=0")),
    Field(14, "TRESUsageInTot", _step(_tres_usage)),
    Field(15, "TRESUsageOutAve", _step(lambda x: "")),
    Field(15, "TRESUsageOutMax", _step(lambda x: "")),
    Field(19, "TRESUsageOutMaxNode", _step(lambda x: "")),
    Field(19, "TRESUsageOutMaxTask", _step(lambda x: "")),
    Field(15, "TRESUsageOutMin", _step(lambda x: "")),
    Field(19, "TRESUsageOutMinNode", _step(lambda x: "")),
    Field(19, "TRESUsageOutMinTask", _step(lambda x: "")),
    Field(15, "TRESUsageOutTot", _step(lambda x: "")),
    Field(6, "UID", lambda x: str(x.job.uid) if x.job.uid is not None else None),
    Field(9, "User", _alloc(lambda x: x.job.user)),
    Field(10, "UserCPU", lambda x: _cpu(x, "user")),
    Field(10, "WCKey", _nothing),
    Field(10, "WCKeyID", lambda x: "0"),
    Field(20, "WorkDir", _alloc(lambda x: x.job.workdir)),
]
