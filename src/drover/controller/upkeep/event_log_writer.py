"""The event log writer: a small process that appends a job's events to the file its owner named
(`--event-log FILE`), running as that owner.

The controller never opens a user's file itself: on a shared machine it runs as root, and a
root process appending to a path a user chose writes wherever that path leads (another user's
`.bashrc`, a FIFO that blocks it, a file it then corrupts). So it starts one writer per owner,
with the owner's uid, gid and groups, an empty environment and `/` as its directory, and sends it
requests; the kernel checks every open against the owner's rights. (When the controller itself
runs as an unprivileged service user, the same requests go to a writer the owner's node starts.)

Protocol, one JSON object per line each way:
    → {"path": "/home/a/job.log", "job": 12, "lines": [[seq, "json text\\n"], ...]}
    ← {"ok": true, "last": 41}   or   {"ok": false, "error": "why"}

Exactly once: the writer reads the end of the file for the job's last sequence number and
appends only the lines after it, so a request repeated after a crash writes nothing twice. Only
a regular file is appended to: a FIFO or a device is refused, and never waited on.

Standard library only, and only what this needs: it starts once per owner, and starts fast.
"""

from __future__ import annotations

import json
import os
import stat
import sys

TAIL_BYTES = 65536  # how far back the job's last line is looked for


def append(path: str, job_id: int, lines: list[tuple[int, str]]) -> int:
    """Append the lines whose sequence number is past the job's last in the file; that last."""
    if "\0" in path or not os.path.isabs(path):
        raise ValueError("the event log must be an absolute path without NUL bytes")
    flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
    fd = os.open(path, flags, 0o644)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError(f"{path} is not a regular file")
        last = last_seq_in(fd, job_id)
        new = [(seq, text) for seq, text in lines if seq > last]
        if new:
            data = "".join(text for _, text in new).encode()
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            last = new[-1][0]
        return last
    finally:
        os.close(fd)


def last_seq_in(fd: int, job_id: int) -> int:
    """The highest sequence number of `job_id` near the end of the file (which jobs may share)."""
    size = os.fstat(fd).st_size
    start = max(size - TAIL_BYTES, 0)
    tail = os.pread(fd, size - start, start).splitlines()
    for line in reversed(tail):
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and record.get("job") == job_id:
            return int(record.get("seq", 0))
    return 0


def main() -> int:
    for raw in sys.stdin.buffer:
        try:
            request = json.loads(raw)
            last = append(str(request["path"]), int(request["job"]),
                          [(int(seq), str(text)) for seq, text in request["lines"]])
            reply: dict[str, object] = {"ok": True, "last": last}
        except OSError as error:
            reply = {"ok": False, "error": f"{error.strerror or error}"}
        except (ValueError, KeyError, TypeError) as error:
            reply = {"ok": False, "error": str(error)}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
