"""Every field squeue can print (`-o` letters, `-O` names), with the real command's header, as
src/squeue/opts.c (fmt_data_job) and src/squeue/print.c define them. Pure.

Fields that name something Drover does not have (accounts, QOS, licenses, burst buffers,
federations, reservations) print what squeue prints for a job that has none of it.
"""

from __future__ import annotations

from collections.abc import Callable

from drover.compat.slurm import timefmt
from drover.compat.slurm.columns import Column
from drover.compat.slurm.jobs import SlurmJob

Value = Callable[[SlurmJob], str]


def memory(mib: int) -> str:
    """Slurm's convert_num_unit for a size in MiB: `500M`, `4G`, `0`."""
    if mib and mib % (1024 * 1024) == 0:
        return f"{mib // (1024 * 1024)}T"
    if mib and mib % 1024 == 0:
        return f"{mib // 1024}G"
    return f"{mib}M" if mib else "0"


def _when(stamp: float | None, missing: str = "N/A") -> str:
    return timefmt.date(stamp) if stamp else missing


def _end(job: SlurmJob) -> str:
    if job.end:
        return timefmt.date(job.end)
    if job.start and job.info.time_limit_s and job.state in ("RUNNING", "SUSPENDED"):
        return timefmt.date(job.start + job.info.time_limit_s)  # the latest it may end, as Slurm shows
    return "N/A"


def _limit(job: SlurmJob) -> str:
    return timefmt.secs(job.info.time_limit_s) if job.info.time_limit_s else "UNLIMITED"


def _left(job: SlurmJob) -> str:
    if not job.info.time_limit_s:
        return "UNLIMITED"
    return timefmt.secs(max(job.info.time_limit_s - job.elapsed, 0))


def _reason_list(job: SlurmJob) -> str:
    if job.state in ("PENDING", "TIMEOUT", "OUT_OF_MEMORY", "FAILED"):
        return f"({job.reason})"
    return job.nodelist


def _priority(job: SlurmJob) -> str:
    return f"{max(job.info.priority, 0) / 0xFFFFFFFF:.8f}"


def _tres(job: SlurmJob) -> str:
    if job.state == "PENDING":
        return "(null)"
    mem = memory(job.info.memory_mib)
    return f"cpu={job.info.cpus}" + (f",mem={mem}" if job.info.memory_mib else "") + f",node={job.node_count},billing={job.info.cpus}"


def _pending_time(job: SlurmJob) -> str:
    began = job.start or (job.now if job.state == "PENDING" else None)
    return str(int(max(began - job.info.submitted_at, 0))) if began else "0"


def _const(text: str) -> Value:
    return lambda job: text


NULL = _const("(null)")
NA = _const("N/A")
ZERO = _const("0")

