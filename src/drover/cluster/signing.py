"""Jobs signed by their owners, so that the controller cannot make anyone run anything (Flux's
model: its setuid helper checks a MUNGE signature over the jobspec before it becomes the user).

When a user submits, their `drover` makes a MUNGE credential (cluster/munge.py) whose payload is
the digest of what the job will run and where it will write, as the user: its script, working
directory, environment, its own prolog and epilog, its name, its output and error patterns, the
files staged in (names, modes and contents' digests), its stage-out patterns and its event log
(the spec's fields among these are those marked signed in core/job_spec.py). munged puts the user's uid and gid in it. The
controller keeps the credential with the job and sends it with every attempt's order; a node
that requires signed jobs (`[execd] require_signed_jobs`, which `drover join` sets where munge
runs) opens it with its own munged before anything of the job is written, and refuses the
attempt unless the credential is genuine, no older than `signed_job_max_age_s`, names the uid
the job's owner has on this node (not root, unless the node allows root's jobs), and carries the
digest of exactly what the order asks to run. A node that appends to a job's event log as its
owner checks the same way that the file is the one the owner signed (execd/event_logs.py).
A job waits in the queue and array tasks share one
credential, so here a credential that munged calls expired or used before is accepted within
that age: what it signs is fixed, and replaying it runs nothing but the same job as its owner.
"""

from __future__ import annotations

import base64
import hashlib
import os
from collections.abc import Mapping
from typing import Any, TypedDict

from drover.core.patterns import default_output, expand
from drover.protocol.canonical import canonical
from drover.protocol.node_channel import StartAttempt, StartPeTask, task_script
from drover.records import JOB_DEFAULTS, SIGNED, SIGNED_WHEN_SET

# What a job's owner signs: what the job runs and as whom it writes where. The job's payload
# (its script, environment and the files staged in, each as [name, mode, SHA-256 of the
# contents], in order) and its name, and the spec's fields marked signed in core/job_spec.py
# (records.SIGNED, always; records.SIGNED_WHEN_SET, only when set), with the defaults the
# controller gives them. Its canonical encoding is what the credential carries.
Signed = dict[str, Any]


def as_mapping(record: Mapping[str, object]) -> Mapping[str, object]:
    """A TypedDict read by the names in SIGNED, which mypy cannot tell are its keys."""
    return record


DEFAULTS = as_mapping(JOB_DEFAULTS)


def job_digest(signed: Mapping[str, Any]) -> bytes:
    """What a job's credential carries: the SHA-256 of the canonical encoding of `signed`."""
    return hashlib.sha256(canonical(signed)).digest()


def file_entry(name: str, mode: int, data: bytes) -> list[str | int]:
    return [name, mode, hashlib.sha256(data).hexdigest()]


def signed_request(job: Mapping[str, Any]) -> Signed:
    """What the owner signs of a job as their `drover` sends it (a JobSubmission's fields, with
    the controller's defaults filled in as it fills them). The controller makes the same of a
    stored job for the node that writes its event log: its spec, with the job's name."""
    def submitted(name: str) -> Any:
        if name == "output":  # the one the controller fills from more than its own default
            return job.get("output") or default_output(job.get("array") is not None)
        value = job.get(name)
        return DEFAULTS[name] if value is None else value

    signed: Signed = {
        "script": job["script"], "environment": job.get("environment") or {}, "name": job.get("name") or "job",
        "stage_in": [file_entry(f["name"], f.get("mode", 0o644), base64.b64decode(f["data"]))
                     for f in job.get("stage_in") or []],
    }
    signed |= {name: submitted(name) for name in SIGNED}
    signed |= {name: job[name] for name in SIGNED_WHEN_SET if job.get(name)}
    return signed


def signed_order(order: StartAttempt) -> Signed:
    """The same, as a node's order says it: equal to what was signed unless the job was changed
    on its way (tests/unit/cluster/test_signing.py holds the two together)."""
    config, job = order.config, as_mapping(order.config["job"])
    signed: Signed = {
        "script": order.script, "environment": config["environment"], "name": config["name"],
        "stage_in": [file_entry(f.name, f.mode, f.data) for f in order.stage_in],
    }
    signed |= {name: job[name] for name in SIGNED}
    signed |= {name: job[name] for name in SIGNED_WHEN_SET if job[name]}
    return signed


def outputs_as_signed(order: StartAttempt) -> bool:
    """The order's working directory and its output and error files are what the signed spec
    makes of this attempt."""
    config, job = order.config, order.config["job"]

    def made(pattern: str) -> str:
        return os.path.join(job["workdir"], expand(pattern, job_id=config["job_id"], index=config["task_index"],
                                                   name=config["name"], user=config["owner"], node=config["node"]))

    error, done = job["error"], job["done_output"]
    return config["workdir"] == job["workdir"] and config["stdout"] == made(job["output"]) and \
        config["stderr"] == (made(error) if error is not None else None) and \
        config.get("done_output") == (made(done) if done else None)


class SignedPeTask(TypedDict):
    """What the owner signs of a task of their running parallel job (`qrsh -inherit`, `drover
    task start`): which job, on which host, what it runs, where, with what environment."""

    pe_task_of: int  # the job's id
    host: str
    script: str
    workdir: str
    environment: dict[str, str]


def signed_pe_task_request(job_id: int, host: str, argv: list[str], workdir: str,
                           environment: Mapping[str, str]) -> SignedPeTask:
    return {"pe_task_of": job_id, "host": host, "script": task_script(argv), "workdir": workdir,
            "environment": dict(environment)}


def signed_pe_task_order(order: StartPeTask) -> SignedPeTask:
    """The same, as a node's order says it."""
    config = order.config
    return {"pe_task_of": config["job_id"], "host": config["node"], "script": order.script,
            "workdir": config["workdir"], "environment": config["environment"]}
