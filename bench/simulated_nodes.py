"""Many simulated nodes in one process, each speaking the real node channel to a controller: a
WebSocket over TLS with a client certificate it got by joining with a token, as `drover join`
and the execd do. No job is ever run: a node answers each StartAttempt with Started, then, after
a simulated run of 0-50 ms, with Exiting and the final Exited report (an exit record, code 0, and
a minimal usage record), which it sends again until the controller acknowledges it. It sends a
Heartbeat every heartbeat_s, as the controller's Welcome says.

    .venv/bin/python bench/simulated_nodes.py https://127.0.0.1:PORT --token drv1... \\
        --workdir DIR --name sim-000:4 --name sim-001:2 ...

Run as processes of their own by `bench/cluster.py`, which drives them through stdin and
stdout, one JSON object a line each way (see `Simulator.command`). Once every node is
welcomed it prints {"ready": ...}. It exits on {"cmd": "quit"} or at the end of its stdin.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sys
import time
from typing import Any

import msgspec
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from drover import eventloop
from drover.protocol.node_channel import (
    Ack,
    Exited,
    Exiting,
    Heartbeat,
    Hello,
    KnownAttempt,
    SignalAttempt,
    StartAttempt,
    Started,
    StartPromisedNow,
    Welcome,
    controller_decoder,
    encoder,
)
from drover.records import ExitStatus, Usage

CHANNEL_PATH = "/v1/nodes/channel"
CLEANUP_DONE = ["exit_hook", "stage_out", "record", "report"]  # what a real node's final report says
RESEND_S = 2.0  # a final report not acknowledged is sent again this often


def join(url: str, token: str, name: str, directory: str) -> tuple[str, str, str]:
    """Join as `drover join` does: the controller's CA fetched and checked against the token's
    fingerprint before anything is sent, a key made here and only its signing request sent.
    Returns the node's (CA, certificate, key) files."""
    from drover.client import Client
    from drover.cluster.ca import fingerprint, signing_request
    from drover.cluster.files import write_private
    from drover.cluster.tls import pinned_context, unverified_context
    from drover.cluster.tokens import parse_token

    pinned = parse_token(token).fingerprint
    with Client(url, timeout_s=60, tls=unverified_context()) as api:
        ca_pem = api.cluster_ca().certificate.encode()
    if fingerprint(ca_pem) != pinned:
        raise SystemExit(f"{url} shows another CA than the token pins")
    request_pem, key_pem = signing_request(name)
    with Client(url, timeout_s=60, tls=pinned_context(ca_pem)) as api:
        reply = api.join(token, name, request_pem.decode("ascii"))
    files = (os.path.join(directory, "ca.crt"), os.path.join(directory, "node.crt"), os.path.join(directory, "node.key"))
    write_private(files[0], reply.ca.encode(), 0o644)
    write_private(files[1], reply.certificate.encode(), 0o644)
    write_private(files[2], key_pem)
    return files


