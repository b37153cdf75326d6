"""A second node, authenticated with its own certificate from its own host (a network namespace),
names attempts Drover could never have made in everything it says over its real channel: a job
number of 20 digits (beyond SQLite's integer), a name of 10,000 characters (beyond what int()
reads), digits of another script, too few or too many parts, a path. It says so in its hello and
then, frame after frame, in every kind of report, while the first node's job ends. The controller
acknowledges what a node waits to hear acknowledged, keeps the second node's channel, keeps
serving the first node (its job's end is recorded while the frames keep coming), and changes
nothing in the store."""

from __future__ import annotations

import os
import select
import signal
import sqlite3
import subprocess
from pathlib import Path

from tests.helpers.netns import PORT, Hosts
from tests.helpers.wait import wait_until
from tests.integration.cluster.test_join import nodes
from tests.integration.cluster.test_reports_of_another_node import a_job_running_on_node1, show

POISON = ["99999999999999999999.0.1", "7" * 10_000 + ".0.1", "1" * 10_000, "١.0.1", "1.0", "1.0.1.2",
          "../../etc.0.1", "", "0.0.1", "1.4294967296.1", "1.0.99999999999999999999", " 1.0.1"]

FORGER = f"""
import asyncio, os, sys, time
from websockets.asyncio.client import connect
from drover.cluster.tls import node_context
from drover.protocol.node_channel import (Ack, Enforced, Exited, Exiting, File, Hello, KnownAttempt,
    PeTaskExited, Progress, Sample, Samples, StagedChunk, StagedOut, Started, Suspended, controller_decoder,
    frames)

tls, node, names_file, address, stop = sys.argv[1:6]
names = open(names_file).read().split("\\n")
status = {{"exit_code": 9, "signal": None, "failure": "forged", "timed_out": False, "terminated": False,
          "out_of_memory": True}}

def reports(name):
    return [Started(name, 1, time.time()), Suspended(name, True), Exiting(name, status),
            Progress(name, ["exit_hook"], "mail", 3, "forged", given_up=True),
            Progress(name, ["exit_hook"], "stage_out", 3, "forged", given_up=True),
            Enforced(name, "killed_over_memory", {{"reason": "forged"}}),
            StagedChunk(name, "1", 0, b"forged", 6), StagedOut(name, files=[File("forged", b"forged")]),
            Samples([Sample(attempt=name, at=time.time(), memory_bytes=1, rss_bytes=1, peak_bytes=1, cpu=1.0,
                            cpu_average=1.0, memory_average_bytes=1, processes=1, threads=1)]),
            PeTaskExited(name, "1", status),
            Exited(name, status, done=["exit_hook", "stage_out", "record", "report"])]

async def main():
    context = node_context(tls + "/ca.crt", tls + "/node.crt", tls + "/node.key")
    hello = Hello(node, 1, 1024, attempts=[KnownAttempt(name, running=True) for name in names])
    acked = {{}}  # the Exited reports acknowledged, by name
    async with connect("wss://{{}}:{PORT}/v1/nodes/channel".format(address), ssl=context,
                       max_size=None) as channel:
        async def listen():
            async for data in channel:
                for message in controller_decoder.decode(data):
                    if isinstance(message, Ack) and message.kind == "report":
                        for name in message.attempts:
                            acked[name] = acked.get(name, 0) + 1

        listening = asyncio.ensure_future(listen())
        for frame in frames([hello]):
            await channel.send(frame)
        rounds = 0
        said = False
        while not os.path.exists(stop):
            for frame in frames([report for name in names for report in reports(name)]):
                await channel.send(frame)
            rounds += 1
            if not said and all(acked.get(name) for name in names):
                print("acknowledged", flush=True)
                said = True
            await asyncio.sleep(0.1)
        deadline = time.monotonic() + 20
        while min(acked.get(name, 0) for name in names) < rounds and time.monotonic() < deadline:
            assert not listening.done(), "the controller closed the channel"
            await asyncio.sleep(0.1)
        print("rounds", rounds, "acknowledged", min(acked.get(name, 0) for name in names), flush=True)
        listening.cancel()

asyncio.run(main())
"""

