"""A cluster of hosts in network namespaces whose users prove themselves with MUNGE: the
controller's host, the named nodes joined with the private munged's socket, each logged on a
failure. Skips with the reason where namespaces or munged cannot be had."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import pytest

from tests.helpers.munge import Munged, MungeUnavailable
from tests.helpers.netns import Hosts, why_not_available


@contextmanager
def hosts_with_munge(nodes: Sequence[str], python: str = sys.executable,
                     service_user: bool = False, more_config: str = "") -> Iterator[tuple[Hosts, Munged]]:
    """`python`: what runs Drover on every host (an installed Drover's where jobs' owners must run
    it too); `service_user`: the controller as the `drover` user, as `drover up --system` runs it;
    `more_config`: tables of the controller's drover.toml after its [controller] table."""
    why_not = why_not_available()
    if why_not:
        pytest.skip(why_not)
    with Hosts(python=python) as hosts:
        os.chmod(hosts.root, 0o711)
        try:
            munged = Munged(hosts.root / "munge")
        except MungeUnavailable as why:
            pytest.skip(str(why))
        try:
            for node in nodes:
                hosts.add_node(node)
            hosts.start_controller(f'[controller]\nshared = true\nmunge_socket = "{munged.socket}"\n'
                                   + more_config,
                                   service_user=service_user)
            for node in nodes:
                hosts.join(node, hosts.token(), "--munge-socket", munged.socket)
            yield hosts, munged
        except BaseException:
            print(hosts.logs())
            raise
        finally:
            munged.stop()
        print(hosts.logs())


def run_on_node(hosts: Hosts, node: str, user: str, argv: Sequence[str], bindirs: Sequence[str | os.PathLike[str]],
                **env: str) -> subprocess.CompletedProcess[str]:
    """`argv` run as `user` inside `node`'s namespace, as a user logged in there runs it: the
    commands in `bindirs` first on the PATH, the node's cluster file found, `env` over that."""
    from tests.helpers.users import LOGIN_PATH, run_as_user

    return run_as_user(user, argv, prefix=hosts.nodes[node].command(),
                       env={"PATH": ":".join([*map(str, bindirs), LOGIN_PATH]),
                            "DROVER_CLUSTER_FILE": str(hosts.nodes[node].state_dir / "cluster.json"), **env})
