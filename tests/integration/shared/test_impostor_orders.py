"""An impostor controller, put on the execd's socket by the controller's service user, sends
root's execd orders that name no attempt, or that name a cgroup of their own: the node makes
nothing of them anywhere (in its spool or outside it), runs nothing, says so in its log, and
goes on running the orders that are well formed.

`drover up --system` runs the controller as `drover`, which owns the directory of the socket
the execd connects to (test_impostor_on_the_socket.py). Here the service user stops the real
controller and serves the node channel itself, speaking the protocol by hand: whatever it
sends, root's node must not create or write where it points (docs/security.md, section 9)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.helpers.attempt_config import attempt_config
from tests.helpers.shared_dirs import directory_in_tmp
from tests.helpers.system_cluster import SystemCluster
from tests.helpers.system_install import SystemInstall
from tests.helpers.wait import wait_until

from drover.config import SERVICE_USER

# The impostor: it takes the execd's channel on the socket, welcomes it, sends each line of its
# stdin as a frame, and prints every message the node sends, one JSON line each.
IMPOSTOR = """
import asyncio, json, sys
from websockets.asyncio.server import unix_serve

async def main():
    loop = asyncio.get_running_loop()
    lines = asyncio.StreamReader(limit=2**26)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(lines), sys.stdin)

    async def channel(ws):
        forward = None
        try:
            async for frame in ws:
                for message in json.loads(frame):
                    print(json.dumps(message), flush=True)
                    if message.get("type") == "hello" and forward is None:
                        await ws.send(json.dumps([{"type": "welcome", "node": message["node"], "heartbeat_s": 60}]))
                        forward = asyncio.create_task(send_lines(ws))
        finally:
            if forward is not None:
                forward.cancel()

    async def send_lines(ws):
        while line := await lines.readline():
            await ws.send(line.decode())

    async with unix_serve(channel, sys.argv[1], max_size=2**26):
        await asyncio.Future()