COLUMNS: list[Column[SlurmJob]] = [Column(name, letter, header, value, cut) for name, letter, header, value, cut in (
    ("Account", "a", "ACCOUNT", NULL, True),
    ("AccrueTime", "", "ACCRUE_TIME", lambda j: _when(j.info.submitted_at, "Unknown"), True),
    ("admin_comment", "", "ADMIN_COMMENT", NULL, True),
    ("AllocNodes", "", "ALLOC_NODES", NULL, True),
    ("AllocSID", "", "ALLOC_SID", ZERO, True),
    ("ArrayJobId", "F", "ARRAY_JOB_ID", lambda j: str(j.job_id), True),
    ("ArrayTaskId", "K", "ARRAY_TASK_ID", lambda j: j.array_task_text, True),
    ("AssocId", "", "ASSOC_ID", ZERO, True),
    ("BatchFlag", "", "BATCH_FLAG", _const("1"), True),
    ("BatchHost", "B", "EXEC_HOST", lambda j: j.node or "n/a", True),
    ("BoardsPerNode", "", "BOARDS_PER_NODE", ZERO, True),
    ("BurstBuffer", "", "BURST_BUFFER", NULL, True),
    ("BurstBufferState", "", "BURST_BUFFER_STATE", NULL, True),
    ("Cluster", "", "CLUSTER", _const("drover"), True),
    ("ClusterFeature", "", "CLUSTER_FEATURES", NULL, True),
    ("Command", "o", "COMMAND", NULL, True),
    ("Comment", "k", "COMMENT", lambda j: j.info.options.get("comment") or "(null)", True),
    ("Container", "", "CONTAINER", NULL, True),
    ("ContainerId", "", "CONTAINERID", NULL, True),
    ("Contiguous", "O", "CONTIGUOUS", ZERO, True),
    ("Cores", "I", "CORES_PER_SOCKET", _const("*"), True),
    ("CoreSpec", "X", "CORE_SPEC", NA, True),
    ("CPUsPerTask", "", "CPUS_PER_TASK", lambda j: str(j.info.cpus), True),
    ("cpus-per-task", "", "CPUS_PER_TASK", lambda j: str(j.info.cpus), True),
    ("cpus-per-tres", "", "CPUS_PER_TRES", NA, True),
    ("CronJob", "", "CRON_JOB", _const("No"), True),
    ("Deadline", "", "DEADLINE", NA, True),
    ("DelayBoot", "", "DELAY_BOOT", _const("0:00"), True),
    ("Dependency", "E", "DEPENDENCY", lambda j: j.dependency or "(null)", True),
    ("DerivedEC", "", "DERIVED_EC", lambda j: f"{j.exit_code}:{j.signal}", True),
    ("EligibleTime", "", "ELIGIBLE_TIME", lambda j: _when(j.info.submitted_at), True),
    ("EndTime", "e", "END_TIME", _end, True),
    ("ExcNodes", "x", "EXC_NODES", _const(""), True),
    ("Exclusive", "", "EXCLUSIVE", _const("no"), True),
    ("exit_code", "", "EXIT_CODE", lambda j: f"{j.exit_code}:{j.signal}", True),
    ("Feature", "f", "FEATURES", NULL, True),
    ("Gres", "b", "TRES_PER_NODE", NA, True),
    ("GroupId", "G", "GROUP", lambda j: str(j.gid if j.gid is not None else ""), True),
    ("GroupName", "g", "GROUP", lambda j: j.group, True),
    ("HetJobId", "", "HET_JOB_ID", NA, True),
    ("HetJobIdSet", "", "HET_JOB_ID_SET", NA, True),
    ("HetJobOffset", "", "HET_JOB_OFFSET", NA, True),
    ("JobArrayId", "i", "JOBID", lambda j: j.job_id_text, True),
    ("JobId", "A", "JOBID", lambda j: str(j.job_id), True),
    ("LastSchedEval", "", "LAST_SCHED_EVAL", lambda j: _when(j.now, "Unknown"), True),
    ("Licenses", "W", "LICENSES", NULL, True),
    ("LicensesAlloc", "", "LICENSES_ALLOC", NULL, True),
    ("MaxCPUs", "", "MAX_CPUS", ZERO, True),
    ("MaxNodes", "", "MAX_NODES", _const("1"), True),
    ("mem-per-tres", "", "MEM_PER_TRES", NA, True),
    ("MCSLabel", "", "MCSLABEL", NA, True),
    ("MinCPUs", "c", "MIN_CPUS", lambda j: str(j.info.cpus), True),
    ("MinMemory", "m", "MIN_MEMORY", lambda j: memory(j.info.memory_mib), True),
    ("MinTime", "", "TIME_MIN", NA, True),
    ("MinTmpDisk", "d", "MIN_TMP_DISK", ZERO, True),
    ("Name", "j", "NAME", lambda j: j.info.name, True),
    ("Network", "", "NETWORK", NULL, True),
    ("Nice", "y", "NICE", ZERO, True),
    ("NodeList", "N", "NODELIST", lambda j: j.nodelist, False),
    ("NTPerCore", "", "NTASKS_PER_CORE", ZERO, True),
    ("NTPerNode", "", "NTASKS_PER_NODE", ZERO, True),
    ("NTPerSocket", "", "NTASKS_PER_SOCKET", ZERO, True),
    ("NTPerBoard", "", "NTASKS_PER_BOARD", ZERO, True),
    ("NumCPUs", "C", "CPUS", lambda j: str(j.info.cpus), True),
    ("NumNodes", "D", "NODES", lambda j: str(j.node_count), True),
    ("NumTasks", "", "TASKS", _const("1"), True),
    ("Origin", "", "ORIGIN", NA, True),
    ("OriginRaw", "", "ORIGIN_RAW", NA, True),
    ("OverSubscribe", "h", "OVER_SUBSCRIBE", _const("OK"), True),
    ("PackJobId", "", "HET_JOB_ID", NA, True),
    ("PackJobIdSet", "", "HET_JOB_ID_SET", NA, True),
    ("PackJobOffset", "", "HET_JOB_OFFSET", NA, True),
    ("Partition", "P", "PARTITION", lambda j: j.info.queue, True),
    ("PendingTime", "", "PENDING_TIME", _pending_time, True),
    ("PreemptTime", "", "PREEMPT_TIME", NA, True),
    ("Prefer", "", "PREFER", NULL, True),
    ("Priority", "p", "PRIORITY", _priority, True),
    ("PriorityLong", "Q", "PRIORITY", lambda j: str(j.info.priority), True),
    ("Profile", "", "PROFILE", _const("NotSet"), True),
    ("QOS", "q", "QOS", _const("normal"), True),
    ("Reason", "r", "REASON", lambda j: j.reason, True),
    ("ReasonList", "R", "NODELIST(REASON)", _reason_list, False),
    ("Reboot", "", "REBOOT", ZERO, True),
    ("ReqNodes", "n", "REQ_NODES", _const(""), True),
    ("ReqSwitch", "", "REQ_SWITCH", ZERO, True),
    ("Requeue", "", "REQUEUE", _const("1"), True),
    ("Reservation", "v", "RESERVATION", NULL, True),
    ("ResizeTime", "", "RESIZE_TIME", NA, True),
    ("RestartCnt", "", "RESTART_COUNT", lambda j: str(max(j.attempts - 1, 0)), True),
    ("Runtime", "", "RUNTIME", NULL, True),  # the runtime plugin, not the time run: Drover has none
    ("SchedNodes", "Y", "SCHEDNODES", NULL, False),
    ("SCT", "z", "S:C:T", _const("*:*:*"), True),
    ("SegmentSize", "", "SEGMENT_SIZE", ZERO, True),
    ("SiblingsActive", "", "ACTIVE_SIBLINGS", NULL, True),
    ("SiblingsActiveRaw", "", "ACTIVE_SIBLINGS_RAW", NULL, True),
    ("SiblingsViable", "", "VIABLE_SIBLINGS", NULL, True),
    ("SiblingsViableRaw", "", "VIALBLE_SIBLINGS_RAW", NULL, True),
    ("Shared", "h", "OVER_SUBSCRIBE", _const("OK"), True),
    ("SLUID", "s", "SLUID", NA, True),
    ("Sockets", "H", "SOCKETS_PER_NODE", _const("*"), True),
    ("SPerBoard", "", "SOCKETS_PER_BOARD", ZERO, True),
    ("StartTime", "S", "START_TIME", lambda j: _when(j.start), True),
    ("State", "T", "STATE", lambda j: j.state, True),
    ("StateCompact", "t", "ST", lambda j: j.compact_state, True),
    ("StdErr", "", "STDERR", lambda j: j.stderr or j.stdout or j.info.output, True),
    ("StdIn", "", "STDIN", _const("/dev/null"), True),
    ("StdOut", "", "STDOUT", lambda j: j.stdout or j.info.output, True),
    ("SubmitTime", "V", "SUBMIT_TIME", lambda j: _when(j.info.submitted_at), True),
    ("system_comment", "", "SYSTEM_COMMENT", NULL, True),
    ("Threads", "J", "THREADS_PER_CORE", _const("*"), True),
    ("TimeLeft", "L", "TIME_LEFT", _left, True),
    ("TimeLimit", "l", "TIME_LIMIT", _limit, True),
    ("TimeUsed", "M", "TIME", lambda j: timefmt.secs(j.elapsed), True),
    ("Tres", "", "TRES_ALLOC", _tres, True),
    ("tres-alloc", "", "TRES_ALLOC", _tres, True),
    ("tres-bind", "", "TRES_BIND", NA, True),
    ("tres-freq", "", "TRES_FREQ", NA, True),
    ("tres-per-job", "", "TRES_PER_JOB", NA, True),
    ("tres-per-node", "", "TRES_PER_NODE", NA, True),
    ("tres-per-socket", "", "TRES_PER_SOCKET", NA, True),
    ("tres-per-task", "", "TRES_PER_TASK", NA, True),
    ("UserId", "U", "UID", lambda j: str(j.uid if j.uid is not None else ""), True),
    ("UserName", "u", "USER", lambda j: j.user, True),
    ("Wait4Switch", "", "WAIT4SWITCH", ZERO, True),
    ("WCKey", "w", "WCKEY", NULL, True),
    ("WorkDir", "Z", "WORK_DIR", lambda j: j.workdir, True),
)]
