"""The dashboard's gate: the one-time token, the session cookie, the CSRF token, the Host."""

from __future__ import annotations

from drover.web.session import (
    SESSION_IDLE_S,
    Sessions,
    allowed_hosts,
    cookie_value,
    csrf_ok,
    host_ok,
)


def test_the_token_is_exchanged_once_for_a_session_cookie() -> None:
    sessions = Sessions(port=8765)
    token = sessions.token
    session_id = sessions.exchange(token)
    assert session_id is not None
    assert sessions.exchange(token) is None  # used up: a copied URL is worth nothing
    cookie = sessions.set_cookie(session_id)
    assert cookie.startswith(f"drover-web-8765={session_id};")
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/" in cookie
    assert sessions.find(f"other=1; drover-web-8765={session_id}") is not None


def test_a_wrong_or_missing_token_or_cookie_gets_no_session() -> None:
    sessions = Sessions(port=1)
    assert sessions.exchange("") is None
    assert sessions.exchange(sessions.token + "x") is None
    assert sessions.exchange("not-it") is None
    assert sessions.token  # still good for its owner after the wrong guesses
    assert sessions.find(None) is None
    assert sessions.find("drover-web-1=forged") is None
    real = sessions.exchange(sessions.token)
    assert sessions.find(f"drover-web-2={real}") is None  # another dashboard's cookie name


def test_an_idle_session_is_forgotten() -> None:
    sessions = Sessions(port=1)
    session_id = sessions.exchange(sessions.token, now=1000.0)
    assert sessions.find(f"drover-web-1={session_id}", now=1000.0 + SESSION_IDLE_S - 1) is not None
    assert sessions.find(f"drover-web-1={session_id}", now=1000.0 + 2 * SESSION_IDLE_S) is None


def test_csrf_needs_the_sessions_own_token() -> None:
    sessions = Sessions(port=1)
    one = sessions.find(f"drover-web-1={sessions.exchange(sessions.token)}")
    assert one is not None
    assert csrf_ok(one, one.csrf)
    assert not csrf_ok(one, None)
    assert not csrf_ok(one, "")
    assert not csrf_ok(one, one.csrf[:-1])


def test_cookie_value_reads_only_the_named_cookie() -> None:
    assert cookie_value("a=1; b=2", "b") == "2"
    assert cookie_value("a=1; b=", "b") is None
    assert cookie_value("ab=1", "b") is None
    assert cookie_value(None, "b") is None


def test_only_the_listening_address_is_answered() -> None:
    loopback = allowed_hosts("127.0.0.1", 8000)
    assert host_ok("127.0.0.1:8000", loopback) and host_ok("localhost:8000", loopback)
    assert not host_ok("evil.example:8000", loopback)  # a DNS name rebound to 127.0.0.1
    assert not host_ok("127.0.0.1:8001", loopback)
    assert not host_ok(None, loopback)
    assert host_ok("[::1]:9", allowed_hosts("::1", 9))
