"""A burst of concurrent listings against a controller's API socket: COUNT requests, all sent at
once, each on a connection of its own; prints what came back as one JSON object.

    .venv/bin/python bench/listing_burst.py SOCKET --count 2000 --path '/v1/jobs?all=1'

Run as a process of its own by `bench/run.py B7`, so that reading the replies costs that
process's CPU and not the one that times submissions. Standard library only.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import statistics
import time


async def connect(path: str) -> socket.socket:
    """A connected non-blocking Unix socket. A Unix socket's connect fails with EAGAIN, rather
    than waiting, while the listener's backlog is full: try again until the controller accepts."""
    while True:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.setblocking(False)
        try:
            sock.connect(path)
            return sock
        except BlockingIOError:
            sock.close()
            await asyncio.sleep(0.002)
        except BaseException:
            sock.close()
            raise


async def listing(path: str, target: str, start: asyncio.Event) -> tuple[float, int, int]:
    """(seconds from the burst's start to the whole reply, HTTP status, body bytes)."""
    await start.wait()
    began = time.perf_counter()
    sock = await connect(path)
    reader, writer = await asyncio.open_unix_connection(sock=sock, limit=1 << 22)
    try:
        writer.write(f"GET {target} HTTP/1.1\r\nHost: drover\r\nConnection: close\r\n\r\n".encode())
        await writer.drain()
        head = await reader.readuntil(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1])
        body = await reader.read()  # Connection: close: the body ends with the connection
        return time.perf_counter() - began, status, len(body)
    finally:
        writer.close()


async def burst(path: str, count: int, targets: list[str]) -> dict[str, object]:
    start = asyncio.Event()
    requests = [asyncio.ensure_future(listing(path, targets[n % len(targets)], start)) for n in range(count)]
    await asyncio.sleep(0)  # every request waits on `start`: they go together
    began = time.perf_counter()
    start.set()
    results = await asyncio.gather(*requests, return_exceptions=True)
    elapsed = time.perf_counter() - began
    seconds = sorted(r[0] for r in results if isinstance(r, tuple) and r[1] == 200)
    failures = [str(r) if isinstance(r, BaseException) else f"HTTP {r[1]}" for r in results
                if not (isinstance(r, tuple) and r[1] == 200)]
    return {
        "count": count, "ok": len(seconds), "failed": len(failures), "failures": sorted(set(failures))[:5],
        "burst_s": elapsed, "bytes": sum(r[2] for r in results if isinstance(r, tuple)),
        "listing_p50_s": statistics.median(seconds) if seconds else None,
        "listing_p99_s": seconds[int(len(seconds) * 0.99) - 1] if seconds else None,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("socket")
    parser.add_argument("--count", type=int, default=2000)
    parser.add_argument("--path", action="append", default=[], help="request targets, used in turn")
    args = parser.parse_args()
    if args.count < 1:
        parser.error("--count must be 1 or more")
    print(json.dumps(asyncio.run(burst(args.socket, args.count, args.path or ["/v1/jobs?all=1"]))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
