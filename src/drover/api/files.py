"""Files a job staged out, kept by the controller until fetched (/v1/jobs/{job_id}/files)."""

from __future__ import annotations

from starlette.responses import Response

from drover.api.endpoint import Call, Endpoint
from drover.api.http import json_response
from drover.api.openapi import Operation
from drover.controller.security.auth import Access
from drover.core.errors import BadRequest
from drover.core.limits import MAX_INDEX, ascii_int
from drover.protocol import api


async def list_files(call: Call) -> Response:
    assert call.job is not None
    return json_response(api.FileList(files=call.controller.reads.staged_files(call.job.id)))


async def one_file(call: Call) -> Response:
    assert call.job is not None
    params = call.request.path_params
    index, attempt = ascii_int(params["task"], "the task index", MAX_INDEX), ascii_int(params["attempt"], "the attempt")
    if "\0" in params["name"]:
        raise BadRequest("a file name must not hold a NUL byte")
    data = call.controller.reads.staged_file(call.job.id, index, attempt, params["name"])
    return Response(data, media_type="application/octet-stream")


ENDPOINTS = [
    Endpoint(Operation("GET", "/v1/jobs/{job_id}/files", "Files a job staged out, kept by the controller",
                       response=api.FileList), Access.JOB, list_files),
    Endpoint(Operation("GET", "/v1/jobs/{job_id}/files/{task}/{attempt}/{name:path}", "One staged-out file (bytes)"),
             Access.JOB, one_file),
]
