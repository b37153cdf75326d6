"""Grid Engine's spool files that say where an attempt runs, and that it is nearly done
(seeds/gridengine-shepherd-process-flow.txt, "The following spool files exist"):

  osjobid                 "the operating system jobid used to control and monitor the job": on
                          Linux, the attempt's cgroup directories, on one line; "subreaper PID
                          SESSION" where no cgroup is writable (the shepherd is the child
                          subreaper of the job's tree, and the session is the shepherd's). No
                          `addgrpid` is written: Grid Engine adds a group id to every process of
                          the job "if the operating system does not provide the feature of a
                          jobid", and a cgroup (or the subreaper) is that feature here
  processor_set_number    "If a processor set is created for the execution of a job, the shepherd
                          writes the processor set number to this file": the CPUs the attempt
                          was given, as a cpuset list, and its cpuset cgroup if one was made
  shepherd_about_to_exit  written once the job and its epilogs are done, just before exit_status

Each is one line, written whole by atomic rename, mode 0600 (spool.atomic); the last through
spool.outcome, as every record of how the job ended, so that a full disk does not stop it.
"""

from __future__ import annotations

from drover.records import ContainmentRecord
from drover.spool import layout
from drover.spool.atomic import write_atomically
from drover.spool.outcome import write_outcome


def osjobid(record: ContainmentRecord) -> str:
    if record["cgroups"]:
        return " ".join(path for _, path in sorted(record["cgroups"].items()))
    return f"{record['backend']} {record['shepherd']} {record['session']}"


def cpu_list(cpus: set[int] | frozenset[int]) -> str:
    """A cpuset list, as in cpuset.cpus: "0-3,8"."""
    ranges: list[str] = []
    for cpu in sorted(cpus):
        if ranges and cpu == int(ranges[-1].split("-")[-1]) + 1:
            ranges[-1] = f"{ranges[-1].split('-')[0]}-{cpu}"
        else:
            ranges.append(str(cpu))
    return ",".join(ranges)


def write_where(spool: layout.SpoolDir, record: ContainmentRecord, cpus: frozenset[int] | None) -> None:
    """`osjobid`, and `processor_set_number` if the attempt was given CPUs."""
    write_atomically(spool.record(layout.OSJOBID), f"{osjobid(record)}\n".encode())
    if cpus:
        cpuset = record["cgroups"].get("cpuset")
        line = cpu_list(cpus) + (f" {cpuset}" if cpuset else "")
        write_atomically(spool.record(layout.PROCESSOR_SET_NUMBER), f"{line}\n".encode())


def write_about_to_exit(spool: layout.SpoolDir) -> None:
    """One of the records of how the job ended: written whatever the disk (spool.outcome)."""
    write_outcome(spool, spool.record(layout.SHEPHERD_ABOUT_TO_EXIT), b"1\n")