asyncio.run(main())
"""


class Impostor:
    """The impostor's process, as the service user, and what the node has sent it."""

    def __init__(self, python: str, own: Path, socket: Path) -> None:
        (own / "impostor.py").write_text(IMPOSTOR)
        shutil.chown(own / "impostor.py", SERVICE_USER, SERVICE_USER)
        self.received: list[dict[str, Any]] = []
        self.process = subprocess.Popen(
            ["setpriv", f"--reuid={SERVICE_USER}", f"--regid={SERVICE_USER}", "--clear-groups", "--",
             python, str(own / "impostor.py"), str(socket)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, process_group=0, cwd="/",
            text=True)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.received.append(json.loads(line))

    def send(self, *messages: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(list(messages)) + "\n")
        self.process.stdin.flush()

    def reports(self, kind: str, attempt: str) -> list[dict[str, Any]]:
        return [m for m in list(self.received) if m.get("type") == kind and m.get("attempt") == attempt]

    def stop(self) -> None:
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        self.reader.join(timeout=5)


@pytest.fixture
def evidence() -> Iterator[Path]:
    """Where an order that escaped would write: a directory everyone may write in."""
    with directory_in_tmp("drv-evidence-", 0o1777) as made:
        yield made


def order(name: str, owner: str, evidence: Path, after: str | None = None, script: str = "",
          **config: Any) -> dict[str, Any]:
    """A StartAttempt of a job of `owner` whose script writes `evidence/ran-<job>` first: a
    whole attempt config, as the controller would send it."""
    home = os.path.expanduser(f"~{owner}")
    made = dict(attempt_config(home, "7.0.1", owner=owner, stdout=f"{home}/out", environment={"PATH": "/usr/bin:/bin"}))
    made.update(attempt=name, **config)
    for key in ("identity", "scratch", "cluster"):  # the node's own: an order does not carry them
        made.pop(key)
    body = f"#!/bin/sh\necho ran > {evidence}/ran-{name.split('.')[0][:20]}\n{script}"
    return {"type": "start", "attempt": name, "config": made, "script": body, "after": after}


def listing(spool: Path, evidence: Path) -> set[str]:
    """What the spool holds (its attempts; what a running one writes in its own is its own), and
    everything beneath the evidence directory."""
    found = {str(spool / name) for name in os.listdir(spool)}
    for directory, dirs, files in os.walk(evidence):
        found.update(os.path.join(directory, name) for name in dirs + files)
    return found


@pytest.mark.timeout(300)
def test_orders_naming_no_attempt_or_a_cgroup_of_their_own_make_nothing_and_good_orders_run_on(
        system_cluster: SystemCluster, system_install: SystemInstall, users: tuple[str, str],
        evidence: Path) -> None:
    alice, _ = users
    cluster = system_cluster
    spool = cluster.spool()
    own = Path(tempfile.mkdtemp(prefix="drv-impostor-", dir="/tmp"))  # the service user's own directory
    shutil.chown(own, SERVICE_USER, SERVICE_USER)
    impostor: Impostor | None = None
    try:
        real = next(d for d in cluster.daemons if "controller" in " ".join(d.cmdline()))
        real.terminate()  # the service user may: it is its own process
        real.wait(timeout=30)
        impostor = Impostor(system_install.python, own, cluster.state_dir / "controller" / "api.sock")
        wait_until(lambda: any(m.get("type") == "hello" for m in impostor.received), timeout=60,
                   describe="root's execd to connect to the impostor")
        log = cluster.state_dir / "execd.log"

        def refused(name: str, after: str | None = None) -> bool:
            said = log.read_text(errors="replace")
            return f"refused an order that names no attempt: {name[:80]!r} (after {(after or '')[:80]!r})" in said

        # A job that runs while the orders come, so that "<its name>/../x" names a directory that is there.
        impostor.send(order("900001.0.1", alice, evidence, script=f"while [ ! -e {evidence}/go ]; do sleep 0.1; done\n"))
        wait_until(lambda: impostor.reports("started", "900001.0.1"), timeout=60, describe="the good order to start")
        assert (spool / "900001.0.1").is_dir()
        # its script's first line is done before anything is compared with what there is now
        wait_until(lambda: (evidence / "ran-900001").exists(), describe="the good order's job to run")
        names = ["../../etc", "900001.0.1/../x", "900001.0.1/../../x", "1.0.1\n", "1.0.1\x00", "../" * 20 + str(evidence)[1:] + "/abs.0.1",
                 str(evidence / "absolute"), "", ".", "..", "1.0", "1.0.1.2", " 1.0.1", "x" * 100_000,
                 "1.0.1/" + "a" * 5000]
        bad_afters = ["../../etc", "1.0.1\n", "900001.0.1/../x", "7" * 100_000]
        before = listing(spool, evidence)
        # Where each name would point, were it taken as a path beneath the spool.
        targets = {name: os.path.normpath(os.path.join(spool, name)) for name in names if "\x00" not in name}
        there = {name for name, target in targets.items() if os.path.lexists(target)}  # the spool, its parent

        for name in names:
            impostor.send(order(name, alice, evidence))
        for number, after in enumerate(bad_afters):
            impostor.send(order(f"90001{number}.0.1", alice, evidence, after=after))
        for name in names:
            wait_until(lambda name=name: refused(name), describe=f"the node's refusal of {name[:40]!r}")  # type: ignore[misc]
        for number, after in enumerate(bad_afters):
            wait_until(lambda n=number, a=after: refused(f"90001{n}.0.1", a),  # type: ignore[misc]
                       describe=f"the node's refusal of a promise after {after[:40]!r}")

        # A name of the right shape but longer than any directory name: the node cannot make it,
        # and says so to the controller; nothing is made.
        long_name = "1" * 300 + ".0.1"
        impostor.send(order(long_name, alice, evidence))
        exited = wait_until(lambda: impostor.reports("exited", long_name), describe="the long name's failure")
        assert "could not prepare the attempt" in exited[0]["exit_status"]["failure"], exited

        # A well-named order that names a cgroup of its own, far outside the node's (the shepherd,
        # as root, would make it and remove its last part), or says it is a parallel task (which
        # the node starts itself): refused with the reason, nothing runs.
        escape = "../" * 40 + str(evidence)[1:] + "/made-by-root/cgroup"
        for name, field, value in (("900020.0.1", "containment_name", escape), ("900021.0.1", "pe_task", "1")):
            impostor.send(order(name, alice, evidence, **{field: value}))
            ended = wait_until(lambda name=name: impostor.reports("exited", name), timeout=60,  # type: ignore[misc]
                               describe=f"the node's answer to an order with {field}")
            assert not os.path.lexists(evidence / "made-by-root"), "root made the cgroup the order named"
            assert f"the order carries {field}, which only the node sets" in ended[0]["exit_status"]["failure"], ended
            assert f"attempt {name} refused: the order carries {field}" in log.read_text(errors="replace")
            assert not impostor.reports("started", name)

        # The same names in a parallel task's order, and in a read of an output; and names of
        # tasks that are none, beside the running attempt.
        for name in names:
            task = order(name, alice, evidence)
            impostor.send({"type": "start_pe_task", "attempt": name, "petask": "1", "config": task["config"],
                           "script": task["script"]})
        bad_tasks = ["../x", "0", "1/../../x", "1\n", "x" * 100_000]
        for petask in bad_tasks:
            task = order("900001.0.1", alice, evidence)
            impostor.send({"type": "start_pe_task", "attempt": "900001.0.1", "petask": petask, "config": task["config"],
                           "script": task["script"]})
        said = "refused a parallel task's order that names no attempt or task: {!r}, task {!r}"
        for attempt, petask in [*((name, "1") for name in names), *(("900001.0.1", petask) for petask in bad_tasks)]:
            wait_until(lambda a=attempt, p=petask: said.format(a[:80], p[:80]) in log.read_text(errors="replace"),  # type: ignore[misc]
                       describe=f"the node's refusal of task {petask[:20]!r} of {attempt[:40]!r}")
        reads = [(name, "stdout", "") for name in names] + [("900001.0.1", "../../../etc/shadow", ""),
                                                            *(("900001.0.1", "stdout", petask) for petask in bad_tasks)]
        for request, (attempt, stream, petask) in enumerate(reads, start=1000):
            impostor.send({"type": "read_output", "request": request, "attempt": attempt, "stream": stream,
                           "offset": 0, "limit": 4096, "petask": petask})
        for request, (attempt, stream, petask) in enumerate(reads, start=1000):
            answer = wait_until(lambda r=request: [m for m in list(impostor.received)  # type: ignore[misc]
                                                   if m.get("type") == "output_read" and m.get("request") == r],
                                describe=f"the node's answer to a read of {attempt[:40]!r} {stream!r} {petask[:20]!r}")
            assert answer[0].get("error") in ("no such attempt or stream", "no such task or stream"), answer
            assert not answer[0].get("data"), answer

        # Nothing was made, in the spool (but the refused attempts' own, which their cleanup
        # removes) or where the names point, and nothing ran.
        assert listing(spool, evidence) - {str(spool / "900020.0.1"), str(spool / "900021.0.1")} == before
        assert sorted(os.listdir(evidence)) == ["ran-900001"]
        assert not any(impostor.reports(kind, name) for kind in ("started", "exited") for name in names)
        assert {name for name, target in targets.items() if os.path.lexists(target)} == there
        impostor.send({"type": "ack", "attempts": ["900020.0.1", "900021.0.1"], "kind": "report"})  # their spools go

        # The node goes on: the running job ends when told, and a new good order runs.
        (evidence / "go").touch()
        wait_until(lambda: impostor.reports("exited", "900001.0.1"), timeout=60, describe="the first job to end")
        impostor.send({"type": "ack", "attempts": ["900001.0.1"], "kind": "report"})
        impostor.send(order("900002.0.1", alice, evidence))
        ended = wait_until(lambda: impostor.reports("exited", "900002.0.1"), timeout=60, describe="the last job to end")
        assert ended[0]["exit_status"]["exit_code"] == 0, ended
        impostor.send({"type": "ack", "attempts": ["900002.0.1"], "kind": "report"})
        assert (evidence / "ran-900002").read_text() == "ran\n"
        assert not (evidence / "cgroup").exists()
    finally:
        if impostor is not None:
            impostor.stop()
        shutil.rmtree(own, ignore_errors=True)
