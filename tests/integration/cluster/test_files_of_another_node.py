"""A second node, authenticated with its own certificate from its own host (a network namespace),
sends files as staged out by attempts the first node ran: one whose job has ended, one whose job
runs. The controller acknowledges them (so an honest node would not send them again) and keeps
none of them: `drover fetch` brings back what each job staged out on its own node, and nothing
the second node sent."""

from __future__ import annotations

import os
import signal
from pathlib import Path

from tests.helpers.netns import PORT, Hosts
from tests.helpers.wait import wait_until
from tests.integration.cluster.test_join import nodes
from tests.integration.cluster.test_reports_of_another_node import show

FORGER = f"""
import asyncio, sys
from websockets.asyncio.client import connect
from drover.cluster.tls import node_context
from drover.protocol.node_channel import Ack, File, Hello, StagedOut, controller_decoder, frames

async def main():
    tls, node, address, *victims = sys.argv[1:]
    context = node_context(tls + "/ca.crt", tls + "/node.crt", tls + "/node.key")
    files = [File("result.txt", b"forged by " + node.encode() + b"\\n"), File("planted", b"forged")]
    async with connect("wss://{{}}:{PORT}/v1/nodes/channel".format(address), ssl=context) as channel:
        for frame in frames([Hello(node, 1, 1024)]):
            await channel.send(frame)
        for frame in frames([StagedOut(victim, files) for victim in victims]):
            await channel.send(frame)
        acknowledged = set()
        while not set(victims) <= acknowledged:
            for message in controller_decoder.decode(await asyncio.wait_for(channel.recv(), 30)):
                if isinstance(message, Ack) and message.kind == "stage_out":
                    acknowledged.update(message.attempts)
        print("acknowledged", *sorted(acknowledged), flush=True)

asyncio.run(main())
"""


def fetched(hosts: Hosts, job: int, into: Path) -> dict[str, str]:
    into.mkdir()
    hosts.ctl.drover("fetch", "--to", str(into), str(job))
    return {path.name: path.read_text() for path in into.iterdir()}


def test_files_another_node_sends_for_an_attempt_are_not_kept(hosts: Hosts) -> None:
    hosts.join("node1", hosts.token("--uses", "2"))
    workdir = hosts.root / "work"
    workdir.mkdir()
    os.chmod(hosts.root, 0o755)

    def submit(*command: str) -> int:
        return int(hosts.ctl.drover("submit", "--parsable", "-D", str(workdir), "--stage-out", "result.txt", "--",
                                    *command).stdout.split()[0])

    ended = submit("sh", "-c", "echo ended > result.txt")
    hosts.ctl.drover("wait", "--timeout", "60", str(ended), timeout=90)
    assert show(hosts, ended)["state"] == "completed"
    running = submit("sh", "-c", "while [ ! -e go ]; do sleep 0.2; done; echo running > result.txt")
    wait_until(lambda: show(hosts, running)["state"] == "running", describe="the second job running on node1")

    hosts.add_node("node2")
    hosts.join("node2", hosts.token())
    assert nodes(hosts) == {"node1": "up", "node2": "up"}
    node2 = hosts.nodes["node2"]
    # Its own daemon stopped, so that it does not take the channel back from the forger.
    os.kill(int((node2.state_dir / "execd.pid").read_text().split()[0]), signal.SIGTERM)
    wait_until(lambda: nodes(hosts)["node2"] != "up", describe="node2's daemon gone")
    victims = [f"{ended}.0.1", f"{running}.0.1"]
    forged = node2.run(node2.interpreter, "-c", FORGER, str(node2.state_dir / "tls"), "node2", hosts.ctl.address,
                       *victims)
    assert forged.stdout.split() == ["acknowledged", *sorted(victims)], forged.stderr

    assert fetched(hosts, ended, hosts.root / "ended") == {"result.txt": "ended\n"}
    (workdir / "go").touch()
    hosts.ctl.drover("wait", "--timeout", "60", str(running), timeout=90)
    assert show(hosts, running)["state"] == "completed"
    assert fetched(hosts, running, hosts.root / "running") == {"result.txt": "running\n"}
