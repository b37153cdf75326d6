"""`drover controller`: the composition root of the controller daemon."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import math
import os
import pwd
import signal
import socket
import ssl
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from drover import eventloop
from drover.config import Paths
from drover.store.urls import shown as shown_url

TYPE_CHECKING = False
if TYPE_CHECKING:
    import uvicorn

    from drover.api.admission import Admission
    from drover.api.listener import RefusalLog
    from drover.api.metrics import MetricsOnly
    from drover.api.standby import RoleSwitch
    from drover.cluster.setup import ControllerTls
    from drover.config_schema import ControllerSection, DroverConfig
    from drover.controller.allocations.allocator import Allocator
    from drover.controller.ha.standing import Standing
    from drover.controller.reads.queries import Reads
    from drover.controller.security.auth import Policy
    from drover.controller.security.membership import Membership
    from drover.controller.service import ControllerService
    from drover.controller.settings import Settings
    from drover.core.errors import DroverError
    from drover.pid_file import Claimed
    from drover.store.leadership import Leadership
    from drover.store.sql_store import SqlStore


def _kill_grace(text: str) -> float:
    """--kill-grace: seconds within kill_grace_s's range (float() alone takes nan, -1 and 1e20)."""
    from drover.config_schema import MAX_KILL_GRACE_S

    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 <= value <= MAX_KILL_GRACE_S:
        raise argparse.ArgumentTypeError(f"expected a number of seconds from 0 to {MAX_KILL_GRACE_S:g}, not {text!r}")
    return value


def serve(argv: list[str]) -> int:
    """Start-up in named steps: read the arguments and drover.toml, claim the state directory and
    open what the daemon serves (`_open`), run the loop (`_run`), close everything in any case."""
    args = _arguments(argv)
    paths = Paths(os.path.abspath(args.state_dir) if args.state_dir else None)
    os.makedirs(paths.root, mode=0o700, exist_ok=True)
    own = _own_files(paths) if args.system else paths
    os.umask(0o077)  # the database, logs and kept files are the cluster's alone
    config = _read_config(paths)
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s controller %(levelname)s %(message)s", stream=sys.stderr
    )
    daemon = _open(args, paths, own, config)
    try:
        eventloop.run(_run(daemon))
    finally:
        daemon.close()
    if daemon.fatal:
        print(f"drover controller: {daemon.fatal[0]}", file=sys.stderr)
        return 1
    if daemon.lost is not None:
        print(f"drover controller: stopped, no longer the active controller: {daemon.lost}", file=sys.stderr)
        return 1
    return 0


def _arguments(argv: list[str]) -> argparse.Namespace:
    from drover.config_schema import KILL_GRACE_S

    parser = argparse.ArgumentParser(prog="drover controller", description="Run the controller daemon.")
    parser.add_argument("--state-dir", help="the cluster's state directory (default: the personal one)")
    parser.add_argument("--socket", help="the API's Unix socket (default: STATE_DIR/api.sock)")
    parser.add_argument("--listen", metavar="HOST:PORT",
                        help="also serve on TCP, with TLS only: nodes of other hosts and their joining "
                             "(needs `drover cluster init`)")
    parser.add_argument("--kill-grace", type=_kill_grace, help=f"seconds between SIGTERM and SIGKILL (default {KILL_GRACE_S:g})")
    parser.add_argument("--system", action="store_true",
                        help="a shared cluster: every local user may connect; each sees only their own jobs")
    return parser.parse_args(argv)


def _read_config(paths: Paths) -> DroverConfig:
    from drover.config_file import ConfigError, read_config

    try:
        return read_config(paths.config_file).config
    except ConfigError as error:
        raise SystemExit(f"drover controller: {error}") from None


