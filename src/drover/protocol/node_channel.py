"""Messages on the long-lived channel between the controller and one execd (a WebSocket).

The execd opens the channel and says Hello with what its spool holds; the controller answers
with orders. Orders are idempotent (a repeated StartAttempt for an attempt the node knows is
ignored), and so are reports (an Exited report for an attempt already recorded is acknowledged
again and changes nothing), so either side may resend after a reconnect.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterator
from typing import Any

import msgspec

from drover.records import AttemptOrder, ExitStatus, GivenUpStep, Usage


class KnownAttempt(msgspec.Struct):
    attempt: str  # "<job>.<task>.<attempt>"
    running: bool
    # Running is also said of a promised attempt (an order with `after`), which the node holds,
    # prepared, until the attempt it follows ends: not started, so not to be counted as started.
    promised: bool = False
    # When its job started, on the node's clock, where the node saw it start: a controller that
    # missed the attempt's Started report (it was down, or had not committed it yet) records the
    # start at this time, not at the hello's. None: not started, or not known (re-attached after
    # the node daemon restarted), or a node daemon of an earlier version.
    started_at: float | None = None
    # Started in place (StartPromisedNow) on the CPUs the controller gave it then, not those of
    # its order: said of a running attempt, whose Started report may have been lost.
    moved: bool = False
    # Whether its job has started: False while its shepherd sets it up and runs its prologs (the
    # job may never start: a prolog that fails, a stop meanwhile), and the node reports Started
    # when it does. None: a node daemon of an earlier version, which says running of both.
    job_started: bool | None = None


class Hello(msgspec.Struct, tag="hello"):
    node: str
    cpus: int
    memory_mib: int
    attempts: list[KnownAttempt] = []
    # Its generic resources, one string per device in index order within each name:
    # "gpu:a100" (device gpu N of type a100), "nic" (untyped); and its features.
    gres: list[str] = []
    features: list[str] = []
    # The attempts whose parallel tasks run on the node (execd/pe_tasks.py): the controller stops
    # those of an attempt that no longer runs.
    pe_task_attempts: list[str] = []
    # The parallel tasks the node knows ("<attempt>/<petask>"): those running, and those whose end
    # it reports until the controller acknowledges it. The controller records the end of any
    # other it sent the node (its order, or its refusal, was lost with a connection or a node
    # daemon), so the task's caller is not left waiting. None: a node daemon of an earlier version.
    pe_tasks: list[str] | None = None
    # When the node goes away for good (Unix time): a node inside an outer scheduler's allocation
    # (`drover alloc`) says when the allocation ends; the controller starts nothing there that
    # would run past it. None: it stays.
    ends_at: float | None = None
    # It takes StartPromisedNow (a node daemon of an earlier version says nothing of it, and
    # would refuse the frame that carries one): a promise stranded there is taken back instead.
    starts_in_place: bool = False


class Started(msgspec.Struct, tag="started"):
    attempt: str
    job_pid: int
    started_at: float
    pty_socket: str | None = None  # an interactive job's terminal, for `drover run --pty`
    # A promised attempt the controller told to start in place (StartPromisedNow): it started on
    # the CPUs that order gave it, not after the attempt it followed. False: as its order said.
    moved: bool = False


class Exiting(msgspec.Struct, tag="exiting"):
    """The job exited; the node's cleanup pipeline starts. The task becomes COMPLETING."""

    attempt: str
    exit_status: ExitStatus
    usage: Usage | None = None
    started_at: float | None = None


class Progress(msgspec.Struct, tag="progress"):
    """How far the cleanup pipeline got (HTCondor starter's staged cleanup); shown by `drover show`."""

    attempt: str
    done: list[str]
    step: str | None = None  # the step that failed last, if the pipeline is stopped
    tries: int = 0
    error: str | None = None
    # True: `step` still failed after its bounded tries and is given up; the pipeline goes on
    # without it. The controller keeps it with the attempt and acknowledges it (Ack kind
    # "given_up:<step>").
    given_up: bool = False


class Exited(msgspec.Struct, tag="exited"):
    """Cleanup step 5: the final report. The controller records the outcome once and acks."""

    attempt: str
    exit_status: ExitStatus
    usage: Usage | None = None
    started_at: float | None = None
    done: list[str] = []  # the cleanup steps done, this one included
    given_up: list[GivenUpStep] = []  # the steps before it that were given up, with tries and errors


