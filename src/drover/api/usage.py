"""What running jobs use now (/v1/jobs/{id}/samples, /v1/top): their nodes' latest samples,
kept by the controller in memory while the jobs run."""

from __future__ import annotations

from starlette.responses import Response

from drover.api.endpoint import Call, Endpoint
from drover.api.http import json_response
from drover.api.openapi import Operation
from drover.controller.security.auth import Access
from drover.protocol import api


async def job_samples(call: Call) -> Response:
    assert call.job is not None  # Access.JOB: its owner's or an operator's to see
    return json_response(call.controller.reads.samples(call.job.id))


async def top(call: Call) -> Response:
    # Whose attempts: a user's own; an operator's choice, everyone's by default (as listings).
    owner = call.controller.policy.whose_jobs(call.user, call.request.query_params.get("user"))
    return json_response(call.controller.reads.top(owner))


ENDPOINTS = [
    Endpoint(Operation("GET", "/v1/jobs/{job_id}/samples", "A running job's memory and CPU, now and recently, "
                       "as its nodes sample them", response=api.JobSamples), Access.JOB, job_samples),
    Endpoint(Operation("GET", "/v1/top", "Every running attempt the caller may see, with what it uses against "
                       "what it reserved (like top)", response=api.TopList,
                       query=(("user", "string", "owner (admins only)"),)), Access.USER, top),
]
