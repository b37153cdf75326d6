"""Jobs: submit, list, show, wait for, and act on them (/v1/jobs); their ended attempts
(/v1/history)."""

from __future__ import annotations

from starlette.responses import Response

from drover.api.accounting import FILTERS, history_filter
from drover.api.endpoint import Call, Endpoint
from drover.api.http import encoded_json_response, int_query, json_response
from drover.api.openapi import Operation, whole
from drover.controller.handlers.actions import ACTIONS
from drover.controller.reads.paging import history_cursor
from drover.controller.security.auth import Access, TlsPeer
from drover.core.errors import BadRequest, NotFound
from drover.protocol import api
from drover.store.base import JobFilter


async def submit(call: Call) -> Response:
    policy = call.controller.policy
    policy.may_submit(call.user)
    body = await call.body(api.SubmitRequest)
    if not body.jobs:
        raise BadRequest("the request holds no jobs")
    for job in body.jobs:
        policy.may_raise_priority(call.user, job.priority)
    # The owner is the peer; the request has no field that could say otherwise.
    if body.request_key is not None and not 8 <= len(body.request_key) <= 64:
        raise BadRequest("request_key must be 8 to 64 characters")
    # Where it came from: the host whose node writes the jobs' event logs when the controller cannot.
    tls = call.request.scope.get("state", {}).get("tls")
    submitted_from = tls.host if isinstance(tls, TlsPeer) else None
    return json_response(api.SubmitReply(ids=call.controller.service.submit(body.jobs, call.user.user,
                                                                            body.request_key, submitted_from)))


async def list_jobs(call: Call) -> Response:
    request = call.request
    params = request.query_params
    query = JobFilter(
        states=[s for s in params.get("state", "").split(",") if s],
        owner=call.controller.policy.whose_jobs(call.user, params.get("user")),
        name=params.get("name") or None,
        include_ended=params.get("all") in ("1", "true"), limit=int_query(request, "limit", 1000) or 1000,
        before=int_query(request, "before", None),
    )
    return encoded_json_response(await call.controller.reads.jobs(query))


async def show_job(call: Call) -> Response:
    assert call.job is not None
    return json_response(call.job)


async def wait_job(call: Call) -> Response:
    assert call.job is not None
    timeout = min(max(int_query(call.request, "timeout", 30) or 0, 0), 300)
    ended = await call.controller.service.wait_for_end(call.job.id, timeout)
    return json_response({"ended": ended, "job": await call.job_of(call.job.id)})


async def act(call: Call) -> Response:
    name = call.request.path_params["action"]
    if name not in ACTIONS:
        raise NotFound(f"unknown action {name!r}; known: {', '.join(ACTIONS)}")
    caller, policy = call.user, call.controller.policy
    body = await call.body(api.ActionRequest)
    if name == "alter" and body.priority is not None:
        policy.may_raise_priority(caller, body.priority)

    def may_touch(owner: str, job_id: int, verb: str) -> None:
        policy.may_touch(caller, owner, job_id, verb)

    return json_response(api.ActionReply(
        results=call.controller.service.act(name, body.refs, may_touch, body.signal, body.priority, caller.user,
                                            body.queue)))


async def priority(call: Call) -> Response:
    owner = call.controller.policy.whose_jobs(call.user, call.request.query_params.get("user"))
    return json_response(call.controller.reads.priority(owner))


async def history(call: Call) -> Response:
    request = call.request
    before = request.query_params.get("before")
    page = await call.controller.reads.history(
        None, int_query(request, "limit", 100) or 100, None,
        history_cursor(before) if before is not None else None, history_filter(call),
    )
    return encoded_json_response(page)


# A history page's next_before: ENDED_AT:JOB.TASK.ATTEMPT (controller/reads/paging.py).
HISTORY_TOKEN = r"^[0-9]{1,12}(\.[0-9]{1,9})?(e[+-]?[0-9]{1,2})?:[0-9]{1,9}\.[0-9]{1,6}\.[0-9]{1,6}$"

ENDPOINTS = [
    Endpoint(Operation("POST", "/v1/jobs", "Submit jobs (many in one request, one transaction)",
                       api.SubmitRequest, api.SubmitReply), Access.USER, submit),
    Endpoint(Operation("GET", "/v1/jobs", "List jobs (a user's own; admins choose whose)", response=api.JobList, query=(
        ("state", "string", "comma-separated task states"), ("user", "string", "owner (admins only)"),
        ("name", "string", "job name"), ("all", "string", "1 or true: include ended jobs"),
        ("limit", whole(0), "at most this many, newest (0: 1000)"),
        ("before", whole(0), "only jobs with a lower id: pass a page's next_before for the next, older page"),
    )), Access.USER, list_jobs),
    Endpoint(Operation("GET", "/v1/jobs/{job_id}", "A job, its tasks and every attempt",
                       response=api.JobInfo), Access.JOB, show_job),
    Endpoint(Operation("GET", "/v1/jobs/{job_id}/wait", "Wait until a job ends (long poll)",
                       query=(("timeout", whole(0), "seconds (at most 300 are waited)"),)), Access.JOB, wait_job),
    Endpoint(Operation("POST", "/v1/jobs/actions/{action}", "cancel, hold, release, suspend, resume or signal jobs or tasks",
                       api.ActionRequest, api.ActionReply, path_parameters=(("action", {"enum": list(ACTIONS)}),)),
             Access.USER, act),
    Endpoint(Operation("GET", "/v1/priority", "Pending jobs' priority, factor by factor (like sprio)",
                       response=api.PriorityList, query=(("user", "string", "owner (admins only)"),)),
             Access.USER, priority),
    Endpoint(Operation("GET", "/v1/history", "Ended attempts with their usage", response=api.History,
                       query=(*FILTERS, ("limit", whole(0), "rows (0: 100)"),
                              ("before", {"type": "string", "pattern": HISTORY_TOKEN},
                               "only older rows: pass a page's next_before for the next, older page"),
                              )), Access.USER, history),
]
