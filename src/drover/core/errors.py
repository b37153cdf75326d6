"""Errors with messages written for users. Each kind maps to one HTTP status and one exit code."""

from __future__ import annotations


class DroverError(Exception):
    """Base of every error Drover reports to a user; the message is the one-line explanation."""

    http_status = 400
    exit_code = 1
    kind = "error"


class BadRequest(DroverError):
    """Malformed input: an option, a directive, a resource request."""

    kind = "bad_request"


class PayloadTooLarge(BadRequest):
    """A request over the cluster's size limit (its message names the limit and its key)."""

    http_status = 413
    kind = "too_large"


class NotFound(DroverError):
    http_status = 404
    kind = "not_found"


class Conflict(DroverError):
    """The request is well formed but the object's state forbids it (cancel a finished job)."""

    http_status = 409
    kind = "conflict"


class Forbidden(DroverError):
    http_status = 403
    kind = "forbidden"


class Unavailable(DroverError):
    """The cluster cannot be reached or is shutting down."""

    http_status = 503
    exit_code = 2
    kind = "unavailable"


class Unreachable(Unavailable):
    """No controller answers at all: nothing listens where the cluster should be. (The front
    ends say it in their real commands' words.)"""


class Standby(Unavailable):
    """This controller is a standby (several share one PostgreSQL store, one of them active):
    it serves nothing but its health. `active` is where the active one is, if known."""

    kind = "standby"

    def __init__(self, message: str, active: str | None = None) -> None:
        super().__init__(message)
        self.active = active


ERROR_KINDS: dict[str, type[DroverError]] = {
    cls.kind: cls for cls in (DroverError, BadRequest, PayloadTooLarge, NotFound, Conflict, Forbidden, Unavailable,
                              Standby)
}
