"""Drover installed for every user, the way docs/shared-machine.md says: scripts/install-system.sh into a temporary
prefix that every local user can traverse, so tests run the installed `drover` as real users."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[2]
SCRIPT = REPOSITORY / "scripts" / "install-system.sh"

# What pip says when the package index cannot be reached: the install is then skipped, not failed.
_UNREACHABLE = ("Could not find a version", "No matching distribution", "NewConnectionError",
                "Temporary failure in name resolution", "Max retries exceeded", "Network is unreachable")


class InstallUnavailable(Exception):
    """This machine cannot make the install (not root, no python3-venv, no package index)."""


@dataclass(frozen=True)
class SystemInstall:
    root: Path     # the temporary directory holding both, removed by `remove`
    prefix: Path   # the virtual environment
    bindir: Path   # where `drover` is linked, as /usr/local/bin would be
    seconds: float  # how long the install took
    # The install made the system user a shared cluster's controller runs as (`drover`): `remove`
    # removes it again, unless something still runs as it (another test run's cluster).
    made_service_user: bool = False

    @property
    def drover(self) -> str:
        return str(self.bindir / "drover")

    @property
    def python(self) -> str:
        """The install's python: runs raw-socket probes as a user with Drover importable."""
        return str(self.prefix / "bin" / "python")

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)
        if self.made_service_user:
            remove_service_user()


def install() -> SystemInstall:
    """Run the install script into a fresh prefix under /tmp (0755, so users can execute it;
    /root is not traversable). Raises InstallUnavailable with the reason when it cannot."""
    if os.geteuid() != 0:
        raise InstallUnavailable("installing Drover for all users needs root")
    root = Path(tempfile.mkdtemp(prefix="drover-install-", dir="/tmp"))
    os.chmod(root, 0o755)
    found = SystemInstall(root, root / "venv", root / "bin", 0.0)
    env = {**os.environ, "PREFIX": str(found.prefix), "BINDIR": str(found.bindir)}
    for name in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "PIP_REQUIRE_VIRTUALENV"):
        env.pop(name, None)  # the install's pip works on the install, not on the test's venv
    started = time.monotonic()
    result = subprocess.run([str(SCRIPT)], env=env, capture_output=True, text=True, timeout=600,
                            stdin=subprocess.DEVNULL, cwd="/")
    seconds = time.monotonic() - started
    if result.returncode != 0:
        found.remove()
        output = (result.stdout + result.stderr).strip()
        tail = "\n".join(line for line in output.splitlines() if "is ignored" not in line)[-2000:]
        if result.returncode == 3 or (result.returncode == 4 and any(m in output for m in _UNREACHABLE)):
            raise InstallUnavailable(tail)
        raise AssertionError(f"{SCRIPT.name} exited {result.returncode}:\n{tail}")
    made = "made the system user drover" in result.stdout
    return SystemInstall(found.root, found.prefix, found.bindir, seconds, made)


def remove_service_user() -> None:
    """Remove the service user `drover` (and its group) if no process runs as it: it is shared by
    every shared cluster of this machine, and another test run's may still be up."""
    import pwd

    import psutil

    from drover.config import SERVICE_USER

    try:
        uid = pwd.getpwnam(SERVICE_USER).pw_uid
    except KeyError:
        return
    if any(p.info["uids"] and uid in p.info["uids"] for p in psutil.process_iter(["uids"])):
        return
    subprocess.run(["userdel", SERVICE_USER], capture_output=True)
    subprocess.run(["groupdel", SERVICE_USER], capture_output=True)  # if userdel left it
