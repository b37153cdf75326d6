"""drover.toml, section by section: every key the daemons read, with its type, default and meaning.

This is the whole file. A key that is not here is refused when the file is read (a misspelt
option would otherwise be silently ignored), and so is a value of the wrong type
(`drover.config_file` says where). `drover config check` prints these sections with the values in
effect. Optional settings that TOML cannot leave empty are `None` here: "not set, use the host's".

Importable by both daemons and by the `drover` command (msgspec and the pure core only); not by
the shepherd, which gets its settings in each attempt's config.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Literal

import msgspec
from msgspec import Meta

from drover.config import MUNGE_SOCKET
from drover.core.checkpoints import MAX_INTERVAL_S
from drover.core.limits import (
    MAX_CPUS,
    MAX_ID,
    MAX_INDEX,
    MAX_MEMORY_MIB,
    MAX_PIDS,
    MAX_TIME_LIMIT_S,
    Limits,
)
from drover.core.parallel_env import MAX_SLOTS
from drover.method_command import MAX_NOTIFY_S
from drover.protocol.node_channel import HEARTBEAT_S

if TYPE_CHECKING:
    from drover.core.checkpoints import Environment as CheckpointEnvironment

MIB = 1024 * 1024
MAX_DEBUG_PAUSE_S = 3600  # a shepherd waiting for a debugger: an hour at most
# Every number of the file has a range (a test walks the schema for one), so that no value a
# daemon cannot work with (a negative heartbeat, a grace of 10^20 s, NaN) is taken. Where the
# cluster has a bound of its own (core/limits.py), that is the range's end; else these:
MAX_BYTES = 1 << 40  # a size in bytes: a tebibyte
MAX_COUNT = MAX_ID  # a number of jobs, tasks or variables: what the store can count
MAX_TRIES = 1000  # tries of a step of the cleanup
MAX_RLIMIT = 2**63 - 1  # RLIM_INFINITY - 1 (-1 is unlimited)
MAX_WEIGHT = float(2**32 - 1)  # a priority weight: Slurm's are 32-bit
MAX_KILL_GRACE_S = 3600.0  # kill_grace_s, and `drover up --kill-grace`
KILL_GRACE_S = 10.0  # kill_grace_s unset, and no --kill-grace


def about(description: str, ge: float | None = None, le: float | None = None) -> Meta:
    """A key's one-line description (shown by `drover config check`), and its range: every
    number has one."""
    return Meta(description=description, ge=ge, le=le)


class Section(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """A table of drover.toml: unknown keys are refused. (Each subclass says frozen=True again:
    mypy reads msgspec's options per class.)"""


class ConnectionsSection(Section, frozen=True):
    """[controller.connections]: what anyone who can reach the controller's sockets gets before
    they are known: how much of a request is read, how long it is waited for, and how many
    connections one peer (a local user, a remote address) and all of them may hold."""

    max_request_line_bytes: Annotated[int, about(
        "a request's first line (method, path and query); a longer one is answered 414 and the "
        "connection closed", ge=256, le=65536)] = 8192
    max_header_bytes: Annotated[int, about(
        "a request's first line and headers together; more is answered 431 and the connection closed, "
        "before the rest is read", ge=1024, le=MIB)] = 16384
    header_timeout_s: Annotated[float, about(
        "seconds from a connection (its TLS handshake included) or a request's first byte until its "
        "headers are all in; a slower one is answered 408 and closed", ge=0.1, le=3600)] = 10.0
    body_timeout_s: Annotated[float, about(
        "the longest pause within a request's body; a longer one closes the connection",
        ge=0.1, le=3600)] = 30.0
    idle_timeout_s: Annotated[float, about(
        "how long a connection may wait for its next request once its last was answered",
        ge=0.1, le=3600)] = 5.0
    max_connections: Annotated[int, about(
        "connections open at once, all peers together (the controller also keeps it under its open-files "
        "limit, which it raises to the hard limit when it starts)", ge=16, le=1_000_000)] = 8192
    reserved_connections: Annotated[int, about(
        "of those, how many only nodes and admins may use (root and the controller's user on the local "
        "socket, addresses of nodes that connected over TLS): a crowd cannot lock them out",
        ge=0, le=1_000_000)] = 512
    max_connections_per_peer: Annotated[int, about(
        "connections open at once from one local user (by the uid the kernel gives) or one address on TCP "
        "(an IPv6 /64); root and the controller's user on the local socket are not counted",
        ge=1, le=1_000_000)] = 128

    def __post_init__(self) -> None:
        if self.max_header_bytes < self.max_request_line_bytes:
            raise ValueError(f"max_header_bytes ({self.max_header_bytes}) must be at least "
                             f"max_request_line_bytes ({self.max_request_line_bytes}): it counts the request line too")
        if self.reserved_connections >= self.max_connections:
            raise ValueError(f"reserved_connections ({self.reserved_connections}) must be less than "
                             f"max_connections ({self.max_connections})")


class ControllerSection(Section, frozen=True):
    """[controller]: the controller daemon, and what one user may ask of the cluster."""

    kill_grace_s: Annotated[float, about("seconds between SIGTERM and SIGKILL when a job is stopped "
                                         "(`drover controller --kill-grace` overrides it)", ge=0.0, le=MAX_KILL_GRACE_S)] = KILL_GRACE_S
    sqlite_synchronous: Annotated[Literal["OFF", "NORMAL", "FULL", "EXTRA"], about(
        "SQLite's synchronous mode: NORMAL survives the controller being killed, FULL also a power loss")] = "NORMAL"
    node_timeout_s: Annotated[float, about("a node away this long has lost its running jobs: requeued when "
                                           "they may run again, NODE_FAIL otherwise", ge=1.0, le=30 * 86400.0)] = 300.0
    heartbeat_s: Annotated[float, about("how often nodes say they are there (with their load and free memory); "
                                        "a node silent for three is DOWN", ge=0.1, le=3600.0)] = HEARTBEAT_S
    shared: Annotated[bool, about("serve every local user, each for their own jobs (as `--system` does)")] = False
    operators: Annotated[list[str], about("users who manage every job, besides root and the controller's user")] = []
    allow_root_jobs: Annotated[bool, about("accept jobs submitted by root")] = False
    munge_socket: Annotated[str, about("the controller's munged, which opens the MUNGE credentials of users "
                                       "on other hosts")] = MUNGE_SOCKET
    smtp_host: Annotated[str, about("the mail server for the controller's mail")] = "localhost"
    smtp_port: Annotated[int, about("its port", ge=1, le=65535)] = 25
    requeue_held: Annotated[bool, about("a job requeued for its node's failure (a failing prolog, which sets its "
                                        "queue in error there, or a node that could not prepare it) is held")] = False
    # Grid Engine's execd_params of the same names (sge_conf(5)), for the whole cluster: the
    # controller decides what an exit means, and a job's 99 means the same on every node.
    forbid_reschedule: Annotated[bool, about("a status 99 does not ask for a requeue: a job fails with it, a "
                                             "prolog or epilog sets its queue in error (Grid Engine's "
                                             "FORBID_RESCHEDULE)")] = False
    forbid_apperror: Annotated[bool, about("a status 100 does not ask for an error hold: a job fails with it, a "
                                           "prolog or epilog sets its queue in error (Grid Engine's "
                                           "FORBID_APPERROR); with both, a job's 0 succeeds, anything else fails")] = False
    user_queues: Annotated[bool, about("users may make queues of their own (`drover queue create`), which they "
                                       "manage (jobd's personal queues)")] = False
    store_check_s: Annotated[float, about("how often the controller checks its store's pages for damage "
                                          "(SQLite's quick_check; PostgreSQL's amcheck where installed), and once "
                                          "when it starts; a damaged store refuses every write (0: never)",
                                          ge=0, le=30 * 86400.0)] = 3600.0
    history_days: Annotated[int, about("ended jobs, with their attempts, accounting records and events, are "
                                       "forgotten this many days after they ended (0: kept for ever); looked "
                                       "for hourly, 1,000 a transaction", ge=0, le=36500)] = 365
    public_metrics: Annotated[bool, about("every user the controller serves may read its metrics (GET /metrics: "
                                         "job counts per user and queue, nodes, the scheduler's and the store's "
                                         "timings); off, only root and the operators may")] = False
    metrics_listen: Annotated[str, about("HOST:PORT where the controller also serves GET /metrics alone, over "
                                         "plain HTTP and to anyone who reaches it, for Prometheus; needs "
                                         "public_metrics (docs/metrics.md, docs/security.md); empty: no such "
                                         "listener")] = ""
    # TLS on TCP (`--listen`): unset, the cluster's own CA and certificate under <state>/tls/,
    # made by `drover cluster init`. The admin's own certificates are named all three together.
    tls_cert: Annotated[str | None, about("the controller's TLS certificate (PEM), instead of the cluster's own")] = None
    tls_key: Annotated[str | None, about("its private key (PEM)")] = None
    tls_ca: Annotated[str | None, about("the CA that issued it and issues the nodes' certificates (PEM); "
                                        "a join token pins its fingerprint")] = None
    tls_ca_key: Annotated[str | None, about("that CA's private key, for `drover join` to issue node "
                                            "certificates (unset with tls_ca: nodes cannot join by token)")] = None
    # The limits of core/limits.py; their defaults are stated there, once.
    max_request_bytes: Annotated[int, about("one request's body (stage-in files travel in it)", ge=1, le=MAX_BYTES)] = (
        Limits.max_request_bytes)
    max_jobs_per_request: Annotated[int, about("jobs in one request", ge=1, le=MAX_COUNT)] = Limits.max_jobs_per_request
    max_pending_jobs_per_user: Annotated[int, about("waiting or held jobs of one user", ge=1, le=MAX_COUNT)] = (
        Limits.max_pending_jobs_per_user)
    max_pending_tasks_per_user: Annotated[int, about("their array tasks, all counted", ge=1, le=MAX_COUNT)] = (
        Limits.max_pending_tasks_per_user)
    max_array_size: Annotated[int, about("tasks in one array", ge=1, le=MAX_INDEX + 1)] = Limits.max_array_size
    max_name_bytes: Annotated[int, about("a job's name", ge=1, le=MAX_BYTES)] = Limits.max_name_bytes
    max_path_bytes: Annotated[int, about("each path a job names", ge=1, le=MAX_BYTES)] = Limits.max_path_bytes
    max_env_vars: Annotated[int, about("variables in a job's environment", ge=1, le=MAX_COUNT)] = Limits.max_env_vars
    max_env_bytes: Annotated[int, about("a job's environment, names and values", ge=1, le=MAX_BYTES)] = Limits.max_env_bytes
    max_script_bytes: Annotated[int, about("a job's script", ge=1, le=MAX_BYTES)] = Limits.max_script_bytes
    max_stage_in_bytes: Annotated[int, about("the files staged in with one job", ge=1, le=MAX_BYTES)] = Limits.max_stage_in_bytes
    max_job_bytes_per_user: Annotated[int, about("the scripts, environments and staged-in files of one user's "
                                                 "unfinished jobs, together", ge=1, le=MAX_BYTES)] = (
        Limits.max_job_bytes_per_user)
    connections: Annotated[ConnectionsSection, about(
        "requests and connections before their peer is known ([controller.connections])")] = ConnectionsSection()
    max_stage_out_bytes: Annotated[int, about("the files one attempt stages out, kept by the controller until "
                                              "fetched; a file over it is refused whole", ge=1, le=MAX_BYTES)] = (
        Limits.max_stage_out_bytes)

    def limits(self) -> Limits:
        return Limits(**{key: getattr(self, key) for key in Limits.KEYS})


class RlimitsSection(Section, frozen=True):
    """[execd.rlimits]: resource limits every job starts with; -1 is unlimited. The names are
    those the shepherd sets (shepherd/setup.py RLIMITS)."""

    core: Annotated[Annotated[int, Meta(ge=-1, le=MAX_RLIMIT)] | None, about("core file size, bytes")] = None
    cpu: Annotated[Annotated[int, Meta(ge=-1, le=MAX_RLIMIT)] | None, about("CPU time, seconds")] = None
    data: Annotated[Annotated[int, Meta(ge=-1, le=MAX_RLIMIT)] | None, about("data segment, bytes")] = None
    fsize: Annotated[Annotated[int, Meta(ge=-1, le=MAX_RLIMIT)] | None, about("size of a file written, bytes")] = None
    nofile: Annotated[Annotated[int, Meta(ge=-1, le=MAX_RLIMIT)] | None, about("open files")] = None
    nproc: Annotated[Annotated[int, Meta(ge=-1, le=MAX_RLIMIT)] | None, about("processes of the job's user")] = None
    stack: Annotated[Annotated[int, Meta(ge=-1, le=MAX_RLIMIT)] | None, about("stack size, bytes")] = None
    # `as` is a Python keyword: the field is `as_`, the key stays `as`.
    as_: Annotated[Annotated[int, Meta(ge=-1, le=MAX_RLIMIT)] | None, about("address space, bytes")] = msgspec.field(default=None, name="as")
    memlock: Annotated[Annotated[int, Meta(ge=-1, le=MAX_RLIMIT)] | None, about("locked memory, bytes")] = None

    def set(self) -> dict[str, int]:
        """The limits the file sets, by the names the shepherd reads."""
        return {info.encode_name: value for info in msgspec.structs.fields(self)
                if (value := getattr(self, info.name)) is not None}


class ExecdSection(Section, frozen=True):
    """[execd]: the node daemon, its attempts' cleanup, and what each shepherd is told."""

    node_name: Annotated[str | None, about("this node's name (unset: the host name)")] = None
    controller: Annotated[str | list[str] | None, about(
        "the controller on another host, https://ADDR:PORT, or a list of them (controllers sharing one "
        "PostgreSQL store: the node follows the active one); unset: the local socket; written by `drover join`")] = None
    tls_cert: Annotated[str | None, about("this node's certificate, naming the node (PEM), for `controller`")] = None
    tls_key: Annotated[str | None, about("its private key (PEM)")] = None
    tls_ca: Annotated[str | None, about("the cluster's CA, which the controller's certificate must chain to (PEM)")] = None
    reconnect_max_s: Annotated[float, about(
        "the longest wait between tries to reach a controller that refused the node: the wait doubles from "
        "1 s up to this (from 0.05 s up to 2 s, or this if less, while no controller answers), each drawn at "
        "random from its upper half, and starts again once a controller takes the node", ge=1, le=3600)] = 30.0
    ends_at: Annotated[Annotated[float, Meta(ge=0, le=2**40)] | None, about(
        "when the node goes away for good, in Unix seconds (a node inside an outer scheduler's allocation, "
        "written by `drover alloc worker`): the controller starts no job here that would run past it")] = None
    cpus: Annotated[Annotated[int, Meta(ge=0, le=MAX_CPUS)] | None, about("CPUs the node offers (unset or 0: all this process may use)")] = None
    memory_mib: Annotated[Annotated[int, Meta(ge=0, le=MAX_MEMORY_MIB)] | None, about("memory the node offers, MiB (unset or 0: all)")] = None
    gres: Annotated[list[str] | None, about("generic resources the node offers, Slurm's way: "
                                            "[\"gpu:a100:2\", \"gpu:v100:1\", \"nic:1\"] (unset: its "
                                            "NVIDIA GPUs, from nvidia-smi or /dev/nvidia*); gpu N is /dev/nvidiaN, "
                                            "which a job not given it may not open where the cgroup v1 devices "
                                            "controller is writable")] = None
    features: Annotated[list[str], about("the node's features, which jobs ask for with --constraint "
                                         "(it always has arch=<Grid Engine's architecture name>)")] = []
    spool: Annotated[str | None, about("the attempts' spool directory (unset: on tmpfs when there is one)")] = None
    exit_hook: Annotated[str | None, about("a site script run as root after each attempt, "
                                           "given its final record on stdin (JSON, `records.FinalRecord`: its "
                                           "`config` is the attempt's `config` record, the job's options under "
                                           "`job`, see [the spool](spool.md))")] = None
    keep_spool: Annotated[bool, about("keep every attempt's spool directory, under <spool>/kept/")] = False
    smtp_host: Annotated[str, about("the mail server for job mail (--mail-type)")] = "localhost"
    smtp_port: Annotated[int, about("its port", ge=1, le=65535)] = 25
    mail_tries: Annotated[int, about("tries before a job's mail is given up", ge=1, le=MAX_TRIES)] = 5
    exit_hook_tries: Annotated[int, about("tries before a failing exit hook is given up (the job's end is "
                                          "reported all the same)", ge=1, le=MAX_TRIES)] = 5
    stage_out_tries: Annotated[int, about("tries before output files the controller does not take are given up "
                                          "(not counted while it is unreachable)", ge=1, le=MAX_TRIES)] = 5
    record_tries: Annotated[int, about("tries before writing an attempt's final record to the spool is given up "
                                       "(the job's end is reported from the shepherd's records)", ge=1, le=MAX_TRIES)] = 5
    remove_tries: Annotated[int, about("tries before removing an attempt's spool is given up (it is left as "
                                       "<spool>/removing.<attempt> for an operator)", ge=1, le=MAX_TRIES)] = 5
    identity_tries: Annotated[int, about("tries to switch to the job's owner before the attempt fails", ge=1, le=MAX_TRIES)] = 3
    identity_retry_s: Annotated[float, about("seconds between those tries", ge=0.0, le=3600.0)] = 10.0
    diagnostics_setuid: Annotated[str | None, about(
        "a site script run when the switch to the owner fails; its output joins the error")] = None
    chdir_tries: Annotated[int, about("tries to enter the job's working directory", ge=1, le=MAX_TRIES)] = 3
    chdir_retry_s: Annotated[float, about("seconds between those tries", ge=0.0, le=3600.0)] = 2.0
    diagnostics_chdir: Annotated[str | None, about(
        "a site script run when the working directory cannot be entered, given the job's id and the "
        "directory")] = None
    diagnostics_user: Annotated[str | None, about(
        "the user the diagnostics scripts run as, never root (unset: the service account drover where it "
        "exists, else nobody)")] = None
    debug_shepherd_s: Annotated[float, about("each shepherd waits this many seconds right after it starts, its pid in the node's log, for a "
        "debugger to attach (at most 3600; DROVER_DEBUG_SHEPHERD in the execd's environment overrides it)", ge=0.0, le=float(MAX_DEBUG_PAUSE_S))] = 0.0
    prolog: Annotated[str | None, about("the node's prolog, run as root before every job")] = None
    epilog: Annotated[str | None, about("the node's epilog, run as root after every job")] = None
    pe_start: Annotated[str | None, about("run as root before each job of a parallel environment (--pe), before "
                                          "its PE's start_proc_args")] = None
    pe_stop: Annotated[str | None, about("run as root after each job of a parallel environment, after its PE's "
                                         "stop_proc_args")] = None
    method_timeout_s: Annotated[float, about("seconds a prolog, epilog or PE method may run", ge=1.0, le=7 * 86400.0)] = 600.0
    rlimits: Annotated[RlimitsSection, about("resource limits for every job ([execd.rlimits])")] = RlimitsSection()
    stage_out_limit_bytes: Annotated[int, about("files staged out per attempt; what is over is named, "
                                                "not sent", ge=0, le=MAX_BYTES)] = 64 * MIB
    pids_max: Annotated[Annotated[int, Meta(ge=0, le=MAX_PIDS)] | None, about(
        "processes and threads one job may have at once (its cgroup's pids.max; a fork over it fails, and the "
        "job's record says it hit its process limit); unset: the host's kernel.pid_max / (its CPUs + 1), "
        "between 1024 and 65536; 0: no limit")] = None
    require_signed_jobs: Annotated[bool, about("run only jobs their owners signed with MUNGE (set by `drover join` "
                                               "where munged runs, unless given --no-munge)")] = False
    munge_socket: Annotated[str, about("this host's munged, which opens the jobs' signatures")] = MUNGE_SOCKET
    signed_job_max_age_s: Annotated[float, about("how old a job's signature may be when an attempt of it "
                                                 "starts", ge=1.0, le=3650 * 86400.0)] = 30 * 86400.0
    allow_root_jobs: Annotated[bool, about("with require_signed_jobs: run jobs signed by root")] = False
    sample_s: Annotated[float, about("how often each running job's memory and CPU are sampled and sent to the "
                                     "controller (`drover top`, `drover show`)", ge=0.1, le=3600.0)] = 10.0
    enforce_cpu: Annotated[Literal["auto", "on", "off"], about(
        "renice a job whose CPU use stays over its CPUs (auto: only where no cpuset or CPU quota "
        "holds it)")] = "auto"
    enforce_memory: Annotated[Literal["auto", "on", "off"], about(
        "renice and warn a job over its memory request, and end it as OUT_OF_MEMORY over "
        "memory_hard_factor times it (auto: only where no cgroup memory limit acts)")] = "auto"
    cpu_tolerance: Annotated[float, about("how far over its CPUs a job may go before it is reniced "
                                          "(0.25: 25 %), over the mean of its last three samples", ge=0.0, le=100.0)] = 0.25
    memory_hard_factor: Annotated[float, about("where no cgroup memory limit acts, a job over its request times "
                                               "this ends as OUT_OF_MEMORY (0: never, warn only); between the "
                                               "request and this it is warned and reniced", ge=0.0, le=1000.0)] = 1.5
    starter_method: Annotated[str | None, about(
        "an absolute command that starts every job of the node in its place, as the job's owner, given the "
        "job's script (or command line) as its arguments (Grid Engine's starter_method, the Accelerator's "
        "vovtasker -E; a queue's own wins)")] = None
    suspend_method: Annotated[str | None, about(
        "Grid Engine's suspend_method for every queue that sets none: a signal (SIGUSR1, 10) sent to the job "
        "instead of freezing it, or an absolute command with arguments and placeholders ($job_pid, $job_id "
        "...), run as the job's owner (docs/methods.md; unset: freeze the whole attempt)")] = None
    resume_method: Annotated[str | None, about(
        "Grid Engine's resume_method, the same way (unset: thaw the whole attempt)")] = None
    terminate_method: Annotated[str | None, about(
        "Grid Engine's terminate_method, the same way, in place of SIGTERM when a job is stopped or reaches "
        "its time limit; SIGKILL still follows kill_grace_s later (unset: SIGTERM)")] = None

    def controllers(self) -> list[str]:
        """`controller` as a list (empty: the local socket)."""
        if self.controller is None:
            return []
        return [self.controller] if isinstance(self.controller, str) else list(self.controller)

    def __post_init__(self) -> None:
        if isinstance(self.controller, list) and not self.controller:
            raise ValueError("controller must name at least one controller, or be left unset")
        check_starter_method(self.starter_method)
        if self.memory_hard_factor != 0 and self.memory_hard_factor < 1:
            raise ValueError(f"memory_hard_factor must be 0 (no hard limit) or 1 or more, not {self.memory_hard_factor}")
        if self.pids_max is not None and not 0 <= self.pids_max <= MAX_PIDS:
            raise ValueError(f"pids_max must be between 0 (no limit) and {MAX_PIDS}, not {self.pids_max}")
        _check_methods(self)


def check_starter_method(command: str | None) -> None:
    """A starter method is an absolute path to a program, run with the job's as its arguments."""
    if command is not None and (not command.startswith("/") or any(c.isspace() for c in command)):
        raise ValueError(f"starter_method must be the absolute path of a program (no arguments), not {command!r}")


class QueueSection(Section, frozen=True):
    """[queues.NAME]: a queue jobs may name with --queue, and its methods ("default" always exists).
    Each node runs the commands (prolog, epilog, starter and the other methods) of its own
    drover.toml, never the controller's: on a joined node, set them in that node's."""

    prolog: Annotated[str | None, about("run as root before each job of the queue, after the node's prolog")] = None
    epilog: Annotated[str | None, about("run as root after each job of the queue, before the node's epilog")] = None
    priority: Annotated[int, about("the queue's priority: its jobs' queue factor is this over the highest "
                                   "queue priority, weighed by [scheduler] priority_weight_queue", ge=0, le=65533)] = 0
    default_time_s: Annotated[Annotated[int, Meta(ge=1, le=MAX_TIME_LIMIT_S)] | None, about("the time limit of a job of the queue that names none (Slurm's "
                                                "DefaultTime; default: max_time_s)")] = None
    max_time_s: Annotated[Annotated[int, Meta(ge=1, le=MAX_TIME_LIMIT_S)] | None, about("the longest time limit a job of the queue may ask for; longer is "
                                            "refused at submission (Slurm's MaxTime)")] = None
    owner: Annotated[str | None, about("a user who manages the queue (stop, start, drain, its limits and window) "
                                       "besides the operators")] = None
    nodes: Annotated[list[str] | None, about("the nodes its jobs may run on, names or patterns "
                                             "([\"gpu*\", \"big1\"]; unset: every node)")] = None
    max_running: Annotated[Annotated[int, Meta(ge=1, le=MAX_COUNT)] | None, about("tasks of the queue running at once")] = None
    max_running_per_user: Annotated[Annotated[int, Meta(ge=1, le=MAX_COUNT)] | None, about("tasks of one user in the queue running at once")] = None
    max_memory_mib: Annotated[Annotated[int, Meta(ge=1, le=MAX_MEMORY_MIB)] | None, about("the most memory a task of the queue may ask for, MiB; more is "
                                                "refused at submission")] = None
    mail_finished: Annotated[bool, about("mail when the last job of the queue finishes (jobd's mailfinished): to "
                                         "the queue's owner, else to that job's --mail-user, else its owner")] = False
    nice: Annotated[int, about("added to the nice of the queue's jobs (0..19; jobd's queue nice)", ge=0, le=19)] = 0
    window: Annotated[str | None, about("when the queue starts jobs: \"Mon-Fri 18:00-08:00; Sat,Sun\", "
                                        "\"nights\", \"weekends\" (unset: always)")] = None
    enforce_cpu: Annotated[Literal["auto", "on", "off"] | None, about(
        "the node's [execd] enforce_cpu for the queue's jobs (unset: the node's)")] = None
    enforce_memory: Annotated[Literal["auto", "on", "off"] | None, about(
        "the node's [execd] enforce_memory for the queue's jobs (unset: the node's)")] = None
    starter_method: Annotated[str | None, about(
        "an absolute command that starts each job of the queue in its place, as the job's owner, given the "
        "job's script (or command line) as its arguments (Grid Engine's queue_conf starter_method)")] = None
    suspend_method: Annotated[str | None, about(
        "Grid Engine's suspend_method for the queue's jobs: a signal or an absolute command (docs/methods.md; "
        "unset: the node's [execd] suspend_method)")] = None
    resume_method: Annotated[str | None, about("Grid Engine's resume_method for the queue's jobs "
                                               "(unset: the node's)")] = None
    terminate_method: Annotated[str | None, about("Grid Engine's terminate_method for the queue's jobs "
                                                  "(unset: the node's)")] = None
    notify_s: Annotated[int, about("Grid Engine's notify: a job submitted with --notify (qsub -notify) gets SIGUSR1 "
                                   "this many seconds before it is suspended and SIGUSR2 this many before it is "
                                   "stopped or killed at its time limit", ge=0, le=MAX_NOTIFY_S)] = 60

    def __post_init__(self) -> None:
        check_starter_method(self.starter_method)
        if self.default_time_s is not None and self.max_time_s is not None and self.default_time_s > self.max_time_s:
            raise ValueError(f"default_time_s ({self.default_time_s}) is over max_time_s ({self.max_time_s})")
        if self.window is not None:
            from drover.core.queue_windows import parse_window

            parse_window(self.window)  # a malformed window is refused when the file is read
        _check_methods(self)


def _check_methods(section: ExecdSection | QueueSection) -> None:
    """A suspend, resume or terminate method that is neither a signal nor an absolute command is
    refused when the file is read (method_command.py)."""
    from drover.method_command import METHOD_NAMES, parse_method

    for name in METHOD_NAMES:
        text = getattr(section, name)
        if text is not None:
            parse_method(name, text)


class SchedulerSection(Section, frozen=True):
    """[scheduler]: the multifactor priority and backfill (docs/scheduling.md). With the default
    weights a job's own priority decides, then its submission time."""

    priority_weight_age: Annotated[float, about("weight of the age factor (time pending over priority_max_age_s, "
                                                "at most 1)", ge=0.0, le=MAX_WEIGHT)] = 0.0
    priority_weight_fairshare: Annotated[float, about("weight of the fair-share factor (2^(-usage/shares), "
                                                      "both normalised over all users)", ge=0.0, le=MAX_WEIGHT)] = 0.0
    priority_weight_queue: Annotated[float, about("weight of the queue factor (the queue's priority over the "
                                                  "highest)", ge=0.0, le=MAX_WEIGHT)] = 0.0
    priority_weight_job: Annotated[float, about("weight of the job's own priority (not normalised)", ge=0.0, le=MAX_WEIGHT)] = 1.0
    priority_max_age_s: Annotated[float, about("pending this long, a job's age factor is 1 "
                                               "(Slurm's PriorityMaxAge)", ge=1.0, le=float(MAX_TIME_LIMIT_S))] = 7 * 86400.0
    fairshare_half_life_s: Annotated[float, about("half-life of the users' usage (allocated CPU-seconds) "
                                                  "for fair share (Slurm's PriorityDecayHalfLife)", ge=1.0, le=float(MAX_TIME_LIMIT_S))] = 7 * 86400.0
    shares: Annotated[dict[str, Annotated[float, Meta(ge=0.0, le=MAX_WEIGHT)]], about("each user's shares ([scheduler.shares] alice = 2); "
                                              "users not named have 1")] = {}
    backfill: Annotated[bool, about("EASY backfill on time limits: jobs behind the first blocked one start "
                                    "when they do not delay it")] = True
    full_pass_s: Annotated[float, about("with over 1,000 waiting jobs, how often the full pass runs (backfill, "
                                        "every job's reason); each event between runs the quick pass, up to "
                                        "the first job that must wait for room (Slurm's bf_interval)", ge=0.1, le=3600.0)] = 5.0
    promises: Annotated[bool, about("promise a waiting task the room of a running attempt, which its node starts "
                                    "the moment that attempt ends, without waiting for the controller (many "
                                    "short jobs); a task that cannot start now is promised in the planner's "
                                    "order, one behind each attempt; it shows as waiting (pending, the reason "
                                    "promised) until it starts. false: a slot's next job waits for the end's "
                                    "report and the controller's order")] = True


class CompatSection(Section, frozen=True):
    """[compat]: the Grid Engine and Slurm front ends."""

    min_job_age_s: Annotated[Annotated[int, Meta(ge=0, le=366 * 86400)] | None, about("seconds an ended job stays in squeue and scontrol show job "
                                               "(Slurm's MinJobAge; unset: Slurm's default, 300)")] = None


class StoreSection(Section, frozen=True):
    """[store]: where the controller keeps its jobs (docs/store.md)."""

    url: Annotated[str | None, about("the store's URL: sqlite:///PATH, or postgresql://USER@HOST:PORT/DATABASE "
                                     "for a PostgreSQL server (needs drover[postgres]; a password is better "
                                     "kept in ~/.pgpass than here); unset: SQLite in the state directory")] = None

    def __post_init__(self) -> None:
        if self.url is not None and not self.url.startswith(("sqlite://", "postgresql://", "postgres://")):
            raise ValueError("url must start with sqlite:// or postgresql://")


class EnvironmentSection(Section, frozen=True):
    """[environments.NAME]: a named environment jobs ask for with `drover submit --environment NAME`
    (Altair Accelerator's environments: "switch environment, its .pre scripts"; docs/environments.md).
    A node runs the scripts its own drover.toml names: on a joined node, define it in that node's too."""

    setup: Annotated[str | None, about(
        "an absolute path to a script that bash sources as the job's owner before the job's prolog; the "
        "environment it leaves is the job's; a status other than 0 fails the job, which does not run")] = None
    post: Annotated[str | None, about(
        "an absolute path to a script run with bash as the job's owner after the job's epilog")] = None

    def __post_init__(self) -> None:
        for key in ("setup", "post"):
            path = getattr(self, key)
            if path is not None and (not path.startswith("/") or "\0" in path):
                raise ValueError(f"{key} must be an absolute path, not {path!r}")


def check_environment_name(name: str) -> None:
    """What `--environment A+B` can name: letters, digits, _ . - (not first . or -)."""
    if not name or len(name) > 64 or not all(c.isalnum() or c in "_.-" for c in name) or name[0] in ".-":
        raise ValueError(f"an environment's name is 1 to 64 letters, digits, _ . - (not first . or -), not {name!r}")
class ParallelEnvironmentSection(Section, frozen=True):
    """[parallel_environments.NAME]: a parallel environment jobs ask for with --pe NAME SLOTS (qsub
    -pe), Grid Engine's sge_pe(5); docs/parallel-environments.md. A node runs the procedures its own
    drover.toml gives the PE: on a joined node, set them in that node's too."""

    slots: Annotated[int, about("slots (CPUs) the jobs of this parallel environment may hold at once, in the "
                                "whole cluster", ge=0, le=MAX_SLOTS)]
    start_proc_args: Annotated[str | None, about(
        "run before the job, after the prologs, as the job's owner with its environment (\"root@\" first: as "
        "the node daemon's user, in a clean environment); $pe_hostfile, $host, $job_owner, $job_id, $job_name, "
        "$pe, $pe_slots, $processors and $queue are replaced; NONE or unset: nothing")] = None
    stop_proc_args: Annotated[str | None, about("run after the job, before the epilogs; as start_proc_args")] = None
    allocation_rule: Annotated[str, about("$pe_slots (all slots on one node), $fill_up, $round_robin, or a whole "
                                          "number of slots on each node: the last three spread a job over several "
                                          "nodes (docs/parallel-environments.md)")] = "$pe_slots"
    control_slaves: Annotated[bool, about("sge_pe(5)'s flag: true lets a running job of it start tasks on its "
                                          "hosts, each under its own shepherd (qrsh -inherit, drover task "
                                          "start; docs/parallel-environments.md)")] = False
    job_is_first_task: Annotated[bool, about("sge_pe(5)'s flag: the job script is one of the parallel tasks, so "
                                             "its host runs one task fewer at once than the job holds slots there "
                                             "(false for an mpirun that starts a task on every slot)")] = True
    accounting_summary: Annotated[bool, about("sge_pe(5)'s flag: true adds the usage of each task its jobs start on "
                                              "their hosts to the job's one accounting record; false, Grid "
                                              "Engine's default, keeps a record of each task of its own")] = False
    user_lists: Annotated[list[str], about("only these users may use it (empty: everyone)")] = []
    xuser_lists: Annotated[list[str], about("these users may not use it")] = []

    def __post_init__(self) -> None:
        from drover.core.parallel_env import parse_allocation_rule, parse_procedure

        parse_allocation_rule(self.allocation_rule)
        parse_procedure("start_proc_args", self.start_proc_args)
        parse_procedure("stop_proc_args", self.stop_proc_args)
class CheckpointSection(Section, frozen=True):
    """[checkpoints.NAME]: a checkpoint environment jobs may name with --checkpoint (qsub -ckpt),
    Grid Engine's checkpoint(5) (docs/checkpointing.md). A node runs the commands its own drover.toml
    gives it: on a joined node, define it in that node's too."""

    interface: Annotated[str, about("\"application-level\" (Drover runs the commands) or \"userdefined\" (the job "
                                    "checkpoints itself on the signal); kernel-level and transparent are not "
                                    "offered")] = "userdefined"
    ckpt_command: Annotated[str, about("run as the job's owner to checkpoint it: \"none\" or an absolute command, "
                                       "with $job_id $job_name $job_owner $job_pid $ckpt_dir $ckpt_signal "
                                       "$host $queue $task_id")] = "none"
    migr_command: Annotated[str, about("run as the job's owner to checkpoint it before it migrates")] = "none"
    restart_command: Annotated[str, about("checked, not run: as in Grid Engine's application-level interface, "
                                          "the job script runs again on a restart")] = "none"
    clean_command: Annotated[str, about("run as the job's owner after the job ended on its own")] = "none"
    ckpt_dir: Annotated[str | None, about("where checkpoints go: the job's $SGE_CKPT_DIR, made by the "
                                          "shepherd as the job's owner (placeholders allowed)")] = None
    signal: Annotated[str, about("what the job gets to checkpoint (\"none\": no signal)")] = "USR2"
    when: Annotated[str, about("s (on the node daemon's shutdown), m (every min_cpu_interval_s), x (migrate "
                               "when suspended), n (never), r (requeue on node loss)")] = "x"
    min_cpu_interval_s: Annotated[int, about("the period of 'm' checkpoints, in seconds of the job's run "
                                             "time (Grid Engine's min_cpu_interval)", ge=1, le=MAX_INTERVAL_S)] = 300

    def environment(self, name: str) -> CheckpointEnvironment:
        from drover.core.checkpoints import parse_environment

        commands = {key: getattr(self, key) for key in ("ckpt_command", "migr_command", "restart_command",
                                                         "clean_command")}
        return parse_environment(name, self.interface, commands, self.ckpt_dir, self.signal, self.when,
                                 self.min_cpu_interval_s)

    def __post_init__(self) -> None:
        from drover.core.errors import DroverError

        try:
            self.environment("checked")
        except DroverError as error:
            raise ValueError(str(error)) from None


class DroverConfig(Section, frozen=True):
    """The whole drover.toml; a missing file or section means every default."""

    controller: ControllerSection = ControllerSection()
    execd: ExecdSection = ExecdSection()
    queues: dict[str, QueueSection] = {}
    scheduler: SchedulerSection = SchedulerSection()
    licenses: Annotated[dict[str, Annotated[int, Meta(ge=0, le=MAX_INDEX)]], about("[licenses]: counters of the whole cluster (software licences), "
                                              "`matlab = 4`; a task asking --licenses matlab:2 holds 2 "
                                              "while it runs")] = {}
    compat: CompatSection = CompatSection()
    store: StoreSection = StoreSection()
    environments: Annotated[dict[str, EnvironmentSection], about(
        "[environments.NAME]: named environments, with a setup script and a post script")] = {}
    parallel_environments: Annotated[dict[str, ParallelEnvironmentSection], about(
        "[parallel_environments.NAME]: Grid Engine's parallel environments (sge_pe(5))")] = {}

    checkpoints: dict[str, CheckpointSection] = {}

    def __post_init__(self) -> None:
        from drover.core.errors import DroverError

        for name in self.environments:
            check_environment_name(name)
        for name, section in self.checkpoints.items():
            try:
                section.environment(name)
            except DroverError as error:
                raise ValueError(f"[checkpoints.{name}] {error}") from None
