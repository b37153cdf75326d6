"""A reason with a control character, or too long, is refused by the API in the same plain words
as the handler's check (core/shown_text.check_reason): what the user reads is why, not the
regular expression of the OpenAPI document, which keeps its pattern for clients that check."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import msgspec
import pytest

from drover.api.app import create_app
from drover.controller.security.auth import Policy
from drover.controller.service import ControllerService, Settings
from drover.core.errors import BadRequest
from drover.core.shown_text import check_reason
from drover.protocol.api import ShownReason
from drover.store.sqlite import SqliteStore

PLAIN = "a reason is one line of at most 1000 printable characters"
BAD = ["\x1b[31mX", "maintenance\nn2 DOWN", "csi\x9b31m", "x" * 1001]


def posted(state_dir: Path, requests: list[tuple[str, dict[str, Any]]]) -> list[tuple[int, dict[str, Any]]]:
    """Each POST, as the cluster's owner on its Unix socket, to the app the controller serves,
    on the store in `state_dir`."""

    async def post_all() -> list[tuple[int, dict[str, Any]]]:
        service = ControllerService(SqliteStore(str(state_dir / "drover.db")), Settings(files_dir=str(state_dir)))
        app = create_app(service, Policy(owner_uid=os.getuid()), lambda: None)
        answers = []
        for path, body in requests:
            encoded = json.dumps(body).encode()
            scope = {"type": "http", "http_version": "1.1", "method": "POST", "scheme": "http", "path": path,
                     "raw_path": path.encode(), "root_path": "", "query_string": b"",
                     "headers": [(b"content-length", str(len(encoded)).encode())],
                     "server": ("test", 80), "client": ("test", 1),
                     "state": {"peer": (os.getpid(), os.getuid(), os.getgid())}}
            replies: list[dict[str, Any]] = []

            async def receive(body: bytes = encoded) -> dict[str, Any]:
                return {"type": "http.request", "body": body, "more_body": False}

            async def send(message: dict[str, Any], replies: list[dict[str, Any]] = replies) -> None:
                replies.append(message)

            await app(scope, receive, send)
            answers.append((replies[0]["status"], json.loads(b"".join(m.get("body", b"") for m in replies))))
        service.store.close()
        return answers

    return asyncio.run(post_all())


@pytest.mark.parametrize("reason", BAD, ids=["escape", "newline", "c1", "too long"])
def test_a_reason_the_pattern_refuses_is_refused_in_plain_words_and_nothing_is_done(tmp_path: Path,
                                                                                    reason: str) -> None:
    with pytest.raises(BadRequest) as plain:
        check_reason(reason)
    answers = posted(tmp_path, [("/v1/queues", {"name": "q1"}),
                                ("/v1/queues/q1/stop", {"reason": reason}),
                                ("/v1/queues/q1/drain", {"reason": reason}),
                                ("/v1/queues/q1/suspend", {"reason": reason}),
                                ("/v1/nodes/n1/drain", {"reason": reason}),
                                ])
    assert answers[0][0] == 200
    for status, body in answers[1:5]:
        assert (status, body["error"]) == (400, str(plain.value))
        assert PLAIN in body["error"] and "regex" not in body["error"] and "\\x" not in body["error"]
    # Nothing of the refused requests was done: the queue is as it was made.
    store = SqliteStore(str(tmp_path / "drover.db"))
    try:
        record = store.load_queues()["q1"]
        assert (record.starting, record.accepting, record.reason) == (True, True, None)
        assert [e.kind for _, e in store.events_of(None, 0, 1000) if "queue" in e.kind] == ["queue_created"]
    finally:
        store.close()


def test_the_document_keeps_the_pattern_and_a_reason_of_the_wrong_type_is_refused_as_before(tmp_path: Path) -> None:
    assert any(isinstance(meta, msgspec.Meta) and meta.pattern for meta in ShownReason.__metadata__)
    ((status, body),) = posted(tmp_path, [("/v1/nodes/n1/drain", {"reason": 5})])
    assert status == 400 and "Expected `str`, got `int`" in body["error"]