@dataclass
class _Daemon:
    """What the controller opened before its loop runs (closed by `close`, whatever happens),
    and why it stopped."""

    config: DroverConfig
    settings: Settings
    url: str
    policy: Policy
    socket_path: str
    claimed: Claimed
    leadership: Leadership | None
    opened: list[SqlStore]  # the store, once this controller is the active one
    tls: ControllerTls | None
    tls_context: ssl.SSLContext | None
    sockets: list[socket.socket]
    tcp_sockets: list[socket.socket]
    admission: Admission
    refusals: RefusalLog
    open_files: int
    metrics_sockets: list[socket.socket] = field(default_factory=list)  # [controller] metrics_listen
    metrics_app: MetricsOnly | None = None
    lost: str | None = None  # why this controller stopped being the active one (set by its shutdown)
    fatal: list[str] = field(default_factory=list)  # why this controller could not become the active one

    @property
    def section(self) -> ControllerSection:
        return self.config.controller

    def close(self) -> None:
        for store in self.opened:
            store.close()
        for sock in [*self.sockets, *self.tcp_sockets, *self.metrics_sockets]:
            sock.close()
        try:
            os.unlink(self.socket_path)
        except FileNotFoundError:
            pass
        self.claimed.release()


def _open(args: argparse.Namespace, paths: Paths, own: Paths, config: DroverConfig) -> _Daemon:
    """Claim the state directory, reach the store (or its leadership), bind the sockets."""
    from drover.api.admission import Admission, within_open_files
    from drover.api.listener import RefusalLog
    from drover.controller.security.auth import Policy
    from drover.controller.settings import Settings

    section = config.controller
    settings = Settings.of(config, os.path.join(own.root, "files"), args.kill_grace)
    url = config.store.url or f"sqlite://{own.database}"
    shared = args.system or section.shared
    policy = Policy(owner_uid=os.getuid(), shared=shared, operators=frozenset(section.operators),
                    allow_root_jobs=section.allow_root_jobs, munge_socket=section.munge_socket)
    listen = _address(args.listen) if args.listen else None
    socket_path = args.socket or own.socket
    # One controller a state directory: the one holding its pid file's lock, before it opens the
    # store or binds the socket. Another started at the same moment exits, and its starter waits
    # for this one (pid_file.py); the pid file never names a controller that gave up.
    claimed = _claim(own.controller_pid, socket_path)
    # On PostgreSQL, other controllers may share the store: this one serves as the active one
    # only once it holds the leadership (controller/ha/leadership.py), a standby until then. On
    # SQLite it is the only one, and active at once.
    try:
        leadership = _leadership(url, listen, socket_path)
        opened: list[SqlStore] = [] if leadership is not None else [_open_store(url, section.sqlite_synchronous)]
        tls, tls_context = _tls(paths.root, section, listen is not None)
        tcp_sockets = [_tcp_socket(listen)] if listen else []  # before the Unix socket: a refusal leaves no file
        tcp_sockets_metrics = [_tcp_socket(_metrics_address(section))] if section.metrics_listen else []
        sockets = [_unix_socket(socket_path, mode=0o666 if shared else 0o600)]
    except BaseException:
        claimed.release()  # a controller that does not start leaves no pid file
        raise
    limits = section.connections
    open_files = _raise_open_files_limit()
    admission = Admission(within_open_files(limits.max_connections, open_files), limits.reserved_connections,
                          limits.max_connections_per_peer)
    daemon = _Daemon(config, settings, url, policy, socket_path, claimed, leadership, opened, tls, tls_context, sockets,
                     tcp_sockets, admission, RefusalLog(), open_files, tcp_sockets_metrics)
    if tcp_sockets_metrics:
        from drover.api.metrics import MetricsOnly

        daemon.metrics_app = MetricsOnly()
    return daemon


