"""What a controller serves while it is not the active one (store/leadership.py): its health,
and to every other request, node channels included, a 503 that names the active controller, so
that clients and nodes go there instead. It never answers from what it knows: it knows nothing
until it takes over and reads the store.

`RoleSwitch` is the app the servers run from the start: the standby's answers until the
controller takes over, then the whole API, without closing a socket in between.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send
from starlette.websockets import WebSocket

from drover.api.http import json_response
from drover.controller.ha.standing import Standing
from drover.core.errors import DroverError
from drover.protocol import api

HEALTH_PATH = "/v1/health"
# A node channel refused where the server cannot send an HTTP answer to a WebSocket handshake:
# RFC 6455's "try again later".
TRY_AGAIN_LATER = 1013


def standby_app(standing: Standing) -> ASGIApp:
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            request = Request(scope, receive)
            if request.url.path == HEALTH_PATH and request.method == "GET":
                response: Response = json_response(standing.health())
            else:
                reply, status = standing.refusal()
                response = json_response(reply, status)
            await response(scope, receive, send)
        elif scope["type"] == "websocket":
            await refuse_channel(WebSocket(scope, receive, send), *standing.refusal())

    return app


async def refuse_channel(socket: WebSocket, reply: api.ErrorReply, status: int) -> None:
    """A WebSocket (a node's channel, a terminal) refused before it is accepted, as a standby
    refuses it: an HTTP answer to the handshake where the server can send one (the node reads
    `active` from it), else a close frame that says why."""
    if "websocket.http.response" in socket.scope.get("extensions", {}):
        await socket.send_denial_response(json_response(reply, status))
    else:
        await socket.close(code=TRY_AGAIN_LATER, reason=reply.error[:120])


def stopping_reply(why: DroverError) -> tuple[api.ErrorReply, int]:
    """What a controller that has begun to stop answers a channel: the reason it stops, in a
    standby's words where another controller may serve next (kind "standby", naming no one)."""
    return api.ErrorReply(error=str(why), kind=why.kind, active=getattr(why, "active", None)), why.http_status


class RoleSwitch:
    """The servers' app: `standby` until `become` hands it the active controller's."""

    def __init__(self, standby: ASGIApp) -> None:
        self.app = standby

    def become(self, active: ASGIApp) -> None:
        self.app = active

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app(scope, receive, send)
