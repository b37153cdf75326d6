"""Whether a spool is kept in memory (tmpfs, ramfs), as it is by default (config.default_spool).

On such a file system a record's write, an fsync and an unlink never wait for a device: each is a
few microseconds of the kernel's time, less than handing the work to a thread and back costs the
daemon (a queue, a wake-up, the GIL passed twice). On a disk, any of them may wait on the device
(a flush, a journal commit, a failing disk), and a daemon's event loop must not: there they go to
threads (execd/cleanup.py).

Read once, when the daemon starts, from the mount table: the file system of the longest mount
point that holds the path.
"""

from __future__ import annotations

import os

IN_MEMORY = frozenset({"tmpfs", "ramfs"})
MOUNTS = "/proc/self/mountinfo"


def file_system_type(path: str, mounts: str = MOUNTS) -> str | None:
    """The type of the file system `path` is on ("tmpfs", "ext4", ...), or None where the mount
    table cannot be read."""
    target = os.path.realpath(path)
    best, kind = "", None
    try:
        with open(mounts, encoding="utf-8", errors="replace") as table:
            for line in table:
                # "<id> <parent> <dev> <root> <mount point> <options> [<optional>...] - <type> ..."
                before, _, after = line.partition(" - ")
                fields = before.split()
                if len(fields) < 5 or not after:
                    continue
                point = _unescaped(fields[4])
                if _holds(point, target) and len(point) >= len(best):
                    best, kind = point, after.split()[0]
    except OSError:
        return None
    return kind


def in_memory(path: str, mounts: str = MOUNTS) -> bool:
    """Whether `path` is on a file system kept in memory; False where that cannot be told."""
    return file_system_type(path, mounts) in IN_MEMORY


def _holds(point: str, path: str) -> bool:
    return point == "/" or path == point or path.startswith(point.rstrip("/") + "/")


def _unescaped(field: str) -> str:
    """The mount table writes a space, a tab, a newline and a backslash as octal escapes."""
    if "\\" not in field:
        return field
    for code, char in (("\\040", " "), ("\\011", "\t"), ("\\012", "\n"), ("\\134", "\\")):
        field = field.replace(code, char)
    return field