async def _run(daemon: _Daemon) -> None:
    """Serve: a standby until this controller leads (PostgreSQL), then the active controller
    until it is stopped or loses the leadership."""
    from drover.api.standby import RoleSwitch, standby_app
    from drover.controller.ha.standing import Standing

    log = logging.getLogger("drover.controller")
    address = daemon.leadership.address if daemon.leadership is not None else daemon.socket_path
    standing = Standing(address)
    switch = RoleSwitch(standby_app(standing))
    servers = _servers(daemon, switch)
    service: ControllerService | None = None  # once this controller is the active one

    def shutdown(why: str | None = None) -> None:
        """Stop serving; `why` says why this controller is no longer the active one (None: it was
        told to stop). The requests still waiting on it are answered at once, as a standby would."""
        if why is not None and daemon.lost is None:
            daemon.lost = why
        if service is not None:
            service.stop_answering(_stopping(daemon, address))
        for server in servers:
            server.should_exit = True

    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, shutdown)
    serving = asyncio.gather(*(server.serve() for server in servers))  # each accepts on its own sockets (api/listener.py)
    if daemon.leadership is not None:
        log.info("standby on %s (store %s, advertised as %s): waiting for the leadership",
                 ", ".join(str(s.getsockname()) for s in [*daemon.sockets, *daemon.tcp_sockets]),
                 shown_url(daemon.url), address)
        if not await _become_active(daemon, standing, serving, shutdown):
            await serving  # stopped while a standby
            return
    store = daemon.opened[0]
    if daemon.section.store_check_s > 0 and not await _store_is_sound(daemon):
        shutdown()
        await serving
        return
    service, reads = _start_service(daemon, store, switch, shutdown, address)
    tasks = _background_tasks(daemon, service, store, shutdown)
    try:
        await serving
    finally:
        reads.close()  # the reading threads' connections go before the store's own
    for task in tasks:
        task.cancel()
    await service.channels.close_all()
    await service.event_logs.close()


def _stopping(daemon: _Daemon, address: str) -> DroverError:
    """What the stopping controller answers the requests still waiting on it (a `drover wait`,
    a long poll for events). With a shared store it is a standby's answer, naming no one: a
    client with several addresses asks the others, where the next active controller answers."""
    from drover.core.errors import Standby, Unavailable

    if daemon.lost is not None:
        return Standby(f"the controller at {address} is no longer the active one ({daemon.lost}); "
                       "ask the active controller")
    if daemon.leadership is not None:
        return Standby(f"the controller at {address} is shutting down; ask the active controller")
    return Unavailable(f"the controller at {address} is shutting down; ask again once it is started")


def _servers(daemon: _Daemon, switch: RoleSwitch) -> list[uvicorn.Server]:
    """The local socket and TCP are served apart: TLS on TCP only, the Unix socket as ever.
    Their connections are counted together (one admission, one limit of descriptors)."""
    import uvicorn

    from drover.api.listener import server as guarded_server

    def config() -> uvicorn.Config:
        # No per-message deflate on WebSockets: the node channel's messages are small and
        # many, and compressing each cost more of the controller's CPU than anything else
        # per job (0.5 ms a frame, profiled on B1); a cluster's links are not the limit.
        return uvicorn.Config(switch, log_level="warning", lifespan="off", timeout_graceful_shutdown=2,
                              ws_per_message_deflate=False)

    limits, admission = daemon.section.connections, daemon.admission
    servers = [guarded_server(config(), daemon.sockets, None, admission, limits, daemon.refusals, os.getuid())]
    if daemon.tcp_sockets:
        servers.append(guarded_server(config(), daemon.tcp_sockets, daemon.tls_context, admission, limits,
                                      daemon.refusals, os.getuid()))
    if daemon.metrics_sockets and daemon.metrics_app is not None:  # plain HTTP, /metrics alone
        metrics = uvicorn.Config(daemon.metrics_app, log_level="warning", lifespan="off", timeout_graceful_shutdown=2)
        servers.append(guarded_server(metrics, daemon.metrics_sockets, None, admission, limits, daemon.refusals,
                                      os.getuid()))
    logging.getLogger("drover.controller").info(
        "connections: at most %d (%d kept for nodes and admins), %d per peer; open files limit %d",
        admission.max_connections, admission.reserved, admission.per_peer, daemon.open_files)
    return servers


async def _become_active(daemon: _Daemon, standing: Standing, serving: asyncio.Future[Any],
                         shutdown: Callable[[], None]) -> bool:
    """Wait as a standby for the leadership; True once this controller holds it (its store
    opened), False if it stopped serving first or the store cannot be used."""
    assert daemon.leadership is not None
    try:
        led = await _lead(daemon.url, daemon.leadership, standing, serving)
    except RuntimeError as error:  # a store written by a newer Drover
        daemon.fatal.append(f"the job store {shown_url(daemon.url)} cannot be used: {error}; upgrade Drover")
        shutdown()
        led = None
    if led is None:
        return False
    daemon.opened.append(led)
    return True


