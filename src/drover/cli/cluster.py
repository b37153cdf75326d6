"""Start and stop a personal cluster: a controller and one execd for the current user, in the
background, with their state, socket and logs in the user's state directory."""

from __future__ import annotations

import contextlib
import errno
import os
import sys
import time

from drover.config import (
    SOCKET_VARIABLE,
    STATE_DIR_VARIABLE,
    SYSTEM_STATE_DIR,
    Paths,
    forget_shared_notice,
    record_state_dir,
    state_dir,
)
from drover.core.errors import DroverError, Standby, Unavailable

TYPE_CHECKING = False
if TYPE_CHECKING:
    import pwd
    import subprocess
    from collections.abc import Mapping

START_TIMEOUT_S = 30.0


def is_serving(paths: Paths) -> bool:
    import socket

    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(paths.socket)
        return True
    except OSError:
        return False
    finally:
        probe.close()


def _read_pid(path: str) -> int | None:
    try:
        with open(path) as file:
            pid = int(file.read().split()[0])
    except (FileNotFoundError, ValueError, IndexError):
        return None
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as file:
            if b"drover" not in file.read():
                return None  # the pid was reused by something else
    except FileNotFoundError:
        return None
    return pid


def _spawn(daemon: str, paths: Paths, log_path: str, extra: list[str],
           user: pwd.struct_passwd | None = None) -> subprocess.Popen[bytes]:
    """Start `daemon` in the background; as `user` (uid, gid, no other groups), switched before
    exec, when given: a shared cluster's controller runs as its service user. The daemon writes
    its own pid file, once it holds its lock (pid_file.py): two starters at once never leave it
    naming the daemon that gave up."""
    import subprocess  # here, not at the top: `drover submit` to a running cluster never needs it

    # The daemon's own: a shared cluster's logs name every user's jobs, and its state directory
    # is traversable by all (for the socket). Opened here, by root: the log stays root's.
    log = os.fdopen(os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600), "ab")
    environment = None if user is None else service_environment(os.environ, user)
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "drover", daemon, "--state-dir", paths.root, *extra],
            stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True, close_fds=True,
            user=user.pw_uid if user else None, group=user.pw_gid if user else None,
            extra_groups=[] if user else None, env=environment, cwd="/" if user else None,
        )
    except OSError as error:
        if user is None:
            raise
        raise DroverError(f"the {daemon} runs as {user.pw_name}, who cannot run {sys.executable}: "
                          f"{error.strerror or error}; install Drover where every user can run it "
                          "(make install-system)") from None
    finally:
        log.close()
    return process


# What a daemon started as the service user gets of root's environment: the locale and the time
# zone (its logs and times), the PATH, Drover's own settings and libpq's (a PostgreSQL store);
# never the rest of root's (credentials, proxies, PYTHON* and LD_* variables, whatever root's
# shell set).
KEPT_FOR_THE_SERVICE_USER = ("PATH", "LANG", "LANGUAGE", "TZ")
KEPT_PREFIXES_FOR_THE_SERVICE_USER = ("LC_", "DROVER_", "PG")
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def service_environment(environ: Mapping[str, str], user: pwd.struct_passwd) -> dict[str, str]:
    """The environment of a daemon started as `user` by root: a login's of that user (HOME, USER,
    LOGNAME, SHELL), with what it needs of root's and nothing else."""
    kept = {name: value for name, value in environ.items()
            if name in KEPT_FOR_THE_SERVICE_USER or name.startswith(KEPT_PREFIXES_FOR_THE_SERVICE_USER)}
    return {"PATH": DEFAULT_PATH, **kept, "HOME": user.pw_dir, "USER": user.pw_name, "LOGNAME": user.pw_name,
            "SHELL": user.pw_shell or "/bin/sh"}


def _log_tail(path: str, lines: int = 15) -> str:
    try:
        with open(path, errors="replace") as file:
            return "".join(file.readlines()[-lines:])
    except FileNotFoundError:
        return "(no log)"


def _writable_state_dir(root: str, shared: bool) -> None:
    """Make the state directory if missing; refuse, in one line that names it and the cause, one
    where the daemons could not write their logs, pid files, socket and job store."""
    from drover.spool.own_directory import NotOurs, UnsafeDirectory, own_directory

    try:  # never one a user made first, or a link: root would chmod, and trust, what it points to
        own_directory(root, 0o711 if shared else 0o700, set_mode=shared)
    except NotOurs as error:
        raise DroverError(f"the state directory: {error}") from None
    except (UnsafeDirectory, OSError) as error:
        existing = root
        while not os.path.lexists(existing) and existing != os.path.dirname(existing):
            existing = os.path.dirname(existing)
        if _read_only(existing):
            raise _unwritable(root, OSError(errno.EROFS, os.strerror(errno.EROFS))) from None
        raise DroverError(f"the state directory: {error}") from None
    if _read_only(root):
        raise _unwritable(root, OSError(errno.EROFS, os.strerror(errno.EROFS)))
    if not os.access(root, os.W_OK | os.X_OK):
        raise _unwritable(root, OSError(errno.EACCES, os.strerror(errno.EACCES)))


