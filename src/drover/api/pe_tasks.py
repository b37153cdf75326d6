"""Tasks of a running parallel job on the hosts of its allocation (controller/pe_tasks.py):

- POST /v1/jobs/{job_id}/pe-tasks {host, argv, task?, cwd?, env?}: start one; the job's owner
  alone, while the job runs, on a host of its attempt, in a PE with control_slaves = true;
- GET /v1/jobs/{job_id}/pe-tasks/{petask}[?task=N]: how it is (its exit status once it ended);
- GET /v1/jobs/{job_id}/pe-tasks/{petask}/output?stream=stdout&offset=N: part of its output,
  read on its node as the owner (the relay `drover logs` and `drover run` use);
- DELETE /v1/jobs/{job_id}/pe-tasks/{petask}[?task=N]: stop it (its caller was interrupted, as
  Grid Engine's qrsh forwards its signals); the job's owner alone, as for the others.

`qrsh -inherit HOST CMD` and `drover task start HOST -- CMD` call them from inside the job.
"""

from __future__ import annotations

import msgspec
from starlette.responses import Response

from drover.api.endpoint import Call, Endpoint
from drover.api.http import int_query, json_response
from drover.api.openapi import Operation, whole
from drover.controller.auth import Access
from drover.controller.pe_tasks import PeTask, PeTasks
from drover.core.errors import BadRequest, NotFound
from drover.core.limits import MAX_INDEX, ascii_int
from drover.protocol import api

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
    return json_response(info(call.job.id, request.task, attempt.number, task))


async def show(call: Call) -> Response:
    job_id, index, number, task = _task(call)
    return json_response(info(job_id, index, number, task))


async def read_output(call: Call) -> Response:
    job_id, index, number, task = _task(call)
    params = call.request.query_params
    stream = params.get("stream", "stdout")
    if stream not in ("stdout", "stderr"):
        raise BadRequest("stream is stdout or stderr")
    offset = max(int_query(call.request, "offset", 0) or 0, 0)
    limit = max(min(int_query(call.request, "limit", READ_LIMIT) or READ_LIMIT, READ_LIMIT), 0)
    answer = await call.controller.service.relays.read_output(task.host, f"{job_id}.{index}.{number}", stream,
                                                              offset, limit, task.petask)
    if answer.error is not None:
        raise NotFound(answer.error)
    return json_response(api.OutputChunk(node=task.host, attempt=number, offset=offset, data=answer.data,
                                         size=answer.size))


async def stop(call: Call) -> Response:
    job_id, index, number, task = _task(call)
    stopped = call.controller.service.stop_pe_task(f"{job_id}.{index}.{number}", task.petask)
    return json_response(info(job_id, index, number, stopped))


def _task(call: Call) -> tuple[int, int, int, PeTask]:
    assert call.job is not None
    job = call.job
    call.controller.policy.may_act_as_owner(call.user, job.owner, job.id, "its tasks")
    index = int_query(call.request, "task", 0) or 0
    petask = str(ascii_int(call.request.path_params["petask"], "a task id", MAX_INDEX))
    info = next((t for t in job.tasks if t.index == index), None)
    if info is None or not info.attempts:
        raise NotFound(f"job {job.id}.{index} has not started")
    number = info.attempts[-1].number
    return job.id, index, number, call.controller.service.pe_tasks.find(f"{job.id}.{index}.{number}", petask)


def info(job_id: int, index: int, number: int, task: PeTask) -> api.PeTaskInfo:
    status = task.exit_status
    shown = None
    if status is not None:
        shown = (status["exit_code"] if status["exit_code"] is not None
                 else 128 + status["signal"] if status["signal"] is not None else 1)
    return api.PeTaskInfo(job_id=job_id, task=index, attempt=number, petask=task.petask, host=task.host,
                          argv=task.argv, started_at=task.started_at, ended_at=task.ended_at,
                          exit_code=status["exit_code"] if status else None,
                          signal=status["signal"] if status else None,
                          failure=status["failure"] if status else None, exit_status=shown,
                          usage=msgspec.convert(task.usage, api.Usage) if task.usage else None)


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


def with_tasks(job: api.JobInfo, tasks: PeTasks) -> api.JobInfo:
    """`job` with the tasks its running attempts started on their hosts (`drover show`)."""
    if not tasks.attempts:
        return job
    for task in job.tasks:
        for attempt in task.attempts:
            found = tasks.attempts.get(f"{job.id}.{task.index}.{attempt.number}")
            if found is not None:
                attempt.pe_tasks = [info(job.id, task.index, attempt.number, t) for t in found.tasks.values()]
    return job
