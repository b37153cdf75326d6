"""Whether a spool is kept in memory (tmpfs, ramfs), as it is by default (config.default_spool).

On such a file system a record's write, an fsync and an unlink never wait for a device: each is a
few microseconds of the kernel's time, less than handing the work to a thread and back costs the
daemon (a queue, a wake-up, the GIL passed twice). On a disk, any of them may wait on the device
(a flush, a journal commit, a failing disk), and a daemon's event loop must not: there they go to
threads (execd/cleanup.py).

Read once, when the daemon starts, from the mount table: the file system of the longest mount
point that holds the path and is the device the path is on (its st_dev, the table's
major:minor). A mount hidden by a later one on a parent directory is still in the table, by a
name that holds the path: its device tells it apart. Where no line names the path's device (a
btrfs subvolume's files have a device of their own), the type is not known, and the spool is
taken as on a disk.
"""

from __future__ import annotations

import os

IN_MEMORY = frozenset({"tmpfs", "ramfs"})
MOUNTS = "/proc/self/mountinfo"


def file_system_type(path: str, mounts: str = MOUNTS, device: str | None = None) -> str | None:
    """The type of the file system `path` is on ("tmpfs", "ext4", ...), or None where the mount
    table cannot be read or names no mount of its device. `device`: the path's, as
    "major:minor" (by default, its own or, where it is not made yet, its nearest parent's)."""
    target = os.path.realpath(path)
    if device is None:
        device = _device(target)
    best, kind = "", None
    try:
        with open(mounts, encoding="utf-8", errors="replace") as table:
            for line in table:
                # "<id> <parent> <dev> <root> <mount point> <options> [<optional>...] - <type> ..."
                before, _, after = line.partition(" - ")
                fields = before.split()
                if len(fields) < 5 or not after or fields[2] != device:
                    continue
                point = _unescaped(fields[4])
                if _holds(point, target) and len(point) >= len(best):
                    best, kind = point, after.split()[0]
    except OSError:
        return None
    return kind


def in_memory(path: str, mounts: str = MOUNTS, device: str | None = None) -> bool:
    """Whether `path` is on a file system kept in memory; False where that cannot be told."""
    return file_system_type(path, mounts, device) in IN_MEMORY


def _device(path: str) -> str | None:
    """The device `path` is on, as the mount table writes it ("major:minor")."""
    while True:
        try:
            number = os.stat(path).st_dev
        except OSError:
            parent = os.path.dirname(path)
            if parent == path:
                return None
            path = parent
            continue
        return f"{os.major(number)}:{os.minor(number)}"


def _holds(point: str, path: str) -> bool:
    return point == "/" or path == point or path.startswith(point.rstrip("/") + "/")


def _unescaped(field: str) -> str:
    """The mount table writes a space, a tab, a newline and a backslash as octal escapes."""
    if "\\" not in field:
        return field
    for code, char in (("\\040", " "), ("\\011", "\t"), ("\\012", "\n"), ("\\134", "\\")):
        field = field.replace(code, char)
    return field
