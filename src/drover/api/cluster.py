"""The cluster as a whole: who serves the API (/v1/ping), its OpenAPI document (/openapi.json),
and stopping the controller (/v1/shutdown)."""

from __future__ import annotations

import asyncio
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from drover import __version__
from drover.api.endpoint import Call, Endpoint
from drover.api.http import json_response
from drover.api.openapi import Operation
from drover.controller.auth import Access
from drover.protocol import api


async def ping(call: Call) -> Response:
    user = call.caller.user if call.caller is not None else ""
    return json_response(api.Ping(version=__version__, api="v1", user=user,
                                  started_at=call.controller.service.started_at))


async def shutdown(call: Call) -> Response:
    # On the next turn of the loop, so that this reply goes first: the server then stops
    # taking requests and lets those in flight finish.
    asyncio.get_running_loop().call_soon(call.controller.shutdown)
    return json_response({"stopping": True})


def openapi_route(document: dict[str, Any]) -> Route:
    """The document describes the API to anyone, over any socket: it holds no one's data."""

    async def openapi(request: Request) -> Response:
        return json_response(document)

    return Route("/openapi.json", openapi, methods=["GET"])


ENDPOINTS = [
    Endpoint(Operation("GET", "/v1/ping", "Who serves this API, and as whom", response=api.Ping), Access.ANYONE, ping),
    Endpoint(Operation("POST", "/v1/shutdown", "Stop the controller gracefully"), Access.ADMIN, shutdown,
             admin_action="stop a shared cluster"),
]
