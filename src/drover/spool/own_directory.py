"""Directories a daemon makes for itself (its state directory, its spool, what it keeps below), made
and checked without following a link: a root daemon that chmods, or writes below, a path another
user made first (a link in /dev/shm, which is empty after each boot and writable by all) would
change whatever that link points to.

Each directory is made with mkdir if missing, then opened with O_NOFOLLOW | O_DIRECTORY; the
open descriptor is what is checked (its owner must be this process's user, and for root no one
else may write in it) and what its mode is set through. A link, a file, a directory of someone else's, or
one others may write in is refused with UnsafeDirectory, which says what to remove.

Standard library only: the CLI, the daemons and their composition roots use it.
"""

from __future__ import annotations

import errno
import os
import stat


class UnsafeDirectory(Exception):
    """The path is not a directory of this process's own that no one else may write in."""


class NotOurs(UnsafeDirectory):
    """Someone made the path first: a link, something else than a directory, a directory of
    another user's, or one others may write in."""


def own_directory(path: str, mode: int, set_mode: bool = False) -> None:
    """Make `path` (and its missing parents, with the same `mode`) a directory of this process's
    user, or check the one there is. `set_mode`: its mode is set to `mode` even when it was there
    already (otherwise a directory that was there keeps its own, if no one else may write in it)."""
    parent = os.path.dirname(path.rstrip("/")) or "/"
    if parent != path and not os.path.lexists(parent):
        own_directory(parent, mode)
    try:
        os.mkdir(path, mode)
        set_mode = True  # the umask may have taken bits away
    except FileExistsError:
        pass
    except OSError as error:
        raise UnsafeDirectory(f"cannot make the directory {path}: {error.strerror}") from None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as error:
        if error.errno in (errno.ELOOP, errno.ENOTDIR):
            raise NotOurs(f"{path} is {'a symbolic link' if os.path.islink(path) else 'not a directory'}, "
                                  f"not a directory of {_name(os.geteuid())}'s: refusing to use it (remove it, "
                                  "and see who made it)") from None
        raise UnsafeDirectory(f"cannot open the directory {path}: {error.strerror}") from None
    try:
        info = os.fstat(fd)
        if info.st_uid != os.geteuid():
            raise NotOurs(f"{path} belongs to {_name(info.st_uid)}, not to {_name(os.geteuid())}: refusing "
                                  "to use it (remove it, and see who made it)")
        if set_mode:
            if stat.S_IMODE(info.st_mode) != mode:
                os.fchmod(fd, mode)
        elif os.geteuid() == 0 and (info.st_mode & 0o002 or (info.st_mode & 0o020 and info.st_gid != 0)):
            # (A user's own daemon keeps a directory its user made group-writable: with a group
            # of the user's own, as many systems give each user, that is no one else.)
            raise NotOurs(f"{path} may be written in by others (mode {stat.S_IMODE(info.st_mode):o}): "
                                  f"refusing to use it (chmod go-w {path})")
    finally:
        os.close(fd)


def _name(uid: int) -> str:
    import pwd

    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"
