"""The controller's ASGI app: the public HTTP + JSON API, one module per resource, and the
node channel (a WebSocket).

Each resource module (cluster, jobs, nodes, events, files) holds thin handlers and a table of
its endpoints; the table says the access each needs (endpoint.py checks it) and is the source
of the OpenAPI document. What the handlers read comes from the controller's read models
(controller/reads/queries.py); what they change goes through the controller's service.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from drover.api import (
    accounting,
    allocations,
    checkpoints,
    cluster,
    events,
    files,
    jobs,
    metrics,
    nodes,
    parallel_envs,
    pe_tasks,
    queues,
    relays,
    usage,
)
from drover.api.endpoint import Controller, Endpoint, route
from drover.api.http import json_response
from drover.api.node_channel import node_channel_route
from drover.api.openapi import openapi_document
from drover.controller.reads.queries import Reads
from drover.controller.security.auth import Policy
from drover.controller.security.membership import Membership
from drover.controller.service import ControllerService

ENDPOINTS: list[Endpoint] = [*cluster.ENDPOINTS, *jobs.ENDPOINTS, *nodes.ENDPOINTS, *queues.ENDPOINTS,
                             *events.ENDPOINTS, *files.ENDPOINTS, *relays.ENDPOINTS, *usage.ENDPOINTS,
                             *accounting.ENDPOINTS, *parallel_envs.ENDPOINTS, *checkpoints.ENDPOINTS,
                             *pe_tasks.ENDPOINTS, *metrics.ENDPOINTS, *allocations.ENDPOINTS]


def create_app(service: ControllerService, policy: Policy, shutdown: Callable[[], None],
               reads: Reads | None = None, membership: Membership | None = None, address: str = "") -> Starlette:
    """`policy` says who a request's peer is and what they may do (controller/security/auth.py);
    `shutdown` stops the server; `reads` answers the queries (its reading threads are the
    caller's to stop: Reads.close); `membership` serves hosts joining and leaving, and nodes
    over TLS; `address`: where clients and nodes reach this controller."""
    controller = Controller(service, reads if reads is not None else Reads(service), policy, shutdown, membership,
                            address)
    routes: list[Any] = [cluster.openapi_route(openapi_document([e.operation for e in ENDPOINTS]))]
    routes += [route(endpoint, controller) for endpoint in ENDPOINTS]
    routes.append(node_channel_route(service, policy, membership))
    routes.append(relays.terminal_route(controller))
    return Starlette(routes=routes, exception_handlers={HTTPException: _routing_error})


async def _routing_error(request: Request, error: Exception) -> Response:
    """No such path, or not that method on it: the same one-line JSON error as every other."""
    assert isinstance(error, HTTPException)
    if error.status_code == 405:
        message, kind = f"{request.url.path} does not take {request.method}", "bad_request"
    else:
        message, kind = f"no such path: {request.url.path}", "not_found"
    reply = json_response({"error": message, "kind": kind}, error.status_code)
    reply.headers.update(error.headers or {})  # a 405 says what the path allows
    return reply
