"""Amounts of what a task needs or a node has, in integer units. Pure."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Resources:
    cpus: int = 0
    memory_mib: int = 0

    def fits_in(self, available: Resources) -> bool:
        return self.cpus <= available.cpus and self.memory_mib <= available.memory_mib

    def __add__(self, other: Resources) -> Resources:
        return Resources(self.cpus + other.cpus, self.memory_mib + other.memory_mib)

    def __sub__(self, other: Resources) -> Resources:
        result = Resources(self.cpus - other.cpus, self.memory_mib - other.memory_mib)
        if result.cpus < 0 or result.memory_mib < 0:
            raise ValueError(f"cannot take {other} from {self}")
        return result

    def describe(self) -> str:
        return f"{self.cpus} CPU{'s' if self.cpus != 1 else ''}, {self.memory_mib} MiB"
