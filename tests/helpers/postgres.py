"""A private PostgreSQL server for the store's tests: initdb in a temporary directory, listening
on a Unix socket there and on a free loopback port, started and stopped with pg_ctl; the
system's own service is never touched. As root it runs as the `postgres` user (PostgreSQL
refuses root). One server per test session; each test gets a database of its own.

Where the binaries are missing it tries `apt-get install -y postgresql` once (after `apt-get
update` if the package lists do not have it); where they still are not, or psycopg is not installed, the tests that need it skip and say why.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import debian

ROLE = "drover"  # the server's superuser, reached without a password over its own socket only


class Unavailable(Exception):
    """Why no private server can be started here."""


def bin_dir() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    return Path(found[-1]).parent if found else None


def _install_once() -> Path:
    try:
        debian.install("postgresql", present=lambda: bin_dir() is not None)
    except debian.Unavailable as why:
        raise Unavailable(str(why)) from None
    found = bin_dir()
    assert found is not None
    return found


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


RUNNING: set[PrivateServer] = set()  # started and not yet stopped: their processes outlive single tests


def server_processes() -> set[int]:
    """The pids of every running private server's processes (the postmaster and its children):
    a session's server is not a process some test left behind (conftest.no_leftover_processes),
    though it may be a child of the test process (a test that made that process a subreaper
    inherits the daemonised postmaster)."""
    import psutil

    pids: set[int] = set()
    for server in RUNNING:
        try:
            postmaster = int((server.data / "postmaster.pid").read_text().split()[0])
            pids.add(postmaster)
            pids.update(child.pid for child in psutil.Process(postmaster).children(recursive=True))
        except (OSError, ValueError, IndexError, psutil.Error):
            continue
    return pids


class PrivateServer:
    """`start()` it, `url(database)` to reach it, `stop()` removes everything it made."""

    def __init__(self) -> None:
        self.bin = _install_once()
        self.root = Path(tempfile.mkdtemp(prefix="drover-pg-"))
        self.data = self.root / "data"
        self.port = _free_port()
        self.user: str | None = None
        if os.geteuid() == 0:
            try:
                pwd.getpwnam("postgres")
            except KeyError:
                raise Unavailable("running as root and there is no `postgres` user to run the server as") from None
            self.user = "postgres"
            shutil.chown(self.root, "postgres")

    def _run(self, *argv: str) -> None:
        command = [str(self.bin / argv[0]), *argv[1:]]
        if self.user is not None:
            command = ["runuser", "-u", self.user, "--", *command]
        result = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=self.root)
        if result.returncode != 0:
            log = self.root / "server.log"
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            raise Unavailable(f"{argv[0]} failed: {result.stderr.strip() or result.stdout.strip()} {tail}")

    def start(self, durable: bool = False) -> PrivateServer:
        """Trust on its own socket and loopback only. Not `durable` (for tests): no fsync, since
        a test server's data need not survive a crash and the tests run faster; durable, the
        server's defaults, as bench/store_commit.py measures."""
        self._run("initdb", "-D", str(self.data), "-U", ROLE, "--auth=trust", "--no-sync", "-E", "UTF8",
                  "--locale=C.UTF-8")
        options = (f"-c listen_addresses=127.0.0.1 -c port={self.port} -c unix_socket_directories={self.root} "
                   "-c max_connections=50")
        if not durable:
            options += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        self.options = options
        RUNNING.add(self)
        self.resume()
        return self

    def pause(self) -> None:
        """Stop the server as an operator's restart does (fast: sessions are ended), keeping its data."""
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")

    def resume(self) -> None:
        """Start it (again), on the same port and socket."""
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.root / "server.log"), "-o", self.options, "-w",
                  "start")

    def url(self, database: str = "postgres") -> str:
        """Over the Unix socket in the server's directory."""
        return f"postgresql://{ROLE}@/{database}?host={self.root}&port={self.port}"

    def tcp_url(self, database: str = "postgres") -> str:
        return f"postgresql://{ROLE}@127.0.0.1:{self.port}/{database}"

    def create_database(self) -> str:
        import psycopg

        name = f"t_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.url(), autocommit=True) as admin:
            admin.execute(f'CREATE DATABASE "{name}"')
        return name

    def drop_database(self, name: str) -> None:
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def stop(self) -> None:
        try:
            if (self.data / "postmaster.pid").exists():
                self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")
        finally:
            RUNNING.discard(self)
            shutil.rmtree(self.root, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PrivateServer]:
    try:
        import psycopg  # noqa: F401
    except ImportError:
        pytest.skip("psycopg is not installed (pip install -e '.[test]')")
    try:
        server = PrivateServer()
    except Unavailable as why:
        pytest.skip(f"no private PostgreSQL server: {why}")
    try:
        server.start()
    except Unavailable as why:
        server.stop()
        pytest.skip(f"no private PostgreSQL server: {why}")
    yield server
    server.stop()


@pytest.fixture
def postgres_url(postgres_server: PrivateServer) -> Iterator[str]:
    """A fresh, empty database on the session's private server."""
    name = postgres_server.create_database()
    yield postgres_server.url(name)
    postgres_server.drop_database(name)


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The URL of an empty store of each backend in turn: the same test runs against both."""
    if request.param == "sqlite":
        return f"sqlite://{tmp_path / 'drover.db'}"
    return str(request.getfixturevalue("postgres_url"))
