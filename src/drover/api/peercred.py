"""Who is on the other end of a Unix socket, read from the kernel (SO_PEERCRED), never from the
request. uvicorn does not expose the socket to the app, so its HTTP protocol is subclassed to
put the peer's (pid, uid, gid) into the per-connection ASGI state; a WebSocket upgraded from
that connection inherits it."""

from __future__ import annotations

import socket
import struct
from typing import Any

_CREDENTIALS = struct.Struct("3i")


def peer_of(transport: Any) -> tuple[int, int, int] | None:
    """(pid, uid, gid) of a Unix-socket peer; None for TCP."""
    sock = transport.get_extra_info("socket")
    if sock is None or sock.family != socket.AF_UNIX:
        return None
    data = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _CREDENTIALS.size)
    pid, uid, gid = _CREDENTIALS.unpack(data)
    return pid, uid, gid


def protocol_class() -> type:
    """uvicorn's HTTP protocol (httptools if installed, else h11), telling the app its peer."""
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol as Base
    except ImportError:  # httptools is optional for uvicorn
        from uvicorn.protocols.http.h11_impl import H11Protocol as Base  # type: ignore[assignment]  # either class serves as the base

    class PeerCredentialsProtocol(Base):
        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self.app_state = {**self.app_state, "peer": peer_of(transport)}

    return PeerCredentialsProtocol