async def _store_is_sound(daemon: _Daemon) -> bool:
    """The first check of the store's pages: a damaged store is not served."""
    from drover.controller.ha import store_check

    found = await store_check.first_check(daemon.url)
    if not found.sound:
        daemon.fatal.append(found.refusal())
    return found.sound


def _start_service(daemon: _Daemon, store: SqlStore, switch: RoleSwitch, shutdown: Callable[[], None],
                   address: str) -> tuple[ControllerService, Reads]:
    """The service on the store, the API app switched in for the standby's."""
    from drover.api.app import create_app
    from drover.controller.faults import Faults
    from drover.controller.reads.queries import Reads
    from drover.controller.security.membership import Membership
    from drover.controller.service import ControllerService

    log = logging.getLogger("drover.controller")
    faults = Faults.from_environment()
    if faults:
        log.warning("fault injection for testing is on: %s", faults.describe())
    service = ControllerService(store, daemon.settings, faults=faults)
    reads = Reads(service)
    tls = daemon.tls
    membership = Membership(service, store, tls) if tls is not None else None
    switch.become(create_app(service, daemon.policy, shutdown, reads, membership, address))
    log.info("serving on %s (store %s, schema v%d)", ", ".join(str(s.getsockname()) for s in daemon.sockets),
             store.path, store.schema_version)
    if daemon.tcp_sockets and tls is not None:
        from drover.cluster.ca import spaced

        log.info("serving TLS on %s (certificate %s, CA %s, SHA-256 %s)", daemon.tcp_sockets[0].getsockname(),
                 tls.cert, tls.ca, spaced(tls.fingerprint()))
    if daemon.metrics_app is not None:
        daemon.metrics_app.service = service
        log.info("serving /metrics over plain HTTP on %s ([controller] metrics_listen)",
                 daemon.metrics_sockets[0].getsockname())
    if membership is not None and daemon.tcp_sockets:
        service.allocator = _allocator(daemon, service, store, membership)
    service.request_schedule()
    return service, reads


def _allocator(daemon: _Daemon, service: ControllerService, store: SqlStore, membership: Membership) -> Allocator:
    """Allocation queues (`drover alloc`): nodes joining from an outer scheduler's allocations
    reach this controller at its TCP address (this host's name where it listens on every address)."""
    import socket

    from drover.config import Paths, cluster_tag
    from drover.controller.allocations.allocator import Allocator

    host, port = daemon.tcp_sockets[0].getsockname()[:2]
    if host in ("0.0.0.0", "::"):
        host = socket.getfqdn()
    url = f"https://[{host}]:{port}" if ":" in host else f"https://{host}:{port}"
    root = os.path.dirname(daemon.settings.files_dir)  # the controller's own state directory
    return Allocator(service, store, membership, url, os.path.join(root, "alloc"), cluster_tag(Paths(root)),
                     shared=daemon.policy.shared)


def _background_tasks(daemon: _Daemon, service: ControllerService, store: SqlStore,
                      shutdown: Callable[[str | None], None]) -> list[asyncio.Task[None]]:
    """What runs beside the API: the nodes' watch, the purges, the store's checks, and (with a
    shared store) the watch of this controller's leadership."""
    loop = asyncio.get_running_loop()
    tasks = [loop.create_task(service.watch_nodes()), loop.create_task(service.purge_history())]
    if service.allocator is not None:
        tasks.append(loop.create_task(service.allocator.run()))
    if daemon.section.store_check_s > 0:
        from drover.controller.ha import store_check

        tasks.append(loop.create_task(store_check.watch(store, daemon.url, daemon.section.store_check_s)))
    if daemon.leadership is not None:
        from drover.controller.ha.leadership import watch
        from drover.store.postgres import PostgresStore

        assert isinstance(store, PostgresStore)

        def step_down(why: Exception) -> None:
            # Fenced: the store refuses this controller from now on (nothing is committed,
            # so nothing is acknowledged or dispatched); it stops serving, which closes
            # the nodes' channels, and they go to the active controller.
            shutdown(str(why))

        tasks.append(loop.create_task(watch(store, step_down)))
    return tasks


