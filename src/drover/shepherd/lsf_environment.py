"""LSF's variables of a job LSF's bsub submitted (drover.compat.lsf), whose environment holds
the LSB_SUB_HOST bsub sends: IBM Spectrum LSF's names for the attempt's facts (LSB_JOBID,
LSB_JOBINDEX, LSB_HOSTS, LSB_MCPU_HOSTS, LSB_DJOB_NUMPROC...), and $LSB_DJOB_HOSTFILE, the job's
hosts one line per slot, as PBS's $PBS_NODEFILE. A job submitted otherwise gets none of them: an
MPI library that sees LSB_JOBID would try LSF's own task launcher (blaunch). Pure, but for the
host file it writes."""

from __future__ import annotations

import os

from drover.shepherd.config import ShepherdConfig
from drover.shepherd.pbs_environment import nodefile
from drover.spool.atomic import write_atomically

HOSTFILE_NAME = "lsf_hostfile"  # in the attempt's TMPDIR, beside $PE_HOSTFILE
MARKER = "LSB_SUB_HOST"  # drover.compat.lsf.submission.MARKER


def submitted_by_lsf(submitted: dict[str, str]) -> bool:
    return MARKER in submitted


def lsf_facts(config: ShepherdConfig, tmpdir: str, submitted: dict[str, str]) -> dict[str, str]:
    """The LSF variables of a job bsub submitted; none for another."""
    if not submitted_by_lsf(submitted):
        return {}
    job = str(config.job_id)
    queue = "normal" if config.job["queue"] == "default" else config.job["queue"]
    hosts = [(config.node, config.cpus), *((host["node"], len(host["cpu_ids"])) for host in config.pe_hosts)]
    slots = sum(count for _, count in hosts)
    facts = {
        "LSB_JOBID": job,
        "LSB_BATCH_JID": job,
        "LSB_JOBINDEX": "0",
        "LSB_JOBNAME": config.name,
        "LSB_QUEUE": queue,
        "LSB_HOSTS": " ".join(node for node, count in hosts for _ in range(count)),
        "LSB_MCPU_HOSTS": " ".join(f"{node} {count}" for node, count in hosts),
        "LSB_DJOB_NUMPROC": str(slots),
        "LSB_MAX_NUM_PROCESSORS": str(slots),
        "LSB_DJOB_HOSTFILE": os.path.join(tmpdir, HOSTFILE_NAME),
        "LSB_SUBCWD": config.job["submit_dir"],
        "LS_SUBCWD": config.job["submit_dir"],
        "LSB_SUB_HOST": submitted[MARKER],
        "LSB_EXEC_CLUSTER": "drover",
        "LSFUSER": config.owner,
        "LS_EXECCWD": config.workdir,
    }
    # The files -o and -e named, as this attempt writes them (%J and %I filled in); none if not named.
    if "LSB_OUTPUTFILE" in submitted:
        facts["LSB_OUTPUTFILE"] = config.stdout
    if "LSB_ERRORFILE" in submitted and config.stderr is not None:
        facts["LSB_ERRORFILE"] = config.stderr
    if config.is_array:
        index = str(config.task_index)
        facts.update({"LSB_JOBINDEX": index, "LSB_BATCH_JID": f"{job}[{index}]",
                      "LSB_JOBNAME": f"{config.name}[{index}]",
                      "LSB_JOBINDEX_END": str(config.array_last), "LSB_JOBINDEX_STEP": str(config.array_step)})
    return facts


def write_hostfile(config: ShepherdConfig, env: dict[str, str], tmpdir: str) -> None:
    """The host file of an LSF job, where its LSB_DJOB_HOSTFILE says (the attempt's TMPDIR, made
    just now, not yet its owner's): each host once per slot, as $PBS_NODEFILE; readable by the
    owner."""
    path = env.get("LSB_DJOB_HOSTFILE")
    if path == os.path.join(tmpdir, HOSTFILE_NAME):
        write_atomically(path, nodefile(config).encode(), mode=0o644)
