"""The requests waiting on a controller now, as its metrics count them (drover_requests_waiting):
a test that stops a controller under a `drover wait` first waits for the wait to be there."""

from __future__ import annotations

import re

from drover.client import Client


def requests_waiting(socket: str, waiting_for: str = "job_end") -> float:
    """The controller at `socket`'s count of requests waiting for `waiting_for` (job_end, events)."""
    with Client(socket, timeout_s=10) as client:
        status, body = client.transport.request("GET", "/metrics")
    text = body.decode()
    assert status == 200, text
    found = re.search(rf'^drover_requests_waiting\{{waiting_for="{waiting_for}"\}} (\S+)$', text, re.MULTILINE)
    assert found is not None, text
    return float(found.group(1))