def _read_only(path: str) -> bool:
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def _unwritable(root: str, error: OSError) -> DroverError:
    if error.errno == errno.EROFS:
        return DroverError(f"the state directory {root} is on a read-only filesystem: the cluster keeps its job "
                           "store, logs, pid files and socket there; remount it read-write, or give a writable "
                           "one with --state-dir or DROVER_STATE_DIR")
    return DroverError(f"the state directory {root} cannot be written ({error.strerror or error}): the cluster keeps "
                       "its job store, logs, pid files and socket there; make it writable by you, or give another "
                       "with --state-dir or DROVER_STATE_DIR")


def up(paths: Paths, controller_args: list[str] | None = None, execd_args: list[str] | None = None,
       shared: bool = False, service_user: pwd.struct_passwd | None = None) -> list[str]:
    """Start what is not running; wait until a node is up. Returns what was started, described.
    A shared cluster's state directory is traversable by all (its socket must be reachable), and
    its controller runs as `service_user` (the execd stays root)."""
    _writable_state_dir(paths.root, shared)
    started: list[str] = []
    spawned: list[tuple[subprocess.Popen[bytes], str]] = []  # (daemon, its pid file): ours to stop
    execd = None
    if not is_serving(paths) or _read_pid(paths.execd_pid) is None:
        # The daemons would refuse a bad drover.toml in their logs; say it here, before either starts.
        from drover.config_file import read_config

        read_config(paths.config_file)
    try:
        if not is_serving(paths):
            controller: subprocess.Popen[bytes] | None = _spawn(
                "controller", paths, paths.controller_log, controller_args or [], service_user)
            assert controller is not None
            spawned.append((controller, controller_pid_paths(paths)[1 if shared else 0]))
            who = f" as {service_user.pw_name}" if service_user else ""
            line = f"controller{who} (pid {controller.pid}, log {paths.controller_log})"
            deadline = time.monotonic() + START_TIMEOUT_S
            while not is_serving(paths):
                if controller is not None and _lost_the_race(controller):
                    controller = None  # another starter's controller runs: wait for it to serve
                elif controller is not None:
                    _check_alive("controller", controller, deadline, paths.controller_log)
                elif time.monotonic() > deadline:
                    raise Unavailable(f"no controller served {paths.socket} in {START_TIMEOUT_S:.0f}s; "
                                      f"see {paths.controller_log}")
                time.sleep(0.02)
            if controller is not None and not _lost_the_race(controller):
                started.append(line)
        if _read_pid(paths.execd_pid) is None:
            execd = _spawn("execd", paths, paths.execd_log, execd_args or [])
            spawned.append((execd, paths.execd_pid))
            started.append(f"execd (pid {execd.pid}, log {paths.execd_log})")
        if not _wait_for_node(paths, execd):
            started = [line for line in started if not line.startswith("execd ")]
    except BaseException:
        # A start that failed halfway leaves nothing of its own running: a controller without
        # a node (or a node whose controller died) only makes the next `drover up` harder to read.
        _stop_spawned(spawned)
        raise
    if not shared and not os.environ.get(STATE_DIR_VARIABLE) and paths.root == state_dir():
        # The user's personal cluster: recorded where a command finds it even when a tool
        # cleaned XDG_STATE_HOME out of its environment (config.state_dir).
        record_state_dir(paths.root)
    return started


def controller_pid_paths(paths: Paths) -> tuple[str, str]:
    """Where a controller writes its pid: in the state directory, or, for a shared cluster, in
    the controller's own directory (it runs as the service user, who may not write the state
    directory)."""
    return paths.controller_pid, Paths(paths.controller_dir).controller_pid


def _lost_the_race(process: subprocess.Popen[bytes]) -> bool:
    """Whether the daemon exited because another one holds its pid file (another starter's, at
    the same moment): then that one runs, and this start waits for it."""
    from drover.pid_file import ALREADY_RUNNING

    return process.poll() == ALREADY_RUNNING


def _stop_spawned(spawned: list[tuple[subprocess.Popen[bytes], str]]) -> None:
    """SIGTERM what this `up` started (newest first), SIGKILL what outlives the grace. A daemon
    removes its own pid file as it stops; one killed leaves it, removed here if it names it."""
    for process, pid_path in reversed(spawned):
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=10)
            except Exception:  # subprocess.TimeoutExpired: the module is imported lazily here
                process.kill()
                process.wait()
        if _pid_in(pid_path) == process.pid:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(pid_path)


