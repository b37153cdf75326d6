"""Threads that answer reads off the controller's event loop, each with a read-only store view of
its own (a connection never crosses threads). The loop keeps the writing connection; while a
thread reads, the loop goes on taking submissions and node reports.

Only work that touches no working-set object may run here: the working set changes on the loop
thread at any moment. What is handed over is the store (through the thread's reader) and
values built for the purpose.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from drover.store.base import StoreReader

T = TypeVar("T")


class ReadWorker:
    def __init__(self, open_reader: Callable[[], StoreReader], threads: int = 2) -> None:
        """`open_reader` is called once in each thread, on its first read."""
        self._open_reader = open_reader
        self._executor = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="drover-reads")
        self._local = threading.local()
        self._readers: list[StoreReader] = []  # every thread's, to close them once the threads stopped
        self._lock = threading.Lock()

    async def run(self, work: Callable[[StoreReader], T]) -> T:
        """`work(reader)` on a reading thread; its exception, if any, is raised here."""
        return await asyncio.get_running_loop().run_in_executor(self._executor, self._call, work)

    def _call(self, work: Callable[[StoreReader], T]) -> T:
        reader: StoreReader | None = getattr(self._local, "reader", None)
        if reader is None:
            reader = self._open_reader()
            self._local.reader = reader
            with self._lock:
                self._readers.append(reader)
        return work(reader)

    def close(self) -> None:
        """Wait for the reads under way, then close every thread's reader."""
        self._executor.shutdown(wait=True, cancel_futures=True)
        with self._lock:
            readers, self._readers = self._readers, []
        for reader in readers:
            reader.close()
