"""The typed client: each method is one API call, returning the API's own models.

Responses decode into `drover.protocol.api` models (msgspec), imported on first use. Methods
that take or return only plain data (`submit`, `wait_json`) never import them, which keeps
the start-up of `drover submit` and `drover wait` short.
"""

from __future__ import annotations

from drover.client.transport import CREDENTIAL_HEADER, ConnectionLost, Transport
from drover.config import local_munge_socket

TYPE_CHECKING = False  # typing costs milliseconds at start-up; type checkers read this as True
if TYPE_CHECKING:
    import ssl
    from collections.abc import Callable, Mapping, Sequence
    from typing import Any, TypeVar

    T = TypeVar("T")

    from websockets.sync.client import ClientConnection as WebSocket

    from drover.config import RemoteCluster
    from drover.protocol.api import (
        ActionResult,
        AllocQueueInfo,
        AllocQueueRequest,
        CaCertificate,
        CheckpointInfo,
        Event,
        FileInfo,
        History,
        HistoryRow,
        HistorySummary,
        JobInfo,
        JobList,
        JobSamples,
        JobSubmission,
        JoinReply,
        LeaveReply,
        NodeInfo,
        OutputChunk,
        ParallelEnvironmentInfo,
        PeTaskInfo,
        Ping,
        PriorityList,
        QueueInfo,
        TokenCreated,
        TokenInfo,
        TopList,
    )
    from drover.protocol.plain import ActionOutcome, JobRequest, WaitReply



