"""A second node, authenticated with its own certificate from its own host (a network namespace),
reports for an attempt the controller sent the first node: that it was suspended, that it exited
with another status, why (with an escape sequence), a cleanup step given up, a kill over memory.
The controller acknowledges each (so an honest node would not send it again) and changes
nothing: the job runs on, then ends as its own node reports; and once it ended, the same
reports again change nothing of it."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers.netns import PORT, Hosts
from tests.helpers.wait import wait_until
from tests.integration.cluster.test_join import nodes

FORGER = f"""
import asyncio, sys
from websockets.asyncio.client import connect
from drover.cluster.tls import node_context
from drover.protocol.node_channel import (Ack, Enforced, Exited, Exiting, Hello, Progress, Suspended,
                                          controller_decoder, frames)

async def main():
    tls, node, victim = sys.argv[1:4]
    context = node_context(tls + "/ca.crt", tls + "/node.crt", tls + "/node.key")
    forged = {{"exit_code": 9, "signal": None, "failure": "forged by " + node + " \\x1b[31mred", "timed_out": False,
              "terminated": False, "out_of_memory": True}}
    reports = [Suspended(victim, True), Exiting(victim, forged),
               Progress(victim, ["exit_hook"], "mail", 3, "forged by " + node, given_up=True),
               Enforced(victim, "killed_over_memory", {{"reason": "forged by " + node}}),
               Exited(victim, forged, done=["exit_hook", "stage_out", "record", "report"],
                      given_up=[{{"step": "exit_hook", "tries": 2, "error": "forged by " + node}}])]
    async with connect("wss://{{}}:{PORT}/v1/nodes/channel".format(sys.argv[4]), ssl=context) as channel:
        for frame in frames([Hello(node, 1, 1024)]):
            await channel.send(frame)
        for frame in frames(reports):
            await channel.send(frame)
        acknowledged = set()
        while not {{"report", "given_up:mail"}} <= acknowledged:
            data = await asyncio.wait_for(channel.recv(), 30)
            for message in controller_decoder.decode(data):
                if isinstance(message, Ack) and victim in message.attempts:
                    acknowledged.add(message.kind)
        print("acknowledged", " ".join(sorted(acknowledged)), flush=True)

asyncio.run(main())
"""


def show(hosts: Hosts, job: int) -> dict[str, object]:
    shown = json.loads(hosts.ctl.drover("show", "--json", str(job)).stdout)
    return shown[0] if isinstance(shown, list) else shown  # type: ignore[no-any-return]


def a_job_running_on_node1(hosts: Hosts) -> tuple[int, Path]:
    """node1 joined, and a job of it running until a file `go` is made in its working directory
    (it then writes "ran" to `out` there): the job and that directory."""
    hosts.join("node1", hosts.token("--uses", "2"))
    workdir = hosts.root / "work"
    workdir.mkdir()
    job = int(hosts.ctl.drover("submit", "--parsable", "-D", str(workdir), "-o", "out", "--",
                               "sh", "-c", "while [ ! -e go ]; do sleep 0.2; done; echo ran").stdout.split()[0])
    wait_until(lambda: show(hosts, job)["state"] == "running", describe="the job running on node1")
    return job, workdir


def test_another_nodes_reports_of_an_attempt_change_nothing(hosts: Hosts) -> None:
    job, workdir = a_job_running_on_node1(hosts)
    victim = f"{job}.0.1"
    hosts.add_node("node2")
    hosts.join("node2", hosts.token())
    assert nodes(hosts) == {"node1": "up", "node2": "up"}

    node2 = hosts.nodes["node2"]
    forged = node2.run(node2.interpreter, "-c", FORGER, str(node2.state_dir / "tls"), "node2", victim,
                       hosts.ctl.address)
    assert "acknowledged given_up:mail report" in forged.stdout, forged.stderr

    shown = show(hosts, job)
    assert shown["state"] == "running", shown
    assert "forged" not in json.dumps(shown)
    events = hosts.ctl.drover("events", "--json", str(job))
    assert "forged" not in events.stdout and "killed_over_memory" not in events.stdout

    (workdir / "go").touch()  # the job ends now, as its own node reports
    hosts.ctl.drover("wait", "--timeout", "60", str(job), timeout=90)
    ended = show(hosts, job)
    assert ended["state"] == "completed", ended
    (attempt,) = [a for task in ended["tasks"] for a in task["attempts"]]  # type: ignore[attr-defined]
    assert attempt["node"] == "node1" and attempt["exit_code"] == 0 and not attempt.get("failure"), attempt
    assert (workdir / "out").read_text() == "ran\n"
    # Once the job ended, its attempt is no longer in the controller's memory: the store says
    # which node ran it, and the same reports again change nothing.
    again = node2.run(node2.interpreter, "-c", FORGER, str(node2.state_dir / "tls"), "node2", victim,
                      hosts.ctl.address)
    assert "acknowledged given_up:mail report" in again.stdout, again.stderr
    assert show(hosts, job) == ended
    events = hosts.ctl.drover("events", "--json", str(job))
    assert "forged" not in events.stdout
