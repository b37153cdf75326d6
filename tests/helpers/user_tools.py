"""The workflow tools (tests/helpers/workflow_tools.py) made runnable by an ordinary user, and run
as one against a shared cluster, the way a user of a shared machine runs them from a login.

The cached environments cannot serve another user as they are: they live under the repository,
which another user may not be able to enter, and they were made from the Python that runs the
tests, which may live under /root (mode 0700). So each tool is copied, once per test run, into
a virtual environment under a temporary directory every user can enter, made from the system's
Python (/usr/bin/python3, the one a shared machine's users have): its installed packages and
commands are copied from the cache (the commands' `#!` lines pointed at the copy), and the drivers
beside them. The packages are for the same Python version, so their compiled parts load as they
are; where the system's Python is another version, the tool is unavailable, saying why.

The directory is the run's (tests/helpers/run_wide.py): the first worker of a pytest-xdist run to
need a tool copies it, holding a lock the others wait on, and the run's end removes it all. Each
copy is named like the cached environment it comes from (the tool and its pins' key)."""

from __future__ import annotations

import contextlib
import fcntl
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path

from tests.helpers import run_wide, workflow_tools
from tests.helpers.system_cluster import SystemCluster
from tests.helpers.users import LOGIN_PATH, user_command
from tests.helpers.workflow_tools import DRIVERS, ToolEnv, ToolRun, ToolUnavailable

SYSTEM_PYTHON = Path(os.environ.get("DROVER_SYSTEM_PYTHON", "/usr/bin/python3"))


class SharedTools:
    """A directory (0755) holding copies of the tools' environments and the drivers: the test
    run's, or, outside a run tests/conftest.py started, a temporary one `remove` deletes."""

    def __init__(self) -> None:
        shared = run_wide.shared_directory("tools")
        self._own = shared is None
        self.root = shared or Path(tempfile.mkdtemp(prefix="drover-tools-", dir="/tmp"))
        os.chmod(self.root, 0o755)
        self.drivers = self.root / "drivers"
        with self._locked("drivers"):
            if not (self.root / "drivers.copied").exists():
                shutil.rmtree(self.drivers, ignore_errors=True)  # what an interrupted copy left
                shutil.copytree(DRIVERS, self.drivers, ignore=shutil.ignore_patterns("__pycache__"))
                _readable(self.drivers)
                (self.root / "drivers.copied").touch()
        self._made: dict[str, ToolEnv] = {}

    def remove(self) -> None:
        """Delete a directory of its own; the run's is removed at the run's end."""
        if self._own:
            shutil.rmtree(self.root, ignore_errors=True)

    def usable(self, cached: ToolEnv) -> ToolEnv:
        """`cached`'s tool in an environment every user can run. Raises ToolUnavailable."""
        if cached.name in self._made:
            return self._made[cached.name]
        prefix = self.root / cached.prefix.name
        copied, unavailable = self.root / f"{prefix.name}.copied", self.root / f"{prefix.name}.unavailable"
        with self._locked(prefix.name):
            if unavailable.exists():  # said once, the same to every worker
                raise ToolUnavailable(unavailable.read_text())
            if not copied.exists():
                try:
                    _copy(cached, prefix)
                except ToolUnavailable as why:
                    unavailable.write_text(str(why))
                    raise
                copied.touch()
        env = ToolEnv(cached.name, prefix, 0.0)
        self._made[cached.name] = env
        return env

    @contextlib.contextmanager
    def _locked(self, name: str) -> Iterator[None]:
        with open(self.root / f".{name}.lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield

    def driver(self, env: ToolEnv, script: str, *args: str) -> list[str]:
        """The argv that runs a driver (a copy every user can read) with the tool's Python."""
        return [str(env.python), str(self.drivers / script), *args]


def start_as(user: str, env: ToolEnv, argv: list[str], shared: SystemCluster, front_ends: Path,
             cwd: Path, log: Path, extra: Mapping[str, str] | None = None) -> ToolRun:
    """Start `argv` as `user`, in `cwd`, with a login's environment whose PATH has the user's front
    ends first, then the tool's commands and the installed `drover`; DROVER_SOCKET names the shared
    cluster. Its own process group; its output (to `log`, a file root made) never blocks on a pipe."""
    path = os.pathsep.join([str(front_ends), str(env.bin), str(shared.install.bindir), LOGIN_PATH])
    command, clean = user_command(user, argv, cwd=cwd, env={
        "PATH": path, "DROVER_SOCKET": shared.socket, "PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1",
        **(extra or {})})
    semaphores = workflow_tools._semaphores()
    with open(log, "w") as out:
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                   text=True, env=clean, cwd="/", process_group=0)
    # Its stop removes the user's semaphores only, never those of a tool another test runs as root.
    return ToolRun(process, log, semaphores, semaphores_of=pwd.getpwnam(user).pw_uid)


def _copy(cached: ToolEnv, prefix: Path) -> None:
    """A virtual environment at `prefix`, made by the system's Python, with `cached`'s packages
    and commands. Raises ToolUnavailable."""
    version = subprocess.run([str(SYSTEM_PYTHON), "-c", "import sys; print(sys.version_info[:2])"],
                             capture_output=True, text=True)
    if version.returncode != 0:
        raise ToolUnavailable(f"{SYSTEM_PYTHON} cannot run: {version.stderr.strip()[-300:]}")
    if version.stdout.strip() != str(sys.version_info[:2]):
        raise ToolUnavailable(f"{SYSTEM_PYTHON} is Python {version.stdout.strip()}, the cached {cached.name} "
                              f"was installed for {sys.version_info[:2]}: its compiled packages would not load")
    shutil.rmtree(prefix, ignore_errors=True)  # what an interrupted copy left
    made = subprocess.run([str(SYSTEM_PYTHON), "-m", "venv", "--without-pip", str(prefix)],
                          capture_output=True, text=True)
    if made.returncode != 0:
        raise ToolUnavailable(f"{SYSTEM_PYTHON} -m venv failed: {made.stderr.strip()[-500:]}")
    lib = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    shutil.copytree(cached.prefix / "lib" / lib / "site-packages", prefix / "lib" / lib / "site-packages",
                    symlinks=True, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__"))
    for command in cached.bin.iterdir():
        target = prefix / "bin" / command.name
        if target.exists() or target.is_symlink() or not command.is_file():
            continue  # the new environment's own python and activate scripts
        text = command.read_bytes()
        old = f"#!{cached.prefix}/bin/".encode()
        if text.startswith(old):  # a console script: run by the copy's python
            text = f"#!{prefix}/bin/".encode() + text[len(old):]
        target.write_bytes(text)
        target.chmod(0o755)
    _readable(prefix)


def _readable(top: Path) -> None:
    """Every user may read what is under `top`, and enter and run what root can."""
    for path in [top, *top.rglob("*")]:
        if path.is_symlink():
            continue
        mode = path.stat().st_mode
        path.chmod(mode | 0o444 | (0o111 if mode & 0o100 else 0))
