"""The event log (/v1/events): one job's events for its owner, the whole cluster's for admins."""

from __future__ import annotations

from starlette.responses import Response

from drover.api.endpoint import Call, Endpoint
from drover.api.http import encoded_json_response, int_query
from drover.api.openapi import Operation, whole
from drover.controller.security.auth import Access
from drover.protocol import api


async def events(call: Call) -> Response:
    request = call.request
    job, after = int_query(request, "job", None), int_query(request, "after", 0) or 0
    if job is not None:
        await call.job_of(job)  # its owner's (or an admin's) to read
    else:
        call.controller.policy.may_administer(call.user, "read the whole cluster's event log; name one of your jobs")
    limit = int_query(request, "limit", 1000) or 1000
    wait = min(max(int_query(request, "wait", 0) or 0, 0), 300)
    return encoded_json_response(await call.controller.reads.events(job, after, limit, wait))


ENDPOINTS = [
    Endpoint(Operation("GET", "/v1/events", "The event log", response=api.EventList, query=(
        ("job", whole(1), "one job's events"), ("after", whole(0), "sequence number"),
        ("limit", whole(0), "rows, oldest first (0: 1000): pass the last one's seq as after for the next page"),
        ("wait", whole(0), "seconds to wait for new events (at most 300)"))),
             Access.USER, events),
]
