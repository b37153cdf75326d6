"""Who a job runs as on this node (Accelerator firing sequence, step 6: "make sure all groups
for the executing user have been cached"): the owner's passwd entry and every group, looked up
once per user and kept for a while, so a slow directory service is not asked for every job."""

from __future__ import annotations

import os
import pwd
import time

from drover.config import SERVICE_USER
from drover.records import IdentityRecord

CACHE_S = 300.0


class Identities:
    def __init__(self) -> None:
        self._cache: dict[str, tuple[float, IdentityRecord]] = {}
        self.me = pwd.getpwuid(os.geteuid()).pw_name

    def for_job(self, owner: str) -> tuple[IdentityRecord | None, str | None]:
        """(identity for the shepherd, None) or (None, why the job cannot run here)."""
        if os.geteuid() != 0:
            if owner != self.me:
                return None, f"this node runs only {self.me}'s jobs (its execd is not root), not {owner}'s"
            return None, None
        cached = self._cache.get(owner)
        if cached is not None and time.monotonic() - cached[0] < CACHE_S:
            return cached[1], None
        try:
            entry = pwd.getpwnam(owner)
        except KeyError:
            return None, f"user {owner} does not exist on this node"
        identity = _record(owner, entry)
        self._cache[owner] = (time.monotonic(), identity)
        return identity, None


def _record(name: str, entry: pwd.struct_passwd) -> IdentityRecord:
    return {"user": name, "uid": entry.pw_uid, "gid": entry.pw_gid,
            "groups": sorted(set(os.getgrouplist(name, entry.pw_gid))),
            "home": entry.pw_dir, "shell": entry.pw_shell or "/bin/sh"}


def diagnostics_identity(configured: str | None) -> IdentityRecord | None:
    """Who runs the site's diagnostics scripts (Accelerator step 14: "not as root, but as the
    owner of Accelerator"): the user [execd] diagnostics_user names; unset, the service account
    a shared cluster's controller runs as (config.SERVICE_USER) where it exists, else nobody.
    None on a node whose execd is not root (its shepherds run the scripts as its own user, the
    cluster's owner), and where neither account exists (the scripts then do not run). Raises
    ValueError for a configured user who is root or is not found."""
    if os.geteuid() != 0:
        return None
    for name in [configured] if configured else [SERVICE_USER, "nobody"]:
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            if configured:
                raise ValueError(f"[execd] diagnostics_user: no user {name} on this node") from None
            continue
        if entry.pw_uid == 0:
            if configured:
                raise ValueError(f"[execd] diagnostics_user: {name} is root; the diagnostics scripts never run as root")
            continue
        return _record(name, entry)
    return None