class Client:
    page_rows = 5000  # rows asked for in one request; a longer listing is read page by page

    def __init__(self, address: str | Sequence[str] | None = None, timeout_s: float | None = 60.0,
                 tls: ssl.SSLContext | None = None) -> None:
        """`address`: a Unix socket path, or https://HOST:PORT with `tls`, or several (a list, or
        separated by commas: controllers sharing one store, of which the client uses the active
        one); default: the personal cluster's socket."""
        sign = None
        self.remote = False  # a user of a host that joined the cluster: the controller is elsewhere
        # Where munged runs, each job is signed by its owner (cluster/signing.py): this host's
        # munged, or the one the cluster file names for a host that joined a cluster.
        self.munge_socket: str | None = local_munge_socket()
        if address is None:
            from drover import config

            address = config.api_socket()
            if config.cluster_found is not None:
                config.cluster_found(address)  # a command says which cluster answers (cli/which_cluster.py)
            if address.startswith("https://") and tls is None:
                from drover.config import remote_cluster

                remote = remote_cluster()  # read once by api_socket already: kept
                if remote is not None and remote.controller == address:
                    tls, sign = _remote_user(remote)  # no signature where the host joined without MUNGE
                    self.munge_socket = remote.munge_socket
                    self.remote = True
        self.transport = Transport(address, timeout_s, tls, sign)

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

    def submit(self, jobs: list[JobSubmission] | list[JobRequest]) -> list[int]:
        """Submit many jobs in one request (one transaction); return their ids in order."""
        import os

        payload = [job if isinstance(job, dict) else _to_builtins(job) for job in jobs]
        if self.munge_socket is not None:
            payload = [_signed(job, self.munge_socket) for job in payload]
        # A key of this submission's own: sent again after a lost connection (below, and by the
        # transport to the next controller when there are several), it gets the first one's ids.
        body = {"jobs": payload, "request_key": os.urandom(12).hex()}
        try:
            return list(self.transport.call("POST", "/v1/jobs", body, repeatable=True)["ids"])
        except ConnectionLost:
            # The same request again, with the same key: the controller answers with the first
            # one's ids if it had taken it (any controller of the cluster: the key is committed
            # with the jobs), and makes no second copy of the jobs.
            return list(self.transport.call("POST", "/v1/jobs", body, repeatable=True)["ids"])

    def job(self, job_id: int) -> JobInfo:
        from drover.protocol.api import JobInfo

        return self._get(f"/v1/jobs/{_segment(job_id)}", JobInfo)

    def jobs(self, states: list[str] | None = None, user: str | None = None, name: str | None = None,
             include_ended: bool = False, limit: int | None = None, before: int | None = None) -> list[JobInfo]:
        """Jobs in id order: the newest `limit` (the controller's default, 1000, if None), of
        those with an id below `before` if it is set. More than a page is read page by page."""
        pages: list[list[JobInfo]] = []
        wanted = limit
        while True:
            page = self.jobs_page(states, user, name, include_ended,
                                  min(wanted, self.page_rows) if wanted is not None else None, before)
            pages.append(page.jobs)
            if wanted is None or page.next_before is None:
                break
            wanted -= len(page.jobs)
            if wanted <= 0:
                break
            before = page.next_before
        return [job for page_jobs in reversed(pages) for job in page_jobs]

    def wait_json(self, job_id: int, timeout_s: float = 30) -> WaitReply:
        """One long poll: {"ended": bool, "job": {...}} as plain JSON."""
        reply: WaitReply = self.transport.call(
            "GET", f"/v1/jobs/{_segment(job_id)}/wait?timeout={int(timeout_s)}", timeout_s=timeout_s + 30
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
                    priority: int | None = None, queue: str | None = None) -> list[ActionOutcome]:
        body: dict[str, object] = {"refs": refs}
        if signal is not None:
            body["signal"] = signal
        if priority is not None:
            body["priority"] = priority
        if queue is not None:
            body["queue"] = queue
        reply = self.transport.call("POST", f"/v1/jobs/actions/{_segment(action)}", body)
        return list(reply["results"])

    def _action(self, action: str, refs: list[str]) -> list[ActionResult]:
        import msgspec

        from drover.protocol.api import ActionResult

        return msgspec.convert(self.action_json(action, refs), list[ActionResult])

    # -- the rest -----------------------------------------------------------------------------

    def history(self, user: str | None = None, limit: int = 100, since: float | None = None,
                before: str | None = None, **filters: Any) -> list[HistoryRow]:
        """Ended attempts, newest last: the newest `limit` (ended at `since` or later, and older
        than the page token `before`, if set) of those `filters` select (queue, node, state
        as a comma list, name as a glob, job, until: as GET /v1/history takes them). More than a
        page is read page by page."""
        pages: list[list[HistoryRow]] = []
        wanted = limit
        while True:
            page = self.history_page(user, min(wanted, self.page_rows), since, before, **filters)
            pages.append(page.rows)
            wanted -= len(page.rows)
            if page.next_before is None or wanted <= 0:
                break
            before = page.next_before
        return [row for page_rows in reversed(pages) for row in page_rows]

    def history_summary(self, by: str = "user", user: str | None = None, since: float | None = None,
                        **filters: Any) -> HistorySummary:
        """The ended attempts the filters select (as history's), summarised per user, queue,
        node or day by the controller."""
        from drover.protocol.api import HistorySummary

        return self._get("/v1/history/summary", HistorySummary, by=by, user=user, since=since, **filters)

    def priority(self, user: str | None = None) -> PriorityList:
        """Pending jobs' priority factors, highest total first (a user's own; admins choose whose)."""
        from drover.protocol.api import PriorityList

        return self._get("/v1/priority", PriorityList, user=user)

    def nodes(self) -> list[NodeInfo]:
        from drover.protocol.api import NodeList

        return self._get("/v1/nodes", NodeList).nodes

    def samples(self, job_id: int) -> JobSamples:
        """What the job's running attempts use now and recently (nothing once they ended)."""
        from drover.protocol.api import JobSamples

        return self._get(f"/v1/jobs/{_segment(job_id)}/samples", JobSamples)

    def top(self, user: str | None = None) -> TopList:
        """Every running attempt the caller may see, the busiest CPU first."""
        from drover.protocol.api import TopList

        return self._get("/v1/top", TopList, user=user)

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

    def alter(self, refs: list[str], priority: int | None = None, queue: str | None = None) -> list[ActionResult]:
        """Change the priority or the queue of jobs that have tasks waiting."""
        import msgspec

        from drover.protocol.api import ActionResult

        return msgspec.convert(self.action_json("alter", refs, priority=priority, queue=queue), list[ActionResult])

    def requeue(self, refs: list[str]) -> list[ActionResult]:
        """Stop running tasks and queue them again, as new attempts."""
        return self._action("requeue", refs)

    def jobs_page(self, states: list[str] | None = None, user: str | None = None, name: str | None = None,
                  include_ended: bool = False, limit: int | None = None, before: int | None = None) -> JobList:
        """One page of jobs, in id order; its `next_before`, if set, asks for the next, older page."""
        from drover.protocol.api import JobList

        return self._get(
            "/v1/jobs", JobList, state=",".join(states or []), user=user, name=name,
            all="1" if include_ended else None, limit=limit, before=before,
        )

    def history_page(self, user: str | None = None, limit: int = 100, since: float | None = None,
                     before: str | None = None, **filters: Any) -> History:
        """One page of the history, newest last; its `next_before`, if set, asks for the next,
        older page."""
        from drover.protocol.api import History

        return self._get("/v1/history", History, user=user, limit=limit, since=since, before=before, **filters)

    # -- parallel environments ----------------------------------------------------------------

    def parallel_environments(self) -> list[ParallelEnvironmentInfo]:
        from drover.protocol.api import ParallelEnvironmentList

        return self._get("/v1/parallel-environments", ParallelEnvironmentList).parallel_environments

    # -- queues -------------------------------------------------------------------------------

    def checkpoints(self) -> list[CheckpointInfo]:
        from drover.protocol.api import CheckpointList

        return self._get("/v1/checkpoints", CheckpointList).checkpoints

    def queues(self) -> list[QueueInfo]:
        from drover.protocol.api import QueueList

        return self._get("/v1/queues", QueueList).queues

    def create_queue(self, name: str, settings: dict[str, str]) -> QueueInfo:
        """A queue of one's own (where the cluster allows it), or any queue (operators)."""
        from drover.protocol.api import QueueInfo

        return self._post("/v1/queues", QueueInfo, {"name": name, "settings": settings})

    def set_queue(self, name: str, settings: dict[str, str]) -> QueueInfo:
        """Change a queue's settings (its owner or an operator); "" clears a change."""
        from drover.protocol.api import QueueInfo

        return self._post(f"/v1/queues/{_segment(name)}", QueueInfo, {"settings": settings})

    def queue_action(self, name: str, action: str, reason: str = "") -> QueueInfo:
        """stop (start nothing), start (open again), drain (take no new jobs)."""
        from drover.protocol.api import QueueInfo

        return self._post(f"/v1/queues/{_segment(name)}/{_segment(action)}", QueueInfo, {"reason": reason})

    def suspend_queue(self, name: str, node: str | None = None, reason: str = "") -> QueueInfo:
        """Suspend the queue's instance on `node` (queue@node), or on every node: its jobs there are
        frozen and none starts there (Grid Engine's qmod -sq)."""
        from drover.protocol.api import QueueInfo

        return self._post(f"/v1/queues/{_segment(name)}/suspend", QueueInfo, {"reason": reason, "node": node})

    def unsuspend_queue(self, name: str, node: str | None = None) -> QueueInfo:
        """Unsuspend the queue's instance on `node`, or every suspended one (qmod -usq)."""
        from drover.protocol.api import QueueInfo

        return self._post(f"/v1/queues/{_segment(name)}/unsuspend", QueueInfo, {"node": node})

    def delete_queue(self, name: str) -> None:
        """Remove a queue made with create_queue, once no job of it waits or runs."""
        self.transport.call("DELETE", f"/v1/queues/{_segment(name)}")

    def resume_node(self, name: str) -> None:
        """Clear a node's ERROR or drain: it takes work again (admins)."""
        self.transport.call("POST", f"/v1/nodes/{_segment(name)}/resume")

    def clear_queue_error(self, name: str, queue: str) -> None:
        """Clear a queue's error on a node (queue@node): its jobs start there again (admins)."""
        self.transport.call("POST", f"/v1/nodes/{_segment(name)}/queues/{_segment(queue)}/clear")

    def drain_node(self, name: str, reason: str) -> None:
        """Drain a node: it starts nothing new, and is DRAINED once idle (admins)."""
        self.transport.call("POST", f"/v1/nodes/{_segment(name)}/drain", {"reason": reason})

    def staged_files(self, job_id: int) -> list[FileInfo]:
        """The files a job's attempts staged out, kept by the controller until fetched."""
        from drover.protocol.api import FileList

        return self._get(f"/v1/jobs/{_segment(job_id)}/files", FileList).files

    def staged_file(self, job_id: int, task: int, attempt: int, name: str) -> bytes | None:
        """One staged-out file's bytes; None if the controller does not keep it (or not yet)."""
        path = "/".join(_segment(part) for part in name.split("/"))
        status, data = self.transport.request(
            "GET", f"/v1/jobs/{_segment(job_id)}/files/{_segment(task)}/{_segment(attempt)}/{path}")
        return data if status == 200 else None

    # -- a task's output and terminal on its node ----------------------------------------------

    def output(self, job_id: int, task: int, stream: str = "stdout", offset: int = 0,
               attempt: int | None = None) -> OutputChunk:
        """Part of a task's output file from `offset`, read on the node that runs (or ran) it."""
        from drover.protocol.api import OutputChunk

        return self._get(f"/v1/jobs/{_segment(job_id)}/tasks/{_segment(task)}/output", OutputChunk,
                         stream=stream, offset=offset, attempt=attempt)

    def terminal(self, job_id: int, task: int) -> WebSocket:
        """A running interactive task's terminal, through its node: a WebSocket carrying the
        frames of shepherd/pty_relay.py (keys and window sizes out, the terminal's output in)."""
        from websockets.exceptions import InvalidStatus
        from websockets.sync.client import connect, unix_connect

        path = f"/v1/jobs/{_segment(job_id)}/tasks/{_segment(task)}/terminal"
        address, tls, sign = self.transport.address, self.transport.tls, self.transport.sign
        headers = {CREDENTIAL_HEADER: sign("GET", path, b"")} if sign is not None else None
        try:
            if address.startswith("https://"):
                return connect(f"wss://{address.removeprefix('https://').rstrip('/')}{path}", ssl=tls,
                               additional_headers=headers, open_timeout=20)
            return unix_connect(address, uri=f"ws://drover{path}", open_timeout=20)
        except (OSError, InvalidStatus) as error:
            from drover.core.errors import Unavailable

            raise Unavailable(f"cannot reach the terminal of task {job_id}.{task}: {error}") from None

    # -- tasks of a running parallel job on the hosts of its allocation (qrsh -inherit) --------

    def start_pe_task(self, job_id: int, host: str, argv: list[str], task: int = 0, cwd: str | None = None,
                      env: Mapping[str, str] | None = None) -> PeTaskInfo:
        from drover.protocol.api import PeTaskInfo

        payload: dict[str, Any] = {"host": host, "argv": list(argv), "task": task, "cwd": cwd,
                                   "env": dict(env) if env is not None else None}
        if self.munge_socket is not None and cwd is not None and env is not None:
            # signed by its owner, as a job is, for the nodes that run signed jobs only
            from drover.cluster import munge
            from drover.cluster.signing import job_digest, signed_pe_task_request

            payload["credential"] = munge.encode(
                job_digest(signed_pe_task_request(job_id, host, list(argv), cwd, env)), self.munge_socket)
        return self._post(f"/v1/jobs/{_segment(job_id)}/pe-tasks", PeTaskInfo, payload)

    def pe_task(self, job_id: int, petask: str, task: int = 0) -> PeTaskInfo:
        from drover.protocol.api import PeTaskInfo

        return self._get(f"/v1/jobs/{_segment(job_id)}/pe-tasks/{_segment(petask)}", PeTaskInfo, task=task)

    def pe_task_output(self, job_id: int, petask: str, stream: str = "stdout", offset: int = 0,
                       task: int = 0) -> OutputChunk:
        from drover.protocol.api import OutputChunk

        return self._get(f"/v1/jobs/{_segment(job_id)}/pe-tasks/{_segment(petask)}/output", OutputChunk,
                         stream=stream, offset=offset, task=task)

    def stop_pe_task(self, job_id: int, petask: str, task: int = 0) -> PeTaskInfo:
        import msgspec

        from drover.protocol.api import PeTaskInfo

        reply = self.transport.call("DELETE", f"/v1/jobs/{_segment(job_id)}/pe-tasks/{_segment(petask)}"
                                    f"?task={int(task)}", repeatable=True)  # stopping twice stops once
        return msgspec.convert(reply, PeTaskInfo)

    # -- many hosts: join tokens (admins, local socket); joining and leaving (TLS) ----------------

    def _post(self, path: str, model: type[T], payload: Any = None) -> T:
        import msgspec

        return msgspec.convert(self.transport.call("POST", path, payload), model)

    def create_token(self, ttl_s: float = 3600.0, uses: int = 1) -> TokenCreated:
        """A join token; its text is shown once (the controller keeps only its secret's hash)."""
        from drover.protocol.api import TokenCreated

        return self._post("/v1/cluster/tokens", TokenCreated, {"ttl_s": ttl_s, "uses": uses})

    # -- allocation queues (`drover alloc`, admins) ---------------------------------------------

    def add_alloc_queue(self, request: AllocQueueRequest) -> AllocQueueInfo:
        import msgspec

        from drover.protocol.api import AllocQueueInfo

        return self._post("/v1/alloc/queues", AllocQueueInfo, msgspec.to_builtins(request))

    def alloc_queues(self) -> list[AllocQueueInfo]:
        from drover.protocol.api import AllocQueueList

        return self._get("/v1/alloc/queues", AllocQueueList).queues

    def alloc_queue(self, queue_id: int) -> AllocQueueInfo:
        from drover.protocol.api import AllocQueueInfo

        return self._get(f"/v1/alloc/queues/{int(queue_id)}", AllocQueueInfo)

    def switch_alloc_queue(self, queue_id: int, action: str) -> AllocQueueInfo:
        """`action`: pause or resume."""
        from drover.protocol.api import AllocQueueInfo

        return self._post(f"/v1/alloc/queues/{int(queue_id)}/{_segment(action)}", AllocQueueInfo)

    def remove_alloc_queue(self, queue_id: int) -> AllocQueueInfo:
        import msgspec

        from drover.protocol.api import AllocQueueInfo

        return msgspec.convert(self.transport.call("DELETE", f"/v1/alloc/queues/{int(queue_id)}"), AllocQueueInfo)

    def tokens(self) -> list[TokenInfo]:
        from drover.protocol.api import TokenList

        return self._get("/v1/cluster/tokens", TokenList).tokens

    def revoke_token(self, token_id: str) -> TokenInfo:
        from urllib.parse import quote

        from drover.protocol.api import TokenInfo

        return self._post(f"/v1/cluster/tokens/{quote(token_id, safe='')}/revoke", TokenInfo)

    def cluster_ca(self) -> CaCertificate:
        """The cluster's CA certificate, as the controller serves it: trust it only once its
        fingerprint matches the one a token pins."""
        from drover.protocol.api import CaCertificate

        return self._get("/v1/cluster/ca", CaCertificate)

    def join(self, token: str, node: str, csr_pem: str) -> JoinReply:
        """This host's certificate as node `node`, for the signing request of its own key."""
        from drover.protocol.api import JoinReply

        return self._post("/v1/cluster/join", JoinReply, {"token": token, "node": node, "csr": csr_pem})

    def leave(self) -> LeaveReply:
        """The node of this connection's client certificate leaves the cluster."""
        from drover.protocol.api import LeaveReply

        return self._post("/v1/cluster/leave", LeaveReply)