class Node:
    """One simulated node and its channel."""

    def __init__(self, sim: Simulator, name: str, cpus: int, tls: Any) -> None:
        self.sim = sim
        self.name = name
        self.cpus = cpus
        self.memory_mib = cpus * 4096
        self.tls = tls
        self.connection: ClientConnection | None = None
        self.running: dict[str, asyncio.TimerHandle] = {}  # attempt -> its simulated exit
        self.unacked: dict[str, Exited] = {}  # final reports sent, not acknowledged yet
        self.held: set[str] = set()  # attempts started that never exit (hold mode)
        # Promised attempts (an order with `after`), as a node holds them: each waits for the
        # attempt it follows to end, then starts at once, without the controller.
        self.promised: dict[str, StartAttempt] = {}
        self.hold = False
        self.frozen = False
        self.welcomed = asyncio.Event()
        self.heartbeat_s = 10.0
        self.heartbeats = 0
        self._queue: list[Any] = []
        self._wake = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._resend: asyncio.TimerHandle | None = None

    # -- the channel ------------------------------------------------------------------------------

    async def run_forever(self) -> None:
        delay = 0.05
        while not self.frozen:
            try:
                async with connect(f"wss://{self.sim.address}{CHANNEL_PATH}", ssl=self.tls, max_size=2**26,
                                   ping_interval=20, open_timeout=60) as connection:
                    delay = 0.05
                    await self._serve(connection)
            except (OSError, ConnectionClosed, InvalidStatus, TimeoutError) as error:
                if self.frozen:
                    return
                print(f"{self.name}: channel: {error or 'closed'}; reconnecting", file=sys.stderr)
            finally:
                self.connection = None
            await asyncio.sleep(delay)
            delay = min(delay * 2, 2.0)

    def hello(self) -> Hello:
        known = [KnownAttempt(name, True) for name in [*self.running, *self.held]]
        known += [KnownAttempt(name, True, promised=True) for name in self.promised]
        known += [KnownAttempt(name, False) for name in self.unacked]
        return Hello(self.name, self.cpus, self.memory_mib, known, starts_in_place=True)

    async def _serve(self, connection: ClientConnection) -> None:
        await connection.send(encoder.encode([self.hello()]))
        self.connection = connection
        self._queue.clear()
        writer = asyncio.get_running_loop().create_task(self._write_forever(connection))
        beats: asyncio.Task[None] | None = None
        try:
            async for frame in connection:
                data = frame.encode() if isinstance(frame, str) else frame
                for message in controller_decoder.decode(data):
                    if isinstance(message, Welcome):
                        self.heartbeat_s = message.heartbeat_s
                        if beats is None:
                            beats = asyncio.get_running_loop().create_task(self._beat())
                        for report in self.unacked.values():  # what the controller may not have
                            self.send(report)
                        self.welcomed.set()
                    elif isinstance(message, StartAttempt):
                        self._start(message)
                    elif isinstance(message, StartPromisedNow):
                        self._start_in_place(message)
                    elif isinstance(message, SignalAttempt):
                        self._signal(message)
                    elif isinstance(message, Ack):
                        self._acked(message)
        finally:
            writer.cancel()
            if beats is not None:
                beats.cancel()

    def send(self, message: Any) -> None:
        """Queued; what is queued in one loop turn leaves as one frame, as the execd's channel does."""
        if self.connection is not None and not self.frozen:
            self._queue.append(message)
            self._wake.set()

    async def _write_forever(self, connection: ClientConnection) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            batch, self._queue = self._queue, []
            if batch and not self.frozen:
                await connection.send(encoder.encode(batch))

    async def _beat(self) -> None:
        while not self.frozen:
            attempts = len(self.running) + len(self.unacked) + len(self.held)
            self.send(Heartbeat(load=float(attempts), memory_free_mib=self.memory_mib, attempts=attempts))
            self.heartbeats += 1
            await asyncio.sleep(max(self.heartbeat_s, 0.05))

    # -- attempts ---------------------------------------------------------------------------------

    def _start(self, order: StartAttempt, moved: bool = False) -> None:
        name = order.attempt
        if name in self.running or name in self.unacked or name in self.held or name in self.promised:
            return  # a repeated order: already known
        if order.after is not None and order.after in self.running:
            self.promised[name] = order  # starts the moment the one it follows ends (_exit)
            return
        self.sim.started += 1
        self.sim.events.append(("start", name, time.monotonic()))
        started_at = time.time()
        self.send(Started(name, 100000 + self.sim.started, started_at, moved=moved))
        if self.hold:
            self.held.add(name)
            return
        self.running[name] = asyncio.get_running_loop().call_later(
            self.sim.rng.uniform(0, self.sim.run_s), self._exit, name, started_at, False)

    def _start_in_place(self, order: StartPromisedNow) -> None:
        """A promise told to start now, on other CPUs: at once, if it still waits."""
        promised = self.promised.pop(order.attempt, None)
        if promised is not None:
            self._start(msgspec.structs.replace(promised, after=None), moved=True)

    def _signal(self, order: SignalAttempt) -> None:
        """Only `terminate` ends a simulated attempt (as by SIGTERM); the rest change nothing here.
        A promise not started yet ends without having run."""
        if order.action != "terminate":
            return
        if self.promised.pop(order.attempt, None) is not None:
            self._exit(order.attempt, time.time(), True, started=False)
            return
        timer = self.running.pop(order.attempt, None)
        if timer is not None:
            timer.cancel()
        elif order.attempt in self.held:
            self.held.discard(order.attempt)
        else:
            return
        self._exit(order.attempt, time.time(), True)

    def _exit(self, name: str, started_at: float, terminated: bool, started: bool = True) -> None:
        self.running.pop(name, None)
        if self.frozen:
            return
        for follower in [order for order in self.promised.values() if order.after == name]:
            del self.promised[follower.attempt]  # its room is free: it starts now
            self._start(follower)
        ended_at = time.time()
        status: ExitStatus = {"exit_code": None if terminated else 0,
                              "signal": 15 if terminated and started else None,
                              "failure": None, "timed_out": False, "terminated": terminated, "out_of_memory": False}
        usage: Usage = {"user_cpu_s": 0.0, "sys_cpu_s": 0.0, "max_rss_kib": 0, "minor_faults": 0, "major_faults": 0,
                        "voluntary_switches": 0, "involuntary_switches": 0, "wall_s": ended_at - started_at,
                        "started_at": started_at, "ended_at": ended_at}
        # The job exited (the task is COMPLETING); the node's cleanup then ends with the final
        # report, a frame of its own as on a real node.
        self.send(Exiting(name, status, usage, started_at))
        report = Exited(name, status, usage, started_at, done=list(CLEANUP_DONE))
        self.unacked[name] = report
        asyncio.get_running_loop().call_later(0.001, self.send, report)
        if self._resend is None:
            self._resend = asyncio.get_running_loop().call_later(RESEND_S, self._send_again)

    def _send_again(self) -> None:
        self._resend = None
        if self.frozen or not self.unacked:
            return
        for report in self.unacked.values():
            self.send(report)
        self._resend = asyncio.get_running_loop().call_later(RESEND_S, self._send_again)

    def _acked(self, ack: Ack) -> None:
        if ack.kind != "report":
            return
        now = time.monotonic()
        for name in ack.attempts:
            if self.unacked.pop(name, None) is not None:
                self.sim.acked += 1
                self.sim.events.append(("ack", name, now))

    def freeze(self) -> None:
        """Silent from now on, its connection left open: no heartbeat, no report, nothing read
        (the kernel still holds the TCP connection, as for a host that hangs)."""
        self.frozen = True
        for timer in self.running.values():
            timer.cancel()
        if self._resend is not None:
            self._resend.cancel()
        connection = self.connection
        if connection is not None:
            connection.transport.pause_reading()
            keepalive = getattr(connection, "keepalive_task", None)
            if keepalive is not None:
                keepalive.cancel()


