"""Users of other hosts: a request over TCP (always TLS) that carries a MUNGE credential is the
request of the user the credential names, once the controller's munged has opened it (not
forged, not expired, never used before) and it was made for this very request (its method,
path, query and body: cluster/munge.request_digest). Every refusal is logged with the peer's
address. Opening a credential is one round trip to munged on a Unix socket (~0.3 ms)."""

from __future__ import annotations

import logging

from starlette.requests import HTTPConnection, Request

from drover.api.http import body_within_limit
from drover.cluster import munge
from drover.controller.security.auth import CROSS_HOST_USERS, TlsPeer
from drover.core.errors import Forbidden

log = logging.getLogger("drover.controller")


async def remote_peer(request: Request, munge_socket: str, max_body: int) -> tuple[int, int, int]:
    """(0, uid, gid) of the user whose credential the request carries; Forbidden otherwise.
    The credential is opened before the body is read: a peer without a genuine one never makes
    the controller read (and keep) a body of up to `max_body` bytes."""
    opened = _opened(request, request.method, munge_socket)
    body = await body_within_limit(request, max_body)
    return _made_for(request, request.method, body, opened)


def proven_peer(connection: HTTPConnection, method: str, body: bytes, munge_socket: str) -> tuple[int, int, int]:
    """The same for any connection (a WebSocket's opening request is a GET without a body)."""
    return _made_for(connection, method, body, _opened(connection, method, munge_socket))


def _opened(connection: HTTPConnection, method: str, munge_socket: str) -> munge.Opened:
    credential = connection.headers.get(munge.HEADER)
    if not credential:
        raise Forbidden(CROSS_HOST_USERS)
    try:
        return munge.decode(credential, munge_socket)
    except munge.CredentialError as error:
        _refused(connection, method, str(error))
        raise Forbidden(str(error)) from None


def _made_for(connection: HTTPConnection, method: str, body: bytes, opened: munge.Opened) -> tuple[int, int, int]:
    """The credential's user, if it was made for this very request."""
    query = connection.scope.get("query_string", b"")
    target = connection.scope.get("raw_path", connection.url.path.encode()).decode("latin-1")
    if query:
        target += "?" + query.decode("latin-1")
    if opened.payload != munge.request_digest(method, target, body):
        why = "the MUNGE credential was made for another request"
        _refused(connection, method, f"{why} (uid {opened.uid})")
        raise Forbidden(why)
    return 0, opened.uid, opened.gid


def _refused(connection: HTTPConnection, method: str, why: str) -> None:
    tls = connection.scope.get("state", {}).get("tls")
    address = tls.address if isinstance(tls, TlsPeer) else "?"
    log.warning("refused a user's request from %s (%s %s): %s", address, method, connection.url.path, why)
