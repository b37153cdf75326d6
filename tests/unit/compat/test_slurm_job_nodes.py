"""A job on several nodes (sbatch -N 2) as squeue and scontrol show it: its nodes in Slurm's
hostlist form, the batch host first, and their count; while it waits, the nodes it asked for.
On plain data."""

from __future__ import annotations

from tests.unit.compat.slurm_fixtures import NOW, attempt, job

from drover.compat.slurm import columns as fmt
from drover.compat.slurm.jobs import slurm_jobs
from drover.compat.slurm.scontrol_show import job_record, layout
from drover.compat.slurm.squeue_columns import COLUMNS
from drover.protocol.api import TaskInfo

TWO_NODES = attempt(node="n2")
TWO_NODES.other_nodes = {"n1": [0, 1]}
RUNNING = job(pe="slurm", pe_per_node=2, cpus=4, tasks=[
    TaskInfo(index=0, state="running", state_since=NOW, attempts=[TWO_NODES])])
PENDING = job(state="pending", task_counts={"pending": 1}, pe="slurm", pe_per_node=2, cpus=6, pending_reason="resources")


def squeue(spec: str, info: object) -> str:
    specs = fmt.parse_letters(spec, fmt.by_letter(COLUMNS), [])
    (line,) = slurm_jobs(info, NOW)  # type: ignore[arg-type]
    return fmt.line(specs, line)


def test_squeue_gives_every_node_of_a_job_and_their_count() -> None:
    assert squeue("%N|%D|%B|%R", RUNNING) == "n2,n1|2|n2|n2,n1"  # the batch host first, as the hostfile
    assert squeue("%N|%D", PENDING) == "|3"  # 6 slots, 2 on each node


def test_scontrol_show_job_gives_every_node_and_their_count() -> None:
    (line,) = slurm_jobs(RUNNING, NOW)
    record = layout(job_record(line), one_liner=True)
    assert "NodeList=n2,n1 BatchHost=n2 NumNodes=2 NumCPUs=4" in record
    assert "node=2,billing=4" in record and "MinCPUsNode=2" in record
