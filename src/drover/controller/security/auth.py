"""Who may do what: the one place that decides. The user of a request is the peer of the Unix
socket, as the kernel says (SO_PEERCRED); nothing in a request's body or query names who it is.

- A personal cluster serves its owner only: any other peer (root included) is refused, so it
  never runs a job of anyone else.
- A shared cluster (`drover up --system`) serves every local user; each sees and changes only
  their own jobs, while the admins manage all: root, the configured operators, and the
  controller's own user (the service account it may run as).
- Over TCP (always TLS) a user is who the MUNGE credential sent with the request says (made
  by the munged of the host the user is on, for that very request, and opened by the
  controller's munged: api/remote_users.py); such a user is never an admin, since a host's
  root is not the cluster's. Without a credential only what needs no user is served:
  /v1/ping, the CA's certificate, joining by token, and the nodes, each known by the client
  certificate the cluster's CA issued it (its common name).

Every endpoint declares the `Access` it needs (the endpoint table of its resource module in
the api package, checked by api/endpoint.py); what is finer than that (each job of an action,
whose jobs a listing shows) is asked of `Policy` too.
"""

from __future__ import annotations

import enum
import pwd
from dataclasses import dataclass, field

from drover.config import MUNGE_SOCKET
from drover.core.errors import Forbidden

CROSS_HOST_USERS = ("a user's request over TCP carries a MUNGE credential of theirs; `drover` sends one from "
                    "a host that joined the cluster (`drover join`), where munged runs with the cluster's key")


class Access(enum.Enum):
    ANYONE = "anyone"  # no proven identity needed (ping, the CA's certificate, joining by token)
    USER = "user"  # any user the cluster serves; what they see or change is then checked per job
    JOB = "job"  # the job the path names: its owner or an admin
    ADMIN = "admin"  # root, an operator, or the controller's own user
    NODE = "node"  # a node, over TLS, by its certificate


@dataclass(frozen=True, slots=True)
class TlsPeer:
    """The other end of a TLS connection: its address, and the node its verified client
    certificate names (None without one)."""

    address: str
    node: str | None = None
    serial: str | None = None  # of that certificate, lowercase hex

    @property
    def host(self) -> str:
        """The peer's IP address, without the port ("10.0.0.2:4000", "[::1]:4000")."""
        return self.address.rsplit(":", 1)[0].removeprefix("[").removesuffix("]")


@dataclass(frozen=True, slots=True)
class Caller:
    user: str
    uid: int
    is_admin: bool  # see Policy.caller


@dataclass(frozen=True, slots=True)
class Policy:
    owner_uid: int  # the daemon's user
    shared: bool = False
    operators: frozenset[str] = field(default_factory=frozenset)
    allow_root_jobs: bool = False  # on a shared cluster, may root's jobs run as root?
    munge_socket: str = MUNGE_SOCKET  # the controller's munged, for users of other hosts

    def caller(self, peer: tuple[int, int, int] | None, remote: bool = False) -> Caller:
        """Who the peer (pid, uid, gid) is, and whether they manage the whole cluster. `remote`:
        a user of another host, proven by a MUNGE credential: never an admin."""
        if peer is None:
            raise Forbidden(CROSS_HOST_USERS)
        if remote:
            if not self.shared:
                raise Forbidden("this personal cluster serves its owner on this host only")
            name = _user_name(peer[1])
            if name == str(peer[1]):
                raise Forbidden(f"uid {peer[1]} has no user on the controller's host; give every host the same users")
            return Caller(name, peer[1], False)
        uid = peer[1]
        name = _user_name(uid)
        if not self.shared:
            if uid != self.owner_uid:
                raise Forbidden(f"this personal cluster belongs to {_user_name(self.owner_uid)}; "
                                f"{name} cannot use it")
            return Caller(name, uid, True)
        is_operator = name != str(uid) and name in self.operators  # a named user, never a bare uid
        return Caller(name, uid, uid in (0, self.owner_uid) or is_operator)

    def may_submit(self, caller: Caller) -> None:
        if self.shared and caller.uid == 0 and not self.allow_root_jobs:
            raise Forbidden("jobs do not run as root on this shared cluster (allow_root_jobs is off)")

    def may_raise_priority(self, caller: Caller, priority: int) -> None:
        """A priority above 0 puts a job ahead of everyone else's: for admins only, as Grid
        Engine allows `qsub -p` above 0 to managers and operators only."""
        if priority > 0 and not caller.is_admin:
            raise Forbidden(f"a priority above 0 ({priority}) is for root and the cluster's operators; "
                            "users may lower their jobs' priority (down to -1023)")

    def may_touch(self, caller: Caller, owner: str, job_id: int, verb: str = "see or change") -> None:
        """A job is its owner's; admins manage all. `verb` says what was refused."""
        if not caller.is_admin and caller.user != owner:
            raise Forbidden(f"job {job_id} belongs to {owner}; {caller.user} cannot {verb} it")

    def may_act_as_owner(self, caller: Caller, owner: str, job_id: int, what: str) -> None:
        """Reading a job's files on its node, or typing into its terminal, is done with its owner's
        rights: the owner's alone (and root's on this host, who is every user anyway), never an
        operator's, whose rights stop at managing jobs."""
        if caller.user != owner and caller.uid != 0:
            raise Forbidden(f"job {job_id} belongs to {owner}; {what} is for its owner only")

    def whose_jobs(self, caller: Caller, asked: str | None) -> str | None:
        """Whose jobs a listing (jobs, history) shows: an admin's choice (None: everyone's); a
        user's own, and asking for someone else's is refused rather than answered with one's own
        (`scancel -u alice` run by bob must not cancel bob's jobs)."""
        if caller.is_admin:
            return asked or None
        if asked and asked != caller.user:
            raise Forbidden(f"{caller.user} sees only their own jobs; only root and the cluster's "
                            f"operators list {asked}'s")
        return caller.user

    def may_administer(self, caller: Caller, what: str) -> None:
        """Acts on the whole cluster (resume a node, stop the controller, read every event)."""
        if not caller.is_admin:
            raise Forbidden(f"only root and the cluster's operators {what}")

    def may_be_node(self, peer: tuple[int, int, int] | None) -> bool:
        """Only root or the daemon's own user may connect as a node on the local socket."""
        return peer is not None and peer[1] in (0, self.owner_uid)

    def node_of(self, tls: TlsPeer | None) -> str:
        """The node a TLS peer is, by its certificate; refused without one."""
        if tls is None or not tls.node:
            raise Forbidden("only a node of the cluster, by the certificate it was given at `drover join`, "
                            "may do this")
        return tls.node


def _user_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)
