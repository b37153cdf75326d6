"""The OpenAPI document the controller serves, compared with the one kept next to this test
(`openapi.json`): a change to the API's paths, methods, parameters or models shows up here and
is made on purpose. To accept a deliberate change, rewrite the kept copy:

    .venv/bin/python -m tests.unit.api.test_openapi_document
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from drover.api.app import create_app
from drover.controller.security.auth import Policy
from drover.controller.service import ControllerService, Settings
from drover.store.sqlite import SqliteStore

KEPT = Path(__file__).with_name("openapi.json")


def served_document(state_dir: Path) -> dict[str, Any]:
    """GET /openapi.json from the app the controller serves, over plain ASGI calls."""

    async def get() -> dict[str, Any]:
        service = ControllerService(SqliteStore(str(state_dir / "drover.db")), Settings())
        app = create_app(service, Policy(owner_uid=0), lambda: None)
        scope = {"type": "http", "http_version": "1.1", "method": "GET", "scheme": "http",
                 "path": "/openapi.json", "raw_path": b"/openapi.json", "root_path": "",
                 "query_string": b"", "headers": [], "server": ("test", 80), "client": ("test", 1)}
        replies: list[dict[str, Any]] = []

        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message: dict[str, Any]) -> None:
            replies.append(message)

        await app(scope, receive, send)
        service.store.close()
        assert replies[0]["status"] == 200
        return json.loads(b"".join(m.get("body", b"") for m in replies))  # type: ignore[no-any-return]

    return asyncio.run(get())


def test_the_served_document_is_the_kept_one(tmp_path: Path) -> None:
    served, kept = served_document(tmp_path), json.loads(KEPT.read_text())
    assert sorted(served["paths"]) == sorted(kept["paths"])
    for path, methods in kept["paths"].items():
        assert served["paths"][path] == methods, path
    assert served["components"] == kept["components"]
    # The whole document, but for the release it names (that changes with every release).
    assert {**served, "info": {**served["info"], "version": ""}} == {**kept, "info": {**kept["info"], "version": ""}}


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as directory:
        KEPT.write_text(json.dumps(served_document(Path(directory)), indent=2, sort_keys=True) + "\n")
    print(f"wrote {KEPT}")
