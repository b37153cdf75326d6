"""Running jobs' samples for people: sparklines, and the figures `drover top` and `drover show`
print. Plain strings, no rich: `drover top` redraws a frame every few seconds."""

from __future__ import annotations

from collections.abc import Sequence

from drover.core.units import format_memory_kib
from drover.protocol.api import AttemptSamples

BARS = "▁▂▃▄▅▆▇█"
SPARK_WIDTH = 40  # the newest samples, one character each


def sparkline(values: Sequence[float], top: float | None = None, width: int = SPARK_WIDTH) -> str:
    """One bar per value, the newest last, scaled to `top` (default: the largest value), so a job
    at a steady figure draws a flat line at its height rather than noise around the middle."""
    shown = list(values)[-width:]
    if not shown:
        return ""
    ceiling = max(top if top is not None else 0.0, *shown)
    if ceiling <= 0:
        return BARS[0] * len(shown)
    last = len(BARS) - 1
    return "".join(BARS[min(max(round(value / ceiling * last), 0), last)] for value in shown)


def memory_bytes(value: int | None) -> str:
    return "-" if value is None else format_memory_kib(value // 1024)


def cpu_against(used: float, reserved: int) -> str:
    """`1.9/2`: cores used now over cores reserved."""
    return f"{used:.1f}/{reserved}"


def memory_against(used: int, requested_mib: int) -> str:
    """`150.2M/256M`, or the figure alone for a job that asked for no memory."""
    return memory_bytes(used) + (f"/{format_memory_kib(requested_mib * 1024)}" if requested_mib else "")


def show_lines(samples: AttemptSamples, cpus: int) -> list[str]:
    """What `drover show` prints under a running attempt: now, peak and average of memory and
    CPU, each with the sparkline of its recent samples."""
    latest = samples.latest
    memory_line = [sample.memory_bytes for sample in samples.history]
    cpu_line = [sample.cpu for sample in samples.history]
    return [
        f"memory: now {memory_bytes(latest.memory_bytes)}, peak {memory_bytes(samples.peak_bytes)}, "
        f"average {memory_bytes(samples.memory_average_bytes)}  {sparkline(memory_line)}",
        f"CPU:    now {latest.cpu:.2f}, peak {max(cpu_line, default=latest.cpu):.2f}, "
        f"average {samples.cpu_average:.2f} of {cpus} reserved  "
        f"{sparkline(cpu_line, top=float(cpus))}",
        f"processes {latest.processes}, threads {latest.threads}; biggest: {latest.cmd or '-'}",
    ]
