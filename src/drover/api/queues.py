"""Queues (/v1/queues): every queue with its state, settings and load; operators (and a queue's
owner, for what is theirs) stop, start and drain them and change their settings; where the
cluster allows it, users make queues of their own. controller/handlers/queues.py decides who may
do what."""

from __future__ import annotations

from starlette.responses import Response

from drover.api.endpoint import Call, Endpoint
from drover.api.http import json_response
from drover.api.openapi import Operation
from drover.controller.security.auth import Access
from drover.core.errors import BadRequest, NotFound
from drover.protocol import api


async def list_queues(call: Call) -> Response:
    return json_response(api.QueueList(queues=call.controller.reads.queues()))


def _one(call: Call, name: str) -> Response:
    for queue in call.controller.reads.queues():
        if queue.name == name:
            return json_response(queue)
    raise NotFound(f"queue {name!r} does not exist")


async def create_queue(call: Call) -> Response:
    request = await call.body(api.QueueRequest)
    if not request.name:
        raise BadRequest("give the new queue's name")
    call.controller.service.create_queue(request.name, request.settings, call.user)
    return _one(call, request.name)


async def change_queue(call: Call) -> Response:
    request = await call.body(api.QueueRequest)
    name = call.request.path_params["name"]
    if request.name and request.name != name:
        raise BadRequest("a queue cannot be renamed")
    call.controller.service.change_queue(name, request.settings, call.user)
    return _one(call, name)


async def switch_queue(call: Call) -> Response:
    request = await call.body(api.QueueStateRequest)
    name = call.request.path_params["name"]
    call.controller.service.switch_queue(name, call.request.path_params["action"], request.reason, call.user)
    return _one(call, name)


async def suspend_queue(call: Call) -> Response:
    """Its instance on request.node, or on every node (Grid Engine's qmod -sq)."""
    request = await call.body(api.QueueSuspensionRequest)
    name = call.request.path_params["name"]
    call.controller.service.suspend_queue(name, request.node, request.reason, call.user)
    return _one(call, name)


async def unsuspend_queue(call: Call) -> Response:
    request = await call.body(api.QueueSuspensionRequest)
    name = call.request.path_params["name"]
    call.controller.service.unsuspend_queue(name, request.node, call.user)
    return _one(call, name)


async def delete_queue(call: Call) -> Response:
    call.controller.service.delete_queue(call.request.path_params["name"], call.user)
    return json_response(api.QueueList(queues=call.controller.reads.queues()))


ENDPOINTS = [
    Endpoint(Operation("GET", "/v1/queues", "Queues: their state, settings and what they hold", response=api.QueueList),
             Access.USER, list_queues),
    Endpoint(Operation("POST", "/v1/queues", "Make a queue (operators; users where [controller] user_queues allows)",
                       request=api.QueueRequest, response=api.QueueInfo), Access.USER, create_queue),
    Endpoint(Operation("POST", "/v1/queues/{name}", "Change a queue's settings (its owner, or an operator)",
                       request=api.QueueRequest, response=api.QueueInfo), Access.USER, change_queue),
    # Before /v1/queues/{name}/{action}, which would take these paths too.
    Endpoint(Operation("POST", "/v1/queues/{name}/suspend", "Suspend a queue on a node (queue@node) or on every "
                       "node: its jobs there are frozen and none starts there (its owner, or an operator)",
                       request=api.QueueSuspensionRequest, response=api.QueueInfo), Access.USER, suspend_queue),
    Endpoint(Operation("POST", "/v1/queues/{name}/unsuspend", "Unsuspend a queue on a node, or wherever it is "
                       "suspended (its owner, or an operator)", request=api.QueueSuspensionRequest,
                       response=api.QueueInfo), Access.USER, unsuspend_queue),
    Endpoint(Operation("POST", "/v1/queues/{name}/{action}", "stop, start or drain a queue (its owner, or an "
                       "operator)", request=api.QueueStateRequest, response=api.QueueInfo), Access.USER, switch_queue),
    Endpoint(Operation("DELETE", "/v1/queues/{name}", "Remove a queue made with POST /v1/queues, once it has no "
                       "jobs", response=api.QueueList), Access.USER, delete_queue),
]
