"""What the Slurm front ends share: the client, job ids in Slurm's spelling, states and times."""

from __future__ import annotations

import sys

from drover.core.units import format_duration

# Drover's task states in Slurm's words (squeue's compact codes, sacct's long ones).
STATES = {
    "pending": ("PD", "PENDING"), "held": ("PD", "PENDING"), "dispatched": ("CF", "CONFIGURING"),
    "running": ("R", "RUNNING"), "suspended": ("S", "SUSPENDED"), "completing": ("CG", "COMPLETING"),
    "completed": ("CD", "COMPLETED"), "failed": ("F", "FAILED"), "cancelled": ("CA", "CANCELLED"),
    "timeout": ("TO", "TIMEOUT"), "out_of_memory": ("OOM", "OUT_OF_MEMORY"), "node_fail": ("NF", "NODE_FAIL"),
}
REASONS = {  # squeue's one-word reasons
    "resources": "Resources", "priority": "Priority", "dependency": "Dependency",
    "dependency_never_satisfied": "DependencyNeverSatisfied", "array_limit": "JobArrayTaskLimit",
    "no_nodes": "ReqNodeNotAvail", "too_big": "BadConstraints",
}


def warn(command: str, message: str) -> None:
    print(f"{command}: warning: {message}", file=sys.stderr)


def fail(command: str, message: str, code: int = 1) -> int:
    print(f"{command}: error: {message}", file=sys.stderr)
    return code


def slurm_id(job_id: int, index: int, is_array: bool) -> str:
    return f"{job_id}_{index}" if is_array else str(job_id)


def elapsed(seconds: float | None) -> str:
    """Slurm's [D-]HH:MM:SS (always with hours, as sacct prints)."""
    if seconds is None:
        return "00:00:00"
    text = format_duration(seconds)
    return text if text.count(":") == 2 else "00:" + text
