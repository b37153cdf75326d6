"""A job's output files, followed from this side as the job writes them (`drover run`, and srun
and salloc outside a job)."""

from __future__ import annotations

from typing import IO, Protocol

TYPE_CHECKING = False
if TYPE_CHECKING:
    from drover.client.client import Client


class Sink(Protocol):
    """Where a task's output is copied: a binary stream, or Labelled."""

    def write(self, data: bytes, /) -> object: ...

    def flush(self) -> object: ...


class Labelled:
    """Each line written, prefixed with the task's index, as `srun --label` prints "3: ...": the
    tasks of an array run at once and their lines interleave, so each line says whose it is. A
    last line without its newline is printed (and given one) by `close`."""

    def __init__(self, out: IO[bytes], index: int) -> None:
        self.out, self.label, self.partial = out, f"{index}: ".encode(), b""

    def write(self, data: bytes, /) -> int:
        *lines, self.partial = (self.partial + data).split(b"\n")
        if lines:
            self.out.write(b"".join(self.label + line + b"\n" for line in lines))
        return len(data)

    def flush(self) -> None:
        self.out.flush()

    def close(self) -> None:
        if self.partial:
            self.out.write(self.label + self.partial + b"\n")
            self.partial = b""
        self.out.flush()


def copy_new_bytes(path: str, offset: int, out: Sink) -> int:
    """Copy what `path` holds past `offset` to `out`; return the new offset (the same one while
    the file does not exist yet)."""
    try:
        with open(path, "rb") as file:
            file.seek(offset)
            data = file.read()
    except FileNotFoundError:
        return offset
    if data:
        out.write(data)
        out.flush()
    return offset + len(data)


class TaskOutput:
    """One stream of a task's output followed from here: from its file when `path` is given (the
    task runs on this host), otherwise through the node that runs it, read as its owner."""

    def __init__(self, client: Client, job_id: int, index: int, stream: str, path: str | None) -> None:
        self.client, self.job_id, self.index, self.stream, self.path = client, job_id, index, stream, path
        self.offset = 0
        self.missing: str | None = None  # why the last call found nothing to read through the node

    def copy_new(self, out: Sink) -> None:
        """Copy what was written since the last call; nothing while the task has not started."""
        if self.path is not None:
            self.offset = copy_new_bytes(self.path, self.offset, out)
            return
        from drover.core.errors import NotFound

        while True:
            try:
                chunk = self.client.output(self.job_id, self.index, self.stream, self.offset)
            except NotFound as error:
                self.missing = str(error)  # not started yet (or its output is gone from its node)
                return
            self.missing = None
            if chunk.data:
                out.write(chunk.data)
                out.flush()
                self.offset += len(chunk.data)
            if chunk.size is None or self.offset >= chunk.size:
                return


def all_nodes_here(client: Client) -> bool:
    """Whether every node of the cluster runs on this host, so that its files are here to read."""
    return not client.remote and all(node.local for node in client.nodes())
