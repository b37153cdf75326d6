"""Accounting: summaries of the ended attempts (/v1/history/summary), with the filters the
history takes (/v1/history, api/jobs.py). Filtering and grouping happen on the controller,
from the accounting table's indexes; only the groups are sent."""

from __future__ import annotations

from typing import Any

from starlette.responses import Response

from drover.api.endpoint import Call, Endpoint
from drover.api.http import encoded_json_response, int_query, unix_time
from drover.api.openapi import Operation, whole
from drover.controller.security.auth import Access
from drover.core.accounting import GROUPINGS
from drover.core.errors import BadRequest
from drover.core.job_state import JobState
from drover.protocol import api
from drover.store.base import HistoryFilter

STATES = (*(state.value for state in JobState if state.is_final), "completing", "requeued")
_TIME = {"type": "number", "minimum": 0, "exclusiveMaximum": 2**40}

# The filters of /v1/history and /v1/history/summary, as OpenAPI query parameters.
FILTERS: tuple[tuple[str, Any, str], ...] = (
    ("user", "string", "owner (admins only; a user sees their own)"),
    ("queue", "string", "the queue it ran in"),
    ("node", "string", "the node it ran on"),
    ("state", {"type": "string", "pattern": f"^(({'|'.join(STATES)})(,({'|'.join(STATES)}))*)?$"},
     f"comma-separated states of the attempt: {', '.join(STATES)}"),
    ("name", "string", "job name: a glob (*, ?, [...])"),
    ("job", whole(1), "one job's attempts"),
    ("since", _TIME, "ended at or after this Unix time"),
    ("until", _TIME, "ended before this Unix time"),
)


def history_filter(call: Call) -> HistoryFilter:
    """The filters a history request asks for; whose records is decided as for listings (a
    user's own; an admin's choice, everyone's by default)."""
    params = call.request.query_params
    states = tuple(word for word in params.get("state", "").split(",") if word)
    unknown = [state for state in states if state not in STATES]
    if unknown:
        raise BadRequest(f"query parameter state: unknown state {unknown[0]!r}; known: {', '.join(STATES)}")
    job_id = int_query(call.request, "job", None)
    if job_id is not None and job_id < 1:
        raise BadRequest("query parameter job must be a job id, 1 or more")
    since, until = params.get("since"), params.get("until")
    return HistoryFilter(
        owner=call.controller.policy.whose_jobs(call.user, params.get("user")),
        queue=params.get("queue") or None, node=params.get("node") or None, states=states,
        name=params.get("name") or None, job_id=job_id,
        since=unix_time(since, "query parameter since") if since is not None else None,
        until=unix_time(until, "query parameter until") if until is not None else None,
    )


async def summary(call: Call) -> Response:
    by = call.request.query_params.get("by", "user")
    if by not in GROUPINGS:
        raise BadRequest(f"query parameter by must be one of {', '.join(GROUPINGS)}, not {by!r}")
    return encoded_json_response(await call.controller.reads.history_summary(by, history_filter(call)))


ENDPOINTS = [
    Endpoint(Operation("GET", "/v1/history/summary", "Ended attempts summarised per user, queue, node or day: "
                       "jobs, CPU and wall-clock hours, wait and efficiency percentiles", response=api.HistorySummary,
                       query=(("by", {"type": "string", "enum": list(GROUPINGS)}, "how to group (default user)"),
                              *FILTERS)), Access.USER, summary),
]
