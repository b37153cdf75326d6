"""Test users: created by the fixture, removed afterwards; and running client code as them.

Client code runs in a forked child that switched to the user (setgid, initgroups, setuid), so
the controller reads that user's uid from the socket, as it would for a real login."""

from __future__ import annotations

import os
import pickle
import pwd
import shutil
import subprocess
import traceback
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def can_manage_users() -> str | None:
    """None if this process can create test users, else why not."""
    if os.geteuid() != 0:
        return "creating test users needs root"
    if not shutil.which("useradd"):
        return "useradd is not installed"
    return None


def create_user(name: str) -> pwd.struct_passwd:
    subprocess.run(["useradd", "--create-home", "--shell", "/bin/bash", name], check=True,
                   capture_output=True)
    return pwd.getpwnam(name)


def remove_user(name: str) -> None:
    """Kill what the test user still runs (processes of that uid only, which only the test
    made), then remove the user, their home and their work directory."""
    import psutil

    uid = pwd.getpwnam(name).pw_uid
    for process in psutil.process_iter(["uids"]):
        if process.info["uids"] and process.info["uids"].real == uid:
            try:
                process.kill()
            except psutil.NoSuchProcess:
                pass
    subprocess.run(["userdel", "--remove", name], capture_output=True)
    shutil.rmtree(f"/tmp/{name}-work", ignore_errors=True)


def as_user(name: str, action: Callable[[], T]) -> T:
    """Run `action` in a child process that is `name`; return its result or raise its error."""
    entry = pwd.getpwnam(name)
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            os.close(read_fd)
            os.setgid(entry.pw_gid)
            os.initgroups(name, entry.pw_gid)
            os.setuid(entry.pw_uid)
            try:
                result: Any = ("ok", action())
            except Exception as error:
                result = ("error", error, traceback.format_exc())
            with os.fdopen(write_fd, "wb") as out:
                pickle.dump(result, out)
        except BaseException:
            code = 1
        finally:
            os._exit(code)
    os.close(write_fd)
    with os.fdopen(read_fd, "rb") as source:
        data = source.read()
    os.waitpid(pid, 0)
    outcome = pickle.loads(data)
    if outcome[0] == "error":
        raise outcome[1]
    return outcome[1]  # type: ignore[no-any-return]
