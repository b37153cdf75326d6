"""How condor_submit hands the clusters it submitted to the user's one event log follower.

Each user has one follower per cluster they talk to (follow.py), however many submits they make.
The hand-over is a directory of the user's own, `htcondor-follow` under config.pointer_dirs
(/run/user/UID/drover, else /tmp/drover-UID; both levels 0700 and checked to be the user's, so
no one else can put a request or a link there). Each cluster the user talks to has a tag there
(a hash of its address): condor_submit writes one request file per submitted cluster, TAG.C.json
(written whole under a dot name, then renamed), and the running follower of that tag takes them.
The lock file lock.TAG says whether that follower runs: it holds an exclusive flock on it for as
long as it may take requests (the kernel drops it when the follower dies). The lock file stays
(removing it would let a submit lock a file no follower will ever look at again), one empty file
per cluster the user ever talked to.

The order of steps makes every request taken by exactly one follower:
- condor_submit writes its request, then tries the lock. Held: the running follower will see the
  request. Free: condor_submit takes it and starts a follower that inherits it (the lock is never
  free between the look and the new follower's start, so two submits cannot both start one).
- a follower with nothing left to follow releases the lock, then looks at the directory once
  more: a request written before that look is taken by taking the lock again (or, if another
  follower took it meanwhile, left to that one); one written after it finds the lock free.
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
    return os.open(os.path.join(path, f"{LOCK}.{tag}"), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)


def try_lock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def unlock(fd: int) -> None:
    fcntl.flock(fd, fcntl.LOCK_UN)


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
