"""What a job waits for before it may start: other jobs (Slurm's --dependency, Grid Engine's
-hold_jid), as typed records, their text form, and whether they are met. Pure.

Slurm's semantics (sbatch(1) --dependency):
- after: the job started (or ended: a job cancelled before it started counts too);
- afterok: it ended COMPLETED; afternotok: it ended in any other final state (Slurm counts a
  cancelled job as "not ok" too); afterany: it ended, however;
- aftercorr (`per_task`): task N waits for task N of the other array, with the kind's
  semantics (afterok for Slurm's aftercorr; afterany for Grid Engine's -hold_jid_ad); a task
  the other array does not have is nothing to wait for;
- singleton: no other job of the same user and name runs (the planner also starts at most one
  such job per pass);
- `,` joins them all (every one must be met), `?` any (one met is enough).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from drover.core.errors import BadRequest

KINDS = ("after", "afterok", "afternotok", "afterany", "singleton")
COMPLETED = "completed"  # core.job_state.JobState.COMPLETED's value


@dataclass(frozen=True, slots=True)
class Dependency:
    kind: str  # one of KINDS
    job: int = 0  # 0 for singleton
    task: int | None = None  # one array task of `job` (12.3 / Slurm's 12_3), or None: the whole job
    per_task: bool = False  # each task waits for the task of the same index (aftercorr, -hold_jid_ad)

    @property
    def text(self) -> str:
        """Slurm's spelling, with Drover's task ids: `afterok:12`, `aftercorr:12`, `after:12.3`."""
        if self.kind == "singleton":
            return "singleton"
        kind = "aftercorr" if self.per_task and self.kind == "afterok" else self.kind
        kind += "(task-wise)" if self.per_task and self.kind != "afterok" else ""
        return f"{kind}:{self.target}"

    @property
    def target(self) -> str:
        return f"{self.job}.{self.task}" if self.task is not None else str(self.job)

    def to_json(self) -> dict[str, Any]:
        record: dict[str, Any] = {"kind": self.kind, "job": self.job}
        if self.task is not None:
            record["task"] = self.task
        if self.per_task:
            record["per_task"] = True
        return record

    @classmethod
    def from_json(cls, record: dict[str, Any]) -> Dependency:
        return cls(record["kind"], record.get("job", 0), record.get("task"), bool(record.get("per_task", False)))


@dataclass(frozen=True, slots=True)
class Dependencies:
    on: tuple[Dependency, ...] = ()
    any: bool = False  # `?`: one met is enough; else `,`: all must be

    def __bool__(self) -> bool:
        return bool(self.on)

    @property
    def text(self) -> str:
        return ("?" if self.any else ",").join(dependency.text for dependency in self.on)

    @property
    def singleton(self) -> bool:
        return any(dependency.kind == "singleton" for dependency in self.on)


@dataclass(frozen=True, slots=True)
class Progress:
    """What a dependency sees of the job or task it names."""

    started: bool  # it started once (or has ended)
    ended: str | None = None  # its final state (a core.job_state value), once it ended


class Verdict(Enum):
    MET = "met"
    WAITING = "waiting"
    NEVER = "never"  # it can never be met: the job will not run


@dataclass(frozen=True, slots=True)
class Evaluation:
    verdict: Verdict
    waiting_on: tuple[Dependency, ...] = ()  # not met yet
    never: tuple[Dependency, ...] = ()  # never to be met


def verdict(dependency: Dependency, progress: Progress | None) -> Verdict:
    """One dependency against what its job (or task) did; None: it has no such job or task."""
    if progress is None:  # a task the other array lacks waits for nothing; a job that is not, never
        return Verdict.MET if dependency.per_task else Verdict.NEVER
    ended = progress.ended
    if dependency.kind == "after":
        return Verdict.MET if progress.started or ended else Verdict.WAITING
    if ended is None:
        return Verdict.WAITING
    if dependency.kind == "afterok":
        return Verdict.MET if ended == COMPLETED else Verdict.NEVER
    if dependency.kind == "afternotok":
        return Verdict.NEVER if ended == COMPLETED else Verdict.MET
    return Verdict.MET  # afterany


ProgressOf = Callable[[int, "int | None"], "Progress | None"]  # (job, task or None) → its progress


def evaluate(dependencies: Dependencies, progress_of: ProgressOf, index: int = 0,
             singleton_free: bool = True) -> Evaluation:
    """All of `dependencies` (or any, with `?`) for the job's task `index`. `singleton_free`:
    no other job of the same user and name is running."""
    waiting: list[Dependency] = []
    never: list[Dependency] = []
    for dependency in dependencies.on:
        if dependency.kind == "singleton":
            found = Verdict.MET if singleton_free else Verdict.WAITING
        else:
            task = index if dependency.per_task else dependency.task
            found = verdict(dependency, progress_of(dependency.job, task))
        if found is Verdict.WAITING:
            waiting.append(dependency)
        elif found is Verdict.NEVER:
            never.append(dependency)
    met = len(dependencies.on) - len(waiting) - len(never)
    if dependencies.any and dependencies.on:
        if met:
            return Evaluation(Verdict.MET)
        return Evaluation(Verdict.WAITING if waiting else Verdict.NEVER, tuple(waiting), tuple(never))
    if never:
        return Evaluation(Verdict.NEVER, tuple(waiting), tuple(never))
    return Evaluation(Verdict.WAITING if waiting else Verdict.MET, tuple(waiting))


_UNTIL = {"after": "start", "afterok": "complete", "afternotok": "fail", "afterany": "end"}
_BROKEN = {"afterok": "did not complete", "afternotok": "completed successfully"}


def waiting_text(dependencies: Sequence[Dependency], any_: bool = False) -> str:
    """"waiting for job 12 (afterok) to complete and job 13 (after) to start"."""
    parts = []
    for dependency in dependencies:
        if dependency.kind == "singleton":
            parts.append("the running job of the same name (singleton) to end")
        elif dependency.per_task:
            parts.append(f"the same task of job {dependency.job} ({dependency.text.split(':')[0]}) "
                         f"to {_UNTIL[dependency.kind]}")
        else:
            kind = "task" if dependency.task is not None else "job"
            parts.append(f"{kind} {dependency.target} ({dependency.kind}) to {_UNTIL[dependency.kind]}")
    return "waiting for " + (" or " if any_ else " and ").join(parts)


def never_text(dependencies: Sequence[Dependency]) -> str:
    """"job 12 (afterok) did not complete": why the dependencies can never be met."""
    return "; ".join(f"{'task' if d.task is not None else 'job'} {d.target} ({d.kind}) "
                     f"{_BROKEN.get(d.kind, 'does not exist')}" for d in dependencies)


# -- the text form -------------------------------------------------------------------------------

_JOB_ID = re.compile(r"([1-9][0-9]{0,17})(?:[._]([0-9]{1,9}))?")


def parse_dependencies(text: str, option: str = "--dependency") -> Dependencies:
    """Slurm's --dependency: `type:id[:id...]` joined with `,` (all) or `?` (any), `singleton`;
    ids are `12`, or array tasks as `12.3` or `12_3`. Bad input raises BadRequest naming it."""
    text = text.strip()
    if "," in text and "?" in text:
        raise BadRequest(f"{option}: join dependencies with ',' (all) or '?' (any), not both: {text!r}")
    any_ = "?" in text
    found: list[Dependency] = []
    for part in text.split("?" if any_ else ","):
        kind, _, ids = part.partition(":")
        if kind == "singleton" and not ids:
            found.append(Dependency("singleton"))
            continue
        per_task = kind == "aftercorr"
        if per_task:
            kind = "afterok"
        if kind == "singleton":
            raise BadRequest(f"{option}: singleton takes no job ids (it waits for your other jobs of the same "
                             f"name), not {part!r} in {text!r}")
        if kind not in KINDS:
            raise BadRequest(f"{option}: unknown kind {kind or part!r} in {text!r}; known: after, afterok, "
                             "afternotok, afterany, aftercorr, singleton")
        if not ids:
            raise BadRequest(f"{option}: {kind} needs a job id ({kind}:ID[:ID...]), in {text!r}")
        for word in ids.split(":"):
            if "+" in word:
                raise BadRequest(f"{option}: after:ID+TIME (a delay after the start) is not supported: {word!r}")
            match = _JOB_ID.fullmatch(word)
            if match is None:
                raise BadRequest(f"{option}: {word!r} is not a job id (12, or an array task 12.3 or 12_3)")
            task = int(match[2]) if match[2] is not None else None
            if per_task and task is not None:
                raise BadRequest(f"{option}: aftercorr names whole arrays, not task {word!r}")
            found.append(Dependency(kind, int(match[1]), task, per_task))
    return Dependencies(tuple(found), any_)


def request_fields(dependencies: Dependencies) -> dict[str, Any]:
    """The submission's fields for these dependencies (protocol/plain.JobRequest)."""
    return {"dependencies": [dependency.to_json() for dependency in dependencies.on],
            "dependency_any": dependencies.any}


def kill_on_invalid(text: str, option: str = "--kill-on-invalid-dep") -> bool:
    """sbatch's --kill-on-invalid-dep=yes|no."""
    if text.lower() not in ("yes", "no"):
        raise BadRequest(f"{option} takes yes or no, not {text!r}")
    return text.lower() == "yes"
