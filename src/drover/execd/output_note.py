"""The note writer: a small process that appends one line to a job's error (or output) file for
the node (a memory warning, or why the node ended the job), running as the job's owner.

The file is wherever its owner pointed it, so the node never opens it as root: it starts this
writer with the owner's uid, gid and groups, an empty environment and `/` as its directory
(owner_process.py), and the kernel checks the open against the owner's rights. Only an existing
regular file is appended to: nothing is created, and a FIFO or a device is refused, never
waited on.

Protocol, one JSON object per line each way:
    → {"path": "/home/a/job.err", "line": "drover: warning: ..."}
    ← {"ok": true}   {"error": "why"}

Standard library only: it starts in a few milliseconds, and needs nothing of Drover's.
"""

from __future__ import annotations

import json
import os
import stat
import sys

MAX_LINE = 1000


def append(path: str, line: str) -> dict[str, object]:
    if "\0" in path or not os.path.isabs(path):
        return {"error": "the path must be absolute"}
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as error:
        return {"error": f"cannot open {path}: {error.strerror}"}
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return {"error": f"{path} is not a regular file"}
        os.write(fd, (" ".join(line.split())[:MAX_LINE] + "\n").encode("utf-8", "replace"))
        return {"ok": True}
    except OSError as error:
        return {"error": f"cannot write {path}: {error.strerror}"}
    finally:
        os.close(fd)


def main() -> int:
    for request_line in sys.stdin.buffer:
        try:
            request = json.loads(request_line)
            answer = append(str(request["path"]), str(request["line"]))
        except (ValueError, KeyError, TypeError) as error:
            answer = {"error": f"bad request: {error}"}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
