"""The test set-up's apt-get (tests/helpers/debian.py) waits while another program holds dpkg's
lock and apt's lists' lock, as apt and unattended-upgrades do on a fresh machine, instead of
finding the package unavailable and skipping its tests for nothing."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest
from tests.helpers import debian

# Holds the locks as apt does (fcntl's write lock on the whole file), says so, and lets them go
# after a few seconds.
HOLDER = """
import fcntl, sys, time
files = [open(path, "a") for path in sys.argv[1:]]
for file in files:
    fcntl.lockf(file, fcntl.LOCK_EX)
print("held", flush=True)
time.sleep(3)
"""
LOCKS = ("/var/lib/dpkg/lock-frontend", "/var/lib/dpkg/lock", "/var/lib/apt/lists/lock")


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("apt-get") is None, reason="apt-get as root")
def test_an_install_waits_for_the_locks_another_program_holds(monkeypatch: pytest.MonkeyPatch) -> None:
    runs: list[tuple[list[str], int]] = []
    real_run: Callable[..., subprocess.CompletedProcess[Any]] = subprocess.run

    def run(command: list[str], **options: Any) -> subprocess.CompletedProcess[Any]:
        done = real_run(command, **options)
        runs.append((command, done.returncode))
        return done

    monkeypatch.setattr(debian.subprocess, "run", run)
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, *LOCKS], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        # coreutils is installed: apt-get has nothing to fetch, but takes dpkg's lock all the same
        debian.install("coreutils", present=lambda: any(code == 0 for _, code in runs), timeout=60)
    finally:
        holder.kill()
        holder.wait()
    assert runs[0][1] != 0  # refused while the other program held the lock...
    assert runs[-1] == (["apt-get", "install", "-y", "-q", "coreutils"], 0)  # ...then done
