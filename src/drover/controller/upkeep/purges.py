"""Purges: ended jobs older than history_days forgotten (with their staged-out files), and the
request keys of all but the newest submissions."""

from __future__ import annotations

import asyncio
import logging
import shutil
import time

from drover.controller.nodes import staged_files
from drover.controller.settings import Settings
from drover.controller.shell.transaction import Shell

log = logging.getLogger("drover.controller")
# Request keys remembered: in memory, and in the store with their submissions (loaded by a
# controller that starts or takes over; the older ones are pruned with the hourly purge).
REMEMBERED_SUBMISSIONS = 10_000
PURGE_EVERY_S = 3600.0  # how often ended jobs older than history_days are looked for
PURGE_BATCH = 1000  # jobs forgotten in one transaction


class Purges:
    def __init__(self, shell: Shell, settings: Settings) -> None:
        self.shell = shell
        self.settings = settings

    async def purge_history(self, every_s: float = PURGE_EVERY_S) -> None:
        """Every `every_s` (first at start): forget jobs that ended more than history_days ago,
        PURGE_BATCH at a time, each batch its own transaction, the loop free between batches;
        and the request keys of all but the newest REMEMBERED_SUBMISSIONS submissions."""
        while True:
            self.prune_submissions()
            if self.settings.history_days > 0:
                await self.purge_once()
            await asyncio.sleep(every_s)

    def prune_submissions(self) -> int:
        """Forget the stored request keys this controller no longer remembers (it remembers the
        newest REMEMBERED_SUBMISSIONS); the number forgotten."""
        try:
            return self.shell.store.prune_submissions(REMEMBERED_SUBMISSIONS)
        except Exception:
            log.exception("pruning the submissions' request keys failed; it is tried again later")
            return 0

    async def purge_once(self) -> int:
        """One round of purging (every batch due now); the number of jobs forgotten."""
        before = self.shell.clock() - self.settings.history_days * 86400.0
        forgotten = 0
        while True:
            try:
                ids = self.shell.store.purge_ended(before, PURGE_BATCH)
            except Exception:
                log.exception("purging the history failed; it is tried again later")
                return forgotten
            for job_id in ids:
                self.shell.state.ended_states.pop(job_id, None)
                for directory in staged_files.attempt_dirs(self.settings.files_dir, job_id):
                    shutil.rmtree(directory, ignore_errors=True)
            forgotten += len(ids)
            if len(ids) < PURGE_BATCH:
                if forgotten:
                    log.info("history: %d jobs that ended before %s forgotten (history_days = %d)", forgotten,
                             time.strftime("%Y-%m-%d %H:%M", time.localtime(before)), self.settings.history_days)
                return forgotten
            await asyncio.sleep(0.05)  # other work runs between batches

