"""A controller on a PostgreSQL store shared with others: wait as a standby until it holds the
leadership (store/leadership.py), name the active controller meanwhile, and once active, check
every second that it still holds it, so that one cut off from the store stops within a second
even when nothing else would have touched the store.

Commits need no check of their own: the lock is held by the session that commits, so a commit
that reaches the server is a commit made under the lock.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import Callable
from typing import Any

from drover.controller.ha.standing import Standing
from drover.store.faults import StoreFault
from drover.store.leadership import Leadership, LeadershipLost, active
from drover.store.postgres import PostgresStore, connect

log = logging.getLogger("drover.controller")
WATCH_EVERY_S = 1.0  # how often the active controller checks its lock's connection
NAME_EVERY_S = 0.5  # how often a standby reads who the active controller is
RETRY_MAX_S = 5.0  # the longest wait between a standby's tries to reach a store that failed


def advertised(listen: tuple[str, int] | None, socket_path: str) -> str:
    """Where clients and nodes reach this controller: https://ADDR:PORT when it serves TCP (the
    host's name when it listens on every address), else its Unix socket, which only users of
    its own host can reach."""
    if listen is None:
        return socket_path
    host, port = listen
    if host in ("0.0.0.0", "::", ""):
        host = socket.getfqdn()
    return f"https://[{host}]:{port}" if ":" in host else f"https://{host}:{port}"


async def wait_to_lead(url: str, leadership: Leadership, standing: Standing) -> PostgresStore:
    """The store, opened once this controller holds the leadership. A store that fails while
    it waits (the server restarts) is tried again, with back-off; the wait ends only with the
    leadership, or with cancellation (the controller stops)."""
    delay = 0.2
    while True:
        try:
            store = await asyncio.to_thread(PostgresStore, url, leadership)
        except StoreFault as fault:
            log.warning("standby: %s; trying again in %.1fs", fault, delay)
            await asyncio.sleep(delay)
            delay = min(delay * 2, RETRY_MAX_S)
            continue
        except asyncio.CancelledError:
            leadership.cancel()  # the thread blocked in the server: its wait is ended there
            raise
        standing.taking_over = True
        log.info("this controller holds the leadership of %s (epoch %d): loading the store", store.path,
                 leadership.epoch)
        return store


async def name_the_active(url: str, standing: Standing) -> None:
    """Keep `standing.active` up to date from the store, on a connection of its own, until
    cancelled."""
    connection: Any = None
    reported: str | None = ""
    try:
        while True:
            try:
                if connection is None or connection.closed or connection.broken:
                    connection = await asyncio.to_thread(connect, url, "drover-controller-standby")
                holder = await asyncio.to_thread(active, connection)
                standing.active = holder.address if holder is not None else None
            except StoreFault:
                standing.active = None
            except Exception as error:  # a lost connection (psycopg's errors): opened again next time
                log.debug("reading the active controller failed: %s", error)
                standing.active = None
                if connection is not None:
                    with contextlib.suppress(Exception):
                        connection.close()
                connection = None
            if standing.active != reported:
                reported = standing.active
                log.info("standby: the active controller is %s", reported or "none (one is taking over)")
            await asyncio.sleep(NAME_EVERY_S)
    finally:
        if connection is not None:
            connection.close()


async def watch(store: PostgresStore, on_lost: Callable[[LeadershipLost], None]) -> None:
    """While active: a round trip on the lock's connection every WATCH_EVERY_S. A connection
    found lost is opened again and the lock retaken on the next call (PostgresStore.reopen);
    if another controller has it, or had it meanwhile, `on_lost` is called, once."""
    failing = False
    while True:
        await asyncio.sleep(WATCH_EVERY_S)
        try:
            store.check()
        except LeadershipLost as lost:
            log.error("%s", lost)
            on_lost(lost)
            return
        except StoreFault as fault:
            if not failing:
                log.warning("the store does not answer the leadership check: %s", fault)
            failing = True
            continue
        if failing:
            log.info("the store answers again; this controller still holds the leadership")
        failing = False
