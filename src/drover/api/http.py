"""Reading requests and writing replies: what every resource of the API shares. A request is
read no further than the cluster's size limit, and numbers in it are parsed as the limits
module parses them (ASCII digits), so no request can make the controller do unbounded work."""

from __future__ import annotations

from typing import Any, TypeVar

import msgspec
from starlette.requests import ClientDisconnect, HTTPConnection, Request
from starlette.responses import Response

from drover.core.errors import BadRequest, DroverError, PayloadTooLarge
from drover.core.limits import ascii_int, refuse
from drover.core.shown_text import check_reason
from drover.protocol.api import ShownReason

Model = TypeVar("Model")

_encode = msgspec.json.Encoder().encode


def json_response(value: Any, status: int = 200) -> Response:
    return Response(_encode(value), status_code=status, media_type="application/json")


def encoded_json_response(body: bytes) -> Response:
    """A reply whose JSON was encoded already (off the event loop, by the read models)."""
    return Response(body, media_type="application/json")


def error_response(error: DroverError) -> Response:
    return json_response({"error": str(error), "kind": error.kind}, error.http_status)


async def decode(request: Request, model: type[Model], limit: int) -> Model:
    """The JSON body as `model`; msgspec's errors become 400 replies where the endpoint runs."""
    body = await body_within_limit(request, limit)
    try:
        return msgspec.json.decode(body, type=model)
    except msgspec.ValidationError:
        _refuse_reasons_plainly(model, body)
        raise


def _refuse_reasons_plainly(model: type[Any], body: bytes) -> None:
    """A reason (ShownReason) the model's pattern refused is refused in the handler's plain words
    (core/shown_text.check_reason), not in msgspec's, which name the regular expression: the
    user who typed it reads why. The OpenAPI document keeps the pattern, for clients that check."""
    if not (isinstance(model, type) and issubclass(model, msgspec.Struct)):
        return
    try:
        given = msgspec.json.decode(body)
    except msgspec.ValidationError:
        return  # refused untyped too (an integer beyond 64 bits): the typed refusal says where
    if not isinstance(given, dict):
        return
    for field in msgspec.structs.fields(model):
        value = given.get(field.encode_name)
        if field.type == ShownReason and isinstance(value, str):
            check_reason(value)


async def body_within_limit(request: Request, limit: int) -> bytes:
    """The request's body, read no further than `limit` bytes: a body that claims or turns out
    to be larger is refused (413) before it is all in memory."""
    too_big = refuse("the request body", limit, "max_request_bytes", "bytes")
    declared = request.headers.get("content-length", "")
    if declared.isascii() and declared.isdigit() and int(declared) > limit:
        raise PayloadTooLarge(str(too_big))
    chunks, size = [], 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise PayloadTooLarge(str(too_big))
            chunks.append(chunk)
    except ClientDisconnect:
        # The peer went, or paused longer than the body timeout (api/connections.py): nobody
        # is left to answer, and nothing of the request is done.
        raise BadRequest("the request's body did not all come") from None
    body = b"".join(chunks)
    # Kept where Starlette's own Request.body() keeps it, so that a second read (the endpoint's,
    # after a remote user's credential was checked against the body) gets it again.
    request._body = body
    return body


def int_query(request: Request, name: str, default: int | None) -> int | None:
    value = request.query_params.get(name)
    if value is None:
        return default
    return ascii_int(value, f"query parameter {name}")


def unix_time(text: str, what: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise BadRequest(f"{what} must be a Unix time in seconds, not {text!r}") from None
    if not 0 <= value < 2**40:  # also refuses nan and inf
        raise BadRequest(f"{what} must be a Unix time in seconds, not {text!r}")
    return value


def job_id_of(request: HTTPConnection) -> int:
    """The job id in the request's path."""
    job_id = ascii_int(request.path_params["job_id"], "a job id")
    if job_id <= 0:
        raise BadRequest("a job id must be 1 or more")
    return job_id
