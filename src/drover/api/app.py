"""The controller's ASGI app: the public HTTP + JSON API, one module per resource, and the
node channel (a WebSocket).

Each resource module (cluster, jobs, nodes, events, files) holds thin handlers and a table of
its endpoints; the table says the access each needs (endpoint.py checks it) and is the source
of the OpenAPI document. What the handlers read comes from the controller's read models
(controller/reads.py); what they change goes through the controller's service.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from starlette.applications import Starlette

from drover.api import cluster, events, files, jobs, nodes
from drover.api.endpoint import Controller, Endpoint, route
from drover.api.node_channel import node_channel_route
from drover.api.openapi import openapi_document
from drover.controller.auth import Policy
from drover.controller.membership import Membership
from drover.controller.reads import Reads
from drover.controller.service import ControllerService

ENDPOINTS: list[Endpoint] = [*cluster.ENDPOINTS, *jobs.ENDPOINTS, *nodes.ENDPOINTS, *events.ENDPOINTS,
                             *files.ENDPOINTS]


def create_app(service: ControllerService, policy: Policy, shutdown: Callable[[], None],
               membership: Membership | None = None) -> Starlette:
    """`policy` says who a request's peer is and what they may do (controller/auth.py);
    `shutdown` stops the server; `membership` serves hosts joining and leaving, and nodes over TLS."""
    controller = Controller(service, Reads(service), policy, shutdown, membership)
    routes: list[Any] = [cluster.openapi_route(openapi_document([e.operation for e in ENDPOINTS]))]
    routes += [route(endpoint, controller) for endpoint in ENDPOINTS]
    routes.append(node_channel_route(service, policy, membership))
    return Starlette(routes=routes)
