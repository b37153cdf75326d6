"""The node's check of a job's signature (cluster/signing.py), before anything of the attempt is
written or run: on a node with `[execd] require_signed_jobs`, an order runs only if its job
carries a genuine MUNGE credential of its owner's, no older than `signed_job_max_age_s`, made
by the uid the owner has on this node (not root, unless `allow_root_jobs`), over exactly what
the order asks to run. So a controller that was taken over can delay or cancel jobs, never
make a node run something as someone. The same holds for the event log a node appends to as a
job's owner (execd/event_logs.py): only the file the owner signed."""

from __future__ import annotations

import logging
import pwd
import time
from collections.abc import Mapping
from typing import Any

from drover.cluster import munge
from drover.cluster.signing import job_digest, outputs_as_signed, signed_order, signed_pe_task_order
from drover.protocol.node_channel import StartAttempt, StartPeTask

log = logging.getLogger("drover.execd")


class SignedJobs:
    def __init__(self, node: str, munge_socket: str, max_age_s: float, allow_root_jobs: bool) -> None:
        self.node = node  # this node's name: an order for another is refused
        self.munge_socket = munge_socket
        self.max_age_s = max_age_s
        self.allow_root_jobs = allow_root_jobs

    def refusal(self, order: StartAttempt) -> str | None:
        """Why the order may not run here, or None."""
        why = self._check(order)
        if why is not None:
            log.warning("attempt %s refused: %s", order.attempt, why)
        return why

    def event_log_refusal(self, job_id: int, owner: str, path: str, credential: str | None,
                          signed: Mapping[str, Any] | None) -> str | None:
        """Why this node may not append to `path` as `owner` for the job, or None: the path must
        be the event log in what the owner signed, and what the controller sent as signed must
        be what the credential carries the digest of."""
        opened = self._owners_credential(credential, owner)
        if isinstance(opened, str):
            why = opened
        elif signed is None or opened.payload != job_digest(signed):
            why = "what the controller sent as the job's signed fields is not what its owner signed"
        elif signed.get("event_log") != path:
            why = f"the event log {path} is not the one the job's owner signed"
        else:
            return None
        log.warning("job %d: refused to append to its event log %s as %s: %s", job_id, path, owner, why)
        return why

    def _check(self, order: StartAttempt) -> str | None:
        config = order.config
        opened = self._owners_credential(config["job"]["credential"], config["owner"])
        if isinstance(opened, str):
            return opened
        if config["node"] != self.node:
            return f"the order is for node {config['node']}, not this one ({self.node})"
        if opened.payload != job_digest(signed_order(order)):
            return ("what the job runs is not what its owner signed: its script, working directory, environment, "
                    "prolog, epilog, name, output patterns, staged files or event log were changed after it was "
                    "submitted")
        if not outputs_as_signed(order):
            return "the job's output or error file is not where the patterns its owner signed say"
        return None

    def pe_task_refusal(self, order: StartPeTask) -> str | None:
        """Why a task of a parallel job may not run here, or None: its owner signed, on the host
        they started it from, exactly this command, working directory and environment, in this
        job, on this node (cluster/signing.py, SignedPeTask)."""
        config = order.config
        opened = self._owners_credential(config["job"]["credential"], config["owner"])
        if isinstance(opened, str):
            why = opened.replace("the job is not signed", "the task is not signed")
        elif config["node"] != self.node:
            why = f"the order is for node {config['node']}, not this one ({self.node})"
        elif opened.payload != job_digest(signed_pe_task_order(order)):
            why = "what the task runs is not what its owner signed: its command, working directory or environment " \
                  "was changed on its way"
        else:
            return None
        log.warning("attempt %s: task %s refused: %s", order.attempt, order.petask, why)
        return why

    def _owners_credential(self, credential: str | None, owner: str) -> munge.Opened | str:
        """The job's credential, opened: genuine, young enough, made by the uid `owner` has on this
        node (not root's, unless this node runs root's jobs); or why not."""
        if not credential:
            return ("the job is not signed by its owner, and this node runs signed jobs only "
                    "(require_signed_jobs): submit it from a host where munged runs")
        try:
            opened = munge.decode(credential, self.munge_socket, accept_stale=True)
        except munge.CredentialError as error:
            return f"the job's signature is refused: {error}"
        age = time.time() - opened.encoded_at
        if age > self.max_age_s:
            return f"the job's signature is {age:.0f}s old, older than this node takes (signed_job_max_age_s)"
        try:
            uid = pwd.getpwnam(owner).pw_uid
        except KeyError:
            return f"the job's owner {owner} has no user on this node"
        if opened.uid != uid:
            return f"the job was signed by uid {opened.uid}, not by its owner {owner} (uid {uid} here)"
        if uid == 0 and not self.allow_root_jobs:
            return "the job is root's, and this node does not run root's jobs (allow_root_jobs)"
        return opened

