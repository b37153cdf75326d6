"""Where a cluster lives: the one place that reads the environment and names the state files.

Zero configuration: a personal cluster keeps everything in the user's XDG state directory
(``$XDG_STATE_HOME/drover``, by default ``~/.local/state/drover``); ``DROVER_STATE_DIR`` moves it.
An optional ``drover.toml`` there sets daemon options (read by ``drover.config_file``, into the
sections of ``drover.config_schema``). Cheap to import: the client uses it.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

STATE_DIR_VARIABLE = "DROVER_STATE_DIR"
SOCKET_VARIABLE = "DROVER_SOCKET"  # talk to this API socket instead of the personal cluster's
SYSTEM_STATE_DIR = "/var/lib/drover"  # a shared cluster's (`drover up --system`), found by everyone
# On a host that joined a cluster as a node: where its users' commands find the cluster (written
# by `drover join`, readable by all; this variable names another).
CLUSTER_FILE_VARIABLE = "DROVER_CLUSTER_FILE"
# The controllers of that cluster, https://ADDR:PORT separated by commas, instead of those the
# cluster file names (a standby controller added since the host joined).
CONTROLLER_VARIABLE = "DROVER_CONTROLLER"
MUNGE_SOCKET = "/run/munge/munge.socket.2"  # munged's own default: where users and daemons find it
# The munged a command on this host signs its jobs with, instead of the one at MUNGE_SOCKET when
# it exists; empty: none (its jobs go unsigned). For a host with a munged of its own elsewhere.
MUNGE_SOCKET_VARIABLE = "DROVER_MUNGE_SOCKET"


def local_munge_socket() -> str | None:
    """The munged a command signs with where it speaks to the cluster on this host."""
    named = os.environ.get(MUNGE_SOCKET_VARIABLE)
    if named is not None:
        return named or None
    return MUNGE_SOCKET if os.path.exists(MUNGE_SOCKET) else None
# A shared cluster's controller runs as this unprivileged system user (as slurmctld runs as
# SlurmUser); only the execds are root. `drover up --system` makes it if it is missing.
SERVICE_USER = "drover"


def state_dir() -> str:
    """The personal cluster's state directory: $DROVER_STATE_DIR; else $XDG_STATE_HOME/drover;
    else, with XDG_STATE_HOME unset (as tools that clean the environment leave it), the one the
    user's running personal cluster recorded (`personal_pointer`), so that a command run by such
    a tool talks to the cluster the user's other commands talk to; else ~/.local/state/drover."""
    explicit = os.environ.get(STATE_DIR_VARIABLE)
    if explicit:
        return os.path.abspath(explicit)
    if os.environ.get("XDG_STATE_HOME"):
        return os.path.join(os.environ["XDG_STATE_HOME"], "drover")
    recorded = recorded_state_dir()
    if recorded is not None:
        return recorded
    return default_state_dir()


def default_state_dir() -> str:
    """Where a personal cluster lives by the environment alone: $XDG_STATE_HOME/drover, else
    ~/.local/state/drover."""
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(base, "drover")


# The user's running personal cluster, recorded where no environment variable moves it: a
# directory of the user's own, found by their uid (/run/user/UID, which the login manager makes,
# else /tmp/drover-UID, made here), holding the path of the cluster's state directory.
POINTER_NAME = "personal-cluster"


def pointer_dirs(uid: int | None = None) -> list[str]:
    uid = os.getuid() if uid is None else uid
    return [os.path.join(f"/run/user/{uid}", "drover"), f"/tmp/drover-{uid}"]


def _own_private_dir(path: str, create: bool) -> bool:
    """Whether `path` is a directory (not a link) of this user's that no one else may write in;
    made so (0700) when `create` and its parent lets us."""
    import stat

    if create:
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass
        except OSError:
            return False
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and info.st_mode & 0o022 == 0


def record_state_dir(root: str) -> None:
    """Record `root` as the user's running personal cluster (by `drover up`); best effort."""
    forget_shared_notice()
    for directory in pointer_dirs():
        if not _own_private_dir(directory, create=True):
            continue
        temporary = os.path.join(directory, f".{POINTER_NAME}.{os.getpid()}")
        try:
            with open(temporary, "w") as file:
                file.write(root + "\n")
            os.replace(temporary, os.path.join(directory, POINTER_NAME))
            return
        except OSError:
            continue


