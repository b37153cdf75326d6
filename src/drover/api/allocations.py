"""Allocation queues (/v1/alloc/queues): nodes asked of an outer scheduler while work waits
(`drover alloc`, controller/allocations/). Admins only: they spend the site's allocation time."""

from __future__ import annotations

from starlette.responses import Response

from drover.api.endpoint import Call, Endpoint
from drover.api.http import json_response
from drover.api.openapi import Operation, whole
from drover.controller.allocations.allocator import Allocator
from drover.controller.security.auth import Access
from drover.core.errors import BadRequest, Conflict
from drover.core.limits import ascii_int
from drover.protocol import api

QUEUE_ID = (("queue_id", whole(1)),)


def _allocator(call: Call) -> Allocator:
    allocator = call.controller.service.allocator
    if allocator is None:
        raise Conflict("this controller does not serve other hosts, so no node can join it from an allocation: "
                       "start it with --listen ADDR:PORT (`drover up --listen`)")
    return allocator


def _queue_id(call: Call) -> int:
    queue_id = ascii_int(call.request.path_params["queue_id"], "an allocation queue's id")
    if queue_id <= 0:
        raise BadRequest("an allocation queue's id is 1 or more")
    return queue_id


async def add_queue(call: Call) -> Response:
    request = await call.body(api.AllocQueueRequest)
    return json_response(_allocator(call).add(request, call.user.user))


async def list_queues(call: Call) -> Response:
    return json_response(_allocator(call).queue_list())


async def queue_info(call: Call) -> Response:
    return json_response(_allocator(call).info(_queue_id(call)))


async def pause_queue(call: Call) -> Response:
    return json_response(_allocator(call).pause(_queue_id(call), True, call.user.user))


async def resume_queue(call: Call) -> Response:
    return json_response(_allocator(call).pause(_queue_id(call), False, call.user.user))


async def remove_queue(call: Call) -> Response:
    return json_response(await _allocator(call).remove(_queue_id(call), call.user.user))


ENDPOINTS = [
    Endpoint(Operation("POST", "/v1/alloc/queues", "Add an allocation queue: allocations asked of an outer "
                       "scheduler while work waits", request=api.AllocQueueRequest, response=api.AllocQueueInfo),
             Access.ADMIN, add_queue, admin_action="add allocation queues"),
    Endpoint(Operation("GET", "/v1/alloc/queues", "The allocation queues and their allocations",
                       response=api.AllocQueueList), Access.ADMIN, list_queues, admin_action="list allocation queues"),
    Endpoint(Operation("GET", "/v1/alloc/queues/{queue_id}", "One allocation queue and its allocations",
                       response=api.AllocQueueInfo, path_parameters=QUEUE_ID), Access.ADMIN, queue_info,
             admin_action="see allocation queues"),
    Endpoint(Operation("POST", "/v1/alloc/queues/{queue_id}/pause", "Ask for no new allocation",
                       response=api.AllocQueueInfo, path_parameters=QUEUE_ID), Access.ADMIN, pause_queue,
             admin_action="pause allocation queues"),
    Endpoint(Operation("POST", "/v1/alloc/queues/{queue_id}/resume", "Ask for allocations again (and end a "
                       "back-off)", response=api.AllocQueueInfo, path_parameters=QUEUE_ID), Access.ADMIN,
             resume_queue, admin_action="resume allocation queues"),
    Endpoint(Operation("DELETE", "/v1/alloc/queues/{queue_id}", "Remove an allocation queue: its allocations end",
                       response=api.AllocQueueInfo, path_parameters=QUEUE_ID), Access.ADMIN, remove_queue,
             admin_action="remove allocation queues"),
]
