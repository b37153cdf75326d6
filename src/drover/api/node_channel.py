"""The node channel (/v1/nodes/channel): the WebSocket each execd keeps open to the controller.
The first frame is the node's hello; then the node's reports flow in and the controller's orders
flow out (controller/nodes/node_channels.py), until either side goes.

On the local socket a node is root or the daemon's own user. Over TLS it is the node its client
certificate names: a hello under any other name is refused (one node cannot speak for another),
and so is a certificate the controller revoked; each refusal is logged with the peer's address.
"""

from __future__ import annotations

import logging
from typing import Any

from starlette.routing import WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from drover.api.admission import SLOT, Slot
from drover.api.standby import refuse_channel, stopping_reply
from drover.controller.nodes.node_channels import NodeChannel
from drover.controller.security.auth import Policy, TlsPeer
from drover.controller.security.membership import Membership
from drover.controller.service import ControllerService
from drover.protocol.node_channel import Hello, node_decoder

log = logging.getLogger("drover.controller")
POLICY_VIOLATION = 1008


def node_channel_route(service: ControllerService, policy: Policy, membership: Membership | None = None) -> WebSocketRoute:
    def refusal(state: dict[str, Any]) -> str | None:
        """Why this connection may not be a node at all, or None."""
        tls = state.get("tls")
        if isinstance(tls, TlsPeer):
            if not tls.node:
                return "it showed no node certificate"
            if membership is None:
                return "this controller has no CA to know nodes by"
            if membership.certificate_revoked(tls.serial):
                return f"the certificate of node {tls.node} (serial {tls.serial}) was revoked"
            return None
        if not policy.may_be_node(state.get("peer")):
            return "only root or the daemon's own user run nodes on the local socket"
        return None

    async def node_channel(socket: WebSocket) -> None:
        stopping = service.stopping
        if stopping is not None:  # the node goes on to the next controller, as from a standby
            await refuse_channel(socket, *stopping_reply(stopping))
            return
        state = socket.scope.get("state", {})
        tls = state.get("tls")
        address = tls.address if isinstance(tls, TlsPeer) else "the local socket"
        why = refusal(state)
        if why is not None:
            log.warning("refused a node channel from %s: %s", address, why)
            await socket.close(code=POLICY_VIOLATION)
            return
        await socket.accept()
        channel: NodeChannel | None = None
        try:
            first = node_decoder.decode(await socket.receive_bytes())
            if len(first) != 1 or not isinstance(first[0], Hello):
                await socket.close(code=1002)
                return
            hello = first[0]
            if isinstance(tls, TlsPeer) and hello.node != tls.node:
                log.warning("refused a node channel from %s: its certificate names node %s, its hello %r",
                            address, tls.node, hello.node[:100])
                await socket.close(code=POLICY_VIOLATION, reason="the hello names another node than the certificate")
                return
            channel = NodeChannel(hello.node, socket, local=not isinstance(tls, TlsPeer),
                                  host=tls.host if isinstance(tls, TlsPeer) else None)
            slot = state.get(SLOT)
            if isinstance(slot, Slot):
                slot.is_node()  # its address may use the connections kept for nodes
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