def _claim(pid_path: str, socket_path: str) -> Claimed:
    """This controller's pid file, locked for its life; an exit if another controller holds it."""
    from drover.pid_file import ALREADY_RUNNING, claim
    from drover.store.faults import read_only_directory

    try:
        claimed = claim(pid_path)
    except OSError as error:
        directory = read_only_directory(pid_path)
        if directory is not None:
            raise SystemExit(f"drover controller: its directory {directory} is on a read-only filesystem "
                             f"(cannot write {pid_path}); remount it read-write, or give the cluster a state "
                             "directory on a writable one") from None
        raise SystemExit(f"drover controller: cannot write its pid file {pid_path}: {error.strerror or error}") from None
    if claimed is None:
        print(f"drover controller: a controller already serves {socket_path} (it holds {pid_path})", file=sys.stderr)
        raise SystemExit(ALREADY_RUNNING)
    return claimed


def _leadership(url: str, listen: tuple[str, int] | None, socket_path: str) -> Leadership | None:
    """For a PostgreSQL store, this controller's side of the leadership, once the store was
    reached (else an exit with one line that says why, as for a store that cannot be opened)."""
    from drover.store.urls import backend_of

    if backend_of(url) != "postgresql":
        return None
    from drover.controller.ha.leadership import advertised
    from drover.store.faults import StoreFault
    from drover.store.leadership import Leadership
    from drover.store.postgres import connect

    try:
        connect(url, "drover-controller").close()
    except StoreFault as error:
        raise SystemExit(f"drover controller: {error}") from None
    return Leadership(advertised(listen, socket_path))


