"""Who may do what. The user of a request is the peer of the Unix socket, as the kernel says.

- A personal cluster serves its owner only: any other peer (root included) is refused, so it
  never runs a job of anyone else.
- A shared cluster (`drover up --system`) serves every local user; each sees and changes only
  their own jobs, while root and the configured operators manage all.
- Over TCP there is no proven identity yet: only the anonymous read of /v1/ping is allowed.
"""

from __future__ import annotations

import pwd
from dataclasses import dataclass, field

from drover.core.errors import Forbidden


@dataclass(frozen=True, slots=True)
class Caller:
    user: str
    uid: int
    is_admin: bool  # root or an operator of a shared cluster; the owner of a personal one


@dataclass(frozen=True, slots=True)
class Policy:
    owner_uid: int  # the daemon's user
    shared: bool = False
    operators: frozenset[str] = field(default_factory=frozenset)
    allow_root_jobs: bool = False  # on a shared cluster, may root's jobs run as root?

    def caller(self, peer: tuple[int, int, int] | None) -> Caller:
        if peer is None:
            raise Forbidden("requests over TCP carry no proven identity yet; use the cluster's Unix socket")
        uid = peer[1]
        name = _user_name(uid)
        if not self.shared:
            if uid != self.owner_uid:
                raise Forbidden(f"this personal cluster belongs to {_user_name(self.owner_uid)}; "
                                f"{name} cannot use it")
            return Caller(name, uid, True)
        return Caller(name, uid, uid == 0 or name in self.operators)

    def may_submit(self, caller: Caller) -> None:
        if self.shared and caller.uid == 0 and not self.allow_root_jobs:
            raise Forbidden("jobs do not run as root on this shared cluster (allow_root_jobs is off)")

    def may_touch(self, caller: Caller, owner: str, job_id: int) -> None:
        if not caller.is_admin and caller.user != owner:
            raise Forbidden(f"job {job_id} belongs to {owner}; {caller.user} cannot see or change it")

    def may_be_node(self, peer: tuple[int, int, int] | None) -> bool:
        """Only root or the daemon's own user may connect as a node."""
        return peer is not None and peer[1] in (0, self.owner_uid)


def _user_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)