class Simulator:
    def __init__(self, url: str, run_s: float, seed: int) -> None:
        self.url = url
        self.address = url.removeprefix("https://").rstrip("/")
        self.run_s = run_s
        self.rng = random.Random(seed)
        self.nodes: dict[str, Node] = {}
        self.started = 0
        self.acked = 0
        self.events: list[tuple[str, str, float]] = []

    def command(self, request: dict[str, Any]) -> dict[str, Any] | None:
        """One request from the driver; the answer, or None to stop.

        count:  what was started and acknowledged so far, and the heartbeats sent
        events: ("start"|"ack", attempt, monotonic time) since the last call
        hold NODE:   the node's attempts from now on are started and never exit
        held NODE:   the attempts it holds
        freeze NODE: it falls silent without closing its connection
        """
        what = request["cmd"]
        if what == "quit":
            return None
        if what == "count":
            return {"started": self.started, "acked": self.acked,
                    "heartbeats": sum(node.heartbeats for node in self.nodes.values()),
                    "welcomed": sum(node.welcomed.is_set() for node in self.nodes.values()),
                    "cpu_s": sum(os.times()[:2])}
        if what == "events":
            events, self.events = self.events, []
            return {"events": events}
        node = self.nodes[request["node"]]
        if what == "hold":
            node.hold = True
            return {"held": sorted(node.held)}
        if what == "held":
            return {"held": sorted(node.held)}
        if what == "freeze":
            node.freeze()
            return {"frozen_at": time.monotonic(), "frozen_wall": time.time()}
        raise ValueError(f"unknown command {what!r}")


async def main_async(args: argparse.Namespace) -> None:
    from drover.cluster.tls import node_context

    sim = Simulator(args.controller, args.run_ms / 1000, args.seed)
    for spec in args.name:
        name, _, cpus = spec.partition(":")
        directory = os.path.join(args.workdir, name)
        # Joining is blocking (the client is synchronous): done before any channel is open.
        ca, cert, key = join(args.controller, args.token, name, directory)
        sim.nodes[name] = Node(sim, name, int(cpus or 2), node_context(ca, cert, key))
    tasks = [asyncio.get_running_loop().create_task(node.run_forever()) for node in sim.nodes.values()]
    await asyncio.wait_for(asyncio.gather(*(node.welcomed.wait() for node in sim.nodes.values())), 120)
    out = sys.stdout
    out.write(json.dumps({"ready": len(sim.nodes)}) + "\n")
    out.flush()
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=1 << 20)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    while True:
        line = await reader.readline()
        if not line:
            break
        answer = sim.command(json.loads(line))
        if answer is None:
            break
        out.write(json.dumps(answer) + "\n")
        out.flush()
    for task in tasks:
        task.cancel()
    for node in sim.nodes.values():
        if node.connection is not None:
            node.connection.transport.abort()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("controller", metavar="https://127.0.0.1:PORT")
    parser.add_argument("--token", required=True)
    parser.add_argument("--workdir", required=True, help="where each node keeps its certificate and key")
    parser.add_argument("--name", action="append", required=True, metavar="NAME:CPUS")
    parser.add_argument("--run-ms", type=float, default=50, help="a simulated job runs 0 to this long")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    eventloop.run(main_async(args))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
