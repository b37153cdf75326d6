"""A private munged for a test: its own key, socket and files under a directory of the test's,
so that every "host" of a namespace cluster (they share this machine's filesystem) vouches for
its users with the same key, as the hosts of a real cluster do. Installed from Debian's package
when missing (root and the package index needed); otherwise the tests that need it skip."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

from tests.helpers import debian

MungeUnavailable = debian.Unavailable


def _installed() -> None:
    debian.installed(("munged", "mungekey"), "munge")


class Munged:
    def __init__(self, directory: Path) -> None:
        _installed()
        self.directory = directory
        directory.mkdir(mode=0o755)
        os.chmod(directory, 0o755)  # users reach the socket
        self.socket = str(directory / "munge.socket")
        key = directory / "munge.key"
        subprocess.run(["mungekey", "--create", f"--keyfile={key}", "--bits=1024"], check=True, capture_output=True)
        self.pid_file = directory / "munged.pid"
        subprocess.run(["munged", "--force", f"--socket={self.socket}", f"--key-file={key}",
                        f"--log-file={directory / 'munged.log'}", f"--pid-file={self.pid_file}",
                        f"--seed-file={directory / 'munged.seed'}"], check=True, capture_output=True)
        deadline = time.monotonic() + 10
        while not os.path.exists(self.socket) and time.monotonic() < deadline:
            time.sleep(0.02)

    def stop(self) -> None:
        try:
            pid = int(self.pid_file.read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.02)
        os.kill(pid, signal.SIGKILL)
