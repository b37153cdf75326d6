"""`drover up --system` starts the controller as the service user with a login's environment of
that user and what Drover needs of root's (PATH, the locale, the time zone, DROVER_* settings),
never the rest of root's environment (its credentials, its proxies, whatever its shell set)."""

from __future__ import annotations

import pwd
from pathlib import Path

import pytest
from tests.helpers.system_cluster import SystemCluster

from drover.config import SERVICE_USER


@pytest.fixture
def cluster(unstarted_system_cluster: SystemCluster) -> SystemCluster:
    return unstarted_system_cluster


def environment_of(pid: int) -> dict[str, str]:
    found = {}
    for entry in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0"):
        name, sep, value = entry.decode(errors="replace").partition("=")
        if sep:
            found[name] = value
    return found


def test_the_controller_gets_none_of_roots_environment_but_what_it_needs(cluster: SystemCluster) -> None:
    cluster.start(env={"ROOTS_SECRET_TOKEN": "marker-of-roots-environment", "TZ": "Europe/Oslo",
                       "LC_TIME": "C.UTF-8", "DROVER_DEBUG_SETTING": "kept"})
    controller = next(daemon.pid for daemon in cluster.daemons if "controller" in daemon.cmdline())
    environment = environment_of(controller)
    assert "ROOTS_SECRET_TOKEN" not in environment, environment
    service = pwd.getpwnam(SERVICE_USER)
    assert environment["HOME"] == service.pw_dir and environment["USER"] == SERVICE_USER
    assert environment["TZ"] == "Europe/Oslo" and environment["LC_TIME"] == "C.UTF-8"
    assert environment["DROVER_DEBUG_SETTING"] == "kept" and environment["LANG"] == "C.UTF-8"
    assert environment["PATH"] == cluster.user_path
    assert set(environment) <= {"HOME", "USER", "LOGNAME", "SHELL", "PATH", "LANG", "TZ", "LC_TIME",
                                "DROVER_DEBUG_SETTING", "DROVER_SOCKET"}, environment
