"""Identifiers: a job is a number, a task is (job, index), an attempt is (job, index, number).

Written forms: job ``12``; task ``12.3`` (``12_3`` and ``12[3]`` are accepted too, the Slurm and
PBS spellings); attempt ``12.3.1``, which is also the attempt's spool directory name.
A job that is not an array has one task with index 0.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Protocol, TypeVar, cast

from drover.core.errors import BadRequest
from drover.core.limits import MAX_ID, MAX_INDEX


def parse_job_ref(text: str) -> tuple[int, int | None]:
    """``"12"`` → (12, None); ``"12.3"``, ``"12_3"`` or ``"12[3]"`` → (12, 3)."""
    raw = text.strip()
    body = raw[:-1].replace("[", ".") if raw.endswith("]") else raw
    job, sep, index = body.replace("_", ".").partition(".")
    # ASCII digits only, within what the store holds (int() takes '٣', '1_0' and any size).
    if not _digits(job) or (sep and not _digits(index)):
        raise BadRequest(f"not a job id: {text!r} (expected JOB or JOB.TASK, e.g. 12 or 12.3)")
    job_id, task_index = int(job), int(index) if sep else None
    if not 0 < job_id <= MAX_ID or (task_index is not None and task_index > MAX_INDEX):
        raise BadRequest(f"not a job id: {text!r} (job ids are 1 to {MAX_ID}, task indices 0 to {MAX_INDEX})")
    return job_id, task_index


def _digits(text: str) -> bool:
    return text.isascii() and text.isdigit() and len(text) <= 19


def attempt_name(job_id: int, task_index: int, attempt: int) -> str:
    return f"{job_id}.{task_index}.{attempt}"


def parse_attempt_name(name: str) -> tuple[int, int, int]:
    """(job, task, attempt) of an attempt's name, as bounded_attempt_key reads it; raises
    ValueError for what is not one (a name a node or a user sent may be any text)."""
    key = bounded_attempt_key(name)
    if key is None:
        raise ValueError(f"not an attempt's name: {name[:100]!r}")
    return key


def job_of_attempt(name: str) -> int | None:
    """The job an attempt's name names (as bounded_attempt_key reads it), or None if it is none."""
    key = bounded_attempt_key(name)
    return key[0] if key is not None else None


# The longest name kept by the caches of names below: an attempt's name as Drover makes them is
# shorter (three numbers of at most 19 digits); a node's report may name any text, which is read
# each time rather than kept.
CACHED_NAME_MAX = 64
T = TypeVar("T")


class KeptForShortNames(Protocol[T]):
    """A reader of names whose answers are kept for short ones (`kept_for_short_names`)."""

    read: Callable[[str], T]  # the reader itself, never kept
    cache_info: Callable[[], Any]

    def __call__(self, name: str) -> T: ...


def kept_for_short_names(read: Callable[[str], T]) -> KeptForShortNames[T]:
    """`read`, its answers kept (the 8,192 names used last) for names no longer than
    CACHED_NAME_MAX: each report's attempt is looked up by its name a dozen times between its
    frame's arrival and its commit (its job's group, the node that may speak for it, its task, the
    samples), so the names of the attempts running now are read once each; a longer name, which
    no attempt Drover makes has, is read each time and never kept. A closure, not an object with
    __call__: it is called dozens of times a job, and a method call costs twice as much."""
    kept = functools.lru_cache(maxsize=8192)(read)

    def lookup(name: str) -> T:
        return kept(name) if len(name) <= CACHED_NAME_MAX else read(name)

    lookup.read = read  # type: ignore[attr-defined]
    lookup.cache_info = kept.cache_info  # type: ignore[attr-defined]
    return cast("KeptForShortNames[T]", lookup)


def _bounded_attempt_key(name: str) -> tuple[int, int, int] | None:
    """(job, task, attempt) of a name "<job>.<task>.<attempt>" as Drover makes them, or None if it
    is not one: ASCII digits within what the store holds. A node's report may name any text, and
    one that the store cannot take as a number (20 digits overflow SQLite's integer) must not fail
    the frame that carries it, with every other node's reports of that loop turn. For a name
    looked up in memory alone, controller/followers.fast_attempt_key is quicker."""
    parts = name.split(".")
    if len(parts) != 3 or not name.isascii():
        return None
    # _digits for each part, written out: every report is grouped by its job with this, and the
    # calls and generators made it four times as slow as int() alone.
    job, index, number = parts
    if not (job.isdigit() and index.isdigit() and number.isdigit()
            and len(job) <= 19 and len(index) <= 19 and len(number) <= 19):
        return None
    job_id, task_index, attempt = int(job), int(index), int(number)
    if 0 < job_id <= MAX_ID and task_index <= MAX_INDEX and attempt <= MAX_ID:
        return job_id, task_index, attempt
    return None


bounded_attempt_key = kept_for_short_names(_bounded_attempt_key)


def task_name(job_id: int, task_index: int, is_array: bool) -> str:
    return f"{job_id}.{task_index}" if is_array else str(job_id)
