"""The controller's ASGI app: the public HTTP + JSON API and the node channel (a WebSocket)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import msgspec
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from drover import __version__
from drover.api.openapi import Operation, openapi_document
from drover.controller import staged_files, views
from drover.controller.auth import Access, Caller, Policy
from drover.controller.handlers.actions import ACTIONS
from drover.controller.node_channels import NodeChannel
from drover.controller.service import ControllerService
from drover.core.errors import BadRequest, DroverError, NotFound, PayloadTooLarge
from drover.core.limits import ascii_int, refuse
from drover.protocol import api
from drover.protocol.node_channel import Hello, node_decoder
from drover.store.base import JobFilter

log = logging.getLogger("drover.controller")
_encode = msgspec.json.Encoder().encode


def json_response(value: Any, status: int = 200) -> Response:
    return Response(_encode(value), status_code=status, media_type="application/json")


def error_response(error: DroverError) -> Response:
    return json_response({"error": str(error), "kind": error.kind}, error.http_status)


@dataclass(frozen=True, slots=True)
class Call:
    """A request that passed its endpoint's access check: who made it, and the job its path
    names (for Access.JOB endpoints), already checked to be theirs to see."""

    request: Request
    caller: Caller | None  # None only for an Access.ANYONE endpoint reached over TCP
    job: api.JobInfo | None = None

    @property
    def user(self) -> Caller:
        assert self.caller is not None, "an endpoint that needs a user is declared Access.USER or stricter"
        return self.caller


Endpoint = Callable[[Call], Awaitable[Response]]


def create_app(service: ControllerService, policy: Policy, shutdown: Callable[[], None]) -> Starlette:
    """`policy` says who a request's peer is and what they may do (controller/auth.py). Each
    endpoint declares the access it needs in the table below; `guarded` checks it before the
    endpoint runs, and finer decisions (each job of an action, whose jobs a listing shows) are
    asked of the same policy."""

    def guarded(access: Access, endpoint: Endpoint, admin_action: str = "") -> Callable[[Request], Awaitable[Response]]:
        async def checked(request: Request) -> Response:
            try:
                peer = request.scope.get("state", {}).get("peer")
                if access is Access.ANYONE and peer is None:
                    return await endpoint(Call(request, None))
                caller = policy.caller(peer)
                if access is Access.ADMIN:
                    policy.may_administer(caller, admin_action)
                job = find_job(job_id_of(request), caller) if access is Access.JOB else None
                return await endpoint(Call(request, caller, job))
            except DroverError as error:
                return error_response(error)
            except msgspec.ValidationError as error:
                return error_response(BadRequest(f"bad request: {error}"))
            except msgspec.DecodeError as error:
                return error_response(BadRequest(f"bad request: not valid JSON ({error})"))

        return checked

    async def decode(request: Request, model: type[Any]) -> Any:
        return msgspec.json.decode(await body_within_limit(request), type=model)

    async def body_within_limit(request: Request) -> bytes:
        """The request's body, read no further than the cluster's limit: a body that claims or
        turns out to be larger is refused (413) before it is all in memory."""
        limit = service.settings.limits.max_request_bytes
        too_big = refuse("the request body", limit, "max_request_bytes", "bytes")
        declared = request.headers.get("content-length", "")
        if declared.isascii() and declared.isdigit() and int(declared) > limit:
            raise PayloadTooLarge(str(too_big))
        chunks, size = [], 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise PayloadTooLarge(str(too_big))
            chunks.append(chunk)
        return b"".join(chunks)

    def int_query(request: Request, name: str, default: int | None) -> int | None:
        value = request.query_params.get(name)
        if value is None or value == "":
            return default
        return ascii_int(value, f"query parameter {name}")

    def unix_time(text: str, what: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise BadRequest(f"{what} must be a Unix time in seconds, not {text!r}") from None
        if not 0 <= value < 2**40:  # also refuses nan and inf
            raise BadRequest(f"{what} must be a Unix time in seconds, not {text!r}")
        return value

    def job_id_of(request: Request) -> int:
        job_id = ascii_int(request.path_params["job_id"], "a job id")
        if job_id <= 0:
            raise BadRequest("a job id must be 1 or more")
        return job_id

    def find_job(job_id: int, caller: Caller) -> api.JobInfo:
        job = service.state.jobs.get(job_id) or service.store.load_job(job_id)
        if job is None:
            raise NotFound(f"job {job_id} does not exist")
        policy.may_touch(caller, job.owner, job_id)
        return views.job_info(service.state, job, with_tasks=True, store=service.store)

    async def ping(call: Call) -> Response:
        user = call.caller.user if call.caller is not None else ""
        return json_response(api.Ping(version=__version__, api="v1", user=user, started_at=service.started_at))

    async def openapi(request: Request) -> Response:
        return json_response(document)

    async def submit(call: Call) -> Response:
        policy.may_submit(call.user)
        body: api.SubmitRequest = await decode(call.request, api.SubmitRequest)
        if not body.jobs:
            raise BadRequest("the request holds no jobs")
        for job in body.jobs:
            policy.may_raise_priority(call.user, job.priority)
        # The owner is the peer; the request has no field that could say otherwise.
        return json_response(api.SubmitReply(ids=service.submit(body.jobs, call.user.user)))

    async def list_jobs(call: Call) -> Response:
        request = call.request
        params = request.query_params
        states = [s for s in params.get("state", "").split(",") if s]
        query = JobFilter(
            states=states, owner=policy.whose_jobs(call.user, params.get("user")),
            name=params.get("name") or None,
            include_ended=params.get("all") in ("1", "true"), limit=int_query(request, "limit", 1000) or 1000,
        )
        jobs = [
            views.job_info(service.state, job)
            for job in sorted(service.state.jobs.values(), key=lambda job: job.id)
            if (query.owner is None or job.owner == query.owner) and (query.name is None or job.name == query.name)
        ]
        if query.include_ended:
            ended = [views.job_info(service.state, job) for job in service.store.list_ended_jobs(query)]
            jobs = sorted(ended + jobs, key=lambda info: info.id)
        if states:
            jobs = [info for info in jobs if info.state in states or any(info.task_counts.get(s) for s in states)]
        return json_response(api.JobList(jobs=jobs[-query.limit:]))

    async def show_job(call: Call) -> Response:
        return json_response(call.job)

    async def wait_job(call: Call) -> Response:
        assert call.job is not None
        timeout = min(max(int_query(call.request, "timeout", 30) or 0, 0), 300)
        ended = await service.wait_for_end(call.job.id, timeout)
        return json_response({"ended": ended, "job": find_job(call.job.id, call.user)})

    async def action(call: Call) -> Response:
        name = call.request.path_params["action"]
        if name not in ACTIONS:
            raise NotFound(f"unknown action {name!r}; known: {', '.join(ACTIONS)}")
        caller = call.user
        body: api.ActionRequest = await decode(call.request, api.ActionRequest)
        if name == "alter" and body.priority is not None:
            policy.may_raise_priority(caller, body.priority)

        def may_touch(owner: str, job_id: int, verb: str) -> None:
            policy.may_touch(caller, owner, job_id, verb)

        return json_response(api.ActionReply(
            results=service.act(name, body.refs, may_touch, body.signal, body.priority)))

    async def history(call: Call) -> Response:
        request = call.request
        params = request.query_params
        since = params.get("since")
        rows = service.store.history(
            policy.whose_jobs(call.user, params.get("user")), int_query(request, "limit", 100) or 100,
            unix_time(since, "query parameter since") if since else None,
        )
        return json_response(api.History(rows=[views.history_row(*row) for row in rows]))

    async def nodes(call: Call) -> Response:
        return json_response(api.NodeList(nodes=views.node_info(service.state)))

    async def events(call: Call) -> Response:
        request = call.request
        job, after = int_query(request, "job", None), int_query(request, "after", 0) or 0
        if job is not None:
            find_job(job, call.user)
        else:
            policy.may_administer(call.user, "read the whole cluster's event log; name one of your jobs")
        limit = int_query(request, "limit", 1000) or 1000
        wait = min(max(int_query(request, "wait", 0) or 0, 0), 300)
        found = service.store.events_of(job, after, limit)
        if not found and wait:
            loop = asyncio.get_running_loop()
            deadline = loop.time() + wait
            while not found and loop.time() < deadline:
                await service.wait_for_events(deadline - loop.time())
                found = service.store.events_of(job, after, limit)
        return json_response(api.EventList(events=[
            api.Event(seq=seq, time=e.time, job_id=e.job_id, index=e.index, attempt=e.attempt,
                      kind=e.kind, detail=e.detail)
            for seq, e in found
        ]))

    async def files(call: Call) -> Response:
        assert call.job is not None
        kept = staged_files.listing(service.settings.files_dir, call.job.id)
        return json_response(api.FileList(files=[
            api.FileInfo(task=task, attempt=attempt, name=name, size=size) for task, attempt, name, size in kept
        ]))

    async def file(call: Call) -> Response:
        assert call.job is not None
        params = call.request.path_params
        try:
            index, attempt = int(params["task"]), int(params["attempt"])
        except ValueError:
            raise BadRequest("task and attempt are numbers") from None
        data = staged_files.read(service.settings.files_dir, call.job.id, index, attempt, params["name"])
        return Response(data, media_type="application/octet-stream")

    async def resume_node(call: Call) -> Response:
        service.resume_node(call.request.path_params["name"])
        return json_response(api.NodeList(nodes=views.node_info(service.state)))

    async def stop(call: Call) -> Response:
        asyncio.get_running_loop().call_soon(shutdown)
        return json_response({"stopping": True})

    async def node_channel(socket: WebSocket) -> None:
        if not policy.may_be_node(socket.scope.get("state", {}).get("peer")):
            await socket.close(code=1008)  # policy violation: only root or the daemon's user run nodes
            return
        await socket.accept()
        channel: NodeChannel | None = None
        try:
            first = node_decoder.decode(await socket.receive_bytes())
            if len(first) != 1 or not isinstance(first[0], Hello):
                await socket.close(code=1002)
                return
            hello = first[0]
            channel = NodeChannel(hello.node, socket)
            previous = service.node_connected(channel, hello)
            if previous is not None:
                await previous.close()
            while True:
                service.node_messages(hello.node, node_decoder.decode(await socket.receive_bytes()))
        except WebSocketDisconnect:
            pass
        except Exception:
            log.exception("node channel failed")
        finally:
            if channel is not None:
                await channel.close()
                service.node_disconnected(channel)

    # Every endpoint with the access it needs (controller/auth.py decides what each means).
    table: list[tuple[Operation, Access, Endpoint]] = [
        (Operation("GET", "/v1/ping", "Who serves this API, and as whom", response=api.Ping), Access.ANYONE, ping),
        (Operation("POST", "/v1/jobs", "Submit jobs (many in one request, one transaction)",
                   api.SubmitRequest, api.SubmitReply), Access.USER, submit),
        (Operation("GET", "/v1/jobs", "List jobs (a user's own; admins choose whose)", response=api.JobList, query=(
            ("state", "string", "comma-separated task states"), ("user", "string", "owner (admins only)"),
            ("name", "string", "job name"), ("all", "boolean", "include ended jobs"),
            ("limit", "integer", "at most this many, newest"))), Access.USER, list_jobs),
        (Operation("GET", "/v1/jobs/{job_id}", "A job, its tasks and every attempt",
                   response=api.JobInfo), Access.JOB, show_job),
        (Operation("GET", "/v1/jobs/{job_id}/wait", "Wait until a job ends (long poll)",
                   query=(("timeout", "integer", "seconds, at most 300"),)), Access.JOB, wait_job),
        (Operation("POST", "/v1/jobs/actions/{action}", "cancel, hold, release, suspend, resume or signal jobs or tasks",
                   api.ActionRequest, api.ActionReply), Access.USER, action),
        (Operation("GET", "/v1/history", "Ended attempts with their usage", response=api.History,
                   query=(("user", "string", "owner (admins only)"), ("limit", "integer", "rows"),
                          ("since", "number", "Unix time"))), Access.USER, history),
        (Operation("GET", "/v1/nodes", "Nodes and what they run", response=api.NodeList), Access.USER, nodes),
        (Operation("POST", "/v1/nodes/{name}/resume", "Clear a node's ERROR: it takes work again",
                   response=api.NodeList), Access.ADMIN, resume_node),
        (Operation("GET", "/v1/events", "The event log", response=api.EventList, query=(
            ("job", "integer", "one job's events"), ("after", "integer", "sequence number"),
            ("limit", "integer", "rows"), ("wait", "integer", "seconds to wait for new events"))), Access.USER, events),
        (Operation("GET", "/v1/jobs/{job_id}/files", "Files a job staged out, kept by the controller",
                   response=api.FileList), Access.JOB, files),
        (Operation("GET", "/v1/jobs/{job_id}/files/{task}/{attempt}/{name:path}", "One staged-out file (bytes)"),
         Access.JOB, file),
        (Operation("POST", "/v1/shutdown", "Stop the controller gracefully"), Access.ADMIN, stop),
    ]
    admin_actions = {"/v1/nodes/{name}/resume": "resume nodes", "/v1/shutdown": "stop a shared cluster"}
    document = openapi_document([op for op, _, _ in table])
    routes: list[Any] = [Route("/openapi.json", openapi, methods=["GET"])]
    routes += [Route(op.path, guarded(access, endpoint, admin_actions.get(op.path, "")), methods=[op.method])
               for op, access, endpoint in table]
    routes.append(WebSocketRoute("/v1/nodes/channel", node_channel))
    return Starlette(routes=routes)