# What a report could change. The nodes' table is left out, and the events of a node's connection:
# the forger's connection is node2's, and recorded as any is.
TABLES = ("jobs", "job_payloads", "tasks", "attempts", "events", "accounting")
CONNECTION_EVENTS = ("node_connected", "node_disconnected")


def stored(database: Path) -> dict[str, list[tuple[object, ...]]]:
    """Every row of the tables a report could change, as the controller's store holds them now."""
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as connection:
        rows = {table: sorted(connection.execute(f"SELECT * FROM {table}").fetchall(), key=repr) for table in TABLES}
        rows["events"] = sorted(connection.execute(
            "SELECT * FROM events WHERE kind NOT IN (?, ?)", CONNECTION_EVENTS).fetchall(), key=repr)
        return rows


def test_a_nodes_attempt_names_beyond_any_drover_makes_change_nothing_and_fail_nothing(hosts: Hosts) -> None:
    job, workdir = a_job_running_on_node1(hosts)
    hosts.add_node("node2")
    hosts.join("node2", hosts.token())
    assert nodes(hosts) == {"node1": "up", "node2": "up"}
    database = hosts.ctl.state_dir / "drover.db"
    before = stored(database)
    assert before["attempts"], before  # the rows compared below are the store's own

    node2 = hosts.nodes["node2"]
    # Its own daemon stopped, so that it does not take the channel back from the forger.
    os.kill(int((node2.state_dir / "execd.pid").read_text().split()[0]), signal.SIGTERM)
    wait_until(lambda: nodes(hosts)["node2"] != "up", describe="node2's daemon gone")
    names = hosts.root / "names"
    names.write_text("\n".join(POISON))
    stop = hosts.root / "stop"
    forger = subprocess.Popen(
        node2.command(node2.interpreter, "-c", FORGER, str(node2.state_dir / "tls"), "node2", str(names),
                      hosts.ctl.address, str(stop)),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, **node2.env},
        stdin=subprocess.DEVNULL)
    try:
        assert forger.stdout is not None
        said, _, _ = select.select([forger.stdout], [], [], 30)
        assert said, "no acknowledgement of the first frames in 30 s"
        first = forger.stdout.readline()
        assert first == "acknowledged\n", (first, forger.stderr.read() if forger.poll() is not None else "")
        assert stored(database) == before
        assert show(hosts, job)["state"] == "running"

        # The first node's job ends while the frames keep coming, one loop turn with them after another.
        (workdir / "go").touch()
        wait_until(lambda: show(hosts, job)["state"] == "completed", timeout=30,
                   describe="the job's end on node1 recorded while node2's frames keep coming")
        assert forger.poll() is None, forger.communicate()
    finally:
        stop.touch()
        out, err = forger.communicate(timeout=60)
    assert forger.returncode == 0, err
    rounds, acknowledged = (int(word) for word in out.split()[1::2])
    assert rounds > 1 and acknowledged == rounds, out  # every frame handled, to the last

    ended = show(hosts, job)
    (attempt,) = [a for task in ended["tasks"] for a in task["attempts"]]  # type: ignore[attr-defined]
    assert attempt["node"] == "node1" and attempt["exit_code"] == 0 and not attempt.get("failure"), attempt
    assert (workdir / "out").read_text() == "ran\n"
    after = stored(database)
    for table, rows in after.items():
        assert all("forged" not in repr(row) and "99999999999999999999" not in repr(row) for row in rows), table
    assert {row[0] for row in after["jobs"]} == {row[0] for row in before["jobs"]}
    files = hosts.ctl.state_dir / "files"
    assert not [path for path in files.rglob("*") if "forged" in path.name or path.name in POISON], \
        sorted(files.rglob("*"))
    assert "forged" not in hosts.ctl.drover("events", "--json", str(job)).stdout
    # The controller serves on: a new job runs on node1, the one node left up.
    again = int(hosts.ctl.drover("submit", "--parsable", "-D", str(workdir), "--", "true").stdout.split()[0])
    hosts.ctl.drover("wait", "--timeout", "60", str(again), timeout=90)
    assert show(hosts, again)["state"] == "completed"
    assert nodes(hosts)["node1"] == "up"
