"""A job's parallel environment on its node (GE shepherd: "Next a parallel environment startup
procedure is run if the job is a parallel job ... followed by a parallel environment shutdown
procedure for parallel jobs"): which PE methods an attempt runs, with the placeholders of
sge_pe(5) replaced, and the spool file pe_hostfile.

Only a job that asked for a parallel environment runs PE methods: the node's [execd] pe_start
and pe_stop, then its PE's start_proc_args, and after the job its PE's stop_proc_args, then the
node's pe_stop. A PE's procedure runs as the job's owner, in its working directory, with its
environment (sge_pe(5): without a "user@" prefix), or with "root@" as the node's own methods
run (as the node daemon's user, in /, with a clean environment). Every value put in for a
placeholder is quoted for the shell: a job's name is its owner's to choose.
"""

from __future__ import annotations

import os
import shlex

from drover.method_command import substitute
from drover.shepherd.config import ShepherdConfig
from drover.shepherd.environment import pe_hostfile
from drover.shepherd.methods import Method
from drover.spool import layout
from drover.spool.atomic import write_atomically


def is_parallel(config: ShepherdConfig) -> bool:
    return bool(config.job["pe"])


def with_pe_methods(config: ShepherdConfig, spool_path: str, before_job: list[Method],
                    after_job: list[Method]) -> tuple[list[Method], list[Method]]:
    """The attempt's methods before and after the job (methods.methods' lists): for a job of no
    PE, without the node's pe_start and pe_stop; for a job of one, with its PE's procedures."""
    if not is_parallel(config):
        return ([m for m in before_job if m.step != "pe_start"], [m for m in after_job if m.step != "pe_stop"])
    values = placeholders(config, spool_path)
    start, stop = config.pe_start, config.pe_stop
    if start:
        before_job = [*before_job, Method("pe_start", "pe", expand(start, values),
                                          as_owner=not config.pe_start_as_site)]
    if stop:
        after_job = [Method("pe_stop", "pe", expand(stop, values),
                            as_owner=not config.pe_stop_as_site), *after_job]
    return before_job, after_job


def placeholders(config: ShepherdConfig, spool_path: str) -> dict[str, str]:
    """sge_pe(5)'s $pe_hostfile, $host, $job_owner, $job_id, $job_name, $pe, $pe_slots,
    $processors (the CPUs the job was given, as in the hostfile) and $queue."""
    processors = ",".join(str(cpu) for cpu in config.cpu_ids) or "UNDEFINED"
    return {
        "pe_hostfile": os.path.join(spool_path, layout.PE_HOSTFILE), "host": config.node,
        "job_owner": config.owner, "job_id": str(config.job_id), "job_name": config.name,
        "pe": config.job["pe"] or "", "pe_slots": str(config.cpus if config.job["pe_slots"] is None else config.job["pe_slots"]),
        "processors": processors, "queue": config.job["queue"],
    }


def expand(command: str, values: dict[str, str]) -> str:
    """The command line with each known placeholder replaced by its value, quoted for bash."""
    # sge_pe(5)'s placeholders (drover.core.parallel_env.PLACEHOLDERS checks them in drover.toml).
    return substitute(command, lambda name: shlex.quote(values[name]) if name in values else None)


def write_hostfiles(config: ShepherdConfig, spool_path: str, tmpdir: str) -> None:
    """GE's spool file pe_hostfile ("A file describing the host setup of a parallel job"), in the
    attempt's spool directory for a job of a PE, and $PE_HOSTFILE's copy in its TMPDIR (made
    just now, not yet its owner's) for it and for any job of more than one CPU. Readable by the
    job's owner, whose procedures read it."""
    text = pe_hostfile(config)
    if text is None:
        return
    if is_parallel(config):
        write_atomically(os.path.join(spool_path, layout.PE_HOSTFILE), text.encode(), mode=0o644)
    write_atomically(os.path.join(tmpdir, layout.PE_HOSTFILE), text.encode(), mode=0o644)
