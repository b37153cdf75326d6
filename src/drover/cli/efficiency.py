"""What a task used against what it asked for, in the words of Slurm's seff (contribs/seff):
CPU time against cores × wall-clock time, and peak memory against the memory requested. Pure:
it reads a job as the API gives it and returns the report's lines."""

from __future__ import annotations

from drover.protocol.api import AttemptInfo, JobInfo, TaskInfo


def seff_time(seconds: float) -> str:
    """seff's [D-]HH:MM:SS."""
    whole = int(round(seconds))
    days, rest = divmod(whole, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    clock = f"{hours:02d}:{minutes:02d}:{secs:02d}"
    return f"{days}-{clock}" if days else clock


def seff_size(kib: float) -> str:
    """seff's kbytes2str: two decimals in KB, MB, GB or TB (powers of 1024)."""
    value, unit = float(kib), "KB"
    for bigger in ("MB", "GB", "TB"):
        if value < 1024:
            break
        value, unit = value / 1024, bigger
    return f"{value:.2f} {unit}"


def report(job: JobInfo, task: TaskInfo, group: str) -> list[str]:
    attempt = task.attempts[-1] if task.attempts else None
    lines = [f"Job ID: {job.id}" if not job.array else f"Array Job ID: {job.id}_{task.index}",
             "Cluster: drover", f"User/Group: {job.owner}/{group}", f"State: {_state(task, attempt)}"]
    lines += [f"Cores: {job.cpus}"] if job.cpus == 1 else ["Nodes: 1", f"Cores per node: {job.cpus}"]
    usage = attempt.usage if attempt is not None else None
    known_peak = True  # without usage, as before: nothing recorded reads as 0
    if usage is None:
        wall = (attempt.ended_at or 0.0) - (attempt.started_at or 0.0) if attempt is not None else 0.0
        cpu, peak_kib = 0.0, 0.0
    else:
        wall = usage.wall_s
        cpu = usage.cgroup_cpu_s if usage.cgroup_cpu_s is not None else usage.user_cpu_s + usage.sys_cpu_s
        peak_kib = max(usage.max_rss_kib, (usage.cgroup_peak_memory_bytes or 0) / 1024)
        # 0: no cgroup measured the attempt, and its max RSS is not known (accounting.md, Max RSS)
        known_peak = peak_kib > 0
    core_wall = wall * job.cpus
    lines.append(f"CPU Utilized: {seff_time(cpu)}")
    lines.append(f"CPU Efficiency: {_percent(cpu, core_wall)} of {seff_time(core_wall)} core-walltime")
    lines.append(f"Job Wall-clock time: {seff_time(wall)}")
    lines.append(f"Memory Utilized: {seff_size(peak_kib) if known_peak else 'n/a (not known)'}")
    requested_kib = job.memory_mib * 1024
    if requested_kib and not known_peak:
        lines.append(f"Memory Efficiency: n/a of {seff_size(requested_kib)}")
    elif requested_kib:
        lines.append(f"Memory Efficiency: {_percent(peak_kib, requested_kib)} of {seff_size(requested_kib)}")
    else:
        lines.append("Memory Efficiency: no memory was requested")
    if task.state in ("running", "suspended", "completing"):
        lines.append("WARNING: Efficiency statistics may be misleading for RUNNING jobs.")
    return lines


def _state(task: TaskInfo, attempt: AttemptInfo | None) -> str:
    state = task.state.upper()
    if attempt is not None and attempt.signal is not None:
        return f"{state} (signal {attempt.signal})"
    if attempt is not None and attempt.exit_code is not None:
        return f"{state} (exit code {attempt.exit_code})"
    return state


def _percent(used: float, available: float) -> str:
    return f"{100 * used / available:.2f}%" if available > 0 else "0.00%"
