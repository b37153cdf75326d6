"""The options sbatch, srun and salloc share, as Slurm's src/common/slurm_opt.c holds them: every
option of their man pages (Slurm 22.05 and later), which commands take it, and what Drover does
with it. Data only: parsing is optiontable.parse_gnu, and what an option does is in
submission.py (sbatch, salloc) and srun.py.

Marks follow docs/compat.md: ✓ honoured, ≈ honoured in part with a warning (refused under
--strict), – accepted and changing nothing on one Drover cluster, ✗ refused.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from drover.compat.optiontable import DROVER_OWN, Arity, Mark, Option

SBATCH, SRUN, SALLOC = "sbatch", "srun", "salloc"
ALL = (SBATCH, SRUN, SALLOC)
NONE, REQUIRED, OPTIONAL = Arity.NONE, Arity.REQUIRED, Arity.OPTIONAL
OK, APPROX, NOOP, NO = Mark.SUPPORTED, Mark.APPROXIMATED, Mark.MEANINGLESS, Mark.REFUSED


@dataclass(frozen=True)
class Shared:
    """One option of the shared table; `only` gives another mark and note to some commands."""

    names: tuple[str, ...]
    arity: Arity
    commands: tuple[str, ...]
    mark: Mark
    note: str = ""
    metavar: str = ""
    only: dict[str, tuple[Mark, str]] = field(default_factory=dict)

    def option(self, command: str) -> Option:
        mark, note = self.only.get(command, (self.mark, self.note))
        return Option(self.names, self.arity, mark, note, self.metavar)


ONE_CLUSTER = "Drover is one cluster"
NO_GPUS = "GPUs are counted per job (`--gpus`, `--gres`), not tied to CPUs, tasks, sockets or memory"
IN_JOB_SHARES = "outside a job: as sbatch's; inside one, the step has the job's"
NODE_SHAPE = "ignored: nodes are not described by sockets, cores and threads"
NODE_BINDS = "the node confines the job to its CPUs already"
STEP_ONLY = (NOOP, "")

# In the man pages' order (alphabetical by long name). -h, --usage and -V come last, as there.
TABLE: tuple[Shared, ...] = (
    Shared(("--accel-bind",), REQUIRED, (SRUN,), NOOP, "no accelerators are bound", "OPTIONS"),
    Shared(("-A", "--account"), REQUIRED, ALL, APPROX, "ignored: Drover keeps no accounts", "ACCOUNT"),
    Shared(("--acctg-freq",), REQUIRED, ALL, NOOP, "usage is measured when the job ends", "SPEC"),
    Shared(("-a", "--array"), REQUIRED, (SBATCH,), OK, "with `%max`", "INDEXES"),
    Shared(("--async",), NONE, (SRUN,), NOOP, "nothing is broadcast (one node)"),
    Shared(("--autocomplete",), REQUIRED, ALL, NO, "no shell completion", "WORD"),
    Shared(("--batch",), REQUIRED, (SBATCH,), APPROX, "ignored: the batch script runs on the job's one node",
           "LIST"),
    Shared(("--bb",), REQUIRED, ALL, NO, "no burst buffers", "SPEC"),
    Shared(("--bbf",), REQUIRED, ALL, NO, "no burst buffers", "FILE_NAME"),
    Shared(("--bcast",), OPTIONAL, (SRUN,), NOOP, "the program is on the node already (one node)", "[=DEST_PATH]"),
    Shared(("--bcast-exclude",), REQUIRED, (SRUN,), NOOP, "nothing is broadcast", "PATHS"),
    Shared(("-b", "--begin"), REQUIRED, ALL, OK, "`HH:MM[:SS]`, `YYYY-MM-DD[THH:MM[:SS]]`, `MM/DD[/YY]`, "
           "`now+N[units]`, `midnight`, `noon`, `teatime`, `today`, `tomorrow`: the job waits (BeginTime)", "TIME"),
    Shared(("--bell",), NONE, (SALLOC,), NOOP, ""),
    Shared(("-D", "--chdir"), REQUIRED, ALL, OK, "", "DIRECTORY",
           only={SRUN: (OK, "inside a job: the step's working directory")}),
    Shared(("--cluster",), REQUIRED, ALL, NOOP, ONE_CLUSTER, "CLUSTER"),
    Shared(("--cluster-constraint",), REQUIRED, ALL, NOOP, ONE_CLUSTER, "LIST"),
    Shared(("-M", "--clusters"), REQUIRED, ALL, NOOP, ONE_CLUSTER, "CLUSTERS"),
    Shared(("--comment",), REQUIRED, ALL, OK, "kept: `squeue -o %k`, `drover show`, and $DROVER_COMMENT in the job",
           "STRING", only={SRUN: (OK, IN_JOB_SHARES)}),
    Shared(("--compress",), OPTIONAL, (SRUN,), NOOP, "nothing is broadcast", "[=TYPE]"),
    Shared(("--consolidate-segments",), NONE, ALL, NOOP, "one node"),
    Shared(("-C", "--constraint"), REQUIRED, ALL, OK, "node features: `a`, `a&b`, `a|b`, `a,b`, "
           "parentheses; `[a|b]` and counts (`a*2`), which ask for a set of nodes, are refused", "LIST",
           only={SRUN: (OK, IN_JOB_SHARES)}),
    Shared(("--container",), REQUIRED, ALL, NO, "no OCI containers", "PATH"),
    Shared(("--container-id",), REQUIRED, ALL, NO, "no OCI containers", "ID"),
    Shared(("--context",), REQUIRED, ALL, NO, "no SELinux contexts", "CONTEXT"),
    Shared(("--contiguous",), NONE, ALL, NOOP, "one node"),
    Shared(("-S", "--core-spec"), REQUIRED, ALL, APPROX, "ignored: no cores are set aside", "NUM"),
    Shared(("--cores-per-socket",), REQUIRED, ALL, APPROX, NODE_SHAPE, "CORES"),
    Shared(("--cpu-bind",), REQUIRED, (SRUN,), NOOP, NODE_BINDS, "[{quiet,verbose},]TYPE"),
    Shared(("--cpu_bind",), REQUIRED, (SRUN,), NOOP, NODE_BINDS, "[{quiet,verbose},]TYPE"),
    Shared(("--cpu-freq",), REQUIRED, ALL, NOOP, "the node's governor is left alone", "SPEC"),
    Shared(("--cpus-per-gpu",), REQUIRED, ALL, NO, NO_GPUS, "NCPUS"),
    Shared(("-c", "--cpus-per-task"), REQUIRED, ALL, OK, "", "NCPUS"),
    Shared(("--deadline",), REQUIRED, ALL, NO, "no deadlines", "TIME"),
    Shared(("--debugger-test",), NONE, (SRUN,), NOOP, ""),
    Shared(("--delay-boot",), REQUIRED, ALL, NOOP, "nodes are not rebooted", "MINUTES"),
    Shared(("-d", "--dependency"), REQUIRED, ALL, OK, "after, afterok, afternotok, afterany, aftercorr, "
           "singleton, joined with `,` or `?`; ids `12` or `12_3`; not `+TIME`", "LIST",
           only={SRUN: (OK, "outside a job: as sbatch's")}),
    Shared(("-X", "--disable-status"), NONE, (SRUN,), NOOP, ""),
    Shared(("-m", "--distribution"), REQUIRED, ALL, NOOP, "one node: the tasks all run on it", "SPEC",
           only={SRUN: (OK, "in a job on several hosts: `block` (the default) or `cyclic` over its nodes; "
                               "what follows the first `:` is left to the kernel")}),
    Shared(("--epilog",), REQUIRED, (SRUN,), NO, "", "EXECUTABLE"),
    Shared(("-e", "--error"), REQUIRED, (SBATCH, SRUN), OK, "see the patterns below", "PATTERN"),
    Shared(("--exact",), NONE, (SRUN,), APPROX, "the step's tasks share the job's CPUs"),
    Shared(("-x", "--exclude"), REQUIRED, ALL, APPROX, "ignored", "NODELIST"),
    Shared(("--exclusive",), OPTIONAL, ALL, OK, "the job's node is its own, all its CPUs; `=user`, `=mcs`, "
           "`=topo` ≈: ignored, the job gets the CPUs it asked for", "[={user|mcs|topo}]",
           only={SRUN: (OK, "outside a job: as sbatch's; inside one, steps share its CPUs")}),
    Shared(("--export",), REQUIRED, (SBATCH, SRUN), OK, "`ALL`, `NONE`, `NIL`, `[ALL,]NAME[=VALUE],...`",
           "{[ALL,]VARS|ALL|NONE}"),
    Shared(("--export-file",), REQUIRED, (SBATCH,), OK, "`NAME=VALUE` lines or NUL-separated", "FILE"),
    Shared(("--external",), NONE, (SBATCH,), NO, "no external jobs"),
    Shared(("--external-launcher",), OPTIONAL, (SRUN,), NOOP, "", "[=0|1]"),
    Shared(("--extra",), REQUIRED, ALL, APPROX, "ignored: nodes carry no extra data; use `--constraint`", "STRING"),
    Shared(("-B", "--extra-node-info"), REQUIRED, ALL, APPROX, NODE_SHAPE, "S[:C[:T]]"),
    Shared(("--get-user-env",), OPTIONAL, (SBATCH, SALLOC), APPROX,
           "the environment of the submission is used, not a login shell's", "[=TIMEOUT][MODE]"),
    Shared(("--gid",), REQUIRED, ALL, NO, "jobs run as their owner", "GROUP"),
    Shared(("--gpu-bind",), REQUIRED, ALL, NO, NO_GPUS, "TYPE"),
    Shared(("--gpu-freq",), REQUIRED, ALL, NO, "GPU clocks are left alone", "SPEC"),
    Shared(("-G", "--gpus"), REQUIRED, ALL, OK, "the job's one node gets them all: `--gres=gpu[:TYPE]:N`",
           "[TYPE:]NUMBER", only={SRUN: (OK, IN_JOB_SHARES)}),
    Shared(("--gpus-per-node",), REQUIRED, ALL, OK, "one node: the same as `--gpus`", "[TYPE:]NUMBER",
           only={SRUN: (OK, IN_JOB_SHARES)}),
    Shared(("--gpus-per-socket",), REQUIRED, ALL, NO, NO_GPUS, "[TYPE:]NUMBER"),
    Shared(("--gpus-per-task",), REQUIRED, ALL, OK, "× `--ntasks` on the job's one node", "[TYPE:]NUMBER",
           only={SRUN: (OK, IN_JOB_SHARES)}),
    Shared(("--gres",), REQUIRED, ALL, OK, "`name[:type][:count],...` on the job's one node; `none`: nothing",
           "LIST", only={SRUN: (OK, IN_JOB_SHARES)}),
    Shared(("--gres-flags",), REQUIRED, ALL, NOOP, "generic resources are not tied to sockets", "TYPE"),
    Shared(("--het-group",), REQUIRED, (SRUN,), NO, "no heterogeneous jobs", "EXPR"),
    Shared(("--hint",), REQUIRED, ALL, APPROX, "ignored: the job gets the CPUs it asked for", "TYPE"),
    Shared(("-H", "--hold"), NONE, ALL, OK, "", "",
           only={SRUN: (OK, "outside a job"), SALLOC: (OK, "salloc waits for the release")}),
    Shared(("--ignore-pbs",), NONE, (SBATCH,), OK, "`#PBS` lines are never read"),
    Shared(("--ignore-signals",), REQUIRED, (SRUN,), NOOP, "", "SIGNALS"),
    Shared(("-I", "--immediate"), OPTIONAL, (SRUN, SALLOC), APPROX, "the request waits until it can start",
           "[=SECONDS]"),
    Shared(("-i", "--input"), REQUIRED, (SBATCH, SRUN), OK, "", "PATTERN",
           only={SBATCH: (NO, "a batch job's stdin is /dev/null; `/dev/null` is accepted")}),
    Shared(("--interactive",), NONE, (SRUN,), NOOP, ""),
    Shared(("--jobid",), REQUIRED, (SRUN,), OK, "only the job srun runs in: steps cannot join another job",
           "JOBID"),
    Shared(("-J", "--job-name"), REQUIRED, ALL, OK, "", "NAME"),
    Shared(("-K", "--kill-command"), OPTIONAL, (SALLOC,), OK, "the signal is sent to the command", "[=SIGNAL]"),
    Shared(("-K", "--kill-on-bad-exit"), OPTIONAL, (SRUN,), OK, "", "[=0|1]"),
    Shared(("--kill-on-invalid-dep",), REQUIRED, (SBATCH,), OK,
           "default yes (Slurm's kill_invalid_depend): cancelled, with the reason; no: it waits "
           "(DependencyNeverSatisfied)", "{yes|no}"),
    Shared(("-l", "--label"), NONE, (SRUN,), OK, "`TASK: ` before each line"),
    Shared(("-L", "--licenses"), REQUIRED, ALL, OK, "`NAME[:COUNT],...` (`NAME@SERVER` is a name); the job "
           "waits until they are free; not `a|b`", "LICENSE", only={SRUN: (OK, IN_JOB_SHARES)}),
    Shared(("--mail-type",), REQUIRED, ALL, OK, "BEGIN, END, FAIL, REQUEUE, ALL, ARRAY_TASKS, NONE", "TYPE"),
    Shared(("--mail-user",), REQUIRED, ALL, OK, "", "USER"),
    Shared(("--mcs-label",), REQUIRED, ALL, APPROX, "ignored", "MCS"),
    Shared(("--mem",), REQUIRED, ALL, OK, "", "SIZE[UNITS]",
           only={SRUN: (OK, "inside a job: the job's own limit applies")}),
    Shared(("--mem-bind",), REQUIRED, ALL, NOOP, "memory is not bound to NUMA nodes", "TYPE"),
    Shared(("--mem-per-cpu",), REQUIRED, ALL, OK, "× CPUs", "SIZE[UNITS]"),
    Shared(("--mem-per-gpu",), REQUIRED, ALL, NO, NO_GPUS, "SIZE[UNITS]"),
    Shared(("--mem-update",), REQUIRED, ALL, NOOP, "", "SECONDS"),
    Shared(("--mincpus",), REQUIRED, ALL, OK, "at least this many CPUs", "N"),
    Shared(("--mpi",), REQUIRED, (SRUN,), APPROX, "tasks start without PMI; `none` is ✓", "MPI_TYPE"),
    Shared(("--msg-timeout",), REQUIRED, (SRUN,), NOOP, "", "SECONDS"),
    Shared(("--multi-prog",), NONE, (SRUN,), NO, "one program per step"),
    Shared(("--network",), REQUIRED, ALL, APPROX, "ignored", "TYPE"),
    Shared(("--nice",), OPTIONAL, ALL, OK, "priority = −nice", "[=ADJUSTMENT]"),
    Shared(("-Z", "--no-allocate"), NONE, (SRUN,), NO, "every step runs in a job"),
    Shared(("--no-bell",), NONE, (SALLOC,), NOOP, ""),
    Shared(("-k", "--no-kill"), OPTIONAL, ALL, NOOP, "a failed node ends the job anyway", "[=off]"),
    Shared(("--no-requeue",), NONE, (SBATCH,), OK, "a job whose node fails is failed, not run again"),
    Shared(("--no-shell",), NONE, (SALLOC,), APPROX, "the allocation is held until its time limit or scancel; "
           "steps cannot join it from outside"),
    Shared(("-F", "--nodefile"), REQUIRED, ALL, APPROX, "ignored", "NODE_FILE"),
    Shared(("-w", "--nodelist"), REQUIRED, ALL, APPROX, "ignored", "NODE_LIST"),
    Shared(("-N", "--nodes"), REQUIRED, ALL, OK, "exactly that many nodes, the same CPUs on each: above 1, a job of "
           "the parallel environment `slurm`; a range takes its least, with a warning", "MINNODES[-MAXNODES]",
           only={SRUN: (OK, "inside a job: up to the job's nodes; outside one: as sbatch's")}),
    Shared(("-n", "--ntasks"), REQUIRED, ALL, OK, "ntasks × cpus-per-task CPUs; srun in the job starts ntasks tasks",
           "NUMBER", only={SRUN: (OK, "NUMBER copies, `SLURM_PROCID` 0..NUMBER−1")}),
    Shared(("--ntasks-per-core",), REQUIRED, ALL, APPROX, NODE_SHAPE, "NTASKS"),
    Shared(("--ntasks-per-gpu",), REQUIRED, ALL, NO, NO_GPUS, "NTASKS"),
    Shared(("--ntasks-per-node",), REQUIRED, ALL, OK, "with `-N` above 1: that many tasks on each node (with "
           "`-n`, at most that many); one node: the same as `--ntasks`", "NTASKS",
           only={SRUN: (OK, "inside a job on several nodes: at most that many tasks on each; outside one: as "
                            "sbatch's")}),
    Shared(("--ntasks-per-socket",), REQUIRED, ALL, APPROX, NODE_SHAPE, "NTASKS"),
    Shared(("--ntasks-per-tres",), REQUIRED, ALL, NO, NO_GPUS, "NTASKS"),
    Shared(("--oom-kill-step",), OPTIONAL, ALL, NOOP, "", "[={0|1}]"),
    Shared(("--open-mode",), REQUIRED, (SBATCH, SRUN), OK, "", "{append|truncate}"),
    Shared(("-o", "--output"), REQUIRED, (SBATCH, SRUN), OK, "see the patterns below", "PATTERN"),
    Shared(("-O", "--overcommit"), NONE, ALL, APPROX, "ignored: a task gets its CPUs"),
    Shared(("--overlap",), OPTIONAL, (SRUN,), NOOP, "steps always share the job's CPUs", "[=force]"),
    Shared(("-s", "--oversubscribe"), NONE, ALL, APPROX, "ignored: CPUs are never shared between jobs"),
    Shared(("--pack-group",), REQUIRED, (SRUN,), NO, "no heterogeneous jobs", "EXPR"),
    Shared(("--parsable",), NONE, (SBATCH, SRUN), OK, "`ID`, without `;CLUSTER` (one cluster)",
           only={SRUN: (NOOP, "")}),
    Shared(("-p", "--partition"), REQUIRED, ALL, OK, "a Drover queue", "PARTITION_NAMES"),
    Shared(("--power",), REQUIRED, ALL, NOOP, "no power management", "FLAGS"),
    Shared(("--prefer",), REQUIRED, ALL, APPROX, "ignored: only `--constraint` features are matched", "LIST"),
    Shared(("-E", "--preserve-env"), NONE, (SRUN,), OK, ""),
    Shared(("--priority",), REQUIRED, ALL, OK, "above 0 for operators only", "VALUE"),
    Shared(("--profile",), REQUIRED, ALL, NOOP, "usage is measured when the job ends", "{all|none|...}"),
    Shared(("--prolog",), REQUIRED, (SRUN,), NO, "", "EXECUTABLE"),
    Shared(("--propagate",), OPTIONAL, (SBATCH, SRUN), APPROX, "the node's limits apply", "[=RLIMIT[,RLIMIT...]]"),
    Shared(("--pty",), OPTIONAL, (SRUN,), OK, "a terminal, as `drover run --pty`", "[=FD]"),
    Shared(("-q", "--qos"), REQUIRED, ALL, APPROX, "ignored: no QOS", "QOS"),
    Shared(("-Q", "--quiet"), NONE, ALL, OK, ""),
    Shared(("--quit-on-interrupt",), NONE, (SRUN,), OK, "Ctrl-C ends the step"),
    Shared(("--reboot",), NONE, ALL, NOOP, "nodes are not rebooted"),
    Shared(("-r", "--relative"), REQUIRED, (SRUN,), OK, "0 only: a step starts on the job's first node", "N"),
    Shared(("--requeue",), OPTIONAL, (SBATCH,), OK, "", "[=expedite]"),
    Shared(("--reservation",), REQUIRED, ALL, APPROX, "ignored: no reservations", "NAMES"),
    Shared(("--resources",), REQUIRED, ALL, APPROX, "ignored", "LIST"),
    Shared(("--resv-ports",), OPTIONAL, ALL, NOOP, "", "[=COUNT]"),
    Shared(("--runtime",), REQUIRED, ALL, NO, "no OCI containers", "NAME"),
    Shared(("--segment",), REQUIRED, ALL, NOOP, "one node", "SEGMENT_SIZE"),
    Shared(("--send-libs",), OPTIONAL, (SRUN,), NOOP, "", "[=yes|no]"),
    Shared(("--signal",), REQUIRED, ALL, OK, "", "[{R|B}:]SIG_NUM[@SIG_TIME]"),
    Shared(("--slurmd-debug",), REQUIRED, (SRUN,), NOOP, "", "LEVEL"),
    Shared(("--sockets-per-node",), REQUIRED, ALL, APPROX, NODE_SHAPE, "SOCKETS"),
    Shared(("--spread-job",), NONE, ALL, NOOP, "one node"),
    Shared(("--spread-segments",), NONE, ALL, NOOP, "one node"),
    Shared(("--stepmgr",), NONE, ALL, NOOP, ""),
    Shared(("--switches",), REQUIRED, ALL, NOOP, "one node", "COUNT[@MAX-TIME]"),
    Shared(("--task-epilog",), REQUIRED, (SRUN,), NO, "", "EXECUTABLE"),
    Shared(("--task-prolog",), REQUIRED, (SRUN,), NO, "", "EXECUTABLE"),
    Shared(("--tasks-per-node",), REQUIRED, ALL, OK, "the same as `--ntasks-per-node`", "NTASKS"),
    Shared(("--test-only",), NONE, (SBATCH, SRUN), NO, "Drover does not estimate start times"),
    Shared(("--thread-spec",), REQUIRED, ALL, APPROX, "ignored: no threads are set aside", "NUM"),
    Shared(("-T", "--threads"), REQUIRED, (SRUN,), NOOP, "", "NTHREADS"),
    Shared(("--threads-per-core",), REQUIRED, ALL, APPROX, NODE_SHAPE, "THREADS"),
    Shared(("-t", "--time"), REQUIRED, ALL, OK, "every Slurm format", "TIME"),
    Shared(("--time-min",), REQUIRED, ALL, APPROX, "the job gets its `--time`", "TIME"),
    Shared(("--tmp",), REQUIRED, ALL, APPROX, "ignored: disk space is not counted", "SIZE[UNITS]"),
    Shared(("--treewidth",), REQUIRED, (SRUN,), NOOP, "", "WIDTH"),
    Shared(("--tres-bind",), REQUIRED, ALL, NO, NO_GPUS, "SPEC"),
    Shared(("--tres-per-task",), REQUIRED, ALL, OK, "`cpu=N` only (as `-c N`)", "LIST"),
    Shared(("--uid",), REQUIRED, ALL, NO, "jobs run as their owner", "USER"),
    Shared(("-u", "--unbuffered"), NONE, (SRUN,), OK, ""),
    Shared(("--use-min-nodes",), NONE, ALL, NOOP, "a range of `-N` gets its least anyway"),
    Shared(("-v", "--verbose"), NONE, ALL, OK, "says what is ignored"),
    Shared(("-W", "--wait"), NONE, (SBATCH,), OK, "returns the job's exit status (the highest of an array's)"),
    Shared(("-W", "--wait"), REQUIRED, (SRUN,), OK, "after the first task ends, the others get this long",
           "SECONDS"),
    Shared(("--wait-all-nodes",), REQUIRED, (SBATCH, SALLOC), NOOP, "a job starts once it has all its nodes", "VALUE"),
    Shared(("--wait-for-children",), NONE, (SRUN,), NOOP, "the job's processes are contained already"),
    Shared(("--wckey",), REQUIRED, ALL, APPROX, "ignored: no workload keys", "WCKEY"),
    Shared(("--whole",), NONE, (SRUN,), NOOP, "steps share the job's CPUs"),
    Shared(("--wrap",), REQUIRED, (SBATCH,), OK, "", "COMMAND_STRING"),
    Shared(("--strict",), NONE, ALL, OK, f"{DROVER_OWN}: refuse what can only be approximated"),
    Shared(("-h", "--help"), NONE, ALL, OK, ""),
    Shared(("--usage",), NONE, ALL, OK, ""),
    Shared(("-V", "--version"), NONE, ALL, OK, ""),
)


def options_for(command: str) -> list[Option]:
    """The option table of one command, as the man page lists it."""
    return [shared.option(command) for shared in TABLE if command in shared.commands]


# INPUT ENVIRONMENT VARIABLES of each man page → the long option each one sets. The command
# line wins over them, and they win over #SBATCH directives.
_SBATCH_ENV = {
    "SBATCH_ACCOUNT": "account", "SBATCH_ACCTG_FREQ": "acctg-freq", "SBATCH_ARRAY_INX": "array",
    "SBATCH_BATCH": "batch", "SBATCH_BURST_BUFFER": "bb", "SBATCH_CLUSTER_CONSTRAINT": "cluster-constraint",
    "SBATCH_CLUSTERS": "clusters", "SLURM_CLUSTERS": "clusters",
    "SBATCH_CONSOLIDATE_SEGMENTS": "consolidate-segments", "SBATCH_CONTAINER": "container",
    "SBATCH_CONTAINER_ID": "container-id", "SBATCH_RUNTIME": "runtime", "SBATCH_CONSTRAINT": "constraint",
    "SBATCH_CORE_SPEC": "core-spec", "SBATCH_CPU_FREQ_REQ": "cpu-freq", "SBATCH_CPUS_PER_GPU": "cpus-per-gpu",
    "SBATCH_DEBUG": "verbose", "SBATCH_DELAY_BOOT": "delay-boot", "SBATCH_DISTRIBUTION": "distribution",
    "SBATCH_EXCLUSIVE": "exclusive", "SBATCH_EXPORT": "export", "SBATCH_GET_USER_ENV": "get-user-env",
    "SBATCH_GRES": "gres", "SBATCH_GRES_FLAGS": "gres-flags", "SBATCH_GPUS": "gpus", "SBATCH_GPU_BIND": "gpu-bind",
    "SBATCH_GPU_FREQ": "gpu-freq", "SBATCH_GPUS_PER_NODE": "gpus-per-node",
    "SBATCH_GPUS_PER_SOCKET": "gpus-per-socket", "SBATCH_GPUS_PER_TASK": "gpus-per-task", "SLURM_HINT": "hint",
    "SBATCH_HINT": "hint", "SBATCH_IGNORE_PBS": "ignore-pbs", "SBATCH_JOB_NAME": "job-name",
    "SBATCH_MEM_BIND": "mem-bind", "SBATCH_MEM_PER_CPU": "mem-per-cpu", "SBATCH_MEM_PER_GPU": "mem-per-gpu",
    "SBATCH_MEM_PER_NODE": "mem", "SBATCH_NETWORK": "network", "SBATCH_NO_KILL": "no-kill",
    "SBATCH_NO_REQUEUE": "no-requeue", "SBATCH_OPEN_MODE": "open-mode", "SBATCH_OVERCOMMIT": "overcommit",
    "SBATCH_PARTITION": "partition", "SBATCH_POWER": "power", "SBATCH_PROFILE": "profile", "SBATCH_QOS": "qos",
    "SBATCH_REQ_SWITCH": "switches", "SBATCH_REQUEUE": "requeue", "SBATCH_RESERVATION": "reservation",
    "SBATCH_SEGMENT_SIZE": "segment", "SBATCH_SIGNAL": "signal", "SBATCH_SPREAD_JOB": "spread-job",
    "SBATCH_SPREAD_SEGMENTS": "spread-segments", "SBATCH_THREAD_SPEC": "thread-spec",
    "SBATCH_THREADS_PER_CORE": "threads-per-core", "SBATCH_TIMELIMIT": "time", "SBATCH_TRES_BIND": "tres-bind",
    "SBATCH_TRES_PER_TASK": "tres-per-task", "SBATCH_USE_MIN_NODES": "use-min-nodes", "SBATCH_WAIT": "wait",
    "SBATCH_WAIT_ALL_NODES": "wait-all-nodes", "SBATCH_WCKEY": "wckey", "SBATCH_ERROR": "error",
    "SBATCH_INPUT": "input", "SBATCH_OUTPUT": "output",
}
_SALLOC_ENV = {
    "SALLOC_ACCOUNT": "account", "SALLOC_ACCTG_FREQ": "acctg-freq", "SALLOC_BELL": "bell",
    "SALLOC_BURST_BUFFER": "bb", "SALLOC_CLUSTER_CONSTRAINT": "cluster-constraint", "SALLOC_CLUSTERS": "clusters",
    "SLURM_CLUSTERS": "clusters", "SALLOC_CONSOLIDATE_SEGMENTS": "consolidate-segments",
    "SALLOC_CONTAINER": "container", "SALLOC_CONTAINER_ID": "container-id", "SALLOC_RUNTIME": "runtime",
    "SALLOC_CONSTRAINT": "constraint", "SALLOC_CORE_SPEC": "core-spec", "SALLOC_CPU_FREQ_REQ": "cpu-freq",
    "SALLOC_CPUS_PER_GPU": "cpus-per-gpu", "SALLOC_DEBUG": "verbose", "SALLOC_DELAY_BOOT": "delay-boot",
    "SALLOC_EXCLUSIVE": "exclusive", "SALLOC_GPUS": "gpus", "SALLOC_GPU_BIND": "gpu-bind",
    "SALLOC_GPU_FREQ": "gpu-freq", "SALLOC_GPUS_PER_NODE": "gpus-per-node",
    "SALLOC_GPUS_PER_SOCKET": "gpus-per-socket", "SALLOC_GPUS_PER_TASK": "gpus-per-task", "SALLOC_GRES": "gres",
    "SALLOC_GRES_FLAGS": "gres-flags", "SALLOC_IMMEDIATE": "immediate", "SALLOC_HINT": "hint",
    "SLURM_HINT": "hint", "SALLOC_KILL_CMD": "kill-command", "SALLOC_MEM_BIND": "mem-bind",
    "SALLOC_MEM_PER_CPU": "mem-per-cpu", "SALLOC_MEM_PER_GPU": "mem-per-gpu", "SALLOC_MEM_PER_NODE": "mem",
    "SALLOC_NETWORK": "network", "SALLOC_NO_BELL": "no-bell", "SALLOC_NO_KILL": "no-kill",
    "SALLOC_OVERCOMMIT": "overcommit", "SALLOC_PARTITION": "partition", "SALLOC_POWER": "power",
    "SALLOC_PROFILE": "profile", "SALLOC_QOS": "qos", "SALLOC_REQ_SWITCH": "switches",
    "SALLOC_RESERVATION": "reservation", "SALLOC_SEGMENT_SIZE": "segment", "SALLOC_SIGNAL": "signal",
    "SALLOC_SPREAD_JOB": "spread-job", "SALLOC_SPREAD_SEGMENTS": "spread-segments",
    "SALLOC_THREAD_SPEC": "thread-spec", "SALLOC_THREADS_PER_CORE": "threads-per-core", "SALLOC_TIMELIMIT": "time",
    "SALLOC_TRES_BIND": "tres-bind", "SALLOC_TRES_PER_TASK": "tres-per-task",
    "SALLOC_USE_MIN_NODES": "use-min-nodes", "SALLOC_WAIT_ALL_NODES": "wait-all-nodes",
    "SALLOC_WCKEY": "wckey",
}
# srun reads the SLURM_* variables a job sees (SLURM_NTASKS, SLURM_CPUS_PER_TASK, SLURM_JOB_ID...):
# that is how a step inside `sbatch -n 4` starts 4 tasks by default, as on Slurm.
_SRUN_ENV = {
    "SLURM_ACCOUNT": "account", "SLURM_ACCTG_FREQ": "acctg-freq", "SLURM_BCAST": "bcast",
    "SLURM_BCAST_EXCLUDE": "bcast-exclude", "SLURM_BURST_BUFFER": "bb", "SLURM_CLUSTERS": "clusters",
    "SLURM_CLUSTER_CONSTRAINT": "cluster-constraint", "SLURM_COMPRESS": "compress",
    "SLURM_CONSOLIDATE_SEGMENTS": "consolidate-segments", "SLURM_CONSTRAINT": "constraint",
    "SLURM_CORE_SPEC": "core-spec", "SLURM_CPUS_PER_TASK": "cpus-per-task", "SLURM_CPU_BIND": "cpu-bind",
    "SLURM_CPU_FREQ_REQ": "cpu-freq", "SLURM_CPUS_PER_GPU": "cpus-per-gpu", "SLURM_DELAY_BOOT": "delay-boot",
    "SLURM_DEPENDENCY": "dependency", "SLURM_DISABLE_STATUS": "disable-status", "SLURM_DISTRIBUTION": "distribution",
    "SLURM_EPILOG": "epilog", "SLURM_EXACT": "exact", "SLURM_EXCLUSIVE": "exclusive", "SLURM_EXPORT_ENV": "export",
    "SRUN_EXPORT_ENV": "export", "SLURM_EXTERNAL_LAUNCHER": "external-launcher", "SLURM_GPUS": "gpus",
    "SLURM_GPU_BIND": "gpu-bind", "SLURM_GPU_FREQ": "gpu-freq", "SLURM_GPUS_PER_NODE": "gpus-per-node",
    "SLURM_GPUS_PER_SOCKET": "gpus-per-socket", "SLURM_GPUS_PER_TASK": "gpus-per-task", "SLURM_GRES": "gres",
    "SLURM_GRES_FLAGS": "gres-flags", "SLURM_HINT": "hint", "SLURM_JOB_ID": "jobid", "SLURM_JOB_NAME": "job-name",
    "SLURM_JOB_NUM_NODES": "nodes", "SLURM_KILL_BAD_EXIT": "kill-on-bad-exit", "SLURM_LABELIO": "label",
    "SLURM_MEM_BIND": "mem-bind", "SLURM_MEM_PER_CPU": "mem-per-cpu", "SLURM_MEM_PER_GPU": "mem-per-gpu",
    "SLURM_MEM_PER_NODE": "mem", "SLURM_MPI_TYPE": "mpi", "SLURM_NCORES_PER_SOCKET": "cores-per-socket",
    "SLURM_NETWORK": "network", "SLURM_NO_KILL": "no-kill", "SLURM_NPROCS": "ntasks", "SLURM_NTASKS": "ntasks",
    "SLURM_NSOCKETS_PER_NODE": "sockets-per-node", "SLURM_NTASKS_PER_CORE": "ntasks-per-core",
    "SLURM_NTASKS_PER_NODE": "ntasks-per-node", "SLURM_NTASKS_PER_GPU": "ntasks-per-gpu",
    "SLURM_NTASKS_PER_TRES": "ntasks-per-tres", "SLURM_OOM_KILL_STEP": "oom-kill-step",
    "SLURM_OPEN_MODE": "open-mode", "SLURM_OVERCOMMIT": "overcommit", "SLURM_OVERLAP": "overlap",
    "SLURM_PARTITION": "partition", "SLURM_POWER": "power", "SLURM_PROFILE": "profile", "SLURM_PROLOG": "prolog",
    "SLURM_QOS": "qos", "SLURM_REMOTE_CWD": "chdir", "SLURM_REQ_SWITCH": "switches",
    "SLURM_RESERVATION": "reservation", "SLURM_RESV_PORTS": "resv-ports", "SLURM_SEND_LIBS": "send-libs",
    "SLURM_SIGNAL": "signal", "SLURM_SPREAD_JOB": "spread-job", "SLURM_SPREAD_SEGMENTS": "spread-segments",
    "SLURM_SRUN_MULTI": "multi-prog", "SLURM_STDERRMODE": "error", "SLURM_STDINMODE": "input",
    "SLURM_STDOUTMODE": "output", "SLURM_TASK_EPILOG": "task-epilog", "SLURM_TASK_PROLOG": "task-prolog",
    "SLURM_THREAD_SPEC": "thread-spec", "SLURM_THREADS": "threads", "SLURM_THREADS_PER_CORE": "threads-per-core",
    "SLURM_TIMELIMIT": "time", "SLURM_TRES_BIND": "tres-bind", "SLURM_TRES_PER_TASK": "tres-per-task",
    "SLURM_UNBUFFEREDIO": "unbuffered", "SLURM_USE_MIN_NODES": "use-min-nodes", "SLURM_WAIT": "wait",
    "SLURM_WCKEY": "wckey", "SLURM_WORKING_DIR": "chdir", "SLURMD_DEBUG": "slurmd-debug",
    "SRUN_CONTAINER": "container", "SRUN_CONTAINER_ID": "container-id", "SRUN_RUNTIME": "runtime",
    "SLURM_DEBUG": "verbose", "SRUN_ERROR": "error", "SRUN_INPUT": "input", "SRUN_OUTPUT": "output",
    "SRUN_SEGMENT_SIZE": "segment",
}
INPUT_ENVIRONMENT = {SBATCH: _SBATCH_ENV, SALLOC: _SALLOC_ENV, SRUN: _SRUN_ENV}
