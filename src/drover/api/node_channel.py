"""The node channel (/v1/nodes/channel): the WebSocket each execd keeps open to the controller.
The first frame is the node's hello; then the node's reports flow in and the controller's orders
flow out (controller/node_channels.py), until either side goes."""

from __future__ import annotations

import logging

from starlette.routing import WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from drover.controller.auth import Policy
from drover.controller.node_channels import NodeChannel
from drover.controller.service import ControllerService
from drover.protocol.node_channel import Hello, node_decoder

log = logging.getLogger("drover.controller")


def node_channel_route(service: ControllerService, policy: Policy) -> WebSocketRoute:
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

    return WebSocketRoute("/v1/nodes/channel", node_channel)
