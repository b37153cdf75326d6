"""The output reader: a small process that reads a job's output files for `drover logs` and
`drover run` of a user on another host, running as the job's owner.

The execd runs as root, and a job's output file is wherever its owner pointed it: root reading
it would read what the owner may not (a file the owner may only write to, another user's file
behind a link the owner made). So the node starts one reader per owner, with the owner's uid,
gid and groups, an empty environment and `/` as its directory, and the kernel checks each open
against the owner's rights. Only a regular file is read: a FIFO or a device is refused, and
never waited on.

Protocol, one JSON object per line each way:
    → {"path": "/home/a/job.out", "offset": 0, "limit": 1048576}
    ← {"size": 1234, "data": "<base64>"}   {"size": null} (no such file yet)   {"error": "why"}

Standard library only: it starts once per owner, and starts fast.
"""

from __future__ import annotations

import base64
import json
import os
import stat
import sys


def read(path: str, offset: int, limit: int) -> dict[str, object]:
    if "\0" in path or not os.path.isabs(path):
        return {"error": "the output path must be absolute"}
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except FileNotFoundError:
        return {"size": None}
    except OSError as error:
        return {"error": f"cannot open {path}: {error.strerror}"}
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return {"error": f"{path} is not a regular file"}
        data = os.pread(fd, max(0, min(limit, info.st_size - offset)), offset) if offset < info.st_size else b""
        return {"size": info.st_size, "data": base64.b64encode(data).decode()}
    except OSError as error:
        return {"error": f"cannot read {path}: {error.strerror}"}
    finally:
        os.close(fd)


def main() -> int:
    for line in sys.stdin.buffer:
        try:
            request = json.loads(line)
            answer = read(str(request["path"]), int(request["offset"]), int(request["limit"]))
        except (ValueError, KeyError, TypeError) as error:
            answer = {"error": f"bad request: {error}"}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
