"""What a controller that has begun to stop answers those who reach it then: a node opening its
channel (on the local socket or over TLS), a terminal, and a peer that showed no credential.
Each gets the standby's answer (kind "standby", naming no one) and nothing else: no node is
welcomed and no job's data leaves, so that the node and the client go on to the next controller."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

from drover.api.app import create_app
from drover.controller.security.auth import Policy, TlsPeer
from drover.controller.service import ControllerService, Settings
from drover.core.errors import Standby
from drover.protocol.api import JobSubmission
from drover.store.sqlite import SqliteStore

T = TypeVar("T")
STOPPING = "the controller at X is no longer the active one (another leads); ask the active controller"
SECRET = "a-name-only-its-owner-may-see"
ROOT = {"peer": (1, 0, 0)}  # the local socket: root, who may run nodes
NODE_OVER_TLS = {"tls": TlsPeer("10.0.0.2:4000", node="node1", serial="0a")}
NO_CREDENTIAL = {"tls": TlsPeer("10.0.0.9:4000")}  # over TLS, no client certificate, no MUNGE credential


def on_a_stopped_controller(tmp_path: Path, scenario: Callable[[Any, int], Awaitable[T]]) -> T:
    """`scenario` run on the API of a controller with a job that waits, once it is stopped (as
    main.py's shutdown stops it), on a running loop as the daemon's service is."""
    async def main() -> T:
        store = SqliteStore(str(tmp_path / "drover.db"))
        try:
            service = ControllerService(store, Settings())
            (job,) = service.submit([JobSubmission(script="true\n", workdir="/tmp", name=SECRET, hold=True)], "alice")
            service.stop_answering(Standby(STOPPING))
            return await scenario(create_app(service, Policy(owner_uid=0, shared=True), lambda: None), job)
        finally:
            store.close()

    return asyncio.run(main())


async def websocket(app: Any, path: str, state: dict[str, Any], http_response: bool = True) -> list[dict[str, Any]]:
    """A WebSocket handshake, a node's hello if it is accepted, then the peer goes: what the app sent."""
    scope = {"type": "websocket", "path": path, "raw_path": path.encode(), "root_path": "", "query_string": b"",
             "headers": [], "subprotocols": [], "scheme": "wss", "server": ("test", 443), "client": ("test", 1),
             "extensions": {"websocket.http.response": {}} if http_response else {}, "state": state}
    incoming = [{"type": "websocket.connect"},
                {"type": "websocket.receive", "bytes": b'[{"type":"hello","node":"node1","cpus":2,"memory_mib":1}]'}]
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        if incoming:
            return incoming.pop(0)
        await asyncio.sleep(0)
        return {"type": "websocket.disconnect", "code": 1000}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await asyncio.wait_for(app(scope, receive, send), 5)
    return sent


async def http(app: Any, method: str, path: str, query: bytes = b"", body: bytes = b"") -> tuple[int, bytes]:
    scope = {"type": "http", "http_version": "1.1", "method": method, "scheme": "https", "path": path,
             "raw_path": path.encode(), "root_path": "", "query_string": query,
             "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
             "server": ("test", 443), "client": ("10.0.0.9", 4000), "state": dict(NO_CREDENTIAL)}
    replies: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        replies.append(message)

    await asyncio.wait_for(app(scope, receive, send), 5)
    return replies[0]["status"], b"".join(r.get("body", b"") for r in replies[1:])


def assert_standby_denial(sent: list[dict[str, Any]]) -> None:
    """The handshake answered with the standby's 503 and its one-line reply: never accepted."""
    assert [m["type"] for m in sent] == ["websocket.http.response.start", "websocket.http.response.body"], sent
    assert sent[0]["status"] == 503
    assert json.loads(sent[1]["body"]) == {"error": STOPPING, "kind": "standby", "active": None}


@pytest.mark.parametrize("state", [ROOT, NODE_OVER_TLS], ids=["local socket", "tls"])
def test_a_node_that_opens_its_channel_while_the_controller_stops_gets_the_standby_answer(
        tmp_path: Path, state: dict[str, Any]) -> None:
    assert_standby_denial(on_a_stopped_controller(tmp_path, lambda app, _: websocket(app, "/v1/nodes/channel", state)))


def test_where_the_server_cannot_answer_a_handshake_the_channel_is_closed_with_the_reason(tmp_path: Path) -> None:
    sent = on_a_stopped_controller(tmp_path, lambda app, _: websocket(app, "/v1/nodes/channel", ROOT,
                                                                       http_response=False))
    assert sent == [{"type": "websocket.close", "code": 1013, "reason": STOPPING[:120]}]


def test_a_terminal_opened_without_a_credential_while_the_controller_stops_gets_the_standby_answer(
        tmp_path: Path) -> None:
    assert_standby_denial(on_a_stopped_controller(
        tmp_path, lambda app, job: websocket(app, f"/v1/jobs/{job}/tasks/0/terminal", NO_CREDENTIAL)))


def test_a_peer_without_a_credential_gets_the_standby_answer_and_no_jobs_data(tmp_path: Path) -> None:
    """Reads, waits, changes and the administrator's requests alike: a 503 of kind standby, the
    reason in one line; not a 401 or 403 (nothing was asked of the peer yet), not a 500, and no
    job's data."""
    submission = json.dumps({"jobs": [{"script": "true\n", "workdir": "/tmp"}]}).encode()
    job = 1  # the stopped controller's one job
    requests = [("GET", "/v1/ping", b"", b""), ("GET", "/v1/jobs", b"", b""), ("GET", f"/v1/jobs/{job}", b"", b""),
                ("GET", f"/v1/jobs/{job}/wait", b"timeout=30", b""), ("GET", "/v1/events", b"after=0&wait=30", b""),
                ("GET", "/v1/nodes", b"", b""), ("GET", "/metrics", b"", b""), ("POST", "/v1/jobs", b"", submission),
                ("POST", "/v1/jobs/actions/cancel", b"", b"{}"), ("POST", "/v1/shutdown", b"", b"")]

    async def scenario(app: Any, made: int) -> list[tuple[int, bytes]]:
        assert made == job
        return [await http(app, method, path, query, body) for method, path, query, body in requests]

    for (method, path, _, _), (status, body) in zip(requests, on_a_stopped_controller(tmp_path, scenario), strict=True):
        assert (status, json.loads(body)) == (503, {"error": STOPPING, "kind": "standby"}), (method, path, body)
        assert SECRET.encode() not in body and b"Traceback" not in body
