"""Who the job runs as (Accelerator firing sequence, steps 6, 11 and 14).

When the shepherd runs as root, the job runs as its owner: setgid, then the supplementary groups,
then setuid, in that order (the reverse fails with EPERM). Popen does the switch in C between
fork and exec (`group=`, `extra_groups=`, `user=`), so no Python runs as a half-switched process.
A switch that fails is retried (3 tries, 10 s apart by default); then a diagnostics script of the
site's runs (step 14: "not as root, but as the owner of Accelerator": as the node's
diagnostics user, see records.NodeOptions), and the attempt fails with the reason. The owner's groups were looked up by the
execd before the fork (step 6), so a slow directory service is asked once per user, not per job.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from drover.records import IdentityRecord
from drover.shepherd.config import ShepherdConfig
from drover.shepherd.environment import SITE_PATH


@dataclass(frozen=True, slots=True)
class Identity:
    user: str
    uid: int
    gid: int
    groups: tuple[int, ...]
    home: str
    shell: str

    @property
    def switches(self) -> bool:
        """Whether the job runs as someone else than the shepherd."""
        return os.geteuid() == 0 and self.uid != 0

    def environment(self) -> dict[str, str]:
        """VOV 11.3: HOME, USER, LOGNAME and SHELL rebuilt for the user."""
        return {"HOME": self.home, "USER": self.user, "LOGNAME": self.user, "SHELL": self.shell}

    def popen_ids(self) -> tuple[int | None, int | None, list[int] | None]:
        """Popen's user=, group= and extra_groups=, or Nones to stay who we are."""
        if not self.switches:
            return None, None, None
        return self.uid, self.gid, list(self.groups)


def from_config(config: ShepherdConfig) -> Identity | None:
    """The identity the execd resolved (config "identity"), or None: run as the shepherd's user."""
    found = config.identity
    if found is None:
        return None
    return Identity(found["user"], found["uid"], found["gid"], tuple(found["groups"]), found["home"], found["shell"])


@contextmanager
def acting_as(identity: Identity | None) -> Iterator[None]:
    """Create files as the job's owner (its output files, so they are the owner's and the owner's
    permissions apply). Only the effective ids change, and they change back; the shepherd has a
    single thread, so nothing else runs meanwhile."""
    if identity is None or not identity.switches:
        yield
        return
    saved_groups = os.getgroups()
    try:
        os.setgroups(list(identity.groups))
        os.setegid(identity.gid)
        os.seteuid(identity.uid)
        yield
    finally:
        os.seteuid(0)
        os.setegid(0)
        os.setgroups(saved_groups)


def run_diagnostics(script: str | None, arguments: list[str], attempt: str, user: str, reason: str,
                    runs_as: IdentityRecord | None = None) -> str:
    """VOV 14 and 17: the site's diagnostics script, given `arguments` (the Accelerator's: for
    vov_diagnostics_chdir the job's id and the directory), and in its environment the attempt
    (DROVER_ATTEMPT), the job's owner (DROVER_USER) and the reason (DROVER_REASON); run "not as
    root, but as the owner" of the system: as `runs_as` (the node's diagnostics user) when the
    shepherd is root, and never as root; its output (a little of it) goes into the attempt's
    error record."""
    if not script:
        return ""
    uid = gid = groups = None
    if os.geteuid() == 0:
        if runs_as is None or runs_as["uid"] == 0:
            return (f"(the diagnostics script {script} was not run: this node has no user to run it as "
                    "but root; set [execd] diagnostics_user)")
        uid, gid, groups = runs_as["uid"], runs_as["gid"], list(runs_as["groups"])
    try:
        result = subprocess.run([script, *arguments], capture_output=True, text=True, timeout=60,
                                env={"PATH": SITE_PATH, "LANG": "C", "DROVER_ATTEMPT": attempt,
                                     "DROVER_USER": user, "DROVER_REASON": reason}, cwd="/", user=uid, group=gid,
                                extra_groups=groups)
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"(the diagnostics script {script} failed: {error})"
    return (result.stdout + result.stderr)[-4000:]
