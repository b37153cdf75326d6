"""How a job ended is never lost to a full disk.

The execd writes a `reserve` record into each attempt's spool before the shepherd starts: room
kept for the records of the job's end (or moves in the whole one of an attempt that ended:
spool/spare_reserves.py). If the disk is full when the shepherd writes them (the
job filled it, or anything else did), the shepherd gives the reserve back and writes again; if
it is still full, it keeps trying, with back-off, until the write succeeds. Meanwhile the execd
sees a live shepherd, so the attempt stays running rather than being recorded as a failure it
was not; once the operator frees space, the true outcome is recorded.

An attempt whose reserve cannot be written does not start: the node's disk is full before the
job ran, which is the node's failure, not the job's. So does one whose spool has less room
left than a reserve, where an ended attempt's would have been moved in (a spare is taken only
where a new one could be allocated).
"""

from __future__ import annotations

import errno
import os
import sys
import time
from collections.abc import Callable

from drover.spool import layout
from drover.spool.atomic import write_atomically

RESERVE_BYTES = 256 * 1024  # the outcome records of an attempt are a few KiB; the trace, more
FULL = (errno.ENOSPC, errno.EDQUOT)
# posix_fallocate's answers where the file system cannot allocate without writing
UNALLOCATABLE = (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS)
BACKOFF_FIRST_S = 1.0
BACKOFF_MAX_S = 30.0


def make_reserve(spool: layout.SpoolDir) -> None:
    """Raises OSError (ENOSPC) when there is no room for it: then the attempt must not start.
    The space is allocated without writing it (posix_fallocate), or written as zeros where the
    file system refuses to allocate. No reader looks inside, and the spool is new: it is made in
    place, not renamed into it; a reserve cut short by a full disk is removed."""
    path = spool.record(layout.RESERVE)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    try:
        try:
            os.posix_fallocate(fd, 0, RESERVE_BYTES)
        except OSError as error:
            if error.errno not in UNALLOCATABLE:
                raise
            view = memoryview(bytes(RESERVE_BYTES))
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)
    except BaseException:
        os.unlink(path)  # a part of a reserve only holds on to the space that ran out
        raise


def write_outcome(spool: layout.SpoolDir, path: str, data: bytes,
                  sleep: Callable[[float], None] = time.sleep, patient: bool = True) -> None:
    """Write a record of how the job ended, whatever it takes (see above). Not `patient` (the
    execd, which must not block): once the reserve is spent, a full disk raises."""
    delay = BACKOFF_FIRST_S
    while True:
        try:
            write_atomically(path, data)
            return
        except OSError as error:
            if error.errno not in FULL:
                raise
            if _give_back_reserve(spool):
                continue
            if not patient:
                raise
            print(f"drover shepherd {spool.name}: cannot write {os.path.basename(path)}: {error.strerror}; "
                  f"trying again in {delay:.0f}s", file=sys.stderr, flush=True)
            sleep(delay)
            delay = min(delay * 2, BACKOFF_MAX_S)


def _give_back_reserve(spool: layout.SpoolDir) -> bool:
    try:
        os.unlink(spool.record(layout.RESERVE))
        return True
    except FileNotFoundError:
        return False
