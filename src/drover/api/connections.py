"""One connection to the controller, from the moment it is admitted (api/listener.py) until it
closes: uvicorn's HTTP protocol (httptools), told who the peer is (api/peercred.py) and held to
the limits of [controller.connections] before any request reaches the app:

- its head (request line and headers) is counted as it arrives (api/request_head.py) and
  refused with 414 or 431 once over its limit, before the parser keeps any more of it;
- the head must be whole within `header_timeout_s` of the connection or of its first byte
  (408 and closed), a body may not pause longer than `body_timeout_s` (closed), and an idle
  connection goes after `idle_timeout_s` (uvicorn's keep-alive timeout);
- its slot in the admission counts is given back when it closes, as HTTP or, once upgraded,
  as a WebSocket.

A refused request is answered, then what the peer still sends is read and dropped for a moment
(`LINGER_S`) before the connection is closed: closing a TCP connection with unread data resets
it, and the peer would lose the answer.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol

from drover.api.admission import SLOT, Slot
from drover.api.peercred import peer_of, tls_peer_of
from drover.api.request_head import HEADERS_TOO_LARGE, URI_TOO_LONG, HeadLimit
from drover.config_schema import ConnectionsSection

LINGER_S = 1.0
REQUEST_TIMEOUT = 408

_REASONS = {URI_TOO_LONG: "URI Too Long", HEADERS_TOO_LARGE: "Request Header Fields Too Large",
            REQUEST_TIMEOUT: "Request Timeout"}


def refusal_reply(status: int, message: str) -> bytes:
    """A whole HTTP reply that says why, as every error of the API does, and closes."""
    body = json.dumps({"error": message, "kind": "bad_request" if status != 503 else "unavailable"}).encode()
    reason = _REASONS.get(status, "Service Unavailable")
    return (f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n"
            "connection: close\r\n\r\n").encode() + body


class GuardedHttp(HttpToolsProtocol):
    def __init__(self, *args: Any, slot: Slot, limits: ConnectionsSection, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.slot = slot
        self.limits = limits
        self.head = HeadLimit(limits.max_request_line_bytes, limits.max_header_bytes)
        self.timer: asyncio.TimerHandle | None = None
        self.refused = False
        self.reading_body = False

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)
        self.app_state = {**self.app_state, "peer": peer_of(transport), "tls": tls_peer_of(transport), SLOT: self.slot}
        self._arm(self.limits.header_timeout_s, self._head_too_slow)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        try:
            super().connection_lost(exc)
        finally:
            self.slot.release()

    def data_received(self, data: bytes) -> None:
        if self.refused:
            return  # lingering: read and dropped
        if self.head.in_head:
            if self.timer is None:  # the first byte of a request after one was answered
                self._arm(self.limits.header_timeout_s, self._head_too_slow)
            status = self.head.feed(data)
            if status is not None:
                self._refuse(status, _too_large(status, self.limits))
                return
        elif self.reading_body:
            self._arm(self.limits.body_timeout_s, self._body_too_slow)
        super().data_received(data)

    def on_headers_complete(self) -> None:
        self.reading_body = True
        self._arm(self.limits.body_timeout_s, self._body_too_slow)
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        self.reading_body = False
        self._disarm()
        self.head.next_request()
        super().on_message_complete()

    def handle_websocket_upgrade(self) -> None:
        self._disarm()
        self.reading_body = False
        super().handle_websocket_upgrade()

    def _refuse(self, status: int, message: str) -> None:
        self.refused = True
        self._disarm()
        if not self.transport.is_closing():
            self.transport.write(refusal_reply(status, message))
            self.loop.call_later(LINGER_S, self.transport.close)

    def _head_too_slow(self) -> None:
        self.timer = None
        if not self.head.started:  # not a byte since the connection or the last answer
            self.transport.close()
            return
        self._refuse(REQUEST_TIMEOUT, f"the request's headers did not all come within {self.limits.header_timeout_s:g} s "
                                      "(header_timeout_s in [controller.connections] of drover.toml)")

    def _body_too_slow(self) -> None:
        self.timer = None
        self.transport.close()  # the app's read of the body ends: nothing is answered to a body half sent

    def _arm(self, seconds: float, then: Any) -> None:
        self._disarm()
        self.timer = self.loop.call_later(seconds, then)

    def _disarm(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None


def _too_large(status: int, limits: ConnectionsSection) -> str:
    if status == URI_TOO_LONG:
        return (f"the request line is over this cluster's limit of {limits.max_request_line_bytes} bytes "
                "(max_request_line_bytes in [controller.connections] of drover.toml)")
    return (f"the request's headers are over this cluster's limit of {limits.max_header_bytes} bytes "
            "(max_header_bytes in [controller.connections] of drover.toml)")


class GuardedWebSocket(WebSocketsSansIOProtocol):
    """A connection upgraded to a WebSocket gives back its slot when it closes."""

    def connection_lost(self, exc: Exception | None) -> None:
        try:
            super().connection_lost(exc)
        finally:
            slot = self.app_state.get(SLOT)
            if isinstance(slot, Slot):
                slot.release()