async def _lead(url: str, leadership: Leadership, standing: Standing,
                serving: asyncio.Future[Any]) -> SqlStore | None:
    """Wait as a standby until this controller holds the leadership (its store, opened), or
    until it stops serving (None)."""
    from drover.controller.ha.leadership import name_the_active, wait_to_lead

    namer = asyncio.get_running_loop().create_task(name_the_active(url, standing))
    waiter = asyncio.get_running_loop().create_task(wait_to_lead(url, leadership, standing))
    try:
        await asyncio.wait({waiter, serving}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        namer.cancel()
    if waiter.done():
        return waiter.result()
    waiter.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await waiter
    return None


def _own_files(paths: Paths) -> Paths:
    """A shared cluster's controller keeps its store, staged-out files and socket in a directory
    of its own (`Paths.controller_dir`), which root gives its service user before it starts
    (`drover up --system`, `drover cluster init --system`): the state directory is root's."""
    own = Paths(paths.controller_dir)
    if not os.path.isdir(own.root) or not os.access(own.root, os.W_OK | os.X_OK):
        raise SystemExit(f"drover controller: {own.root} is not there or not writable by this controller's user; "
                         f"as root, `drover cluster init --system --state-dir {paths.root}` makes it "
                         "(`drover up --system` does)")
    earlier = paths.database
    if os.path.exists(earlier) and not os.path.exists(own.database):
        raise SystemExit(f"drover controller: the job store is still at {earlier}, where an earlier Drover kept it; "
                         f"as root, `drover cluster init --system --state-dir {paths.root}` moves it to {own.database}")
    return own


def _tls(state_dir: str, section: ControllerSection, listen: bool) -> tuple[ControllerTls | None, ssl.SSLContext | None]:
    """The TLS files (None when the cluster has none: no TCP, no joining), and the server's
    context when it listens on TCP, which it serves with TLS only, never in the clear."""
    from drover.cluster.setup import controller_tls
    from drover.cluster.tls import server_context
    from drover.core.errors import DroverError

    try:
        tls = controller_tls(state_dir, section)
    except DroverError as error:
        raise SystemExit(f"drover controller: {error}") from None
    missing = [path for path in (tls.cert, tls.key, tls.ca) if not os.path.isfile(path)]
    if not listen:
        return (None if missing else tls), None
    if missing:
        raise SystemExit(f"drover controller: --listen serves TLS only, and {missing[0]} is not there; "
                         f"run `drover cluster init --state-dir {state_dir}` first (`drover up --listen` does)")
    try:
        return tls, server_context(tls.cert, tls.key, tls.ca)
    except (OSError, ssl.SSLError) as error:
        raise SystemExit(f"drover controller: cannot serve TLS with {tls.cert}, {tls.key} and {tls.ca}: {error}") from None


def _address(listen: str) -> tuple[str, int]:
    from drover.cluster.tls import parse_address
    from drover.core.errors import DroverError

    try:
        return parse_address(listen, "--listen")
    except DroverError as error:
        raise SystemExit(f"drover controller: {error}") from None


def _metrics_address(section: ControllerSection) -> tuple[str, int]:
    """[controller] metrics_listen: served to anyone who reaches it, so only where the metrics
    are public already."""
    from drover.cluster.tls import parse_address
    from drover.core.errors import DroverError

    if not section.public_metrics:
        raise SystemExit("drover controller: [controller] metrics_listen serves /metrics to anyone who reaches it, "
                         "without asking who they are; set public_metrics = true too to say that is meant "
                         "(docs/security.md)")
    try:
        return parse_address(section.metrics_listen, "[controller] metrics_listen")
    except DroverError as error:
        raise SystemExit(f"drover controller: {error}") from None


def _tcp_socket(address: tuple[str, int]) -> socket.socket:
    host, port = address
    try:
        tcp = socket.create_server((host, port), family=socket.AF_INET6 if ":" in host else socket.AF_INET)
    except OSError as error:
        why = error.strerror or str(error)
        if isinstance(error, PermissionError) and port < 1024:
            why += (f"; ports below 1024 are root's, and this controller runs as {pwd.getpwuid(os.geteuid()).pw_name}: "
                    "listen on a port from 1024 up (docs/many-hosts.md uses 7443)")
        raise SystemExit(f"drover controller: cannot listen on {host}:{port}: {why}") from None
    tcp.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return tcp


def _open_store(url: str, synchronous: str) -> SqlStore:
    """The store, or an exit with one line that names the file or server, what is wrong and
    what to do (a traceback helps no operator). A PostgreSQL store says itself why it cannot
    be opened (unreachable, refused, psycopg missing), as a StoreFault."""
    import sqlite3

    from drover.store.base import open_store
    from drover.store.faults import StoreFault, fault
    from drover.store.sql_store import SqlStore
    from drover.store.urls import backend_of, shown, sqlite_path

    path = sqlite_path(url) if backend_of(url) == "sqlite" else shown(url)
    try:
        store = open_store(url, sqlite_synchronous=synchronous)
        assert isinstance(store, SqlStore)  # the backends' common base: membership, schema_version
        return store
    except StoreFault as error:
        message = str(error)
    except sqlite3.Error as error:
        message = str(fault(path, error))
    except PermissionError as error:
        message = f"the job store {path} cannot be used: {error.strerror}; make it and its directory writable by the controller's user"
    except OSError as error:
        message = f"the job store {path} cannot be used: {error.strerror or error}; check its directory"
    except RuntimeError as error:  # a store written by a newer Drover
        message = f"the job store {path} cannot be used: {error}; upgrade Drover"
    raise SystemExit(f"drover controller: {message}")


def _raise_open_files_limit() -> int:
    """The soft limit of open files raised to the hard one: each connection is a descriptor, and
    the soft limit (often 1024) is far below what a busy cluster needs. Returns the limit now."""
    import resource

    from drover.open_files import UNLIMITED_AS, raise_soft_limit

    _, soft = raise_soft_limit()
    return soft if soft != resource.RLIM_INFINITY else UNLIMITED_AS


def _unix_socket(path: str, mode: int) -> socket.socket:
    """Bind the API socket: mode 0600 for a personal cluster (only its owner can connect), 0666
    for a shared one (every local user can; the controller reads each peer's uid from the kernel)."""
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(path)
    except OSError:
        pass  # nobody serves it: a stale socket from a controller that was killed
    else:
        raise SystemExit(f"drover controller: a controller already serves {path}")
    finally:
        probe.close()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    old_umask = os.umask(0o177)
    try:
        sock.bind(path)
    finally:
        os.umask(old_umask)
    os.chmod(path, mode)
    sock.listen(256)
    return sock
