"""Nodes (/v1/nodes): what each offers and runs; an admin drains a node, or clears its drain, its
ERROR or the errors of the queues on it. The nodes' own connection to the controller is the node channel (node_channel.py)."""

from __future__ import annotations

from starlette.responses import Response

from drover.api.endpoint import Call, Endpoint
from drover.api.http import json_response
from drover.api.openapi import Operation
from drover.controller.security.auth import Access
from drover.protocol import api


async def list_nodes(call: Call) -> Response:
    return json_response(api.NodeList(nodes=call.controller.reads.nodes()))


async def resume_node(call: Call) -> Response:
    call.controller.service.resume_node(call.request.path_params["name"])
    return json_response(api.NodeList(nodes=call.controller.reads.nodes()))


async def clear_queue_error(call: Call) -> Response:
    params = call.request.path_params
    call.controller.service.resume_node(params["name"], params["queue"])
    return json_response(api.NodeList(nodes=call.controller.reads.nodes()))


async def drain_node(call: Call) -> Response:
    request = await call.body(api.DrainRequest)
    call.controller.service.drain_node(call.request.path_params["name"], request.reason)
    return json_response(api.NodeList(nodes=call.controller.reads.nodes()))


ENDPOINTS = [
    Endpoint(Operation("GET", "/v1/nodes", "Nodes and what they run", response=api.NodeList), Access.USER, list_nodes),
    Endpoint(Operation("POST", "/v1/nodes/{name}/resume", "Clear a node's ERROR or drain: it takes work again",
                       response=api.NodeList), Access.ADMIN, resume_node, admin_action="resume nodes"),
    Endpoint(Operation("POST", "/v1/nodes/{name}/queues/{queue}/clear",
                       "Clear a queue's error on a node (queue@node): the queue's jobs start there again",
                       response=api.NodeList), Access.ADMIN, clear_queue_error, admin_action="clear queue errors"),
    Endpoint(Operation("POST", "/v1/nodes/{name}/drain", "Drain a node: it starts nothing new, and is DRAINED once "
                       "idle", request=api.DrainRequest, response=api.NodeList), Access.ADMIN, drain_node,
             admin_action="drain nodes"),
]
