"""A task's output and terminal, reached through the node that runs it (controller/nodes/relays.py):

- GET /v1/jobs/{job_id}/tasks/{task}/output?stream=stdout&offset=N[&limit=M][&attempt=A]: part
  of the attempt's output file (the newest attempt unless `attempt` says), as the node reads it;
- /v1/jobs/{job_id}/tasks/{task}/terminal, a WebSocket: the running interactive attempt's
  terminal, in the frames of shepherd/pty_relay.py (binary messages both ways).

Both act with the owner's rights on the node, so both are the owner's alone (Policy.may_act_as_owner).
"""

from __future__ import annotations

import asyncio
import logging

from starlette.responses import Response
from starlette.routing import WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from drover.api.endpoint import Call, Controller, Endpoint, visible_job
from drover.api.http import int_query, job_id_of, json_response
from drover.api.openapi import Operation
from drover.api.remote_users import proven_peer
from drover.api.standby import refuse_channel, stopping_reply
from drover.controller.nodes.relays import Terminal
from drover.controller.security.auth import Access, Caller, TlsPeer
from drover.core.errors import BadRequest, DroverError, NotFound
from drover.core.limits import MAX_INDEX, ascii_int
from drover.protocol import api

log = logging.getLogger("drover.controller")
READ_LIMIT = 1 << 20
POLICY_VIOLATION = 1008


def _attempt(job: api.JobInfo, index: int, number: int | None) -> api.AttemptInfo:
    task = next((t for t in job.tasks if t.index == index), None)
    attempts = task.attempts if task is not None else []
    if not attempts:
        raise NotFound(f"task {job.id}.{index} has not started yet")
    found = attempts[-1] if number is None else next((a for a in attempts if a.number == number), None)
    if found is None:
        raise NotFound(f"task {job.id}.{index} has no attempt {number}")
    return found


async def read_output(call: Call) -> Response:
    assert call.job is not None
    job, params = call.job, call.request.query_params
    call.controller.policy.may_act_as_owner(call.user, job.owner, job.id, "reading its output on its node")
    index = ascii_int(call.request.path_params["task"], "the task index", MAX_INDEX)
    stream = params.get("stream", "stdout")
    if stream not in ("stdout", "stderr"):
        raise BadRequest("stream is stdout or stderr")
    offset = int_query(call.request, "offset", 0) or 0
    limit = min(int_query(call.request, "limit", READ_LIMIT) or READ_LIMIT, READ_LIMIT)
    attempt = _attempt(job, index, int_query(call.request, "attempt", None))
    answer = await call.controller.service.relays.read_output(
        attempt.node, f"{job.id}.{index}.{attempt.number}", stream, max(offset, 0), max(limit, 0))
    if answer.error is not None:
        raise NotFound(answer.error)
    return json_response(api.OutputChunk(node=attempt.node, attempt=attempt.number, offset=offset,
                                         data=answer.data, size=answer.size))


ENDPOINTS = [
    Endpoint(Operation("GET", "/v1/jobs/{job_id}/tasks/{task}/output",
                       "Part of a task's output file, read on its node as its owner", response=api.OutputChunk,
                       query=(("stream", "string", "stdout (the default) or stderr"),
                              ("offset", "integer", "where to start, in bytes"),
                              ("limit", "integer", "at most this many bytes (at most 1 MiB)"),
                              ("attempt", "integer", "which attempt (the newest by default)"))),
             Access.JOB, read_output),
]


def terminal_route(controller: Controller) -> WebSocketRoute:
    async def terminal(socket: WebSocket) -> None:
        stopping = controller.service.stopping
        if stopping is not None:  # as a standby answers: the user's command asks the next controller
            await refuse_channel(socket, *stopping_reply(stopping))
            return
        await socket.accept()  # before any refusal, so that the user reads why in the close frame
        try:
            # Read as every request reads (api/endpoint.py): from a working set that is whole,
            # reloaded first if it is due; else refused with the store's reason.
            controller.service.ready_to_read()
            caller = _caller(socket, controller)
            job = await visible_job(controller, caller, job_id_of(socket))
            controller.policy.may_act_as_owner(caller, job.owner, job.id, "its terminal")
            index = ascii_int(socket.path_params["task"], "the task index", MAX_INDEX)
            attempt = _attempt(job, index, None)
            if attempt.ended_at is not None or attempt.pty_socket is None:
                raise NotFound(f"task {job.id}.{index} has no terminal now (it ended, or is not interactive)")
            relay = controller.service.relays.open_terminal(attempt.node, f"{job.id}.{index}.{attempt.number}")
        except DroverError as error:
            await socket.close(code=POLICY_VIOLATION, reason=_fits_a_close_frame(str(error)))
            return
        try:
            await _pass_both_ways(socket, relay)
        finally:
            relay.close()

    return WebSocketRoute("/v1/jobs/{job_id}/tasks/{task}/terminal", terminal)


def _caller(socket: WebSocket, controller: Controller) -> Caller:
    policy = controller.policy
    state = socket.scope.get("state", {})
    peer = state.get("peer")
    if peer is None:  # over TCP (TLS): a user of another host, by the MUNGE credential sent along
        if not isinstance(state.get("tls"), TlsPeer):
            raise BadRequest("no peer")
        return policy.caller(proven_peer(socket, "GET", b"", policy.munge_socket), remote=True)
    return policy.caller(peer)


async def _pass_both_ways(socket: WebSocket, relay: Terminal) -> None:
    async def to_node() -> None:
        try:
            while True:
                relay.send(await socket.receive_bytes())
        except (WebSocketDisconnect, KeyError, RuntimeError):
            return  # the user went (or sent something that is not bytes)

    upstream = asyncio.get_running_loop().create_task(to_node())
    try:
        while (data := await relay.output.get()) is not None:
            await socket.send_bytes(data)
        await socket.close(code=1000, reason=_fits_a_close_frame(relay.why))
    except (WebSocketDisconnect, RuntimeError):
        pass
    finally:
        upstream.cancel()


def _fits_a_close_frame(text: str) -> str:
    """A close frame's reason holds at most 123 bytes of UTF-8."""
    data = text.encode()
    return text if len(data) <= 123 else data[:120].decode(errors="ignore") + "..."