# A command that talks to the machine's shared cluster because no personal cluster runs says so,
# once: then this marker, in the same directory of the user's own, keeps the next commands quiet
# until the personal cluster is started or stopped again (`drover up` and `drover down` remove
# it), so the notice comes back exactly when the answer may surprise: right after `drover down`.
SHARED_NOTICE_NAME = "shared-cluster-noticed"
# Told the address api_socket() chose for a client that named none (client.Client): every
# command, as it is entered (cli/pipes.py), sets it to say which cluster answers
# (cli/which_cluster.py); a program using the client library is told nothing.
cluster_found: Callable[[str], None] | None = None


def falls_back_to_shared(address: str) -> bool:
    """Whether `address`, as api_socket() chose it, is the shared cluster's, taken because no
    personal cluster runs (not named by $DROVER_SOCKET, not the user's own state directory)."""
    return (not os.environ.get(SOCKET_VARIABLE) and address == Paths(SYSTEM_STATE_DIR).socket
            and Paths().socket != address)


def shared_notice_due() -> bool:
    """Whether the notice of the fall-back is due (no marker yet); the marker is left for the
    next commands. Without a directory of the user's own to keep it in, it is always due."""
    for directory in pointer_dirs():
        if not _own_private_dir(directory, create=True):
            continue
        marker = os.path.join(directory, SHARED_NOTICE_NAME)
        if os.path.lexists(marker):
            return False
        try:
            os.close(os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600))
        except OSError:
            continue
        return True
    return True


def forget_shared_notice() -> None:
    """The personal cluster was started or stopped: the next fall-back is said again."""
    for directory in pointer_dirs():
        if _own_private_dir(directory, create=False):
            try:
                os.unlink(os.path.join(directory, SHARED_NOTICE_NAME))
            except OSError:
                pass


_recorded: list[str | None] = []  # read once a command


def recorded_state_dir() -> str | None:
    """The state directory the user's personal cluster recorded, while a cluster of the user's
    answers there."""
    if not _recorded:
        _recorded.append(_read_recorded())
    return _recorded[0]


def _read_recorded() -> str | None:
    for directory in pointer_dirs():
        if not _own_private_dir(directory, create=False):
            continue
        try:
            with open(os.path.join(directory, POINTER_NAME)) as file:
                root = file.read().strip()
        except (OSError, UnicodeDecodeError):
            continue
        if os.path.isabs(root) and _answers(os.path.join(root, _FILES["socket"])):
            return root
    return None


def _answers(socket_path: str) -> bool:
    """Whether a socket of this user's is there and a process listens on it."""
    import socket
    import stat

    try:
        info = os.lstat(socket_path)
    except OSError:
        return False
    if not stat.S_ISSOCK(info.st_mode) or info.st_uid != os.getuid():
        return False
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(1.0)
    try:
        probe.connect(socket_path)
        return True
    except OSError:
        return False
    finally:
        probe.close()


class Paths:
    """The files of one cluster's state directory."""

    def __init__(self, root: str | None = None) -> None:
        self.root = root or state_dir()

    def __getattr__(self, name: str) -> str:
        try:
            return os.path.join(self.root, _FILES[name])
        except KeyError:
            raise AttributeError(name) from None


_FILES = {
    "socket": "api.sock",
    "database": "drover.db",
    "controller_log": "controller.log",
    "execd_log": "execd.log",
    "controller_pid": "controller.pid",
    "execd_pid": "execd.pid",
    "spool": "spool",
    "config_file": "drover.toml",
    "cluster_file": "cluster.json",
    # A shared cluster's controller keeps its own files (store, staged-out files, socket) in this
    # directory of the service user's: the state directory itself stays root's, since it holds
    # what root's execd trusts (drover.toml). `api.sock` is a link to the socket in it.
    "controller_dir": "controller",
}


class RemoteCluster:
    """A cluster whose controller is on another host, as `drover join` wrote it down for this
    host's users: its address (or several, separated by commas: controllers sharing one store,
    one of them active), the CA its certificate chains to, and this host's munged."""

    def __init__(self, controller: str, ca_pem: str, munge_socket: str | None) -> None:
        self.controller, self.ca_pem, self.munge_socket = controller, ca_pem, munge_socket


