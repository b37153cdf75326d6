"""`scontrol show job|node|partition`: records of `Key=Value` words, laid out as
src/scontrol/info_job.c, src/api/node_info.c and src/api/partition_info.c lay them out: lines
indented by three spaces, or all on one line with `-o`, a blank line after each record. Pure."""

from __future__ import annotations

import os

from drover.compat.slurm import timefmt
from drover.compat.slurm.common import VERSION
from drover.compat.slurm.jobs import SlurmJob
from drover.compat.slurm.squeue_columns import memory
from drover.protocol.api import NodeInfo, QueueInfo

Record = list[list[str]]  # lines of words


def layout(record: Record, one_liner: bool) -> str:
    lines = [" ".join(words) for words in record if words]
    if one_liner:
        return " ".join(lines) + "\n"
    return "\n   ".join(lines) + "\n\n"


def job_record(job: SlurmJob, details: bool = False) -> Record:
    info = job.info
    uid, gid = job.uid, job.gid
    first = [f"JobId={job.job_id}"]
    if job.is_array:
        first.append(f"ArrayJobId={job.job_id} ArrayTaskId={job.array_task_text.split('%')[0]}")
        if info.max_running:
            first.append(f"ArrayTaskThrottle={info.max_running}")
    first.append(f"JobName={info.name}")
    started = job.start
    limit = timefmt.hms(info.time_limit_s) if info.time_limit_s else "UNLIMITED"
    end = job.end or (started + info.time_limit_s if started and info.time_limit_s else None)
    node = job.node
    tres = f"cpu={info.cpus}" + (f",mem={memory(info.memory_mib)}" if info.memory_mib else "") + (
        f",node={job.node_count},billing={info.cpus}")
    record: Record = [
        first,
        [f"UserId={info.owner}({uid if uid is not None else 0})",
         f"GroupId={job.group}({gid if gid is not None else 0})", "MCS_label=N/A"],
        [f"Priority={info.priority}", "Nice=0", "Account=(null)", "QOS=normal"],
        [f"JobState={job.state}", f"Reason={job.reason}", f"Dependency={job.dependency or '(null)'}"],
        ["Requeue=1", f"Restarts={max(job.attempts - 1, 0)}", "BatchFlag=1", "Reboot=0",
         f"ExitCode={job.exit_code}:{job.signal}"],
        [f"DerivedExitCode={job.exit_code}:{job.signal}"] if details else [],
        [f"RunTime={timefmt.hms(job.elapsed)}", f"TimeLimit={limit}", "TimeMin=N/A"],
        [f"SubmitTime={timefmt.date(info.submitted_at)}", f"EligibleTime={timefmt.date(info.submitted_at)}"],
        [f"AccrueTime={timefmt.date(info.submitted_at)}"],
        [f"StartTime={timefmt.date(started)}", f"EndTime={timefmt.date(end)}", "Deadline=N/A"],
        ["SuspendTime=None", "SecsPreSuspend=0", f"LastSchedEval={timefmt.date(job.now)}", "Scheduler=Main"],
        [f"Partition={info.queue}", "AllocNode:Sid=(null):0"],
        ["ReqNodeList=(null)", "ExcNodeList=(null)"],
        [f"NodeList={job.nodelist or '(null)'}"],
        [f"BatchHost={node}"] if node else [],
        [f"NumNodes={job.node_count}", f"NumCPUs={info.cpus}", "NumTasks=1", f"CPUs/Task={info.cpus}", "ReqB:S:C:T=0:0:*:*"],
        [f"ReqTRES={tres}"],
        [f"AllocTRES={tres if node else '(null)'}"],
        ["Socks/Node=*", "NtasksPerN:B:S:C=0:0:*:*", "CoreSpec=*"],
        [f"MinCPUsNode={info.pe_per_node or info.cpus}", f"MinMemoryNode={memory(info.memory_mib)}", "MinTmpDiskNode=0"],
        ["Features=(null)", "DelayBoot=00:00:00"],
        ["OverSubscribe=OK", "Contiguous=0", "Licenses=(null)", "Network=(null)"],
        ["Command=(null)"],
        [f"WorkDir={job.workdir}"],
        [f"StdErr={job.stderr or job.stdout or info.output}"],
        ["StdIn=/dev/null"],
        [f"StdOut={job.stdout or info.output}"],
    ]
    return record


