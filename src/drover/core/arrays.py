"""The indices of a job's tasks, stored as ranges so a 100,000-task array costs a few bytes. Pure."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

Range = tuple[int, int, int]  # first, last (inclusive), step


@dataclass(frozen=True, slots=True)
class TaskIndices:
    """All task indices of one job, ascending. A job that is not an array has the single index 0."""

    ranges: tuple[Range, ...] = ((0, 0, 1),)

    @property
    def count(self) -> int:
        return sum((last - first) // step + 1 for first, last, step in self.ranges)

    def sorted_ranges(self) -> tuple[Range, ...]:
        return tuple(sorted(self.ranges))

    def at(self, position: int) -> int:
        """The index at `position` in ascending order (0-based)."""
        for first, last, step in self.sorted_ranges():
            size = (last - first) // step + 1
            if position < size:
                return first + position * step
            position -= size
        raise IndexError(position)

    def position(self, index: int) -> int:
        """The ascending position of `index` (which must be one of the indices)."""
        position = 0
        for first, last, step in self.sorted_ranges():
            if first <= index <= last and (index - first) % step == 0:
                return position + (index - first) // step
            position += (last - first) // step + 1
        raise ValueError(f"{index} is not one of the indices {self.describe()}")

    def slice(self, start: int, count: int) -> list[int]:
        """Up to `count` indices from ascending position `start`."""
        out: list[int] = []
        for first, last, step in self.sorted_ranges():
            size = (last - first) // step + 1
            if start >= size:
                start -= size
                continue
            index = first + start * step
            while index <= last and len(out) < count:
                out.append(index)
                index += step
            start = 0
            if len(out) >= count:
                break
        return out

    def __iter__(self) -> Iterator[int]:
        for first, last, step in self.sorted_ranges():
            yield from range(first, last + 1, step)

    def from_position(self, start: int) -> Iterator[int]:
        """The indices from ascending position `start` on, one at a time (a planner pass that
        starts two tasks of a 100,000-task array reads two)."""
        for first, last, step in self.sorted_ranges():
            size = (last - first) // step + 1
            if start >= size:
                start -= size
                continue
            yield from range(first + start * step, last + 1, step)
            start = 0

    def __contains__(self, index: object) -> bool:
        return isinstance(index, int) and any(
            first <= index <= last and (index - first) % step == 0 for first, last, step in self.ranges
        )

    def describe(self) -> str:
        """Slurm's compact form: ``1-9:2,12``."""
        parts = []
        for first, last, step in self.sorted_ranges():
            if first == last:
                parts.append(str(first))
            else:
                parts.append(f"{first}-{last}" + (f":{step}" if step != 1 else ""))
        return ",".join(parts)
