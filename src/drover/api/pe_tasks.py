"""Tasks of a running parallel job on the hosts of its allocation (controller/nodes/pe_tasks.py):

- POST /v1/jobs/{job_id}/pe-tasks {host, argv, task?, cwd?, env?}: start one; the job's owner
  alone, while the job runs, on a host of its attempt, in a PE with control_slaves = true;
- GET /v1/jobs/{job_id}/pe-tasks/{petask}[?task=N]: how it is (its exit status and usage once
  it ended), of the job's latest attempt, while the job runs and after;
- GET /v1/jobs/{job_id}/pe-tasks/{petask}/output?stream=stdout&offset=N: part of its output,
  read on its node as the owner (the relay `drover logs` and `drover run` use);
- DELETE /v1/jobs/{job_id}/pe-tasks/{petask}[?task=N]: stop it (its caller was interrupted, as
  Grid Engine's qrsh forwards its signals); the job's owner alone, as for the others.

`qrsh -inherit HOST CMD` and `drover task start HOST -- CMD` call them from inside the job.
"""

from __future__ import annotations

from starlette.responses import Response

from drover.api.endpoint import Call, Endpoint
from drover.api.http import int_query, json_response
from drover.api.openapi import Operation, whole
from drover.controller.reads.views import pe_task_info
from drover.controller.security.auth import Access
from drover.core.errors import BadRequest, NotFound
from drover.core.job import Attempt
from drover.core.limits import MAX_INDEX, ascii_int
from drover.protocol import api
from drover.records import PeTaskRecord

READ_LIMIT = 1 << 20
MAX_ARGV = 4096
PETASK = (("petask", whole(1, MAX_INDEX)),)


async def start(call: Call) -> Response:
    assert call.job is not None
    request = await call.body(api.PeTaskRequest)
    if not request.argv or len(request.argv) > MAX_ARGV:
        raise BadRequest("give the task's command (argv), of at most 4096 words")
    if request.cwd is not None and not request.cwd.startswith("/"):
        raise BadRequest("cwd is an absolute path")
    attempt, task = call.controller.service.start_pe_task(
        call.controller.policy, call.user, call.job.id, request.task, request.host, request.argv, request.cwd,
        request.env, request.credential)
    return json_response(pe_task_info(attempt, task))


async def show(call: Call) -> Response:
    attempt, task = _task(call)
    return json_response(pe_task_info(attempt, task))


async def read_output(call: Call) -> Response:
    attempt, task = _task(call)
    params = call.request.query_params
    stream = params.get("stream", "stdout")
    if stream not in ("stdout", "stderr"):
        raise BadRequest("stream is stdout or stderr")
    offset = max(int_query(call.request, "offset", 0) or 0, 0)
    limit = max(min(int_query(call.request, "limit", READ_LIMIT) or READ_LIMIT, READ_LIMIT), 0)
    answer = await call.controller.service.relays.read_output(task["host"], attempt.name, stream, offset, limit,
                                                              task["petask"])
    if answer.error is not None:
        raise NotFound(answer.error)
    return json_response(api.OutputChunk(node=task["host"], attempt=attempt.number, offset=offset,
                                         data=answer.data, size=answer.size))


async def stop(call: Call) -> Response:
    attempt, task = _task(call)
    stopped = call.controller.service.stop_pe_task(attempt.job_id, attempt.index, attempt.number, task["petask"])
    return json_response(pe_task_info(attempt, stopped))


def _task(call: Call) -> tuple[Attempt, PeTaskRecord]:
    assert call.job is not None
    job = call.job
    call.controller.policy.may_act_as_owner(call.user, job.owner, job.id, "its tasks")
    index = int_query(call.request, "task", 0) or 0
    petask = str(ascii_int(call.request.path_params["petask"], "a task id", MAX_INDEX))
    info = next((t for t in job.tasks if t.index == index), None)
    if info is None or not info.attempts:
        raise NotFound(f"job {job.id}.{index} has not started")
    return call.controller.service.pe_task(job.id, index, info.attempts[-1].number, petask)


ENDPOINTS = [
    Endpoint(Operation("POST", "/v1/jobs/{job_id}/pe-tasks",
                       "Start a task of a running parallel job on a host of its allocation (qrsh -inherit)",
                       api.PeTaskRequest, api.PeTaskInfo), Access.JOB, start),
    Endpoint(Operation("GET", "/v1/jobs/{job_id}/pe-tasks/{petask}", "A task of a running parallel job",
                       response=api.PeTaskInfo, query=(("task", "integer", "the job's task (0 by default)"),),
                       path_parameters=PETASK),
             Access.JOB, show),
    Endpoint(Operation("GET", "/v1/jobs/{job_id}/pe-tasks/{petask}/output",
                       "Part of a parallel job's task's output, read on its node as its owner",
                       response=api.OutputChunk,
                       query=(("stream", "string", "stdout (the default) or stderr"),
                              ("offset", "integer", "where to start, in bytes"),
                              ("limit", "integer", "at most this many bytes (at most 1 MiB)"),
                              ("task", "integer", "the job's task (0 by default)")),
                       path_parameters=PETASK),
             Access.JOB, read_output),
    Endpoint(Operation("DELETE", "/v1/jobs/{job_id}/pe-tasks/{petask}",
                       "Stop a task of a running parallel job (its caller, qrsh -inherit, was interrupted)",
                       response=api.PeTaskInfo, query=(("task", "integer", "the job's task (0 by default)"),),
                       path_parameters=PETASK),
             Access.JOB, stop),
]