def node_record(node: NodeInfo, partitions: list[str], boot: float | None) -> Record:
    state = node_state(node).upper()
    uname = os.uname()
    alloc_tres = (f"cpu={node.cpus_used}" + (f",mem={memory(node.memory_mib_used)}" if node.memory_mib_used else "")
                  if node.cpus_used else "")
    record: Record = [
        [f"NodeName={node.name}", f"Arch={uname.machine}", "CoresPerSocket=1"],
        [f"CPUAlloc={node.cpus_used}", f"CPUEfctv={node.cpus}", f"CPUTot={node.cpus}", "CPULoad=N/A"],
        ["AvailableFeatures=(null)"],
        ["ActiveFeatures=(null)"],
        ["Gres=(null)"],
        [f"NodeAddr={node.name}", f"NodeHostName={node.name}", f"Version={VERSION.split()[-1]}"],
        [f"OS={uname.sysname} {uname.release} {uname.version}"],
        [f"RealMemory={node.memory_mib}", f"AllocMem={node.memory_mib_used}", "FreeMem=N/A",
         f"Sockets={node.cpus}", "Boards=1"],
        [f"State={state}", "ThreadsPerCore=1", "TmpDisk=0", "Weight=1", "Owner=N/A", "MCS_label=N/A"],
        [f"Partitions={','.join(partitions)}"],
        [f"BootTime={timefmt.date(boot) if boot else 'None'}",
         f"SlurmdStartTime={timefmt.date(boot) if boot else 'None'}"],
        [f"LastBusyTime={timefmt.date(node.last_seen)}", "ResumeAfterTime=None"],
        [f"CfgTRES=cpu={node.cpus},mem={memory(node.memory_mib)},billing={node.cpus}"],
        [f"AllocTRES={alloc_tres}"],
        ["CurrentWatts=0", "AveWatts=0"],
    ]
    if node.reason:
        record.append([f"Reason={node.reason}"])
    return record


def partition_record(queue: QueueInfo, nodes: list[NodeInfo]) -> Record:
    """A queue as a partition: its nodes, state (UP, DOWN for stopped, DRAIN, INACTIVE), time
    limits, priority as PriorityJobFactor, memory limit as MaxMemPerNode (a task runs on one node)."""
    from drover.compat.slurm.hostlist import compress_hosts

    names = set(queue.node_names)
    mine = [node for node in nodes if node.name in names]
    cpus = sum(node.cpus for node in mine)
    mem = sum(node.memory_mib for node in mine)
    most_cpus = max((node.cpus for node in mine), default=0)
    state = {"open": "UP", "stopped": "DOWN", "draining": "DRAIN", "inactive": "INACTIVE"}.get(queue.state, "UP")
    return [
        [f"PartitionName={queue.name}"],
        ["AllowGroups=ALL", "AllowAccounts=ALL", "AllowQos=ALL"],
        ["AllocNodes=ALL", f"Default={'YES' if queue.name == 'default' else 'NO'}", "QoS=N/A"],
        [f"DefaultTime={'NONE' if queue.default_time_s is None else timefmt.hms(queue.default_time_s)}",
         "DisableRootJobs=NO", "ExclusiveUser=NO", "GraceTime=0", "Hidden=NO"],
        ["MaxNodes=UNLIMITED",
         f"MaxTime={'UNLIMITED' if queue.max_time_s is None else timefmt.hms(queue.max_time_s)}", "MinNodes=0",
         "LLN=NO", f"MaxCPUsPerNode={most_cpus or 'UNLIMITED'}", "MaxCPUsPerSocket=UNLIMITED"],
        [f"Nodes={compress_hosts([node.name for node in mine]) if mine else '(null)'}"],
        [f"PriorityJobFactor={queue.priority}", "PriorityTier=1", "RootOnly=NO", "ReqResv=NO", "OverSubscribe=NO"],
        ["OverTimeLimit=NONE", "PreemptMode=OFF"],
        [f"State={state}", f"TotalCPUs={cpus}", f"TotalNodes={len(mine)}", "SelectTypeParameters=NONE"],
        ["JobDefaults=(null)"],
        ["DefMemPerNode=UNLIMITED",
         f"MaxMemPerNode={'UNLIMITED' if queue.max_memory_mib is None else queue.max_memory_mib}"],
        [f"TRES=cpu={cpus},mem={memory(mem)},node={len(mine)},billing={cpus}"],
    ]


def node_state(node: NodeInfo) -> str:
    """A node's state in sinfo's lower-case words: idle, mix, alloc, drain, drng, down."""
    if node.state == "up":
        if node.cpus_used == 0 and node.running == 0:
            return "idle"
        return "alloc" if node.cpus_used >= node.cpus else "mix"
    return {"down": "down", "draining": "drng", "drained": "drain", "error": "drain"}.get(node.state, "unk")
