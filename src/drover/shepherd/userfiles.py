"""Files in a user's directories: opened beneath a directory, never through a link, only with the
user's own rights (the caller acts as the user: see identity.acting_as).

The rule these functions serve: root never opens, creates or follows a path a user chose. The
shepherd switches its effective ids to the job's owner before it calls anything here, so the
kernel checks every access against the owner's rights; on top of that, a path is resolved
beneath the directory it is relative to and no symbolic link is followed on the way, so a link
planted (or swapped in after submission) cannot point a file operation somewhere else. HTCondor
switches to the user for every file it touches on a user's behalf; Slurm's slurmstepd opens
output files after dropping to the user; this is the same discipline.

`open_beneath` uses openat2(2) with RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS where the kernel has
it (Linux 5.6+); elsewhere it walks the path one component at a time with O_NOFOLLOW, which
refuses the same things. Only regular files are read (never a FIFO or a device, which could
block the reader or never end), and only regular files (or /dev/null) take a job's output.
"""

from __future__ import annotations

import ctypes
import errno
import glob
import os
import stat

MAX_MATCHES = 10_000  # names one attempt's stage-out patterns may match; a bound on the search
_SYS_OPENAT2 = 437  # the same number on x86_64, aarch64 and the other unified-table architectures
_RESOLVE_NO_MAGICLINKS = 0x02
_RESOLVE_NO_SYMLINKS = 0x04
_RESOLVE_BENEATH = 0x08


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


_libc = ctypes.CDLL(None, use_errno=True)
_openat2_works: bool | None = None  # learnt on first use


_DEV_NULL = os.stat("/dev/null").st_rdev


class UnsafePath(OSError):
    """A path that escapes its directory, passes through a link, or names no regular file."""


def check_relative(name: str) -> list[str]:
    """The components of a relative path that stays beneath its directory; UnsafePath if not."""
    parts = name.split("/")
    if not name or name.startswith("/") or "\0" in name or any(p in ("", ".", "..") for p in parts[:-1]) \
            or parts[-1] in ("", ".", ".."):
        raise UnsafePath(errno.EINVAL, f"{name!r} is not a relative path beneath the directory")
    return parts


def open_beneath(dir_fd: int, name: str, flags: int, mode: int = 0o644) -> int:
    """os.open of `name` relative to `dir_fd`, resolved beneath it without following any link."""
    check_relative(name)
    flags |= os.O_CLOEXEC | os.O_NOFOLLOW
    global _openat2_works
    if _openat2_works is not False:
        fd = _openat2(dir_fd, name, flags, mode)
        if fd is not None:
            _openat2_works = True
            return fd
        _openat2_works = False
    return _open_walking(dir_fd, name, flags, mode)


def _openat2(dir_fd: int, name: str, flags: int, mode: int) -> int | None:
    """The fd, or None if this kernel has no openat2 (ENOSYS) or forbids it (EPERM: seccomp)."""
    how = _OpenHow(flags, mode if flags & os.O_CREAT else 0,
                   _RESOLVE_BENEATH | _RESOLVE_NO_SYMLINKS | _RESOLVE_NO_MAGICLINKS)
    fd = _libc.syscall(_SYS_OPENAT2, dir_fd, os.fsencode(name), ctypes.byref(how), ctypes.sizeof(how))
    if fd >= 0:
        return int(fd)
    error = ctypes.get_errno()
    if error in (errno.ENOSYS, errno.EPERM) and _openat2_works is None:
        return None
    if error == errno.ELOOP or error == errno.EXDEV:
        raise UnsafePath(error, f"{name!r} passes through a symbolic link or leaves its directory")
    raise OSError(error, os.strerror(error), name)


def _open_walking(dir_fd: int, name: str, flags: int, mode: int) -> int:
    *directories, last = check_relative(name)
    parent = parent_beneath(dir_fd, directories, create=False)
    try:
        return os.open(last, flags, mode, dir_fd=parent)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise UnsafePath(errno.ELOOP, f"{name!r} is a symbolic link") from None
        raise
    finally:
        os.close(parent)


def parent_beneath(dir_fd: int, directories: list[str], create: bool) -> int:
    """A new fd on the directory `directories` leads to beneath `dir_fd` (mkdir -p with
    `create`), each step opened with O_NOFOLLOW from the last: no link is followed."""
    current = os.open(".", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=dir_fd)
    try:
        for part in directories:
            if create:
                try:
                    os.mkdir(part, 0o755, dir_fd=current)
                except FileExistsError:
                    pass
            try:
                following = os.open(part, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=current)
            except OSError as error:
                if error.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise UnsafePath(error.errno, f"{part!r} is a symbolic link or not a directory") from None
                raise
            os.close(current)
            current = following
    except BaseException:
        os.close(current)
        raise
    return current


def write_beneath(dir_fd: int, name: str, data: bytes, mode: int) -> None:
    """Write `name` whole beneath `dir_fd`, creating the directories that lead to it: a new
    temporary file (O_EXCL), then a rename over the name. A link at the name is replaced, never
    followed."""
    *directories, last = check_relative(name)
    where = parent_beneath(dir_fd, directories, create=True)
    temporary = f".{last}.drover-{os.getpid()}"
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode,
                     dir_fd=where)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fchmod(fd, mode)  # the umask must not narrow what the submitter's file allowed
        finally:
            os.close(fd)
        os.rename(temporary, last, src_dir_fd=where, dst_dir_fd=where)
    except BaseException:
        try:
            os.unlink(temporary, dir_fd=where)
        except OSError:
            pass
        raise
    finally:
        os.close(where)


def open_regular_for_reading(dir_fd: int, name: str) -> int:
    """An fd on the regular file `name` beneath `dir_fd`; UnsafePath for a link, a FIFO or a
    device, IsADirectoryError for a directory. O_NONBLOCK: opening a FIFO must not wait for a writer."""
    fd = open_beneath(dir_fd, name, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    kind = os.fstat(fd).st_mode
    if not stat.S_ISREG(kind):
        os.close(fd)
        if stat.S_ISDIR(kind):
            raise IsADirectoryError(errno.EISDIR, f"{name!r} is a directory")
        raise UnsafePath(errno.EINVAL, f"{name!r} is not a regular file")
    os.set_blocking(fd, True)
    return fd


def open_output(path: str, append: bool) -> int:
    """A job's output or error file, opened (as the owner) for writing. A regular file is created
    or truncated as asked; /dev/null is allowed; a FIFO, a socket, a directory or another device
    is refused at once rather than left to block the shepherd."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOCTTY
    fd = os.open(path, flags | (os.O_APPEND if append else 0), 0o644)
    try:
        info = os.fstat(fd)
        kind = info.st_mode
        if not (stat.S_ISREG(kind) or (stat.S_ISCHR(kind) and info.st_rdev == _DEV_NULL)):
            raise UnsafePath(errno.EINVAL, "not a regular file (or /dev/null)", path)
        if stat.S_ISREG(kind) and not append:
            os.ftruncate(fd, 0)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def matching(dir_fd: int, patterns: list[str], limit: int = MAX_MATCHES) -> list[str]:
    """Names beneath `dir_fd` that match the glob patterns, each once, in order, at most `limit`
    of them. The caller opens each with open_regular_for_reading, which refuses links and what
    is not a regular file."""
    found: dict[str, None] = {}
    for pattern in patterns:
        for name in glob.iglob(pattern, dir_fd=dir_fd, recursive=True):
            found[name] = None
            if len(found) >= limit:
                return list(found)
    return list(found)
