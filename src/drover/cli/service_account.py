"""The unprivileged user a shared cluster's controller runs as, and the controller's files.

Like slurmctld, the controller of a shared cluster (`drover up --system`, drover-controller.service)
is not root: it runs as the system user `config.SERVICE_USER`, made here if it is missing. Only
the execds are root. What the controller writes is that user's: its directory in the state
directory (`Paths.controller_dir`: the store, staged-out files, the API socket, to which the
state directory's `api.sock` links) and the cluster's own TLS files (the CA's key signs the
certificates of joining nodes). The state directory itself, drover.toml and the execd's files
stay root's, so a controller that was taken over cannot change what root runs.

Root does all of this before the controller starts (`drover up --system`, and `drover cluster
init --system`, which the unit runs first), and never follows a link the service user could have
planted: owners are changed on a walk by descriptors without following links, a file with more
than one name is left alone, and the CA is made with the service user's own rights (`acting_as`).
An earlier Drover's root controller kept its store in the state directory itself: it is moved
into the controller's directory, once no controller serves the socket.
"""

from __future__ import annotations

import grp
import os
import pwd
import shutil
import stat
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager

from drover.cli.cluster import is_serving
from drover.cluster.files import TlsFiles
from drover.config import SERVICE_USER, Paths
from drover.core.errors import DroverError

STORE_FILES = ("drover.db", "drover.db-wal", "drover.db-shm")  # SQLite's database and its WAL files
CONTROLLER_TLS = ("ca.crt", "ca.key", "controller.crt", "controller.key")  # not a node's, if any


def service_user(home: str) -> pwd.struct_passwd:
    """The service user, made first if it is missing: a system account with a group of its own,
    no login, its home the state directory (not made)."""
    try:
        found = pwd.getpwnam(SERVICE_USER)
    except KeyError:
        _make_user(home)
        try:
            found = pwd.getpwnam(SERVICE_USER)
        except KeyError:
            raise DroverError(f"the service user {SERVICE_USER} was made, and yet is not found") from None
    if found.pw_uid == 0:
        raise DroverError(f"the user {SERVICE_USER} has uid 0: a shared cluster's controller runs as an "
                          "unprivileged user of that name")
    return found


