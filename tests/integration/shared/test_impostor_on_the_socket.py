"""On one host, the controller's service user cannot make root's execd run its commands either.

`drover up --system` runs the controller as `drover`, and the execd, as root, finds it through
`api.sock`, a link to `controller/api.sock` in a directory `drover` owns. The service user there
stops the real controller and puts one of its own on that socket, with a drover.toml of its own
whose queue prolog and PE procedure (root@) write `id`. The execd reconnects to it, and a real
user's jobs come to it: the node refuses each attempt that would run those commands, saying its
own drover.toml (root's) does not define them, and nothing is written."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

from tests.helpers.system_cluster import SystemCluster
from tests.helpers.system_install import SystemInstall
from tests.helpers.wait import wait_until

from drover.config import SERVICE_USER


def test_an_impostor_on_the_execds_socket_cannot_make_root_run_its_commands(
        system_cluster_factory: Callable[..., SystemCluster], system_install: SystemInstall,
        users: tuple[str, str]) -> None:
    alice, _ = users
    cluster = system_cluster_factory()
    evidence = Path(tempfile.mkdtemp(prefix="drv-evidence-", dir="/tmp"))
    os.chmod(evidence, 0o1777)
    own = Path(tempfile.mkdtemp(prefix="drv-impostor-", dir="/tmp"))  # the service user's own directory
    (own / "drover.toml").write_text(
        "[controller]\nshared = true\n"
        f'[queues.default]\nprolog = "id > {evidence}/queue_prolog"\n'
        "[queues.plain]\n"
        f'[parallel_environments.evil]\nslots = 8\nstart_proc_args = "root@id > {evidence}/pe_start"\n')
    shutil.chown(own, SERVICE_USER, SERVICE_USER)
    shutil.chown(own / "drover.toml", SERVICE_USER, SERVICE_USER)
    impostor: subprocess.Popen[bytes] | None = None
    try:
        real = next(d for d in cluster.daemons if "controller" in " ".join(d.cmdline()))
        real.terminate()  # the service user may: it is its own process
        real.wait(timeout=30)
        socket = cluster.state_dir / "controller" / "api.sock"
        with open(own / "controller.log", "ab") as log:
            impostor = subprocess.Popen(
                ["setpriv", f"--reuid={SERVICE_USER}", f"--regid={SERVICE_USER}", "--clear-groups", "--",
                 system_install.python, "-m", "drover", "controller", "--state-dir", str(own), "--socket", str(socket),
                 "--kill-grace", "1"],
                stdin=subprocess.DEVNULL, stdout=log, stderr=log, process_group=0, cwd="/")
        wait_until(lambda: any(node["state"] == "up" for node in _nodes(cluster)), timeout=60,
                   describe="root's execd connected to the impostor")
        for options, says in (((), "[queues.default] prolog"),
                              (("-q", "plain", "--pe", "evil", "1"), "[parallel_environments.evil] start_proc_args")):
            job = cluster.submit_as(alice, *options, "--", "true")
            ended = cluster.wait_ended(job)
            failure = ended["tasks"][0]["attempts"][0]["failure"]
            assert ended["state"] == "failed", ended
            assert says in failure and str(cluster.state_dir / "drover.toml") in failure, failure
        assert sorted(os.listdir(evidence)) == []
    finally:
        if impostor is not None:
            os.killpg(impostor.pid, signal.SIGTERM)
            try:
                impostor.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(impostor.pid, signal.SIGKILL)
                impostor.wait()
        shutil.rmtree(evidence, ignore_errors=True)
        shutil.rmtree(own, ignore_errors=True)


def _nodes(cluster: SystemCluster) -> list[dict[str, object]]:
    import json

    listed = cluster.as_root("nodes", "--json", check=False)
    return json.loads(listed.stdout) if listed.returncode == 0 else []  # type: ignore[no-any-return]
