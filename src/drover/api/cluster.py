"""The cluster as a whole: who serves the API (/v1/ping, /v1/health), its OpenAPI document (/openapi.json),
stopping the controller (/v1/shutdown), and its membership: the CA's certificate, hosts joining
by token and nodes leaving (over TLS), and the join tokens admins make (/v1/cluster/...)."""

from __future__ import annotations

import asyncio
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from drover import __version__
from drover.api.endpoint import Call, Endpoint
from drover.api.http import decode, json_response
from drover.api.openapi import Operation
from drover.controller.security.auth import Access
from drover.controller.security.membership import Membership
from drover.core.errors import Conflict
from drover.protocol import api


async def ping(call: Call) -> Response:
    user = call.caller.user if call.caller is not None else ""
    return json_response(api.Ping(version=__version__, api="v1", user=user,
                                  started_at=call.controller.service.started_at,
                                  min_job_age_s=call.controller.service.settings.min_job_age_s))


async def health(call: Call) -> Response:
    """The active controller's answer; a standby gives its own (api/standby.py)."""
    address = call.controller.address
    return json_response(api.Health(role="active", address=address, active=address))


async def shutdown(call: Call) -> Response:
    # On the next turn of the loop, so that this reply goes first: the server then stops
    # taking requests and lets those in flight finish.
    asyncio.get_running_loop().call_soon(call.controller.shutdown)
    return json_response({"stopping": True})


def _membership(call: Call) -> Membership:
    if call.controller.membership is None:
        raise Conflict("this controller started before the cluster had its CA: run `drover cluster init`, "
                          "then restart the controller with --listen ADDR:PORT (`drover up --listen`)")
    return call.controller.membership


async def ca_certificate(call: Call) -> Response:
    return json_response(_membership(call).ca_certificate())


JOIN_REQUEST_BYTES = 65536  # a token, a name and a signing request: anyone may send one, so little is read


async def join(call: Call) -> Response:
    request = await decode(call.request, api.JoinRequest, JOIN_REQUEST_BYTES)
    return json_response(_membership(call).join(request, call.peer_address))


async def leave(call: Call) -> Response:
    assert call.node is not None
    return json_response(_membership(call).leave(call.node, call.peer_address))


async def create_token(call: Call) -> Response:
    request = await call.body(api.TokenRequest)
    return json_response(_membership(call).create_token(request, call.user.user))


async def list_tokens(call: Call) -> Response:
    return json_response(api.TokenList(tokens=_membership(call).tokens()))


async def revoke_token(call: Call) -> Response:
    return json_response(_membership(call).revoke_token(call.request.path_params["token_id"], call.user.user))


def openapi_route(document: dict[str, Any]) -> Route:
    """The document describes the API to anyone, over any socket: it holds no one's data."""

    async def openapi(request: Request) -> Response:
        return json_response(document)

    return Route("/openapi.json", openapi, methods=["GET"])


ENDPOINTS = [
    Endpoint(Operation("GET", "/v1/ping", "Who serves this API, and as whom", response=api.Ping), Access.ANYONE, ping),
    Endpoint(Operation("GET", "/v1/health", "Whether this controller is the active one or a standby, and where "
                       "the active one is", response=api.Health), Access.ANYONE, health),
    Endpoint(Operation("POST", "/v1/shutdown", "Stop the controller gracefully"), Access.ADMIN, shutdown,
             admin_action="stop a shared cluster"),
    Endpoint(Operation("GET", "/v1/cluster/ca", "The cluster's CA certificate and its SHA-256 fingerprint",
                       response=api.CaCertificate), Access.ANYONE, ca_certificate),
    Endpoint(Operation("POST", "/v1/cluster/join", "Join a host as a node, by token: its certificate for its "
                       "signing request", request=api.JoinRequest, response=api.JoinReply), Access.ANYONE, join),
    Endpoint(Operation("POST", "/v1/cluster/leave", "The node of the client certificate leaves the cluster",
                       response=api.LeaveReply), Access.NODE, leave),
    Endpoint(Operation("POST", "/v1/cluster/tokens", "Make a join token", request=api.TokenRequest,
                       response=api.TokenCreated), Access.ADMIN, create_token, admin_action="make join tokens"),
    Endpoint(Operation("GET", "/v1/cluster/tokens", "The join tokens (never their secrets)",
                       response=api.TokenList), Access.ADMIN, list_tokens, admin_action="list join tokens"),
    Endpoint(Operation("POST", "/v1/cluster/tokens/{token_id}/revoke", "Revoke a join token",
                       response=api.TokenInfo), Access.ADMIN, revoke_token, admin_action="revoke join tokens"),
]
