"""Every endpoint of the API with the access it needs: a change here is a change of who may do
what, made on purpose (docs/security.md)."""

from __future__ import annotations

from drover.api.app import ENDPOINTS
from drover.controller.security.auth import Access

EXPECTED = {
    ("GET", "/v1/ping"): (Access.ANYONE, ""),
    ("GET", "/v1/health"): (Access.ANYONE, ""),
    ("POST", "/v1/jobs"): (Access.USER, ""),
    ("GET", "/v1/jobs"): (Access.USER, ""),
    ("GET", "/v1/jobs/{job_id}"): (Access.JOB, ""),
    ("GET", "/v1/jobs/{job_id}/wait"): (Access.JOB, ""),
    ("POST", "/v1/jobs/actions/{action}"): (Access.USER, ""),
    ("GET", "/v1/history"): (Access.USER, ""),
    ("GET", "/v1/history/summary"): (Access.USER, ""),
    ("GET", "/v1/priority"): (Access.USER, ""),
    ("GET", "/v1/nodes"): (Access.USER, ""),
    ("GET", "/v1/checkpoints"): (Access.USER, ""),
    ("GET", "/v1/queues"): (Access.USER, ""),
    ("POST", "/v1/queues"): (Access.USER, ""),  # who may make or change a queue: controller/handlers/queues.py
    ("POST", "/v1/queues/{name}"): (Access.USER, ""),
    ("POST", "/v1/queues/{name}/{action}"): (Access.USER, ""),
    # who may suspend a queue's instances: as for stop (controller/handlers/queue_suspension.py)
    ("POST", "/v1/queues/{name}/suspend"): (Access.USER, ""),
    ("POST", "/v1/queues/{name}/unsuspend"): (Access.USER, ""),
    ("DELETE", "/v1/queues/{name}"): (Access.USER, ""),
    ("POST", "/v1/nodes/{name}/resume"): (Access.ADMIN, "resume nodes"),
    ("POST", "/v1/nodes/{name}/queues/{queue}/clear"): (Access.ADMIN, "clear queue errors"),
    ("POST", "/v1/nodes/{name}/drain"): (Access.ADMIN, "drain nodes"),
    ("GET", "/v1/events"): (Access.USER, ""),
    ("GET", "/v1/jobs/{job_id}/files"): (Access.JOB, ""),
    ("GET", "/v1/jobs/{job_id}/files/{task}/{attempt}/{name:path}"): (Access.JOB, ""),
    ("GET", "/v1/jobs/{job_id}/tasks/{task}/output"): (Access.JOB, ""),
    ("POST", "/v1/jobs/{job_id}/pe-tasks"): (Access.JOB, ""),
    ("GET", "/v1/jobs/{job_id}/pe-tasks/{petask}"): (Access.JOB, ""),
    ("GET", "/v1/jobs/{job_id}/pe-tasks/{petask}/output"): (Access.JOB, ""),
    ("DELETE", "/v1/jobs/{job_id}/pe-tasks/{petask}"): (Access.JOB, ""),
    ("GET", "/v1/jobs/{job_id}/samples"): (Access.JOB, ""),
    ("GET", "/v1/top"): (Access.USER, ""),
    ("POST", "/v1/shutdown"): (Access.ADMIN, "stop a shared cluster"),
    ("GET", "/v1/cluster/ca"): (Access.ANYONE, ""),
    ("POST", "/v1/cluster/join"): (Access.ANYONE, ""),
    ("POST", "/v1/cluster/leave"): (Access.NODE, ""),
    ("POST", "/v1/cluster/tokens"): (Access.ADMIN, "make join tokens"),
    ("GET", "/v1/cluster/tokens"): (Access.ADMIN, "list join tokens"),
    ("POST", "/v1/cluster/tokens/{token_id}/revoke"): (Access.ADMIN, "revoke join tokens"),
    ("POST", "/v1/alloc/queues"): (Access.ADMIN, "add allocation queues"),
    ("GET", "/v1/alloc/queues"): (Access.ADMIN, "list allocation queues"),
    ("GET", "/v1/alloc/queues/{queue_id}"): (Access.ADMIN, "see allocation queues"),
    ("POST", "/v1/alloc/queues/{queue_id}/pause"): (Access.ADMIN, "pause allocation queues"),
    ("POST", "/v1/alloc/queues/{queue_id}/resume"): (Access.ADMIN, "resume allocation queues"),
    ("DELETE", "/v1/alloc/queues/{queue_id}"): (Access.ADMIN, "remove allocation queues"),
    ("GET", "/v1/parallel-environments"): (Access.USER, ""),  # as qconf -spl and -sp, for every user
    ("GET", "/metrics"): (Access.USER, ""),  # admins only unless public_metrics: api/metrics.py
}


def test_each_endpoint_needs_the_access_it_always_needed() -> None:
    table = {(e.operation.method, e.operation.path): (e.access, e.admin_action) for e in ENDPOINTS}
    assert len(table) == len(ENDPOINTS), "an endpoint is listed twice"
    assert table == EXPECTED


def test_every_admin_endpoint_says_what_only_admins_do() -> None:
    for endpoint in ENDPOINTS:
        assert (endpoint.access is Access.ADMIN) == bool(endpoint.admin_action), endpoint.operation.path
