"""A job's output files, followed from this side as the job writes them (`drover run`, and srun
and salloc outside a job)."""

from __future__ import annotations

from typing import IO


def copy_new_bytes(path: str, offset: int, out: IO[bytes]) -> int:
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
