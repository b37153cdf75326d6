"""The controller's integrity checks of its store (store/integrity.py): one when it starts, then
one every `store_check_s`. A store found damaged refuses every write from then on (each answered
503 with the damage named, nothing acknowledged), until a later check finds it sound again (it
was restored from a backup under the controller). Reads the controller answers from memory go on.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from drover.store.integrity import Integrity, check
from drover.store.sql_store import SqlStore

log = logging.getLogger("drover.controller")


async def first_check(url: str, checker: Callable[[str, bool], Integrity] = check) -> Integrity:
    """The quick check at start, off the event loop (it reads every page)."""
    found = await asyncio.to_thread(checker, url, True)
    log.info("the job store %s: %s", found.where, found.describe())
    return found


async def watch(store: SqlStore, url: str, every_s: float,
                checker: Callable[[str, bool], Integrity] = check) -> None:
    """Every `every_s`: the quick check, and the store's writes refused or taken again by it."""
    while True:
        await asyncio.sleep(every_s)
        try:
            found = await asyncio.to_thread(checker, url, True)
        except Exception as error:  # a store that cannot be reached now: its requests say so
            log.warning("the job store's integrity check could not run: %s; it is tried again in %.0f s",
                        error, every_s)
            continue
        apply(store, found)


def apply(store: SqlStore, found: Integrity) -> None:
    if not found.sound:
        if store.damaged is None:
            log.error("%s; every write is refused until a check finds it sound again", found.refusal())
        store.damaged = found.refusal()
    elif store.damaged is not None:
        log.info("the job store %s is sound again (%s): writes are taken again", found.where, found.method)
        store.damaged = None
