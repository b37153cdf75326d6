"""Who is on the other end of a connection, read from the connection, never from the request.

On the Unix socket, the kernel says (SO_PEERCRED): the peer's (pid, uid, gid) goes into the
per-connection ASGI state as "peer". On TCP, which is always TLS, "peer" is None and "tls" holds
the client's address and the node its verified certificate names, if it showed one. uvicorn does
not expose the socket to the app, so the controller's HTTP protocol (api/connections.py) fills
that state; a WebSocket upgraded from that connection inherits it.
"""

from __future__ import annotations

import socket
import struct
from typing import Any

from drover.cluster.tls import peer_certificate
from drover.controller.security.auth import TlsPeer

_CREDENTIALS = struct.Struct("3i")


def peer_of(transport: Any) -> tuple[int, int, int] | None:
    """(pid, uid, gid) of a Unix-socket peer; None for TCP."""
    sock = transport.get_extra_info("socket")
    if sock is None or sock.family != socket.AF_UNIX:
        return None
    data = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _CREDENTIALS.size)
    pid, uid, gid = _CREDENTIALS.unpack(data)
    return pid, uid, gid


def tls_peer_of(transport: Any) -> TlsPeer | None:
    """The TLS client of a TCP connection; None on the Unix socket."""
    ssl_object = transport.get_extra_info("ssl_object")
    if ssl_object is None:
        return None
    address = transport.get_extra_info("peername")
    shown = address if isinstance(address, str) else (
        f"[{address[0]}]:{address[1]}" if ":" in str(address[0]) else f"{address[0]}:{address[1]}")
    certificate = peer_certificate(ssl_object)
    if certificate is None:
        return TlsPeer(shown)
    node, serial = certificate
    return TlsPeer(shown, node or None, serial)
