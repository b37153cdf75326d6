"""How condor_submit hands the clusters it submitted to the user's one event log follower.

Each user has one follower per cluster they talk to (follow.py), however many submits they make.
The hand-over is a directory of the user's own, `htcondor-follow` under config.pointer_dirs
(/run/user/UID/drover, else /tmp/drover-UID; both levels 0700 and checked to be the user's, so
no one else can put a request or a link there). Each cluster the user talks to has a tag there
(a hash of its address): condor_submit writes one request file per submitted cluster, TAG.C.json
(written whole under a dot name, then renamed), and the running follower of that tag takes them.
The lock file lock.TAG says whether that follower runs: it holds an exclusive flock on it for as
long as it may take requests (the kernel drops it when the follower dies), and removes it when
it ends, so nothing is left behind. A lock taken is only good while its file is still the one
named lock.TAG (a submit may open the file just before an ending follower removes it): one that
is not is let go and the name opened again.

The order of steps makes every request taken by exactly one follower:
- condor_submit writes its request, then tries the lock (claim). Held, by the file still named
  lock.TAG: its follower had not yet removed it, so it will look at the directory after the
  request was written. Free: condor_submit takes it and starts a follower that inherits it (the
  lock is never free between the look and the new follower's start, so two submits cannot both
  start one).
- a follower with nothing left to follow removes lock.TAG, still holding its lock, then looks at
  the directory once more (retire): a request written before that look is taken by claiming the
  lock anew (or, if a submit did first, left to the follower it starts); a submit that writes one
  after it finds no lock.TAG, or the removed one, and makes a new one.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
from typing import Any

from drover.config import pointer_dirs

LOCK = "lock"
SUFFIX = ".json"


class NoDirectory(OSError):
    """None of the user's own directories can hold the requests."""


def tag(address: str) -> str:
    """The name the requests and the lock of the cluster at `address` go by."""
    return hashlib.sha1(address.encode()).hexdigest()[:10]


def directory() -> str:
    """The user's directory of requests, made if missing."""
    from drover.spool.own_directory import UnsafeDirectory, own_directory

    reasons = []
    for base in pointer_dirs():
        if not os.path.isdir(os.path.dirname(base)):  # /run/user/UID: made by the login manager, or not at all
            continue
        path = os.path.join(base, "htcondor-follow")
        try:
            own_directory(base, 0o700, set_mode=True)
            own_directory(path, 0o700, set_mode=True)
        except UnsafeDirectory as why:
            reasons.append(str(why))
            continue
        return path
    raise NoDirectory("; ".join(reasons) or "no directory of the user's own for it")


def put(path: str, name: str, request: dict[str, Any]) -> None:
    """A request (`name`: TAG.C), written whole under a dot name (never taken) and renamed into
    place."""
    temporary = os.path.join(path, f".{name}.{os.getpid()}")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    with open(fd, "w") as file:
        json.dump(request, file)
    os.replace(temporary, os.path.join(path, name + SUFFIX))


def lock_file(path: str, tag: str) -> int:
    return os.open(_lock_path(path, tag), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)


def claim(path: str, tag: str) -> int | None:
    """The lock of `tag`, held (its descriptor), when no follower holds it; None when one does
    and will take what was written before this."""
    while True:
        fd = lock_file(path, tag)
        locked = try_lock(fd)
        if _is_named(fd, path, tag):
            if locked:
                return fd
            os.close(fd)
            return None
        os.close(fd)  # removed by an ending follower since it was opened: the name again


def retire(path: str, tag: str, fd: int) -> int | None:
    """The follower holding `fd` has nothing left to follow: remove the lock file, then look
    once more. None: nothing waits (or another holder will take it); else the lock claimed anew."""
    try:
        os.unlink(_lock_path(path, tag))
    except FileNotFoundError:  # removed by hand: the look below is what matters
        pass
    try:
        return claim(path, tag) if pending(path, tag) else None
    finally:
        os.close(fd)


def _lock_path(path: str, tag: str) -> str:
    return os.path.join(path, f"{LOCK}.{tag}")


def _is_named(fd: int, path: str, tag: str) -> bool:
    try:
        named = os.stat(_lock_path(path, tag), follow_symlinks=False)
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (named.st_dev, named.st_ino) == (held.st_dev, held.st_ino)


def try_lock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def pending(path: str, tag: str) -> bool:
    return any(_is_request(name, tag) for name in os.listdir(path))


def take(path: str, tag: str) -> list[dict[str, Any]]:
    """Every request of `tag` there, removed as it is read (only the lock's holder takes them);
    one that is not a request (not a regular file, not a JSON object) is removed and skipped."""
    out = []
    for name in sorted(os.listdir(path)):
        if not _is_request(name, tag):
            continue
        full = os.path.join(path, name)
        try:
            fd = os.open(full, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
            with open(fd, "rb") as file:
                value = json.loads(file.read(1 << 20))
        except (OSError, ValueError):
            value = None
        try:
            os.unlink(full)
        except FileNotFoundError:
            pass
        if isinstance(value, dict):
            out.append(value)
    return out


def _is_request(name: str, tag: str) -> bool:
    return name.startswith(tag + ".") and name.endswith(SUFFIX)
