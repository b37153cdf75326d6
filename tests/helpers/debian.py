"""Debian packages a test needs, installed by the test set-up itself where it can (as root, with
apt-get), one installation at a time across the test workers (apt's own lock refuses a second).
A test that still lacks its tool skips with the reason."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess

LOCK = "/tmp/drover-tests-apt.lock"


class Unavailable(Exception):
    """The tool is missing and cannot be installed here; the message says why."""


def installed(tools: tuple[str, ...], package: str) -> None:
    """Every one of `tools` on PATH, installing `package` if one is missing; Unavailable if not."""
    if all(shutil.which(tool) for tool in tools):
        return
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        raise Unavailable(f"{package} is not installed (apt-get install {package}), and installing it needs root")
    with open(LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        for attempt in (["apt-get", "install", "-y", "-qq", package], ["apt-get", "update", "-qq"],
                        ["apt-get", "install", "-y", "-qq", package]):
            if all(shutil.which(tool) for tool in tools):
                return
            subprocess.run(attempt, capture_output=True, env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"},
                           timeout=600)
        if all(shutil.which(tool) for tool in tools):
            return
    raise Unavailable(f"{package} is not installed and `apt-get install {package}` failed (no package index?)")


def tool(name: str, package: str | None = None) -> str:
    """The path of `name`, installed from `package` (default: its own name) if need be."""
    installed((name,), package or name)
    found = shutil.which(name)
    assert found is not None
    return found
