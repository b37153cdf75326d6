"""The tail of a task's output, followed as the job writes it, read as the dashboard's user.

Where the file is visible here (a personal cluster, a shared file system) it is read directly,
as `drover logs` reads it, with the rights of the user who runs the dashboard; otherwise through
the node that runs the task, which reads it as the job's owner (GET .../output).
"""

from __future__ import annotations

import codecs
import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from drover.client.client import Client
    from drover.protocol.api import JobInfo

TAIL_BYTES = 64 * 1024  # what a page shows first: the last part of a long output
CHUNK_BYTES = 256 * 1024  # read at most this much per update, so a job writing fast cannot stall a stream


class OutputTail:
    """One task's stdout from its last TAIL_BYTES on; `read_new` gives what came since."""

    def __init__(self, job_id: int, index: int) -> None:
        self.job_id, self.index = job_id, index
        self.offset: int | None = None  # None: not placed yet (the tail's start is found on the first read)
        self.decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def read_new(self, api: Client, job: JobInfo) -> str:
        task = next((task for task in job.tasks if task.index == self.index), None)
        if task is None or not task.attempts:
            return ""
        path = task.stdout
        if path and os.path.isabs(path) and os.path.isfile(path):
            return self.decoder.decode(self._from_file(path))
        return self.decoder.decode(self._through_node(api))

    def _from_file(self, path: str) -> bytes:
        try:
            with open(path, "rb") as file:
                size = os.fstat(file.fileno()).st_size
                if self.offset is None or self.offset > size:  # first read, or the file was truncated
                    self.offset = max(size - TAIL_BYTES, 0)
                file.seek(self.offset)
                data = file.read(CHUNK_BYTES)
        except OSError:
            return b""
        self.offset += len(data)
        return data

    def _through_node(self, api: Client) -> bytes:
        from drover.core.errors import DroverError

        try:
            if self.offset is None:
                probe = api.output(self.job_id, self.index, "stdout", 0)
                if probe.size is None:
                    return b""
                self.offset = max(probe.size - TAIL_BYTES, 0)
            chunk = api.output(self.job_id, self.index, "stdout", self.offset)
        except DroverError:
            return b""  # not started, or gone from its node: nothing new to show
        data = chunk.data[:CHUNK_BYTES]
        self.offset += len(data)
        return data
