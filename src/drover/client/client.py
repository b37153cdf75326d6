"""The typed client: each method is one API call, returning the API's own models.

Responses decode into `drover.protocol.api` models (msgspec), imported on first use. Methods
that take or return only plain data (`submit`, `wait_json`) never import them, which keeps
the start-up of `drover submit` and `drover wait` short.
"""

from __future__ import annotations

from drover.client.transport import Transport

TYPE_CHECKING = False  # typing costs milliseconds at start-up; type checkers read this as True
if TYPE_CHECKING:
    from typing import Any, TypeVar

    T = TypeVar("T")

    from drover.protocol.api import (
        ActionResult,
        Event,
        HistoryRow,
        JobInfo,
        JobSubmission,
        NodeInfo,
        Ping,
    )


class Client:
    def __init__(self, address: str | None = None, timeout_s: float | None = 60.0) -> None:
        """`address`: a Unix socket path or http://HOST:PORT; default: the personal cluster's socket."""
        if address is None:
            from drover.config import api_socket

            address = api_socket()
        self.transport = Transport(address, timeout_s)

    def close(self) -> None:
        self.transport.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _get(self, path: str, model: type[T], **query: Any) -> T:
        from urllib.parse import urlencode

        params = {k: v for k, v in query.items() if v is not None and v != ""}
        wait = float(params.get("wait") or params.get("timeout") or 0)
        reply = self.transport.call("GET", path + ("?" + urlencode(params) if params else ""),
                                    timeout_s=(self.transport.timeout_s or 60) + wait)
        import msgspec

        return msgspec.convert(reply, model)

    # -- jobs ---------------------------------------------------------------------------------

    def submit(self, jobs: list[JobSubmission] | list[dict[str, Any]]) -> list[int]:
        """Submit many jobs in one request (one transaction); return their ids in order."""
        import os

        payload = [job if isinstance(job, dict) else _to_builtins(job) for job in jobs]
        # A key of this submission's own: if the transport sends it again (the connection was
        # lost before the answer came), the controller answers with the first one's ids.
        body = {"jobs": payload, "request_key": os.urandom(12).hex()}
        return list(self.transport.call("POST", "/v1/jobs", body)["ids"])

    def job(self, job_id: int) -> JobInfo:
        from drover.protocol.api import JobInfo

        return self._get(f"/v1/jobs/{job_id}", JobInfo)

    def jobs(self, states: list[str] | None = None, user: str | None = None, name: str | None = None,
             include_ended: bool = False, limit: int | None = None) -> list[JobInfo]:
        from drover.protocol.api import JobList

        return self._get(
            "/v1/jobs", JobList, state=",".join(states or []), user=user, name=name,
            all="1" if include_ended else None, limit=limit,
        ).jobs

    def wait_json(self, job_id: int, timeout_s: float = 30) -> dict[str, Any]:
        """One long poll: {"ended": bool, "job": {...}} as plain JSON."""
        reply: dict[str, Any] = self.transport.call(
            "GET", f"/v1/jobs/{job_id}/wait?timeout={int(timeout_s)}", timeout_s=timeout_s + 30
        )
        return reply

    def wait(self, job_id: int, timeout_s: float | None = None) -> JobInfo | None:
        """Block until the job ends and return it; None if `timeout_s` passes first."""
        import time

        import msgspec

        from drover.protocol.api import JobInfo

        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            remaining = 60.0 if deadline is None else max(deadline - time.monotonic(), 0)
            reply = self.wait_json(job_id, min(remaining, 60))
            if reply["ended"]:
                return msgspec.convert(reply["job"], JobInfo)
            if deadline is not None and time.monotonic() >= deadline:
                return None

    def cancel(self, refs: list[str]) -> list[ActionResult]:
        return self._action("cancel", refs)

    def hold(self, refs: list[str]) -> list[ActionResult]:
        return self._action("hold", refs)

    def release(self, refs: list[str]) -> list[ActionResult]:
        return self._action("release", refs)

    def suspend(self, refs: list[str]) -> list[ActionResult]:
        return self._action("suspend", refs)

    def resume(self, refs: list[str]) -> list[ActionResult]:
        return self._action("resume", refs)

    def signal(self, refs: list[str], signal: str) -> list[ActionResult]:
        import msgspec

        from drover.protocol.api import ActionResult

        return msgspec.convert(self.action_json("signal", refs, signal), list[ActionResult])

    def action_json(self, action: str, refs: list[str], signal: str | None = None,
                    priority: int | None = None) -> list[dict[str, Any]]:
        body: dict[str, Any] = {"refs": refs}
        if signal is not None:
            body["signal"] = signal
        if priority is not None:
            body["priority"] = priority
        reply = self.transport.call("POST", f"/v1/jobs/actions/{action}", body)
        return list(reply["results"])

    def _action(self, action: str, refs: list[str]) -> list[ActionResult]:
        import msgspec

        from drover.protocol.api import ActionResult

        return msgspec.convert(self.action_json(action, refs), list[ActionResult])

    # -- the rest -----------------------------------------------------------------------------

    def history(self, user: str | None = None, limit: int = 100, since: float | None = None) -> list[HistoryRow]:
        from drover.protocol.api import History

        return self._get("/v1/history", History, user=user, limit=limit, since=since).rows

    def nodes(self) -> list[NodeInfo]:
        from drover.protocol.api import NodeList

        return self._get("/v1/nodes", NodeList).nodes

    def events(self, job_id: int | None = None, after: int = 0, limit: int = 1000, wait_s: int = 0) -> list[Event]:
        """Events after sequence number `after`; with `wait_s`, wait that long for new ones."""
        from drover.protocol.api import EventList

        return self._get(
            "/v1/events", EventList, job=job_id, after=after, limit=limit, wait=wait_s or None
        ).events

    def ping(self) -> Ping:
        from drover.protocol.api import Ping

        return self._get("/v1/ping", Ping)

    def shutdown(self) -> None:
        self.transport.call("POST", "/v1/shutdown")

    def alter(self, refs: list[str], priority: int) -> list[ActionResult]:
        """Change the priority of jobs that have tasks waiting."""
        import msgspec

        from drover.protocol.api import ActionResult

        return msgspec.convert(self.action_json("alter", refs, priority=priority), list[ActionResult])

    def requeue(self, refs: list[str]) -> list[ActionResult]:
        """Stop running tasks and queue them again, as new attempts."""
        return self._action("requeue", refs)


def _to_builtins(value: Any) -> Any:
    import msgspec

    return msgspec.to_builtins(value)
