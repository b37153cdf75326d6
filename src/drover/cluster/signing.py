"""Jobs signed by their owners, so that the controller cannot make anyone run anything (Flux's
model: its setuid helper checks a MUNGE signature over the jobspec before it becomes the user).

When a user submits, their `drover` makes a MUNGE credential (cluster/munge.py) whose payload is
the digest of what the job will run and how: its script, working directory, environment, and
its own prolog and epilog (run as the user). munged puts the user's uid and gid in it. The
controller keeps the credential with the job and sends it with every attempt's order; a node
that requires signed jobs (`[execd] require_signed_jobs`, which `drover join` sets where munge
runs) opens it with its own munged before anything of the job is written, and refuses the
attempt unless the credential is genuine, no older than `signed_job_max_age_s`, names the uid
the job's owner has on this node (not root, unless the node allows root's jobs), and carries the
digest of exactly what the order asks to run. A job waits in the queue and array tasks share one
credential, so here a credential that munged calls expired or used before is accepted within
that age: what it signs is fixed, and replaying it runs nothing but the same job as its owner.
"""

from __future__ import annotations

import hashlib

from drover.protocol.canonical import canonical


def job_digest(script: str, workdir: str, environment: dict[str, str], prolog: str | None,
               epilog: str | None) -> bytes:
    """What a job's credential carries: the SHA-256 of the canonical encoding of what it runs."""
    return hashlib.sha256(canonical({
        "script": script, "workdir": workdir, "environment": environment, "prolog": prolog, "epilog": epilog,
    })).digest()
