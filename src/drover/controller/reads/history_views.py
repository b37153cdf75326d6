"""The accounting record of an ended attempt as the API shows it (api.HistoryRow), and the
summaries' groups (api.HistoryGroup). The owner's group is not stored: it is the owner's
primary group as this host (the controller's) resolves it when asked, or the owner's name
where the host does not know the user."""

from __future__ import annotations

import functools
import time

from drover.controller.decoders import READS
from drover.core.accounting import GroupSummary, cpu_efficiency, memory_efficiency, never_ran
from drover.core.exit_status import shell_status
from drover.protocol.api import HistoryGroup, HistoryRow, Usage
from drover.records import ExitStatus
from drover.store.base import HistoryRecord

_GROUP_CACHE_S = 300.0


def history_row(record: HistoryRecord) -> HistoryRow:
    exit_record = record.exit
    usage = record.usage
    state = record.state or (record.task_state.value if record.task_attempt == record.attempt else "requeued")
    started, ended = record.started_at, record.ended_at
    wall = ended - started if started is not None else None
    eligible = record.eligible_at if record.eligible_at is not None else record.submitted_at
    cpu = peak = None
    if usage is not None:
        cpu_cgroup = usage.get("cgroup_cpu_s")
        cpu = cpu_cgroup if cpu_cgroup is not None else usage.get("user_cpu_s", 0.0) + usage.get("sys_cpu_s", 0.0)
        peak = max(usage.get("cgroup_peak_memory_bytes") or 0, usage.get("max_rss_kib", 0) * 1024)
    loose: dict[str, object] = dict(usage) if usage is not None else {}
    read_bytes, write_bytes = loose.get("read_bytes"), loose.get("write_bytes")
    return HistoryRow(
        job_id=record.job_id, index=record.index, is_array=record.is_array, attempt=record.attempt,
        name=record.name, owner=record.owner, state=state, node=record.node,
        exit_status=shell_status(exit_record["exit_code"], exit_record["signal"])
        if exit_record and not never_ran(started, exit_record["exit_code"], exit_record["signal"],
                                         exit_record.get("failure")) else None,
        submitted_at=record.submitted_at, started_at=started, ended_at=ended,
        usage=READS.convert(usage, Usage) if usage else None,
        group=owner_group(record.owner), queue=record.queue, priority=record.priority, eligible_at=eligible,
        wait_s=max(started - eligible, 0.0) if started is not None else None, wall_s=wall,
        exit_code=exit_record["exit_code"] if exit_record else None,
        signal=exit_record["signal"] if exit_record else None,
        reason=end_reason(exit_record, state, record.end_reason),
        cpu_user_s=usage.get("user_cpu_s") if usage else None, cpu_sys_s=usage.get("sys_cpu_s") if usage else None,
        cpu_s=cpu, max_rss_kib=usage.get("max_rss_kib") if usage else None,
        cgroup_peak_bytes=usage.get("cgroup_peak_memory_bytes") if usage else None,
        read_bytes=read_bytes if isinstance(read_bytes, int) else None,
        write_bytes=write_bytes if isinstance(write_bytes, int) else None,
        cpus=record.cpus, memory_mib=record.memory_mib, time_limit_s=record.time_limit_s,
        cpu_efficiency=cpu_efficiency(cpu, record.cpus, wall or 0.0),
        memory_efficiency=memory_efficiency(peak, record.memory_mib),
        time_efficiency=wall / record.time_limit_s if wall is not None and record.time_limit_s else None,
    )


def end_reason(exit_record: ExitStatus | None, state: str, controller_reason: str | None) -> str | None:
    """Why the attempt ended as it did, in Slurm's words where it has them."""
    if state == "requeued":
        return "Requeued"
    if exit_record is None:
        return controller_reason
    if exit_record.get("node_lost"):
        return "NodeLost"
    if exit_record.get("node_left"):
        return f"NodeLost: {exit_record['failure']}"
    if exit_record.get("failure"):
        return f"LaunchFailed: {exit_record['failure']}"
    if exit_record.get("timed_out"):
        return "TimeLimit"
    if exit_record.get("out_of_memory"):
        return "OutOfMemory"
    if exit_record.get("terminated"):
        return "Cancelled"
    if exit_record.get("pids_refused") and (exit_record.get("signal") or exit_record.get("exit_code")):
        return "ProcessLimit"
    if exit_record.get("signal"):
        return f"Signal {exit_record['signal']}"
    if exit_record.get("exit_code"):
        return "NonZeroExitCode"
    return controller_reason


def history_group(summary: GroupSummary) -> HistoryGroup:
    return HistoryGroup(
        key=summary.key, jobs=summary.jobs, attempts=summary.attempts, cpu_hours=summary.cpu_hours,
        wall_hours=summary.wall_hours, wait_p50_s=summary.wait_p50_s, wait_p90_s=summary.wait_p90_s,
        cpu_efficiency_p50=summary.cpu_efficiency_p50, memory_efficiency_p50=summary.memory_efficiency_p50,
    )


def owner_group(owner: str) -> str:
    """The owner's primary group on this host, looked up at most every few minutes."""
    return _group_of(owner, int(time.monotonic() // _GROUP_CACHE_S))


@functools.lru_cache(maxsize=4096)
def _group_of(owner: str, _epoch: int) -> str:
    import grp
    import pwd

    try:
        return grp.getgrgid(pwd.getpwnam(owner).pw_gid).gr_name
    except (KeyError, OverflowError):
        return owner
