"""The controller's API, fuzzed from its own OpenAPI document (Schemathesis): every operation,
with requests generated from the document's schemas (positive) and from their violations
(negative), answered without a server error, and with answers the document describes: status,
content type, headers and body schema, every check Schemathesis has.

One check is left out for two operations: that every request the document allows is accepted.
A submission and an action carry rules between their fields that the document's schemas do not
state (a --signal warning needs a time limit; --mail-type needs --mail-user; the signal action
needs a signal and alter a priority), so a schema-valid request may rightly get a 400.

The app is the one the controller serves, built in-process over a real SqliteStore, as in
test_openapi_document.py, and the document is the one it serves (GET /openapi.json). Each
request comes from the cluster's owner (the peer a Unix socket would give), so every endpoint is
reached past its access check.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import hypothesis
import pytest
import schemathesis
from schemathesis.checks import positive_data_acceptance
from schemathesis.generation.modes import GenerationMode
from schemathesis.specs.openapi.schemas import OpenApiSchema

from drover.api.app import ENDPOINTS, create_app
from drover.controller.security.auth import Policy
from drover.controller.service import ControllerService, Settings
from drover.store.sqlite import SqliteStore

EXAMPLES = 60  # per operation and mode: well under a minute for the whole API on 2 cores
LONGEST_POLL_S = 1  # long polls wait up to 300 s by design; the fuzzer waits at most this long
OPERATIONS = [(e.operation.method, e.operation.path.replace("{name:path}", "{name}")) for e in ENDPOINTS]
# Those with something to violate: a body, or a parameter that is not any string at all.
NEGATABLE = [(e.operation.method, e.operation.path.replace("{name:path}", "{name}")) for e in ENDPOINTS
             if e.operation.request is not None or "{job_id}" in e.operation.path or "{action}" in e.operation.path
             or any(kind != "string" for _, kind, _ in e.operation.query)]
# Rules a schema cannot state: between fields, or of text with its own syntax (a queue's
# settings are KEY=VALUE text, as `drover queue set` takes them, checked by core/queues.py).
CROSS_FIELD_RULES = {("POST", "/v1/jobs"), ("POST", "/v1/jobs/actions/{action}"), ("POST", "/v1/queues"),
                     ("POST", "/v1/queues/{name}")}
CASES = [(m, p, GenerationMode.POSITIVE) for m, p in OPERATIONS] + [(m, p, GenerationMode.NEGATIVE) for m, p in NEGATABLE]


class AsTheOwner:
    """ASGI middleware: the request's peer is this process's user, as uvicorn's protocol
    (api/peercred.py) sets it for a connection on the cluster's Unix socket."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.peer = (os.getpid(), os.getuid(), os.getgid())

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            scope = {**scope, "state": {**scope.get("state", {}), "peer": self.peer}}
        await self.app(scope, receive, send)


@pytest.fixture(scope="module")
def api_schema(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OpenApiSchema]:
    directory = tmp_path_factory.mktemp("controller")
    service = ControllerService(SqliteStore(str(directory / "drover.db")), Settings(files_dir=str(directory / "files")))
    app = AsTheOwner(create_app(service, Policy(owner_uid=os.getuid()), lambda: None))
    yield schemathesis.openapi.from_asgi("/openapi.json", app)
    service.store.close()


def test_the_fuzzed_operations_are_all_the_documents(api_schema: OpenApiSchema) -> None:
    documented = {(op.ok().method.upper(), op.ok().path) for op in api_schema.get_all_operations()}
    assert documented == set(OPERATIONS)


@pytest.mark.parametrize(("method", "path", "mode"), CASES, ids=[f"{m} {p} {g.value}" for m, p, g in CASES])
def test_every_operation_answers_as_its_document_says(api_schema: OpenApiSchema, method: str, path: str,
                                                     mode: GenerationMode) -> None:
    operation = api_schema[path][method]

    @hypothesis.given(case=operation.as_strategy(generation_mode=mode))
    @hypothesis.settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                         suppress_health_check=list(hypothesis.HealthCheck))
    def answers(case: schemathesis.Case) -> None:
        for name in ("wait", "timeout"):
            value = (case.query or {}).get(name)
            if isinstance(value, int) and not isinstance(value, bool) and value > LONGEST_POLL_S:
                case.query[name] = LONGEST_POLL_S  # type: ignore[index]  # holds the name: not None
        if (method, path) in CROSS_FIELD_RULES:
            case.call_and_validate(excluded_checks=[positive_data_acceptance])
        else:
            case.call_and_validate()

    answers()
