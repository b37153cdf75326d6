"""PBS's variables of a job PBS's qsub submitted (drover.compat.pbs), whose environment holds
the PBS_O_* qsub always sends: PBS Pro's and Torque's names for the attempt's facts (qsub(1B),
"Environment Variables"), and $PBS_NODEFILE, the job's hosts one line per CPU. A job submitted
otherwise gets none of them: an MPI library that sees PBS_JOBID would try PBS's own task
launcher. Pure, but for the node file it writes."""

from __future__ import annotations

import os

from drover.shepherd.config import ShepherdConfig
from drover.spool.atomic import write_atomically

NODEFILE_NAME = "pbs_nodefile"  # in the attempt's TMPDIR, beside $PE_HOSTFILE


def submitted_by_pbs(submitted: dict[str, str]) -> bool:
    return "PBS_O_WORKDIR" in submitted and "PBS_O_HOST" in submitted


def pbs_facts(config: ShepherdConfig, tmpdir: str, submitted: dict[str, str]) -> dict[str, str]:
    """The PBS variables of a job PBS's qsub submitted; none for another. The server's name in
    job ids is the one qsub printed: $PBS_SERVER as qsub saw it, else the short name of the host
    it ran on."""
    if not submitted_by_pbs(submitted):
        return {}
    server = submitted.get("PBS_SERVER") or submitted["PBS_O_HOST"].split(".")[0]
    job = str(config.job_id)
    queue = "workq" if config.job["queue"] == "default" else config.job["queue"]
    facts = {
        "PBS_JOBID": f"{job}.{server}",
        "PBS_JOBNAME": config.name,
        "PBS_QUEUE": queue,
        "PBS_O_QUEUE": submitted.get("PBS_O_QUEUE") or queue,
        "PBS_ENVIRONMENT": submitted.get("PBS_ENVIRONMENT") or "PBS_BATCH",
        "PBS_NODEFILE": os.path.join(tmpdir, NODEFILE_NAME),
        "PBS_JOBDIR": config.workdir,
        "PBS_TASKNUM": "1",
        "PBS_NODENUM": "0",
        "PBS_MOMPORT": "15003",
        "PBS_NUM_NODES": str(1 + len(config.pe_hosts)),
        "PBS_NP": str(config.cpus + sum(len(host["cpu_ids"]) for host in config.pe_hosts)),
        "PBS_NUM_PPN": str(config.cpus),
        "NCPUS": str(config.cpus),
        "OMP_NUM_THREADS": str(config.cpus),
    }
    if config.is_array:
        index = str(config.task_index)
        facts.update({"PBS_JOBID": f"{job}[{index}].{server}", "PBS_ARRAY_ID": f"{job}[].{server}",
                      "PBS_ARRAY_INDEX": index, "PBS_ARRAYID": index})  # PBS Pro's, Torque's
    return facts


def nodefile(config: ShepherdConfig) -> str:
    """$PBS_NODEFILE's text: each host of the job once per CPU it holds there, the first host
    (where the script runs) first."""
    lines = [config.node] * config.cpus
    for host in config.pe_hosts:
        lines += [host["node"]] * len(host["cpu_ids"])
    return "".join(f"{line}\n" for line in lines)


def write_nodefile(config: ShepherdConfig, env: dict[str, str], tmpdir: str) -> None:
    """The node file of a PBS job, where its PBS_NODEFILE says (the attempt's TMPDIR, made just
    now, not yet its owner's); readable by the owner."""
    path = env.get("PBS_NODEFILE")
    if path == os.path.join(tmpdir, NODEFILE_NAME):
        write_atomically(path, nodefile(config).encode(), mode=0o644)