class File(msgspec.Struct):
    """A file carried through the controller: staged in before the job, or out after it."""

    name: str  # relative to the job's working directory
    data: bytes
    mode: int = 0o644


STAGE_OUT_CHUNK_BYTES = 1 << 20  # one StagedChunk's data: 1 MiB (about 1.4 MiB on the wire)
FRAME_BYTES = 4 << 20  # a frame of several messages is cut before it grows past this (`frames`)


class StagedChunk(msgspec.Struct, tag="staged_chunk"):
    """Cleanup step 2, in pieces: bytes of one staged-out file from `offset`. The controller
    writes them into a temporary file of the attempt's and answers each with ChunkKept, so one
    file at a time is in flight, a chunk at a time, however big the files are; the StagedOut
    that follows names the whole files."""

    attempt: str
    record: str  # the file's record in the attempt's spool: a number, unique within the attempt
    offset: int
    data: bytes
    size: int  # the whole file's size, for the controller's limit


class ChunkKept(msgspec.Struct, tag="chunk_kept"):
    """The controller's answer to a StagedChunk: how much of the file it holds, from its start.
    `have` may be less than the chunk's end (it lost what it had: the node goes on from there)
    or more (it has the file from an earlier try: the node skips ahead)."""

    attempt: str
    record: str
    have: int = 0
    refused: str | None = None  # it will not keep this file at all (over its limit): the reason
    error: str | None = None  # it cannot keep it now (its disk): the step fails and is tried again


class SentFile(msgspec.Struct):
    """A staged-out file whose bytes went ahead in StagedChunks."""

    name: str  # relative to the job's working directory
    record: str
    size: int
    sha256: str  # the controller checks the bytes it holds against it before keeping them
    mode: int = 0o644


class StagedOut(msgspec.Struct, tag="staged_out"):
    """Cleanup step 2: the job's declared output files (and its output, when the submitter
    cannot see the node's files), for the controller to keep until they are fetched."""

    attempt: str
    files: list[File]  # carried in the message itself (small; nodes of this version send `sent`)
    skipped: list[str] = []  # over the node's size limit: "name: the limit" (or the name alone), not sent
    refused: list[str] = []  # "name: reason" — a link, a FIFO, not the owner's to read: not sent
    sent: list[SentFile] = []  # sent ahead in StagedChunks

    def names(self) -> list[str]:
        return [f.name for f in self.files] + [f.name for f in self.sent]


class Suspended(msgspec.Struct, tag="suspended"):
    """The attempt was frozen (suspended=True) or thawed (False) on request."""

    attempt: str
    suspended: bool


class StartAttempt(msgspec.Struct, tag="start"):
    attempt: str
    config: AttemptOrder  # checked against its type when the node decodes the order
    script: str
    stage_in: list[File] = []  # written into the working directory before the job starts
    # A promise: the attempt (of this node) whose end frees the room this one is given. The node
    # prepares it now and starts it the moment that attempt's shepherd is gone, without waiting
    # for the controller (at once if it is gone already). None: start now.
    after: str | None = None


class StartPromisedNow(msgspec.Struct, tag="start_promised_now"):
    """Start a promised attempt now, on `cpu_ids` (room freed beside it on this node), instead of
    when the attempt it follows ends: the same attempt, its config's CPUs rewritten. Ignored for
    an attempt that is no longer promised here (it started already, or ended): a repeat is harmless."""

    attempt: str
    cpu_ids: list[int]


class SignalAttempt(msgspec.Struct, tag="signal"):
    attempt: str
    action: str  # "terminate" (warning signal, grace, SIGKILL), "suspend", "resume", or a signal name
    why: str = ""  # for "terminate": "cancel", "requeue", "hold" or "stray" — what the end will mean


class Ack(msgspec.Struct, tag="ack"):
    attempts: list[str]  # reports now recorded; the execd may go on with their cleanup
    # What is acknowledged: "report" (Exited), "stage_out" (StagedOut), "given_up:<step>" (a
    # Progress that gives that step up) or PE_TASK_ACK (PeTaskExited: `attempts` are then
    # "<attempt>/<petask>").
    kind: str = "report"


PE_TASK_ACK = "pe_task"
# How often a node says how it is, unless the controller says otherwise ([controller] heartbeat_s).
HEARTBEAT_S = 10.0


