"""The dashboard's HTTP server: standard library only (http.server), one thread per connection.

Every request must come with the Host this server listens as and with a live session
(`session.py`); without them it gets a bare 403 and nothing of the cluster. The pages and their
server-sent event streams (`/stream/...`) ask the controller through a `Client` of the user who
runs `drover web`; the actions (`POST /actions/ACTION`) also need the session's CSRF token, and
what they do is the controller's decision, whose answer the page shows.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from urllib.parse import parse_qs, urlsplit

from drover.web import pages, reads
from drover.web.output import OutputTail
from drover.web.session import Session, Sessions, allowed_hosts, csrf_ok, host_ok

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from drover.client.client import Client

LIST_PERIOD_S = 2.0  # how often a listing's stream asks again
JOB_WAIT_S = 1  # a job's stream waits this long for the job's next event before it looks again
MAX_BODY = 64 * 1024
STATIC = {"dashboard.css": "text/css; charset=utf-8", "dashboard.js": "text/javascript; charset=utf-8"}
SECURITY_HEADERS = {
    # Only the dashboard's own script and style; inline style attributes draw the bars.
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
                               "img-src 'self' data:; connect-src 'self'; form-action 'self'; "
                               "frame-ancestors 'none'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",  # the token's URL is never sent on
    "Cache-Control": "no-store",
}


class Dashboard:
    """What every request handler shares: the sessions, the user, how to reach the controller."""

    def __init__(self, host: str, port: int, make_client: Callable[[], Client], user: str) -> None:
        self.sessions = Sessions(port)
        self.allowed = allowed_hosts(host, port)
        self.make_client = make_client
        self.user = user
        self.stopping = threading.Event()


def serve(listen_host: str, port: int, make_client: Callable[[], Client], user: str,
          ready: Callable[[Dashboard, int], None]) -> None:
    """Serve until interrupted; `ready(dashboard, port)` is called once the socket listens."""
    server = _Server((listen_host, port), _Handler)
    bound_port = server.server_address[1]
    if listen_host not in ("127.0.0.1", "::1", "localhost"):
        from socket import getfqdn, gethostname

        names = {gethostname(), getfqdn()}
        extra = {f"{name}:{bound_port}".lower() for name in names}
    else:
        extra = set()
    dashboard = Dashboard(listen_host, int(bound_port), make_client, user)
    dashboard.allowed = dashboard.allowed | extra
    server.dashboard = dashboard
    ready(dashboard, int(bound_port))
    try:
        server.serve_forever(poll_interval=0.5)
    finally:
        dashboard.stopping.set()
        server.server_close()


class _Server(ThreadingHTTPServer):
    daemon_threads = True  # an open event stream never keeps the command from ending
    dashboard: Dashboard

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler]) -> None:
        if ":" in address[0]:
            import socket

            self.address_family = socket.AF_INET6
        super().__init__(address, handler)


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"
    server_version = "drover-web"
    sys_version = ""

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (the base class's name)
        pass  # the requests are the user's own; nothing is logged

    @property
    def dashboard(self) -> Dashboard:
        return self.server.dashboard

    # -- the gate every request passes ---------------------------------------------------------

    def _admitted(self) -> tuple[Session | None, str | None]:
        """The request's session, or None after a refusal was sent; with a cookie to set when
        the request exchanged the one-time token."""
        if not host_ok(self.headers.get("Host"), self.dashboard.allowed):
            self._plain(403, "refused: this dashboard answers only to the address it listens on\n")
            return None, None
        session = self.dashboard.sessions.find(self.headers.get("Cookie"))
        if session is not None:
            return session, None
        token = parse_qs(urlsplit(self.path).query).get("token", [""])[0]
        session_id = self.dashboard.sessions.exchange(token) if token else None
        if session_id is None:
            self._plain(403, "refused: open the URL `drover web` printed (its token is good once)\n")
            return None, None
        return self.dashboard.sessions.find(f"{self.dashboard.sessions.cookie_name}={session_id}"), session_id

    def do_GET(self) -> None:
        session, new_session = self._admitted()
        if session is None:
            return
        url = urlsplit(self.path)
        if new_session is not None:  # the token leaves the address bar and the history
            self.send_response(303)
            self.send_header("Location", url.path or "/")
            self.send_header("Set-Cookie", self.dashboard.sessions.set_cookie(new_session))
            self._finish_headers(0)
            return
        query = {key: values[0] for key, values in parse_qs(url.query).items()}
        path = url.path
        if path.startswith("/static/") and path[len("/static/"):] in STATIC:
            name = path[len("/static/"):]
            data = resources.files("drover.web").joinpath("static", name).read_bytes()
            self._reply(200, STATIC[name], data)
        elif path.startswith("/stream/"):
            self._stream(path[len("/stream"):], query)
        else:
            page = self._page(path, query, session)
            if page is None:
                self._plain(404, "no such page\n")
            else:
                self._reply(200, "text/html; charset=utf-8", page.encode())

    def do_POST(self) -> None:
        # Until its body is read, an answer closes the connection: a body left unread there would
        # be taken for the next request on it.
        asked_to_close, self.close_connection = self.close_connection, True
        session, new_session = self._admitted()
        if session is None:
            return
        if new_session is not None or not csrf_ok(session, self.headers.get("X-CSRF-Token")):
            self._plain(403, "refused: the request does not carry this session's CSRF token\n")
            return
        origin = self.headers.get("Origin")
        if origin is not None and urlsplit(origin).netloc.lower() not in self.dashboard.allowed:
            self._plain(403, "refused: the request comes from another site\n")
            return
        action = urlsplit(self.path).path.removeprefix("/actions/")
        if action not in pages.ACTIONS:
            self._plain(404, "no such action\n")
            return
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY or (self.headers.get("Content-Type") or "").split(";")[0] != "application/json":
            self._plain(400, "an action is a JSON body of at most 64 KiB\n")
            return
        try:
            body = self.rfile.read(length)
            self.close_connection = asked_to_close
            refs = json.loads(body)["refs"]
            if not isinstance(refs, list) or not all(isinstance(ref, str) for ref in refs):
                raise ValueError("refs must be a list of strings")
        except (ValueError, KeyError, TypeError) as error:
            self._plain(400, f"a bad action request: {error}\n")
            return
        from drover.core.errors import DroverError

        try:
            with self.dashboard.make_client() as api:
                results = [{"ref": r["ref"], "ok": r["ok"], "message": r["message"]}
                           for r in api.action_json(action, refs)]
        except DroverError as error:  # the request as a whole was refused
            results = [{"ref": ref, "ok": False, "message": str(error)} for ref in refs]
        body = json.dumps({"results": results}).encode()
        self._reply(200, "application/json", body)

    # -- pages and their streams -----------------------------------------------------------------

    def _page(self, path: str, query: dict[str, str], session: Session) -> str | None:
        url_query = urlsplit(self.path).query
        stream = "/stream" + path + ("?" + url_query if url_query else "")
        filters = _filters(query)
        tail = ""
        job_id = _job_id(path)
        if path == "/":
            title, current, live = "Cluster", "/", self._rendered(reads.cluster)
        elif path == "/jobs":
            title, current, live = "My jobs", "/jobs", self._rendered(lambda api: reads.jobs(api, filters))
        elif path == "/history":
            title, current, live = "History", "/history", self._rendered(lambda api: reads.history(api, filters))
        elif job_id is not None:
            view = reads.JobView(job_id)
            title, current, live = f"Job {job_id}", "/jobs", self._rendered(view.render)
            if view.job is not None:  # the output of the task asked for, else of its first
                indices = [task.index for task in view.job.tasks]
                task = _whole(query.get("task"))
                task = task if task is not None and task in indices else (indices[0] if indices else 0)
                tail = pages.output_tail(view.job, task)
                stream = f"/stream/jobs/{job_id}?task={task}"
        else:
            return None
        return pages.document(title, live, csrf=session.csrf, stream=stream, user=self.dashboard.user,
                              current=current, tail=tail)

    def _rendered(self, render: Callable[[Client], str]) -> str:
        from drover.core.errors import DroverError

        try:
            with self.dashboard.make_client() as api:
                return render(api)
        except DroverError as error:
            return pages.error_live(str(error))

    def _stream(self, path: str, query: dict[str, str]) -> None:
        """Server-sent events: `update` with the page's live part whenever it changes, and on a
        job's page `output` with what its task wrote since."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Connection", "close")
        for key, value in SECURITY_HEADERS.items():
            self.send_header(key, value)
        self.end_headers()
        self.close_connection = True
        from drover.core.errors import DroverError

        job_id = _job_id(path)
        filters = _filters(query)
        renders: dict[str, Callable[[Client], str]] = {
            "/": reads.cluster, "/jobs": lambda api: reads.jobs(api, filters),
            "/history": lambda api: reads.history(api, filters)}
        view = reads.JobView(job_id) if job_id is not None else None
        tail = OutputTail(job_id, _whole(query.get("task")) or 0) if job_id is not None else None
        if view is None and path not in renders:
            return
        last = None
        try:
            with self.dashboard.make_client() as api:
                while not self.dashboard.stopping.is_set():
                    try:
                        html = view.render(api) if view is not None else renders[path](api)
                        new_output = tail.read_new(api, view.job) if tail is not None and view and view.job else ""
                    except DroverError as error:
                        html, new_output = pages.error_live(str(error)), ""
                    if html != last:
                        self._event("update", html)
                        last = html
                    if new_output:
                        self._event("output", new_output)
                    self.wfile.write(b": still here\n\n")  # a closed page shows here, as a failed write
                    self.wfile.flush()
                    if view is not None:
                        try:
                            view.wait(api, JOB_WAIT_S)
                        except DroverError:
                            time.sleep(JOB_WAIT_S)
                    else:
                        self.dashboard.stopping.wait(LIST_PERIOD_S)
        except (BrokenPipeError, ConnectionResetError, OSError):
            return

    def _event(self, name: str, data: str) -> None:
        self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())

    # -- replies ---------------------------------------------------------------------------------

    def _reply(self, status: int, content_type: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self._finish_headers(len(body))
        self.wfile.write(body)

    def _plain(self, status: int, text: str) -> None:
        self._reply(status, "text/plain; charset=utf-8", text.encode())

    def _finish_headers(self, length: int) -> None:
        self.send_header("Content-Length", str(length))
        if self.close_connection:
            self.send_header("Connection", "close")
        for key, value in SECURITY_HEADERS.items():
            self.send_header(key, value)
        self.end_headers()


def _job_id(path: str) -> int | None:
    if not path.startswith("/jobs/"):
        return None
    return _whole(path[len("/jobs/"):])


def _whole(text: str | None) -> int | None:
    if text is None or not text.isascii() or not text.isdigit() or len(text) > 12:
        return None
    return int(text)


def _filters(query: dict[str, str]) -> pages.Filters:
    try:
        since = float(query["since_days"]) if query.get("since_days") else None
    except ValueError:
        since = None
    by = query.get("by", "user")
    return pages.Filters(state=query.get("state", ""), name=query.get("name", ""), user=query.get("user", ""),
                         include_ended=query.get("all") == "1", queue=query.get("queue", ""), since_days=since,
                         by=by if by in ("user", "queue", "node", "day") else "user")


def print_url(dashboard: Dashboard, host: str, port: int) -> None:
    shown = f"[{host}]" if ":" in host else host
    print(f"Drover dashboard for {dashboard.user}: http://{shown}:{port}/?token={dashboard.sessions.token}",
          flush=True)
    print("The token is good once: it is exchanged for a session cookie. Ctrl-C stops the dashboard.",
          file=sys.stderr, flush=True)
