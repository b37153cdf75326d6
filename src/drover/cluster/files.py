"""Where a cluster's TLS material lives, and writing it safely.

The controller's host keeps the CA and the controller's certificate in `<state>/tls/`; a node
keeps its own certificate, its key and the CA's certificate in `<its state>/tls/`. The directory
is 0700 and every key 0600, owned by the daemon's user; each file is written whole (a temporary
file renamed over it), so a crash never leaves half a key.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from drover.core.errors import BadRequest

TLS_DIR = "tls"
NODE_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*")


@dataclass(frozen=True, slots=True)
class TlsFiles:
    """The TLS files of one state directory."""

    directory: str

    @classmethod
    def of(cls, state_dir: str) -> TlsFiles:
        return cls(os.path.join(state_dir, TLS_DIR))

    @property
    def ca_cert(self) -> str:
        return os.path.join(self.directory, "ca.crt")

    @property
    def ca_key(self) -> str:
        return os.path.join(self.directory, "ca.key")

    @property
    def controller_cert(self) -> str:
        return os.path.join(self.directory, "controller.crt")

    @property
    def controller_key(self) -> str:
        return os.path.join(self.directory, "controller.key")

    @property
    def node_cert(self) -> str:
        return os.path.join(self.directory, "node.crt")

    @property
    def node_key(self) -> str:
        return os.path.join(self.directory, "node.key")


def check_node_name(name: str) -> str:
    """A node's name is a host name (letters, digits, hyphens, dots; 253 characters at most):
    it is the common name of the node's certificate."""
    if len(name) > 253 or not NODE_NAME.fullmatch(name):
        raise BadRequest(f"{name!r} is not a valid node name: use letters, digits, '-' and '.', "
                         "as in a host name")
    return name


def write_private(path: str, data: bytes, mode: int = 0o600) -> None:
    """Write `path` whole with `mode`, its directory made 0700 if missing."""
    directory = os.path.dirname(path)
    os.makedirs(directory, mode=0o700, exist_ok=True)
    temporary = f"{path}.{os.getpid()}.tmp"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, mode)
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.chmod(temporary, mode)  # whatever the umask took away
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except FileNotFoundError:
            pass
        raise


def read(path: str) -> bytes:
    with open(path, "rb") as file:
        return file.read()
