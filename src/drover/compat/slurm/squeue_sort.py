"""squeue's `-S/--sort`: comma-separated `-o` letters, `-` for descending, `+` (or nothing) for
ascending; the first key sorts first. Without `-S`, squeue sorts by `P,t,-p` (partition, state,
priority high first), as src/squeue/sort.c does. Pure."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from drover.compat.slurm.columns import Column
from drover.compat.slurm.common import Refused
from drover.compat.slurm.jobs import COMPACT, SlurmJob

DEFAULT_SORT = "P,t,-p"
STATE_ORDER = {name: number for number, name in enumerate(COMPACT)}  # Slurm's enum job_states order

# Keys that sort by a number, not by the printed text.
NUMERIC: dict[str, Callable[[SlurmJob], Any]] = {
    # A pending array's group has no index: Slurm's NO_VAL, so it sorts after the tasks.
    "i": lambda j: (j.job_id, j.index if j.index is not None else 1 << 32),
    "A": lambda j: j.job_id, "F": lambda j: j.job_id,
    "p": lambda j: j.info.priority, "Q": lambda j: j.info.priority,
    "t": lambda j: STATE_ORDER.get(j.state, 99), "T": lambda j: STATE_ORDER.get(j.state, 99),
    "M": lambda j: j.elapsed, "l": lambda j: j.info.time_limit_s or 1 << 40,
    "V": lambda j: j.info.submitted_at, "S": lambda j: j.start or 0.0,
    "C": lambda j: j.info.cpus, "c": lambda j: j.info.cpus, "m": lambda j: j.info.memory_mib,
    "U": lambda j: j.uid or 0, "D": lambda j: 1,
}


def sort_jobs(jobs: list[SlurmJob], spec: str | None, letters: Mapping[str, Column[SlurmJob]]) -> list[SlurmJob]:
    keys = [word.strip() for word in (spec or DEFAULT_SORT).split(",") if word.strip()]
    ordered = list(jobs)
    for key in reversed(keys):  # stable sorts, last key first: the first key decides most
        descending = key.startswith("-")
        letter = key.lstrip("+-")
        if letter in NUMERIC:
            ordered.sort(key=NUMERIC[letter], reverse=descending)
            continue
        column = letters.get(letter)
        if column is None:
            raise Refused(f"Invalid sort specification: {key}")
        ordered.sort(key=column.value, reverse=descending)
    return ordered
