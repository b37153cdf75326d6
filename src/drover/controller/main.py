"""`drover controller`: the composition root of the controller daemon."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import socket
import sys
from collections.abc import Iterator

from drover import eventloop
from drover.config import Paths

TYPE_CHECKING = False
if TYPE_CHECKING:
    import uvicorn

    from drover.store.sqlite import SqliteStore


def serve(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="drover controller", description="Run the controller daemon.")
    parser.add_argument("--state-dir", help="the cluster's state directory (default: the personal one)")
    parser.add_argument("--socket", help="the API's Unix socket (default: STATE_DIR/api.sock)")
    parser.add_argument("--listen", metavar="HOST:PORT", help="also serve the API on TCP")
    parser.add_argument("--kill-grace", type=float, help="seconds between SIGTERM and SIGKILL (default 10)")
    parser.add_argument("--system", action="store_true",
                        help="a shared cluster: every local user may connect; each sees only their own jobs")
    args = parser.parse_args(argv)

    paths = Paths(os.path.abspath(args.state_dir) if args.state_dir else None)
    os.makedirs(paths.root, mode=0o700, exist_ok=True)
    os.umask(0o077)  # the database, logs and kept files are the cluster's alone
    from drover.config_file import ConfigError, read_config

    try:
        drover_toml = read_config(paths.config_file).config
    except ConfigError as error:
        raise SystemExit(f"drover controller: {error}") from None
    section = drover_toml.controller
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s controller %(levelname)s %(message)s", stream=sys.stderr
    )
    import uvicorn

    from drover.api.app import create_app
    from drover.api.peercred import protocol_class as peer_credentials_protocol
    from drover.controller.auth import Policy
    from drover.controller.reads import Reads
    from drover.controller.service import ControllerService, Settings

    kill_grace = args.kill_grace if args.kill_grace is not None else section.kill_grace_s
    store = _open_store(paths.database, section.sqlite_synchronous)
    shared = args.system or section.shared
    policy = Policy(owner_uid=os.getuid(), shared=shared, operators=frozenset(section.operators),
                    allow_root_jobs=section.allow_root_jobs)
    socket_path = args.socket or paths.socket
    sockets = [_unix_socket(socket_path, mode=0o666 if shared else 0o600)]
    if args.listen:
        host, _, port = args.listen.rpartition(":")
        tcp = socket.create_server((host or "127.0.0.1", int(port)), reuse_port=False)
        tcp.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sockets.append(tcp)

    async def main() -> None:
        settings = Settings(
            kill_grace_s=kill_grace, files_dir=os.path.join(paths.root, "files"),
            smtp_host=section.smtp_host, smtp_port=section.smtp_port, requeue_held=section.requeue_held,
            node_timeout_s=section.node_timeout_s, queues=drover_toml.queues, limits=section.limits(),
        )
        service = ControllerService(store, settings)
        server: uvicorn.Server | None = None

        def shutdown() -> None:
            if server is not None:
                server.should_exit = True

        reads = Reads(service)
        app = create_app(service, policy, shutdown, reads)
        config = uvicorn.Config(app, log_level="warning", lifespan="off", timeout_graceful_shutdown=2,
                                http=peer_credentials_protocol())
        server = _server(config)
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, shutdown)
        logging.getLogger("drover.controller").info(
            "serving on %s (store %s, schema v%d)", ", ".join(str(s.getsockname()) for s in sockets),
            paths.database, store.schema_version,
        )
        service.request_schedule()
        watcher = asyncio.get_running_loop().create_task(service.watch_nodes())
        try:
            await server.serve(sockets=sockets)
        finally:
            reads.close()  # the reading threads' connections go before the store's own
        watcher.cancel()
        await service.channels.close_all()
        await service.event_logs.close()

    try:
        eventloop.run(main())
    finally:
        store.close()
        for sock in sockets:
            sock.close()
        try:
            os.unlink(socket_path)
        except FileNotFoundError:
            pass
    return 0


def _open_store(path: str, synchronous: str) -> SqliteStore:
    """The store, or an exit with one line that names the file, what is wrong and what to do
    (a traceback helps no operator)."""
    import sqlite3

    from drover.store.faults import StoreFault, fault
    from drover.store.sqlite import SqliteStore

    try:
        return SqliteStore(path, synchronous=synchronous)
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


def _server(config: uvicorn.Config) -> uvicorn.Server:
    """uvicorn's server without its own signal handling: uvicorn re-raises SIGTERM once it has
    shut down, which would kill this process before it removes its socket and closes the store.
    The controller installs its handlers on the event loop instead."""
    import uvicorn

    class Server(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            yield

    return Server(config)


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
