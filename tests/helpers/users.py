"""Test users: created by the fixture, removed afterwards; and running programs as them.

`run_as_user` starts a fresh program as the user (setpriv: uid, gid and supplementary groups,
a clean environment), the way a login would: the controller reads that user's uid from the
socket. `as_user` runs Python code of the test in a forked child that switched to the user,
for the few checks that need no installed command."""

from __future__ import annotations

import os
import pickle
import pwd
import shutil
import subprocess
import traceback
from collections.abc import Callable, Mapping, Sequence
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
    """Kill what the test user still runs (processes whose real uid is that user's, which only
    the test made; never anyone else's), then remove the user, their home and work directory."""
    import psutil

    try:
        uid = pwd.getpwnam(name).pw_uid
    except KeyError:
        return
    removed = None
    for _ in range(10):  # again, for what forked while the others were being killed
        theirs = [p for p in psutil.process_iter(["uids"]) if p.info["uids"] and p.info["uids"].real == uid]
        for process in theirs:
            try:
                process.kill()
            except psutil.NoSuchProcess:
                pass
        psutil.wait_procs(theirs, timeout=5)
        # userdel refuses a user who still runs a process (one may have started meanwhile)
        removed = subprocess.run(["userdel", "--remove", name], capture_output=True, text=True)
        if _gone(name):
            break
    shutil.rmtree(f"/tmp/{name}-work", ignore_errors=True)
    if not _gone(name):
        raise RuntimeError(f"test user {name} could not be removed: {removed.stderr if removed else ''}")


def _gone(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return True
    return False


# A login's PATH; callers put their install's bin directory in front.
LOGIN_PATH = "/usr/local/bin:/usr/bin:/bin"


def run_as_user(user: str, argv: Sequence[str], *, env: Mapping[str, str | None] | None = None,
                input: str | None = None, cwd: str | os.PathLike[str] | None = None,
                timeout: float = 60, prefix: Sequence[str] = ()) -> subprocess.CompletedProcess[str]:
    """Run `argv` as `user`: a new program with the user's uid, gid and supplementary groups,
    in its own session, with a login's clean environment (HOME, USER, LOGNAME, SHELL, PATH,
    LANG) plus `env` (a None value removes a name). It enters `cwd` (default: the user's home)
    as the user, so a directory the user may not enter fails as it would for them. `prefix`:
    what runs it (`ip netns exec NS`, for a user on another host)."""
    command, clean = user_command(user, argv, env=env, cwd=cwd, prefix=prefix)
    return subprocess.run(command, env=clean, input=input, capture_output=True, text=True, timeout=timeout,
                          cwd="/", start_new_session=True,
                          stdin=subprocess.DEVNULL if input is None else None)


def user_command(user: str, argv: Sequence[str], *, env: Mapping[str, str | None] | None = None,
                 cwd: str | os.PathLike[str] | None = None,
                 prefix: Sequence[str] = ()) -> tuple[list[str], dict[str, str]]:
    """The command line and environment that run `argv` as `user` (see run_as_user), for a
    caller that starts it its own way (on a terminal, in the background)."""
    entry = pwd.getpwnam(user)
    clean: dict[str, str] = {
        "HOME": entry.pw_dir, "USER": user, "LOGNAME": user, "SHELL": entry.pw_shell or "/bin/sh",
        "PATH": LOGIN_PATH, "LANG": "C.UTF-8",
    }
    for key, value in (env or {}).items():
        if value is None:
            clean.pop(key, None)
        else:
            clean[key] = value
    program = argv[0] if "/" in argv[0] else shutil.which(argv[0], path=clean["PATH"])
    if program is None:
        raise FileNotFoundError(f"{argv[0]} is not on {clean['PATH']}")
    command = [*prefix, "setpriv", f"--reuid={entry.pw_uid}", f"--regid={entry.pw_gid}", "--init-groups", "--",
               "env", "--chdir", str(cwd or entry.pw_dir), "--", program, *argv[1:]]
    return command, clean


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
