"""Parallel environments (/v1/parallel-environments): drover.toml's [parallel_environments.NAME]
with the slots their jobs hold now, for `drover pe` and `qconf -spl` / `-sp`."""

from __future__ import annotations

from starlette.responses import Response

from drover.api.endpoint import Call, Endpoint
from drover.api.http import json_response
from drover.api.openapi import Operation
from drover.controller.security.auth import Access
from drover.protocol import api


async def list_parallel_environments(call: Call) -> Response:
    return json_response(api.ParallelEnvironmentList(call.controller.reads.parallel_environments()))


ENDPOINTS = [
    Endpoint(Operation("GET", "/v1/parallel-environments", "Parallel environments: their settings and slots in use",
                       response=api.ParallelEnvironmentList), Access.USER, list_parallel_environments),
]