class Welcome(msgspec.Struct, tag="welcome"):
    node: str
    heartbeat_s: float = HEARTBEAT_S  # how often the node says how it is; silent for three, it is DOWN
    # The controller takes staged-out files in StagedChunks; a controller of an earlier version
    # (which says nothing of it) takes them only whole, in the StagedOut.
    staged_chunks: bool = False


class Heartbeat(msgspec.Struct, tag="heartbeat"):
    """Every `heartbeat_s`: the node is there, and how busy its host is (all of its processes,
    not only Drover's jobs). Kept in memory by the controller, never written to the store."""

    load: float  # the 1-minute load average
    memory_free_mib: int  # memory available for new processes (MemAvailable)
    attempts: int  # attempts the node runs or is cleaning up after


class Sample(msgspec.Struct, kw_only=True):
    """What one running attempt used at `at`: from its cgroup where it has one (memory then
    counts the page cache it dirtied), else summed over its processes."""

    attempt: str
    at: float  # Unix time
    memory_bytes: int  # the cgroup's charge where there is one, else the processes' RSS
    rss_bytes: int  # the processes' resident sets, summed
    peak_bytes: int  # the most `memory_bytes` (or the cgroup's own peak) seen since the job started
    cpu: float  # cores used since the previous sample (1.0: one core, all the time)
    cpu_average: float  # cores used on average since the job started
    memory_average_bytes: int  # the mean of the samples taken so far
    processes: int
    threads: int
    read_bytes: int | None = None  # summed over its processes, where the node may read them
    write_bytes: int | None = None
    cmd: str = ""  # the command line of its biggest process (by resident memory), truncated


class Samples(msgspec.Struct, tag="samples"):
    """Every `sample_s`: the latest sample of each attempt the node runs, in one message. An
    attempt of this node missing from it is no longer running. In memory only, never stored."""

    samples: list[Sample]


class Enforced(msgspec.Struct, tag="enforced"):
    """The node acted on an attempt that used more than it reserved (execd/enforcement.py):
    "reniced" (its nice raised), "memory_warning" or "killed_over_memory", with the figures.
    Said once; the controller records it as an event of the job."""

    attempt: str
    action: str
    detail: dict[str, str | int | float | None] = {}


# -- a user's view of an attempt on its node: output files and the terminal -----------------------
# `drover logs`, `drover run` and `drover run --pty` of a user on any host reach the node that runs
# the job through the controller, over this channel (the node is never reached by users directly).


class ReadOutput(msgspec.Struct, tag="read_output"):
    """Read an attempt's output file from `offset` (at most `limit` bytes). The node reads it as
    the job's owner, at the path its own records hold for the attempt: the request names only
    the attempt and which stream."""

    request: int
    attempt: str
    stream: str  # "stdout" or "stderr"
    offset: int
    limit: int
    petask: str = ""  # a task of a parallel job on this node (StartPeTask): its output, not the attempt's


class OutputRead(msgspec.Struct, tag="output_read"):
    request: int
    data: bytes = b""
    size: int | None = None  # the file's size as it was read; None: it does not exist (yet)
    error: str | None = None  # why it cannot be read (not the owner's to read, not a file, ...)


class OpenTerminal(msgspec.Struct, tag="open_terminal"):
    """Connect session `session` to an interactive attempt's terminal (shepherd/pty_relay.py)."""

    session: int
    attempt: str


class TerminalInput(msgspec.Struct, tag="terminal_input"):
    """Bytes for the terminal, in the relay's own frames (keys, window sizes), passed through."""

    session: int
    data: bytes


class CloseTerminal(msgspec.Struct, tag="close_terminal"):
    session: int


class TerminalOutput(msgspec.Struct, tag="terminal_output"):
    session: int
    data: bytes


class TerminalClosed(msgspec.Struct, tag="terminal_closed"):
    """The terminal hung up (the job ended), or could not be reached (`why`)."""

    session: int
    why: str = ""


# -- a job's event log, appended to on a node as the job's owner ---------------------------------
# A controller that runs as an unprivileged service user cannot become a job's owner: the node on
# the host the job was submitted from appends to its `--event-log` instead, with the writer the
# controller would have started (controller/upkeep/event_log.py; execd/event_logs.py on the node).


