"""A job's parallel environment ([parallel_environments.NAME] of drover.toml, Grid Engine's
sge_pe(5)): checked when it is submitted, counted while it runs, and described in its order."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from drover.config_schema import ParallelEnvironmentSection
from drover.controller.state import ControllerState
from drover.core.errors import BadRequest
from drover.core.job import Job
from drover.core.parallel_env import (
    MAX_SLOTS,
    PE_SLOTS,
    may_use,
    parse_allocation_rule,
    parse_slots,
    slots_across_nodes,
    slots_on_one_node,
)
from drover.protocol.api import JobSubmission, ParallelEnvironmentInfo

# Grid Engine's usual parallel environment of one node, there unless drover.toml names its own
# "smp": `qsub -pe smp 4` asks for 4 CPUs of one node, as it did before PEs were objects.
SMP = ParallelEnvironmentSection(slots=MAX_SLOTS)
# The parallel environment of Slurm's jobs on several nodes (sbatch -N 2), there unless
# drover.toml names its own "slurm". srun inside the job starts every task, on every node, as
# tasks of the job (so control_slaves, and the batch script is none of them); Slurm counts its
# steps in the job's usage. Such a job carries its own slots on each node (its pe_per_node), so
# the rule here is for a job that asks for the PE by name.
SLURM = ParallelEnvironmentSection(slots=MAX_SLOTS, allocation_rule="$fill_up", control_slaves=True,
                                   job_is_first_task=False, accounting_summary=True)


def in_effect(configured: Mapping[str, ParallelEnvironmentSection]) -> dict[str, ParallelEnvironmentSection]:
    return {"smp": SMP, "slurm": SLURM, **configured}


def checked(spec: JobSubmission, environments: Mapping[str, ParallelEnvironmentSection], owner: str,
            node_cpus: Iterable[int], where: str = "") -> tuple[str, int] | None:
    """The job's parallel environment and its slots (each slot a CPU of its one node), or None
    for a job that names none. A range gets the largest of it that its PE and the largest node
    can ever hold (fixed here, when it is submitted). A job's own slots on each node
    (`pe_per_node`) stand for its PE's allocation rule. BadRequest, in the user's words, otherwise."""
    if spec.pe is None:
        if spec.pe_slots is not None or spec.pe_per_node is not None:
            raise BadRequest(f"{where}slots without a parallel environment: give --pe NAME SLOTS")
        return None
    environment = environments.get(spec.pe)
    if environment is None:
        known = ", ".join(sorted(environments)) or "none ([parallel_environments.NAME] in drover.toml)"
        raise BadRequest(f"{where}unknown parallel environment {spec.pe!r}; this cluster has {known}")
    if not may_use(owner, environment.user_lists, environment.xuser_lists):
        raise BadRequest(f"{where}{owner} may not use parallel environment {spec.pe} (its user_lists and xuser_lists)")
    if spec.cpus != 1:
        raise BadRequest(f"{where}--pe gives the job its CPUs, one a slot: leave out --cpus")
    try:
        low, high = parse_slots(spec.pe_slots or "1", environment.slots or 1)
        rule = _per_node(spec.pe_per_node) or parse_allocation_rule(environment.allocation_rule)
        cpus = list(node_cpus)
        if rule == PE_SLOTS or spec.gres or spec.exclusive:  # devices and whole nodes: one node
            slots = slots_on_one_node(rule, low, high, max(cpus, default=high), environment.slots)
        else:  # sge_pe(5): the rule spreads the slots over the hosts
            slots = slots_across_nodes(rule, low, high, cpus, environment.slots)
    except ValueError as error:
        own = f", {spec.pe_per_node} on each node" if spec.pe_per_node is not None else ""
        raise BadRequest(f"{where}--pe {spec.pe} {spec.pe_slots}{own}: {error}") from None
    return spec.pe, slots


def _per_node(slots: int | None) -> int | None:
    """A job's own slots on each node: the integer allocation rule it stands for."""
    if slots is not None and not 1 <= slots <= MAX_SLOTS:
        raise ValueError(f"the slots on each node must be from 1 to {MAX_SLOTS}, not {slots}")
    return slots


def free_slots(state: ControllerState, environments: Mapping[str, ParallelEnvironmentSection]) -> dict[str, int]:
    """Each parallel environment's slots less what the active tasks of its jobs hold. The running
    tasks are walked only where some PE has fewer than sge_pe(5)'s most (9,999,999, `smp`'s),
    which no cluster reaches: each planning pass calls this."""
    free = {name: environment.slots for name, environment in environments.items()}
    if all(slots >= MAX_SLOTS for slots in free.values()):
        return free
    for job, _ in state.held():
        held = of_job(job)
        if held is not None and held[0] in free:
            free[held[0]] -= held[1]
    return free


def of_job(job: Job) -> tuple[str, int] | None:
    name, slots = job.spec.pe, job.spec.pe_slots
    return (name, slots) if name is not None and slots is not None else None


def rule_of(job: Job, environments: Mapping[str, ParallelEnvironmentSection]) -> str | int:
    """The allocation rule by which the planner spreads the job's slots over nodes: its own
    slots on each node if it has them, else its PE's rule; $pe_slots (one node) for a job of no
    PE or of one no longer in drover.toml."""
    held = of_job(job)
    per_node = job.spec.pe_per_node
    if held is not None and per_node:
        return per_node
    environment = environments.get(held[0]) if held is not None else None
    if environment is None:
        return PE_SLOTS
    try:
        return parse_allocation_rule(environment.allocation_rule)
    except ValueError:
        return PE_SLOTS


def spans_nodes(spec: JobSubmission, environments: Mapping[str, ParallelEnvironmentSection]) -> bool:
    """Whether the job's slots may go on several nodes: its own slots on each node or its PE's
    rule is not $pe_slots, and it asks for no devices and no whole node (the planner keeps those
    on one node)."""
    environment = environments.get(spec.pe) if spec.pe is not None else None
    return (environment is not None and (spec.pe_per_node is not None or environment.allocation_rule != PE_SLOTS)
            and not spec.gres and not spec.exclusive)


def infos(state: ControllerState, environments: Mapping[str, ParallelEnvironmentSection]) -> list[ParallelEnvironmentInfo]:
    """Each parallel environment with its slots in use, its running tasks and its waiting jobs."""
    used = dict.fromkeys(environments, 0)
    running = dict.fromkeys(environments, 0)
    for job, _ in state.held():
        held = of_job(job)
        if held is not None and held[0] in used:
            used[held[0]] += held[1]
            running[held[0]] += 1
    pending = dict.fromkeys(environments, 0)
    for job in state.jobs.values():
        held = of_job(job)
        if held is not None and held[0] in pending and not job.is_done and job.task_counts().get("pending"):
            pending[held[0]] += 1
    return [ParallelEnvironmentInfo(
        name=name, slots=pe.slots, slots_used=used[name], user_lists=list(pe.user_lists),
        xuser_lists=list(pe.xuser_lists), start_proc_args=pe.start_proc_args, stop_proc_args=pe.stop_proc_args,
        allocation_rule=pe.allocation_rule, control_slaves=pe.control_slaves,
        job_is_first_task=pe.job_is_first_task, accounting_summary=pe.accounting_summary, running=running[name], pending=pending[name],
    ) for name, pe in sorted(environments.items())]
