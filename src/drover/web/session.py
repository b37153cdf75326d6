"""Who may use a dashboard: the holder of the one-time token `drover web` prints.

The token in the printed URL is exchanged once for a session: a random cookie (HttpOnly,
SameSite=Strict) that every later request must carry. A state-changing request must also carry
the session's own CSRF token in a header, which a page of another origin cannot read or set.
Everything is compared in constant time; nothing here does I/O.
"""

from __future__ import annotations

import hmac
import secrets
import threading
import time
from dataclasses import dataclass, field

SESSION_IDLE_S = 12 * 3600.0  # a session unused this long is forgotten


@dataclass
class Session:
    csrf: str
    last_used: float


@dataclass
class Sessions:
    """The dashboard's one-time token and the sessions it was exchanged for."""

    port: int
    token: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    _sessions: dict[str, Session] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def cookie_name(self) -> str:
        # Browsers share cookies between the ports of one host: each dashboard has its own name,
        # so two dashboards on one machine never overwrite each other's session.
        return f"drover-web-{self.port}"

    def exchange(self, token: str, now: float | None = None) -> str | None:
        """A new session's id for the right one-time token (which is then used up), else None."""
        with self._lock:
            if not self.token or not hmac.compare_digest(token.encode(), self.token.encode()):
                return None
            self.token = ""  # one time only: a URL copied from a history or a log is useless
            session_id = secrets.token_urlsafe(32)
            self._sessions[session_id] = Session(csrf=secrets.token_urlsafe(32),
                                                 last_used=time.time() if now is None else now)
            return session_id

    def find(self, cookie_header: str | None, now: float | None = None) -> Session | None:
        """The session the request's Cookie header names, if it is a live one."""
        session_id = cookie_value(cookie_header, self.cookie_name)
        if session_id is None:
            return None
        now = time.time() if now is None else now
        with self._lock:
            for known, session in list(self._sessions.items()):
                if now - session.last_used > SESSION_IDLE_S:
                    del self._sessions[known]
            for known, session in self._sessions.items():
                if hmac.compare_digest(known.encode(), session_id.encode()):
                    session.last_used = now
                    return session
        return None

    def set_cookie(self, session_id: str) -> str:
        """The Set-Cookie header's value for a new session."""
        return f"{self.cookie_name}={session_id}; Path=/; HttpOnly; SameSite=Strict"


def csrf_ok(session: Session, header: str | None) -> bool:
    """The request carries its session's CSRF token."""
    return header is not None and hmac.compare_digest(header.encode(), session.csrf.encode())


def cookie_value(header: str | None, name: str) -> str | None:
    """The value of cookie `name` in a Cookie header (the first, as browsers send the most
    specific first), or None."""
    for part in (header or "").split(";"):
        key, sep, value = part.strip().partition("=")
        if sep and key == name and value:
            return value
    return None


def allowed_hosts(listen_host: str, port: int) -> frozenset[str]:
    """The Host headers this dashboard answers: its own address, and on loopback the names a
    browser uses for it. A page of another site that rebinds its DNS name to this address
    carries its own name in Host, and is refused."""
    names = {listen_host, f"[{listen_host}]"} if ":" in listen_host else {listen_host}
    if listen_host in ("127.0.0.1", "::1", "localhost"):
        names |= {"127.0.0.1", "localhost", "[::1]"}
    return frozenset(f"{name}:{port}".lower() for name in names)


def host_ok(host_header: str | None, allowed: frozenset[str]) -> bool:
    return host_header is not None and host_header.lower() in allowed