class AppendEventLog(msgspec.Struct, tag="append_event_log"):
    """Append these lines of a job's event log as its owner; the writer skips the sequence numbers
    the file holds already. `credential` and `signed`: the job's signature and what it covers
    (cluster/signing.py), by which a node that runs signed jobs only checks that `path` is the
    event log the owner signed."""

    request: int
    job: int
    owner: str
    path: str
    lines: list[tuple[int, str]]  # (sequence number, the event's JSON line)
    credential: str | None = None
    signed: dict[str, object] | None = None


class EventLogAppended(msgspec.Struct, tag="event_log_appended"):
    request: int
    last: int = 0  # the job's last sequence number in the file
    error: str | None = None  # why nothing was appended (the node's refusal, or the writer's)


# -- tasks of a running parallel job, started on the hosts of its allocation -------------------
# GE's tight integration (`qrsh -inherit`): "this job specific spool directory is created on each
# execution host involved in the execution of the job, for each task a subdirectory <petaskid>
# is created that holds the task specific spool files". The controller keeps the tasks in memory
# only (controller/nodes/pe_tasks.py); the node runs each under a shepherd of its own (execd/pe_tasks.py).


class StartPeTask(msgspec.Struct, tag="start_pe_task"):
    """Run `script` (a command line) as task `petask` of the attempt, in spool/<attempt>/<petask>/.
    `config`: the attempt's order as its master got it, with this host's CPUs, the task's working
    directory and environment, and `pe_task` set."""

    attempt: str
    petask: str
    config: AttemptOrder
    script: str


def task_script(argv: list[str]) -> str:
    """A task's command line as the script the shepherd execs without bash (shepherd/launch.py,
    `command_of`, reads it back): an `exec` line of the words, each quoted."""
    return "#!/bin/bash\nexec " + " ".join(shlex.quote(word) for word in argv) + "\n"


class StopPeTasks(msgspec.Struct, tag="stop_pe_tasks"):
    """The attempt ends: stop every task of it on this node (their shepherds end them, their
    cgroups with them) and remove their spool directories. With `petask`, only that task is
    stopped (its caller was interrupted, as Grid Engine's qrsh forwards its signals), and the
    attempt goes on."""

    attempt: str
    petask: str | None = None


class SignalPeTasks(msgspec.Struct, tag="signal_pe_tasks"):
    """The attempt was suspended, resumed or signalled (SignalAttempt to its master): the same
    for every task of it on this node, through each task's shepherd (its cgroup frozen or thawed,
    the signal to its process group), as Grid Engine's qmod -sj and qsig reach the tasks of a
    tightly integrated job. `action`: "suspend", "resume", or a signal name; never "terminate"
    (StopPeTasks) nor a checkpoint."""

    attempt: str
    action: str


class PeTaskExited(msgspec.Struct, tag="pe_task_exited"):
    """A task of a parallel job ended on this node: how, and what it used."""

    attempt: str
    petask: str
    exit_status: ExitStatus
    usage: Usage | None = None


NodeMessage = (Hello | Heartbeat | Samples | Started | Suspended | Exiting | Progress | StagedChunk | StagedOut
               | Exited | Enforced | OutputRead | TerminalOutput | TerminalClosed | EventLogAppended
               | PeTaskExited)
ControllerMessage = (Welcome | StartAttempt | StartPromisedNow | SignalAttempt | Ack | ChunkKept
                     | ReadOutput | OpenTerminal | TerminalInput | CloseTerminal | AppendEventLog
                     | StartPeTask | StopPeTasks | SignalPeTasks)

node_decoder = msgspec.json.Decoder(list[NodeMessage])
controller_decoder = msgspec.json.Decoder(list[ControllerMessage])
encoder = msgspec.json.Encoder()


def frames(batch: list[Any], limit: int = FRAME_BYTES) -> Iterator[bytes]:
    """The messages of a batch as frames (JSON lists) of at most `limit` bytes each, but for one
    message bigger on its own: a burst of chunks or orders never adds up to a frame that the
    other side's size limit refuses (the controller's is 16 MiB), which would drop the channel
    and every job's messages on it."""
    parts: list[bytes] = []
    size = 0
    for message in batch:
        encoded = encoder.encode(message)
        if parts and size + len(encoded) + 1 > limit:
            yield b"[" + b",".join(parts) + b"]"
            parts, size = [], 0
        parts.append(encoded)
        size += len(encoded) + 1
    if parts:
        yield b"[" + b",".join(parts) + b"]"
