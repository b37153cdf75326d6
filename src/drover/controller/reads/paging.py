"""Where a page of a listing ends, as the API hands it out (`next_before`) and takes it back
(`before`). Job listings page by job id; the history by (end time, job, task, attempt), written
as one token. Pure."""

from __future__ import annotations

import math

from drover.core.errors import BadRequest
from drover.core.limits import ascii_int
from drover.store.base import HistoryCursor


def history_token(cursor: HistoryCursor) -> str:
    """`ENDED_AT:JOB.TASK.ATTEMPT`; the end time in full precision (repr), so that no row is
    skipped or shown twice between pages."""
    ended_at, job_id, index, attempt = cursor
    return f"{ended_at!r}:{job_id}.{index}.{attempt}"


def history_cursor(token: str) -> HistoryCursor:
    """The cursor a token names; BadRequest, saying what was expected, for anything else."""
    expected = f"query parameter before must be a history page's next_before (ENDED_AT:JOB.TASK.ATTEMPT), not {token!r}"
    ended, colon, where = token.partition(":")
    parts = where.split(".")
    if not colon or len(parts) != 3:
        raise BadRequest(expected)
    try:
        ended_at = float(ended)
    except ValueError:
        raise BadRequest(expected) from None
    if not math.isfinite(ended_at) or ended_at < 0:
        raise BadRequest(expected)
    job_id, index, attempt = (ascii_int(part, "query parameter before") for part in parts)
    return ended_at, job_id, index, attempt