def _make_user(home: str) -> None:
    try:
        grp.getgrnam(SERVICE_USER)
        have_group = True  # made before, without its user: the user joins it
    except KeyError:
        have_group = False
    shell = "/usr/sbin/nologin" if os.path.exists("/usr/sbin/nologin") else "/bin/false"
    if shutil.which("useradd"):
        command = ["useradd", "--system", *(["--gid", SERVICE_USER] if have_group else ["--user-group"]),
                   "--no-create-home", "--home-dir", home, "--shell", shell, SERVICE_USER]
    elif shutil.which("adduser"):  # Debian's, where useradd is missing
        command = ["adduser", "--system", *(["--ingroup", SERVICE_USER] if have_group else ["--group"]),
                   "--no-create-home", "--home", home, "--shell", shell, SERVICE_USER]
    else:
        raise DroverError(f"cannot make the service user {SERVICE_USER} that a shared cluster's controller runs "
                          "as: neither useradd nor adduser is installed; make it yourself (a system user with "
                          "a group of its own)")
    try:
        made = subprocess.run(command, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise DroverError(f"cannot make the service user {SERVICE_USER}: `{' '.join(command)}` failed: {error}") from None
    if made.returncode != 0:
        said = (made.stderr or made.stdout).strip().replace("\n", "; ")
        raise DroverError(f"cannot make the service user {SERVICE_USER} that a shared cluster's controller runs "
                          f"as: `{' '.join(command)}` exited with status {made.returncode}: {said}")


def give_controller_its_files(paths: Paths, user: pwd.struct_passwd) -> None:
    """Make the controller's directory and the cluster's own TLS files `user`'s, with tight
    modes (moving them from where an earlier Drover kept them first), and drover.toml readable."""
    os.makedirs(paths.root, mode=0o711, exist_ok=True)
    os.chmod(paths.root, 0o711)  # root's; the controller and every user reach what is theirs in it
    own = Paths(paths.controller_dir)
    _directory_of_root(own.root)
    if not is_serving(paths):  # an earlier controller may still serve from there: moved once it is down
        _move_earlier_files(paths, own)
        _link_socket(paths)
    _hand_over(own.root, user)
    _set_mode(own.root, 0o711)  # every user reaches the socket in it, and nothing else
    for name in STORE_FILES:
        _set_mode(os.path.join(own.root, name), 0o600)
    _set_mode(os.path.join(own.root, "files"), 0o700)
    tls = TlsFiles.of(paths.root)
    _directory_of_root(tls.directory)
    _hand_over(tls.directory, user, CONTROLLER_TLS)
    _set_mode(tls.directory, 0o700)
    for path in (tls.ca_key, tls.controller_key):
        _set_mode(path, 0o600)
    _readable_by(paths.config_file, user)


def _directory_of_root(path: str) -> None:
    """`path` a directory, made by root if missing; never a link."""
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        if not stat.S_ISDIR(os.lstat(path).st_mode):
            raise DroverError(f"{path} is not a directory; move it away and try again") from None


def _move_earlier_files(paths: Paths, own: Paths) -> None:
    """An earlier Drover's root controller kept its store and staged-out files in the state
    directory itself: they move into the controller's directory (same filesystem: renames)."""
    earlier = os.path.join(paths.root, STORE_FILES[0])
    if os.path.lexists(earlier):
        if os.path.lexists(own.database):
            raise DroverError(f"there are two job stores, {earlier} (of an earlier Drover, whose controller ran as "
                              f"root) and {own.database}: keep the one you want as {own.database}, and move the other away")
        for name in STORE_FILES:
            if os.path.lexists(os.path.join(paths.root, name)):
                os.rename(os.path.join(paths.root, name), os.path.join(own.root, name))
    files = os.path.join(paths.root, "files")
    if os.path.lexists(files) and not os.path.lexists(os.path.join(own.root, "files")):
        os.rename(files, os.path.join(own.root, "files"))


def _link_socket(paths: Paths) -> None:
    """Users and the execd find the socket where they always did: `api.sock`, a link to the one in
    the controller's directory (replacing an earlier controller's socket, which nobody serves)."""
    target = os.path.relpath(Paths(paths.controller_dir).socket, paths.root)
    try:
        if os.readlink(paths.socket) == target:
            return
    except OSError:
        pass  # not there, or not a link
    temporary = f"{paths.socket}.{os.getpid()}.new"
    try:
        os.unlink(temporary)
    except FileNotFoundError:
        pass
    os.symlink(target, temporary)
    os.replace(temporary, paths.socket)


def _hand_over(top: str, user: pwd.struct_passwd, names: tuple[str, ...] | None = None) -> None:
    """`top` and what lies beneath it (only `names` in it, if given) made `user`'s. The walk holds
    each directory open and never follows a link (os.fwalk), links are changed themselves, and a
    file with more than one name is left alone: it could be a hard link to a file elsewhere."""
    uid, gid = user.pw_uid, user.pw_gid
    os.chown(top, uid, gid, follow_symlinks=False)
    for _, directories, files, fd in os.fwalk(top, follow_symlinks=False):
        for name in directories + files:
            if names is not None and name not in names:
                continue
            found = os.stat(name, dir_fd=fd, follow_symlinks=False)
            if (found.st_uid, found.st_gid) == (uid, gid) or (stat.S_ISREG(found.st_mode) and found.st_nlink > 1):
                continue
            os.chown(name, uid, gid, dir_fd=fd, follow_symlinks=False)
        if names is not None:
            directories.clear()  # only the names at the top


def _set_mode(path: str, mode: int) -> None:
    """chmod a regular file or directory, through a descriptor opened without following a link."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError:
        return  # not there (yet), or a link: nothing to do
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode) or stat.S_ISDIR(os.fstat(fd).st_mode):
            os.fchmod(fd, mode)
    finally:
        os.close(fd)


def _readable_by(path: str, user: pwd.struct_passwd) -> None:
    """drover.toml stays root's; if others may not read it, its group becomes the service user's."""
    try:
        found = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISREG(found.st_mode) or found.st_mode & 0o004 or (found.st_gid == user.pw_gid and found.st_mode & 0o040):
        return
    os.chown(path, -1, user.pw_gid, follow_symlinks=False)
    os.chmod(path, (stat.S_IMODE(found.st_mode) & ~0o020) | 0o040)


@contextmanager
def acting_as(user: pwd.struct_passwd) -> Iterator[None]:
    """Create files with `user`'s rights (the CA, in its TLS directory), as HTCondor switches
    privileges: only the effective ids change, and they change back; this command has one thread."""
    groups = os.getgroups()
    os.setgroups([])
    os.setegid(user.pw_gid)
    os.seteuid(user.pw_uid)
    try:
        yield
    finally:
        os.seteuid(0)
        os.setegid(0)
        os.setgroups(groups)
