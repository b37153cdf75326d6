"""Debian packages a test needs, installed by the test set-up itself where it can (as root, with
apt-get), one installation at a time across the test workers (apt's own lock refuses a second,
and a refused install would make a test skip for nothing). A test that still lacks what it
needs skips with the reason."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import time
from collections.abc import Callable

LOCK = "/tmp/drover-tests-apt.lock"


class Unavailable(Exception):
    """The package is missing and cannot be installed here; the message says why."""


def install(package: str, present: Callable[[], bool], recommends: bool = True, timeout: float = 600) -> None:
    """Install `package` unless `present()` says it is there; Unavailable if it cannot be. Each
    apt-get runs again while another program (apt, unattended-upgrades) holds dpkg's own lock,
    for up to `timeout` seconds."""
    if present():
        return
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        raise Unavailable(f"{package} is not installed (apt-get install {package}), and installing it needs root")
    command = ["apt-get", "install", "-y", "-q", *([] if recommends else ["--no-install-recommends"]), package]
    last = None
    deadline = time.monotonic() + timeout
    with open(LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        # A fresh machine may not have read its package lists yet: update, then try again.
        for attempt in (command, ["apt-get", "update", "-q"], command):
            if present():
                return
            last = _past_other_locks(attempt, deadline, timeout)
        if present():
            return
    tail = ((last.stderr or last.stdout).strip().splitlines()[-1:] if last else []) or ["no output"]
    raise Unavailable(f"{package} is not installed and `apt-get install {package}` failed: {tail[0]}")


def dpkg(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """`dpkg ARGS` as root, one at a time with the test set-up's installs (the same lock), and
    again while another program (apt, unattended-upgrades) holds dpkg's own lock."""
    with open(LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _past_other_locks(["dpkg", *args], time.monotonic() + timeout, timeout)


def _past_other_locks(command: list[str], deadline: float, timeout: float) -> subprocess.CompletedProcess[str]:
    """`command` (apt-get, dpkg), run again each second while it fails for a lock another
    program holds (dpkg's, apt's lists'), until `deadline`."""
    while True:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                              env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})
        if done.returncode == 0 or "lock" not in done.stderr or time.monotonic() > deadline:
            return done
        time.sleep(1)


def installed(tools: tuple[str, ...], package: str, recommends: bool = True) -> None:
    """Every one of `tools` on PATH, installing `package` if one is missing."""
    install(package, lambda: all(shutil.which(tool) for tool in tools), recommends)


def tool(name: str, package: str | None = None) -> str:
    """The path of `name`, installed from `package` (default: its own name) if need be."""
    installed((name,), package or name)
    found = shutil.which(name)
    assert found is not None
    return found


def chromium() -> str:
    """Debian's Chromium, for the tests that drive a real browser through its DevTools protocol
    (tests/helpers/browser.py); installed without its recommends (no fonts beyond the default)."""
    installed(("chromium",), "chromium", recommends=False)
    found = shutil.which("chromium")
    assert found is not None
    return found