def _pid_in(path: str) -> int | None:
    try:
        with open(path) as file:
            return int(file.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _check_alive(name: str, process: subprocess.Popen[bytes], deadline: float, log_path: str) -> None:
    code = process.poll()
    if code is not None or time.monotonic() > deadline:
        what = f"exited with status {code}" if code is not None else f"did not start in {START_TIMEOUT_S:.0f}s"
        # Exit status 1, not Unavailable's 2: the cluster did not fail to answer, it could not
        # start, and the daemon's own last words say why.
        raise DroverError(f"the {name} {what}; its log {log_path} ends:\n" + _log_tail(log_path))


def _wait_for_node(paths: Paths, execd: subprocess.Popen[bytes] | None) -> bool:
    """Wait until a node is up; whether it is the execd given (False: another starter's execd
    took its place, or none was given)."""
    from drover.client.transport import Transport

    transport = Transport(paths.socket)
    deadline = time.monotonic() + START_TIMEOUT_S
    try:
        while True:
            try:
                nodes = transport.call("GET", "/v1/nodes")["nodes"]
            except Standby:
                # A controller on a PostgreSQL store serves its socket as a standby until it
                # holds the store's leadership and has loaded it; one that waits behind an
                # active controller elsewhere stays so, and the last answer says where that is.
                if time.monotonic() > deadline:
                    raise
                nodes = []
            if any(node["state"] == "up" for node in nodes):
                return execd is not None and execd.poll() is None
            if execd is not None and _lost_the_race(execd):
                execd = None  # another starter's execd runs: wait for its node
            if execd is not None:
                _check_alive("execd", execd, deadline, paths.execd_log)
            elif time.monotonic() > deadline:
                raise Unavailable(f"no node joined in {START_TIMEOUT_S:.0f}s; see {paths.execd_log}")
            time.sleep(0.02)
    finally:
        transport.close()


def down(paths: Paths, timeout_s: float = 15.0) -> list[str]:
    """Stop the execd, then the controller (SIGTERM, then wait). Returns what was stopped."""
    import signal

    from drover.spool.process import is_alive, read_starttime

    stopped = []
    daemons = [("execd", paths.execd_pid)] + [("controller", path) for path in controller_pid_paths(paths)]
    for name, pid_path in daemons:
        pid = _read_pid(pid_path)
        if pid is None:
            continue
        started = read_starttime(pid)  # this process, not one that gets its pid later
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout_s
        # Until it has exited (a zombie, or reaped): a process in the middle of exiting has
        # lost its command line already, but not yet its children and files.
        while is_alive(pid, started) and time.monotonic() < deadline:
            _reap(pid)
            time.sleep(0.02)
        if is_alive(pid, started):
            os.kill(pid, signal.SIGKILL)
        try:
            os.unlink(pid_path)
        except FileNotFoundError:
            pass
        stopped.append(f"{name} (pid {pid})")
    if paths.root != SYSTEM_STATE_DIR:
        forget_shared_notice()  # the next command that falls back to the shared cluster says so
    return stopped


def _reap(pid: int) -> None:
    """A daemon started by this very process (tests, `drover up` then `down` in one program)
    stays a zombie until waited for."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def ensure_running() -> bool:
    """Before `drover submit` and `drover run`: start the personal cluster if none answers (zero
    configuration); whether one was started. A cluster named by DROVER_SOCKET is never started
    here: it is someone else's. The front ends (sbatch, qsub...) never start one: as the real
    commands, they fail when no controller answers (a tool that cleaned their environment must
    not get a second cluster of its own)."""
    if os.environ.get(SOCKET_VARIABLE):
        return False
    paths = Paths()
    if is_serving(paths) or is_serving(Paths(SYSTEM_STATE_DIR)):
        return False  # a cluster answers; its nodes are its own business
    from drover.config import remote_cluster

    if remote_cluster() is not None:
        return False  # this host joined a cluster: the commands talk to its controller
    _refuse_on_a_joined_node()
    started = up(paths)
    if started:
        print(f"drover: started a personal cluster in {paths.root} (stop it with `drover down`)", file=sys.stderr)
    return True


def _refuse_on_a_joined_node() -> None:
    """A host that joined another cluster as a node (`drover join`) does not start a personal
    cluster behind its users' backs: their jobs belong on the cluster, where they cannot submit
    from here yet."""
    system = Paths(SYSTEM_STATE_DIR)
    if not os.path.exists(system.config_file):
        return
    from drover.config_file import ConfigError, read_config

    try:
        controllers = read_config(system.config_file).config.execd.controllers()
    except ConfigError:
        return
    if controllers:
        raise Unavailable(f"this host is a node of the cluster at {', '.join(controllers)}, but its {system.cluster_file} "
                          "cannot be read (`drover join` writes it); submit on the controller's host, or start "
                          "a personal cluster with `drover up`")
