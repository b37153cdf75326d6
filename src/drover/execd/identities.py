"""Who a job runs as on this node (Accelerator firing sequence, step 6: "make sure all groups
for the executing user have been cached"): the owner's passwd entry and every group, looked up
once per user and kept for a while, so a slow directory service is not asked for every job."""

from __future__ import annotations

import os
import pwd
import time

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
        identity: IdentityRecord = {
            "user": owner, "uid": entry.pw_uid, "gid": entry.pw_gid,
            "groups": sorted(set(os.getgrouplist(owner, entry.pw_gid))),
            "home": entry.pw_dir, "shell": entry.pw_shell or "/bin/sh",
        }
        self._cache[owner] = (time.monotonic(), identity)
        return identity, None