_remote_clusters: dict[str, RemoteCluster | None] = {}  # by file: a command reads it once


def remote_cluster() -> RemoteCluster | None:
    """The cluster this host joined as a node, if it did (and its file is readable)."""
    path = os.environ.get(CLUSTER_FILE_VARIABLE) or Paths(SYSTEM_STATE_DIR).cluster_file
    if path not in _remote_clusters:
        _remote_clusters[path] = _read_remote_cluster(path)
    return _remote_clusters[path]


def _read_remote_cluster(path: str) -> RemoteCluster | None:
    try:
        with open(path) as file:
            import json

            found = json.load(file)
        controller = found["controller"]
        if isinstance(controller, list):
            controller = ",".join(map(str, controller))
        munge_socket = found["munge_socket"]  # null: the host joined without MUNGE (--no-munge)
        return RemoteCluster(os.environ.get(CONTROLLER_VARIABLE) or str(controller), str(found["ca_pem"]),
                             None if munge_socket is None else str(munge_socket))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def default_spool(paths: Paths, skipped: list[str] | None = None) -> str:
    """Where the execd keeps its attempts' spool directories, unless told otherwise.

    On tmpfs when the user has one of their own ($XDG_RUNTIME_DIR but for root, else /dev/shm): each
    attempt creates a handful of files, which costs ~0.5 ms each on a disk and ~0.005 ms on
    tmpfs. tmpfs survives an execd restart (the jobs go on and are re-attached); only a reboot
    clears it, and a reboot ends the running jobs anyway. Falls back to the state directory.

    /dev/shm is everyone's, and empty after each boot: another user may have made the name first
    (a link to a directory of root's, which root would then chmod; a directory of their own). The
    name is made and checked without following a link (spool/own_directory.py), and one someone
    else made is not used: the spool is then in the state directory, and `skipped` (if given)
    says why, for the execd's log. (Refusing to start would let any user stop the node.)
    """
    from drover.spool.own_directory import NotOurs, UnsafeDirectory, own_directory

    tag = cluster_tag(paths)
    candidates = []
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    # Not root's: its runtime directory is private (0700), so the jobs that run as their owners
    # could not reach their scripts in it, and it is removed when root's login session ends,
    # while the daemons of a root-run cluster outlive that session.
    if runtime and os.getuid() != 0:
        candidates.append(os.path.join(runtime, "drover", tag))
    candidates.append(os.path.join("/dev/shm", f"drover-{os.getuid()}", tag))
    for candidate in candidates:
        try:
            # Root's is traversable by all: jobs that run as their owners reach their scripts below.
            own_directory(os.path.dirname(candidate), 0o711 if os.getuid() == 0 else 0o700,
                          set_mode=os.getuid() == 0)
        except NotOurs as why:
            if skipped is not None:
                skipped.append(str(why))
            continue
        except UnsafeDirectory:  # cannot be made (no such runtime directory, /dev/shm full)
            continue
        return candidate
    return paths.spool


def cluster_tag(paths: Paths) -> str:
    """A short name for the cluster of a state directory, unique on this host: it is part of
    every per-host name the cluster makes (its spool, its attempts' cgroups), so two clusters
    side by side never touch each other's jobs."""
    import hashlib

    return hashlib.sha1(paths.root.encode()).hexdigest()[:10]


def api_socket(paths: Paths | None = None) -> str:
    """The cluster the commands talk to: $DROVER_SOCKET (one socket, or several separated by
    commas: controllers sharing one store); else your personal cluster's socket; else, when
    there is none, the machine's shared cluster's, if one runs; else, on a host that joined a
    cluster as a node, that cluster's controllers (https://ADDR:PORT, separated by commas;
    $DROVER_CONTROLLER names others)."""
    explicit = os.environ.get(SOCKET_VARIABLE)
    if explicit:
        return explicit
    personal = (paths or Paths()).socket
    if paths is None and not os.path.exists(personal):
        shared = Paths(SYSTEM_STATE_DIR).socket
        if os.path.exists(shared):
            return shared
        remote = remote_cluster()
        if remote is not None:
            return remote.controller
    return personal

