"""Acting on jobs (cancel, signal, hold, release, requeue, suspend, resume) and reporting a
refusal in Slurm's words (slurm_strerror), decided by what the job is, not by the words of
Drover's message: a job the cluster does not know is "Invalid job id specified", one that has
ended is "Job/step already completing or completed", another user's is "Access/permission
denied"."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from drover.core.errors import Forbidden, NotFound

if TYPE_CHECKING:
    from drover.client.client import Client
    from drover.protocol.api import ActionResult

INVALID_JOB_ID = "Invalid job id specified"
ALREADY_DONE = "Job/step already completing or completed"
ACCESS_DENIED = "Access/permission denied"  # ESLURM_ACCESS_DENIED: another user's job
FINAL_TASK_STATES = frozenset({"completed", "failed", "cancelled", "timeout", "out_of_memory", "node_fail"})


@dataclass(frozen=True)
class Refusal:
    ref: str  # Drover's reference: "12" or "12.3"
    slurm_id: str  # as the user named it: "12" or "12_3"
    reason: str  # Slurm's words
    gone: bool  # unknown or ended: what scancel -Q keeps quiet about


def slurm_ref(text: str) -> str:
    """Slurm's `12_3` as Drover's `12.3`."""
    return text.replace("_", ".")


NOT_PENDING = "Job is no longer pending execution"  # ESLURM_JOB_NOT_PENDING: hold of a started job


def why(client: Client, ref: str, message: str) -> tuple[str, bool]:
    """Slurm's reason for a refused action on `ref`, from the job's state; for a job that is
    there and not done, `message` (the caller's choice of Slurm's words)."""
    job_text, _, index_text = ref.partition(".")
    try:
        job = client.job(int(job_text))
    except NotFound:
        return INVALID_JOB_ID, True
    except Forbidden:
        return ACCESS_DENIED, False
    if index_text:
        task = next((t for t in job.tasks if t.index == int(index_text)), None)
        if task is not None and task.state in FINAL_TASK_STATES:
            return ALREADY_DONE, True
    elif job.ended_at is not None:
        return ALREADY_DONE, True
    return message, False


def act(client: Client, action: Callable[[list[str]], list[ActionResult]], refs: list[str],
        shown: dict[str, str], active: str | None = None) -> list[Refusal]:
    """Apply `action` to `refs`; the refusals, each explained. `shown` maps a ref to how the user
    spelled it; `active` is Slurm's reason for refusing a job that is neither unknown nor done
    (by default, Drover's own message)."""
    refusals = []
    for result in action(refs):
        if result.ok:
            continue
        reason, gone = why(client, result.ref, active or result.message)
        refusals.append(Refusal(result.ref, shown.get(result.ref, result.ref.replace(".", "_")), reason, gone))
    return refusals
