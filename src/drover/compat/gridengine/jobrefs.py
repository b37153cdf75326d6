"""Which jobs and tasks a Grid Engine job list names: ids (`12`), tasks (`12.1-5:2`), names
and name patterns (`sweep*`), `-u` users and `*` for all, resolved through the client."""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass

from drover.compat.gridengine.values import job_refs
from drover.core.errors import Forbidden, NotFound

TYPE_CHECKING = False
if TYPE_CHECKING:
    from drover.client.client import Client
    from drover.protocol.api import JobInfo


@dataclass(frozen=True)
class Target:
    job: JobInfo  # with its tasks
    indices: list[int] | None  # None: the whole job

    def refs(self) -> list[str]:
        """Drover's refs for the target: the job, or each of its tasks."""
        if self.indices is None:
            return [str(self.job.id)]
        return [f"{self.job.id}.{index}" for index in self.indices]


@dataclass(frozen=True)
class Resolved:
    targets: list[Target]
    missing: list[str]  # what named no job that has not ended, as the user wrote it


def resolve(client: Client, words: list[str], users: list[str] | None = None,
            refused: list[tuple[str, Forbidden]] | None = None) -> Resolved:
    """Each word of the job list (and each job of `users`) → the jobs, not yet ended, it names.
    A job id of another user's job goes into `refused`, with the cluster's refusal, when it is
    given (else the refusal is raised)."""
    targets: list[Target] = []
    missing: list[str] = []
    listing: list[JobInfo] | None = None
    for ref, indices in job_refs(words):
        if (ref.isascii() and ref.isdigit()):
            try:
                job = client.job(int(ref))
            except NotFound:
                job = None
            except Forbidden as refusal:
                if refused is None:
                    raise
                refused.append((ref, refusal))
                continue
            if job is None or job.ended_at is not None:
                missing.append(ref)
            else:
                targets.append(Target(job, indices))
            continue
        if listing is None:
            listing = client.jobs()
        named = [job for job in listing if ref == "*" or fnmatch.fnmatchcase(job.name, ref)]
        if users:  # `-u USER NAME`: that user's jobs of that name
            named = [job for job in named if "*" in users or job.owner in users]
        if not named:
            missing.append(ref)
        targets += [Target(client.job(job.id), None) for job in named]
    if users and not words:
        everyone = "*" in users
        for user in ([None] if everyone else users):
            targets += [Target(client.job(job.id), None) for job in client.jobs(user=user)]
    return Resolved(_unique(targets), missing)


def _unique(targets: list[Target]) -> list[Target]:
    seen: set[tuple[int, tuple[int, ...] | None]] = set()
    out = []
    for target in targets:
        key = (target.job.id, tuple(target.indices) if target.indices is not None else None)
        if key not in seen:
            seen.add(key)
            out.append(target)
    return out