def _segment(value: object) -> str:
    """One segment of a URL's path, percent-encoded: nothing in it (a slash, "?", "#", a space,
    a line break) can end the segment, start a query or break the request line; the controller
    sees the value as given and answers a bad one with a clear error."""
    from urllib.parse import quote

    return quote(str(value), safe="")


def _to_builtins(value: Any) -> Any:
    import msgspec

    return msgspec.to_builtins(value)


def _remote_user(remote: RemoteCluster) -> tuple[ssl.SSLContext, Callable[[str, str, bytes], str] | None]:
    """For a user on a host that joined the cluster: the controller verified against the
    cluster's CA, and each request signed with a MUNGE credential of this user's, made by this
    host's munged for that very request (cluster/munge.py)."""
    import ssl

    from drover.cluster import munge

    context = ssl.create_default_context(cadata=remote.ca_pem)
    socket = remote.munge_socket
    if socket is None:
        return context, None

    def sign(method: str, target: str, body: bytes) -> str:
        return munge.encode(munge.request_digest(method, target, body), socket)

    return context, sign


def _signed(job: Mapping[str, Any], munge_socket: str) -> dict[str, Any]:
    """`job` with its owner's credential over what it runs, as the nodes will check it."""
    from drover.cluster import munge
    from drover.cluster.signing import job_digest, signed_request

    return {**job, "credential": munge.encode(job_digest(signed_request(job)), munge_socket)}
