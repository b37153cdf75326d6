"""B9: what reaching a job through its node costs (bench/run.py B9).

A personal cluster runs one job that wrote 1 MiB to its output and one interactive job that
echoes each line it reads. Each is reached both ways a user's command can reach it:

- from here: the output file read directly, and the terminal's relay socket connected to
  directly (what a user of the job's own host does);
- through the node: GET .../output and the .../terminal WebSocket, as a user of another host
  does (here over the Unix socket: the same controller, node channel and node reader, without
  TLS on the wire).

Figures: one read of the whole 1 MiB, one read that finds nothing new (what `drover logs -f`
does every 0.25 s while a job is quiet), and a keystroke's round trip to the job and back.
"""

from __future__ import annotations

import functools
import os
import socket
import statistics
import time
from typing import Any

READS = 50
KEYS = 30


def run(cluster: Any, repeat: int) -> dict[str, Any]:
    with cluster.client() as client:
        writer, output = _writer(cluster, client)
        echo = _echo(cluster, client)
        figures: dict[str, list[float]] = {name: [] for name in (
            "1 MiB from here (ms)", "1 MiB through the node (ms)",
            "nothing new, from here (ms)", "nothing new, through the node (ms)",
            "keystroke round trip, from here (ms)", "keystroke round trip, through the node (ms)")}
        size = os.path.getsize(output)
        for _ in range(repeat):
            figures["1 MiB from here (ms)"].append(_median_ms(READS, lambda: _read_file(output, 0)))
            figures["1 MiB through the node (ms)"].append(_median_ms(READS, lambda: _read_node(client, writer, 0)))
            figures["nothing new, from here (ms)"].append(_median_ms(READS, lambda: _read_file(output, size)))
            figures["nothing new, through the node (ms)"].append(
                _median_ms(READS, lambda: _read_node(client, writer, size)))
            direct = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            direct.connect(echo["pty_socket"])
            figures["keystroke round trip, from here (ms)"].append(
                _keystrokes(direct.sendall, functools.partial(direct.recv, 65536)))
            direct.close()
            websocket = client.terminal(echo["job"], 0)
            figures["keystroke round trip, through the node (ms)"].append(
                _keystrokes(websocket.send, functools.partial(websocket.recv, timeout=10)))
            websocket.close()
        client.action_json("cancel", [str(writer), str(echo["job"])])
    out: dict[str, Any] = {}
    for name, samples in figures.items():
        out[name] = {"median": statistics.median(samples), "min": min(samples), "max": max(samples),
                     "samples": samples}
    out["node / here, 1 MiB"] = out["1 MiB through the node (ms)"]["median"] / out["1 MiB from here (ms)"]["median"]
    out["node / here, keystroke"] = (out["keystroke round trip, through the node (ms)"]["median"]
                                     / out["keystroke round trip, from here (ms)"]["median"])
    return out


def _writer(cluster: Any, client: Any) -> tuple[int, str]:
    path = str(cluster.work / "mib.out")
    script = "head -c 1048576 /dev/zero | tr '\\0' x; sleep 600\n"
    (job,) = client.submit([cluster.job(script, output=path)])
    while not (os.path.exists(path) and os.path.getsize(path) >= 1 << 20):
        time.sleep(0.05)
    return job, path


def _echo(cluster: Any, client: Any) -> dict[str, Any]:
    (job,) = client.submit([{**cluster.job("cat\n"), "pty": True}])
    while True:
        reply = client.wait_json(job, 0)
        attempts = [a for t in reply["job"]["tasks"] for a in t["attempts"]]
        if attempts and attempts[-1].get("pty_socket"):
            return {"job": job, "pty_socket": attempts[-1]["pty_socket"]}
        time.sleep(0.02)


def _read_file(path: str, offset: int) -> int:
    with open(path, "rb") as file:
        file.seek(offset)
        return len(file.read())


def _read_node(client: Any, job: int, offset: int) -> int:
    got = 0
    while True:
        chunk = client.output(job, 0, "stdout", offset + got)
        got += len(chunk.data)
        if not chunk.data or chunk.size is None or offset + got >= chunk.size:
            return got


def _median_ms(times: int, action: Any) -> float:
    samples = []
    for _ in range(times):
        began = time.perf_counter()
        action()
        samples.append((time.perf_counter() - began) * 1000)
    return statistics.median(samples)


def _keystrokes(send: Any, receive: Any) -> float:
    """Median ms from a key sent (in the relay's frames) to its echo back from `cat` on the pty."""
    samples = []
    for n in range(KEYS):
        key = b"abcdefghijklmnopqrstuvwxyz"[n % 26 : n % 26 + 1]
        began = time.perf_counter()
        send(b"d\x00\x01" + key)
        seen = b""
        while key not in seen:
            seen += receive()
        samples.append((time.perf_counter() - began) * 1000)
        send(b"d\x00\x01\r")  # ends cat's line, so the terminal does not fill
        time.sleep(0.01)
        _drain(receive)
    return statistics.median(samples)


def _drain(receive: Any) -> None:
    """Take what the echo of the line's end brought (best effort, briefly)."""
    try:
        receive()
    except Exception:
        pass
