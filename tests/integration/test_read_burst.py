"""Reads never stall writes, on a real cluster: a burst of concurrent listings arrives while
jobs flow, and submissions are still answered promptly and their jobs still run; long listings
are read page by page and come out the same as one long page."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from typing import Any

from tests.helpers.cluster import LocalCluster
from tests.helpers.wait import wait_until

TARGETS = ("/v1/jobs?all=1", "/v1/history?limit=500", "/v1/events?limit=1000", "/v1/jobs")


async def _listing(path: str, target: str) -> tuple[int, bytes]:
    """One GET on a connection of its own; a full listen backlog (EAGAIN on a Unix socket) is
    tried again, as a client that waits would."""
    while True:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.setblocking(False)
        try:
            sock.connect(path)
            break
        except BlockingIOError:
            sock.close()
            await asyncio.sleep(0.002)
    reader, writer = await asyncio.open_unix_connection(sock=sock, limit=1 << 22)
    try:
        writer.write(f"GET {target} HTTP/1.1\r\nHost: drover\r\nConnection: close\r\n\r\n".encode())
        head = await reader.readuntil(b"\r\n\r\n")
        return int(head.split(b" ", 2)[1]), await reader.read()
    finally:
        writer.close()


def _burst(path: str, count: int, results: list[Any]) -> None:
    async def all_at_once() -> list[Any]:
        return await asyncio.gather(*(_listing(path, TARGETS[n % len(TARGETS)]) for n in range(count)),
                                    return_exceptions=True)

    results.extend(asyncio.run(all_at_once()))


def test_submissions_are_answered_and_run_while_a_thousand_listings_arrive_at_once(cluster: LocalCluster) -> None:
    """1. 400 jobs run and end, so that every listing has hundreds of ended jobs to show.
    2. 1,000 listings (jobs with ended ones, history, events, live jobs) arrive at once.
    3. Meanwhile a job is submitted every 20 ms: each is answered within 2 s, not after the
       burst, and each runs to its end (the node's reports are taken meanwhile too).
    4. A plain `drover status` (live jobs only) meanwhile does not wait behind the long listings.
    5. Every listing is answered in full."""
    with cluster.client() as client:
        filled = client.submit([{"script": "true\n", "workdir": str(cluster.workdir), "output": "/dev/null"}
                                for _ in range(400)])
        for job in filled:
            client.wait(job, timeout_s=120)
        results: list[Any] = []
        burst = threading.Thread(target=_burst, args=(cluster.socket, 1000, results))
        burst.start()
        latencies, submitted, plain_status = [], [], []
        while burst.is_alive() or len(submitted) < 10:
            began = time.monotonic()
            submitted += client.submit([{"script": "true\n", "workdir": str(cluster.workdir), "output": "/dev/null"}])
            latencies.append(time.monotonic() - began)
            began = time.monotonic()
            client.jobs()  # `drover status`: the few live jobs
            plain_status.append(time.monotonic() - began)
            time.sleep(0.02)
        burst.join()
        for job in submitted:
            info = client.wait(job, timeout_s=60)
            assert info is not None and info.state == "completed", job
    # Each listing used to hold the event loop: submissions then waited out the whole burst
    # (over 6 s here); now the slowest takes a few tens of milliseconds.
    assert max(latencies) < 2, f"slowest submission during the burst: {max(latencies):.2f} s"
    assert max(plain_status) < 2, f"slowest plain listing during the burst: {max(plain_status):.2f} s"
    failures = [r for r in results if not (isinstance(r, tuple) and r[0] == 200)]
    assert not failures, failures[:3]
    import json

    full = [json.loads(body) for status, body in results[0::len(TARGETS)]]
    assert all(len(reply["jobs"]) >= 400 for reply in full)


def test_long_listings_are_read_page_by_page_and_match_one_long_page(cluster: LocalCluster) -> None:
    with cluster.client() as client:
        ids = client.submit([{"script": "true\n", "workdir": str(cluster.workdir), "output": "/dev/null"}
                             for _ in range(23)])
        for job in ids:
            client.wait(job, timeout_s=60)
        held = client.submit([{"script": "true\n", "workdir": str(cluster.workdir), "hold": True}])
        whole = client.jobs(include_ended=True, limit=20)
        rows = client.history(limit=20)
        client.page_rows = 6  # the same listings, four requests each
        assert client.jobs(include_ended=True, limit=20) == whole
        assert [j.id for j in whole] == (ids + held)[-20:]
        assert client.history(limit=20) == rows and len(rows) == 20
        first = client.jobs_page(include_ended=True, limit=6)
        assert first.next_before == first.jobs[0].id
    older = cluster.drover_json("status", "--all", "--before", str(first.next_before), "--limit", "3")
    assert [job["id"] for job in older] == [j.id for j in whole][-9:-6]
    refused = cluster.drover("status", "--all", "--before", "x", check=False)
    assert refused.returncode != 0 and "--before" in refused.stderr
    with cluster.client() as client:
        wait_until(lambda: client.events(after=0, limit=5), describe="events")
        page = client.events(after=0, limit=5)
        following = cluster.drover_json("events", "--after", str(page[-1].seq), "--limit", "5")
        assert following[0]["seq"] == page[-1].seq + 1
