"""The controller's metrics for Prometheus (GET /metrics, controller/reads/metrics.py): for root
and the operators, or for every user the controller serves where `[controller] public_metrics`
is on. `serve_metrics_only` is the app of the plain-HTTP listener `[controller] metrics_listen`,
which serves that one path to anyone who reaches it (docs/security.md)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from drover.api.endpoint import Call, Endpoint
from drover.api.http import error_response, json_response
from drover.api.openapi import Operation
from drover.controller.reads.metrics import exposition
from drover.controller.security.auth import Access
from drover.controller.service import ControllerService
from drover.core.errors import DroverError

PATH = "/metrics"
OPERATORS_ONLY = ("read the controller's metrics (GET /metrics); `public_metrics = true` under [controller] in "
                  "drover.toml lets every user read them")


async def metrics(call: Call) -> Response:
    if not call.controller.service.settings.public_metrics:
        call.controller.policy.may_administer(call.user, OPERATORS_ONLY)
    return _reply(call.controller.service, call.request)


def _reply(service: ControllerService, request: Request) -> Response:
    body, content_type = exposition(service, request.headers.get("accept", ""))
    return Response(body, headers={"Content-Type": content_type})


class MetricsOnly:
    """The app of `metrics_listen`: GET /metrics, once this controller is the active one (a
    standby's answer is 503, as on its other sockets); nothing else."""

    def __init__(self) -> None:
        self.service: ControllerService | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        request = Request(scope, receive)
        if request.url.path != PATH:
            response = json_response({"error": f"no such path: {request.url.path} (this listener serves {PATH} "
                                               "only)", "kind": "not_found"}, 404)
        elif request.method not in ("GET", "HEAD"):
            response = json_response({"error": f"{PATH} does not take {request.method}", "kind": "bad_request"},
                                     405)
        elif self.service is None:
            response = json_response({"error": "this controller is not the active one (yet)",
                                      "kind": "unavailable"}, 503)
        else:
            try:
                self.service.ready_to_read()
                response = _reply(self.service, request)
            except DroverError as error:
                response = error_response(error)
        await response(scope, receive, send)


ENDPOINTS = [
    Endpoint(Operation("GET", PATH, "The controller's metrics, in OpenMetrics or the Prometheus text format "
                       "(docs/metrics.md)"), Access.USER, metrics),
]
