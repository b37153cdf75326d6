"""Write a record whole or not at all: a temporary file in the same directory, then rename.

A reader never sees half a record, and a crash at any instant leaves either the old record or the
new one. `durable=True` also fsyncs the file and the directory, for records that must survive the
machine (not only the process) going down; it costs a disk flush, so hot records skip it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any


def write_atomically(path: str, data: bytes, *, durable: bool = False, mode: int = 0o600) -> None:
    """Records are private by default (0600): they hold the job's environment and outcome."""
    directory, slash, name = path.rpartition("/")  # os.path.split's work, for a path that has a name
    temporary = f"{directory}{slash}.{name}.tmp"
    directory = directory or slash
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC | os.O_NOFOLLOW, mode)
    try:
        try:
            written = os.write(fd, data)  # a record is written whole by one write, but for a large one
            if written < len(data):
                view = memoryview(data)[written:]
                while view:
                    view = view[os.write(fd, view) :]
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.rename(temporary, path)
    except BaseException:
        _remove(temporary)  # a part-written file would only hold on to the space that ran out
        raise
    if durable:
        dir_fd = os.open(directory or ".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


def write_json(path: str, record: Any, *, durable: bool = False, mode: int = 0o600,
               encode: Callable[[Any], bytes] | None = None) -> None:
    """`encode`: how the record becomes JSON (the node daemon's is msgspec's,
    execd/record_encoding.py); by default the standard library's, which is all the shepherd
    imports."""
    data = encode(record) if encode is not None else json.dumps(record, separators=(",", ":")).encode()
    write_atomically(path, data, durable=durable, mode=mode)


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def read_bytes(path: str) -> bytes:
    """The whole record at `path` (FileNotFoundError if it has not been written): an open, its
    reads and a close, without the buffered file object's own look at the file (an fstat, a
    terminal's ioctl and a seek for each record)."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        chunks = []
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_json(path: str) -> Any:
    """The record at `path`, or None if it has not been written."""
    try:
        return json.loads(read_bytes(path))
    except FileNotFoundError:
        return None


def read_text(path: str) -> str | None:
    """The record at `path` as text, its line ends as a text file's reader gives them (\\r\\n and
    \\r as \\n), or None if it has not been written."""
    try:
        text = read_bytes(path).decode("utf-8", errors="replace")
    except FileNotFoundError:
        return None
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text
