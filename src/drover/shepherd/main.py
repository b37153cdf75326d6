"""The shepherd's sequence for one attempt, numbered after Grid Engine's shepherd
(seeds/gridengine-shepherd-process-flow.txt, "GE") and Altair Accelerator's firing sequence
(seeds/accelerator-vovtasker-firing-sequence.txt, "VOV").

    1. record_pid: our pid (and start time), so a restarted execd can find us   GE: spool files
    2. read_attempt_config: the attempt's config from the spool                 GE: read_config
    3. build_job_environment: the job's environment and its TMPDIR              GE: environment
    4. enter_as_owner: as the owner, open the working directory,                GE: redirection
       stdout/stderr; stage files in                                            VOV 16: chdir
                                                                                HTCondor: input
    5. run_before_job, then start_job: bash SCRIPT (a command line: the         GE: start_child
       command itself, launch), own process group, in its working directory
    6. record_job_pid: the job's pid; hint the execd                            GE: job_pid
    7. supervise_job: forward signals, enforce the time limit                   GE: controls its child
    8. reap_job: reaped with wait4, kill what is left of the job's process      GE: usage
       group; note_out_of_memory: an out-of-memory kill said in the error
       file; run_after_job: the epilogs; stage_out_outputs: as the owner,  HTCondor: output
       collect the stage-out files into the spool
    9. record_outcome: the trace, shepherd_about_to_exit, then exit_status      GE: exit_status
       with the usage in it (last, in one write: its presence means done)

Each step is a function of its own (_run calls them in order), whose docstring names the seed's
step it follows (so each can be tested alone: tests/unit/shepherd/test_sequence_steps.py).

Identity switching, limits, containment in cgroups, prolog and epilog, the named environments
(environments.py, VOV 18/19) and a site's starter method (starter.py, VOV 3) slot in between
these steps; GE's other spool files are spool_files.py's, its trace trace.py's. Nice, CPU affinity and rlimits (VOV 8 and 13, which come before the precmd, VOV 20) are
set in each of the job's processes, its own prolog and epilog too, and in none of the site's
(setup.py). Every record is written with spool.atomic.

Every file operation on the owner's behalf (the working directory, the output files, staged
files in and out) happens with the owner's effective ids (identity.acting_as), beneath its
directory and without following links (userfiles): the shepherd is root on a shared node, and
root never opens a path a user chose. The working directory is opened once, as the owner, and
every process of the attempt enters it through that descriptor, so a link swapped in after the
check cannot move the job into somebody else's directory.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field

from drover.method_command import CommandMethod, SignalMethod
from drover.records import EndRecord, ExitStatus, Usage
from drover.shepherd import (
    checkpoint,
    control,
    environments,
    launch,
    oom_note,
    output_space,
    outputs,
    parallel,
    rss_mark,
    setup,
    spool_files,
    starter,
)
from drover.shepherd.config import ShepherdConfig, read_config
from drover.shepherd.containment import Containment, choose
from drover.shepherd.environment import build_environment, site_environment
from drover.shepherd.failure import StartFailure
from drover.shepherd.identity import Identity, acting_as, from_config, run_diagnostics
from drover.shepherd.lsf_environment import write_hostfile
from drover.shepherd.methods import AFTER_JOB, BEFORE_JOB, Method, methods
from drover.shepherd.methods import run as run_method
from drover.shepherd.pbs_environment import write_nodefile
from drover.shepherd.processes import ProcessOptions
from drover.shepherd.pty_relay import PtyRelay, take_controlling_terminal
from drover.shepherd.signals import SignalInbox, held_signals, reset_for_exec
from drover.shepherd.supervise import Ending, supervise
from drover.shepherd.trace import Trace
from drover.shepherd.transfer import stage_in, stage_out, staged_in_files
from drover.shepherd.userfiles import open_output
from drover.spool import layout
from drover.spool.atomic import read_json, write_atomically, write_json
from drover.spool.outcome import write_outcome
from drover.spool.process import format_pid_record, read_starttime
from drover.spool.signal_record import SignalReader


def run(spool_dir: str) -> int:
    # GE Initialization: "Setup signal handlers and signal masks", before anything else: no
    # signal sent to us can kill us, and none meant for the job is missed (signals.py).
    inbox = SignalInbox()
    spool = layout.SpoolDir(os.path.dirname(spool_dir.rstrip("/")), os.path.basename(spool_dir.rstrip("/")))
    trace = Trace()
    try:
        return _run(spool, trace, inbox)
    except Exception as error:  # never leave the execd waiting: record whatever went wrong
        _record_failure(spool, trace, f"the shepherd failed: {error!r}", traceback.format_exc())
        return 1
    finally:
        inbox.close()  # a shepherd may serve another attempt after this one (warm_shepherds.py)


def _run(spool: layout.SpoolDir, trace: Trace, inbox: SignalInbox) -> int:
    """The module's nine steps in order, with what slots in between them."""
    pid = record_pid(spool, trace)  # 1
    config = read_attempt_config(spool, trace, inbox, pid)  # 2
    containment, limits = contain(spool, config, trace)
    identity = from_config(config)  # VOV 6/11: who the job runs as (resolved by the execd, with the owner's groups cached)
    attempt = build_job_environment(spool, trace, config, containment, limits, identity)  # 3
    started_at, started_mono = time.time(), time.monotonic()
    try:
        _check_identity(spool, config, identity)  # VOV 11/14: the switch to the job's owner must work
        control_methods = verify_methods(config, identity)
        opened = enter_as_owner(attempt)  # 4
    except StartFailure as failure:
        return _give_up(spool, trace, containment, attempt.tmpdir, failure)
    around = methods_around_job(attempt, opened)
    try:
        gave_up = run_before_job(attempt, opened, around, inbox)  # 5: the prologs, then the job
        if gave_up is not None:
            return gave_up
        job_pid, relay = start_job(attempt, opened)
    except StartFailure as failure:  # the job could not be started, after its prologs ran
        return _abandon(attempt, opened, around, failure)
    before_start = record_job_pid(attempt, job_pid, inbox, pty=relay is not None)  # 6
    ending, checkpoints = supervise_job(attempt, opened, job_pid, inbox, control_methods,  # 7
                                        relay=relay, before_start=before_start)
    ended_at, wall_s = time.time(), time.monotonic() - started_mono
    pids_refused = reap_job(attempt, job_pid, ending, checkpoints, ended_at)  # 8
    note_out_of_memory(attempt, opened, ending)
    after = run_after_job(attempt, around)
    notes = stage_out_outputs(attempt, opened)
    return record_outcome(attempt, ending, after, notes, pids_refused,  # 9
                          started_at=started_at, ended_at=ended_at, wall_s=wall_s)


@dataclass(slots=True)
class Attempt:
    """The attempt as steps 1 to 3 made it, which every later step reads."""

    spool: layout.SpoolDir
    trace: Trace
    config: ShepherdConfig
    containment: Containment
    limits: setup.Setup  # the nice, CPUs and rlimits of the job's processes (setup.py)
    identity: Identity | None
    tmpdir: str  # the attempt's TMPDIR, the owner's
    env: dict[str, str]  # the job's environment
    checkpoint_problems: list[str] = field(default_factory=list)  # trace lines of a checkpointing job's set-up
    inherited_rss_kib: int | None = None  # the shepherd's high-water mark the job started from (rss_mark.py)


@dataclass(slots=True)
class Opened:
    """What step 4 opened as the job's owner: every process of the attempt enters the working
    directory through `workdir_fd`, and writes to `stdout` and `stderr` (the same descriptor
    when the job has one output file)."""

    workdir_fd: int
    stdout: int
    stderr: int


@dataclass(slots=True)
class Around:
    """The methods that run around the job, and how they run (step 5 and step 8)."""

    before_job: list[Method]
    after_job: list[Method]
    switch: environments.Switch
    options: ProcessOptions  # how the job's own methods run (_popen_options)
    site_options: ProcessOptions | None  # how the site's run (_site_popen_options); None: no method to run
    ran: list[Method] = field(default_factory=list)  # those of before_job that ran


def record_pid(spool: layout.SpoolDir, trace: Trace) -> int:
    """Step 1, GE process flow, spool file "pid": our pid (and start time) first, so that from
    here on a restarted execd can tell we are alive. Our pid."""
    pid = os.getpid()
    write_atomically(spool.record(layout.PID), format_pid_record(pid, read_starttime(pid) or 0))
    trace.step(f"shepherd started (pid {pid})")
    return pid


def read_attempt_config(spool: layout.SpoolDir, trace: Trace, inbox: SignalInbox, pid: int) -> ShepherdConfig:
    """Step 2, GE shepherd: "receives information about the job to be started from the execd":
    the attempt's config, as the execd wrote it. VOV 10: "If VOV_DEBUG_TASKER is set, the
    subtasker sleeps ... (to allow connection of a debugger)": DROVER_DEBUG_SHEPHERD, which the
    node put in the config."""
    with open(spool.record(layout.CONFIG), "rb") as file:
        config = read_config(json.loads(file.read()))
    trace.step("config read")
    if config.debug_pause_s:
        _pause_for_debugger(spool, pid, inbox, config.debug_pause_s)
    return config


def contain(spool: layout.SpoolDir, config: ShepherdConfig, trace: Trace) -> tuple[Containment, setup.Setup]:
    """GE: "set an additional group id to control/monitor all child processes of the job": here
    a cgroup (or a subreaper where there is none): everything the job starts stays inside. Its
    record, for the execd to end it all should we die; GE's spool files "osjobid" and
    "processor_set_number" (spool_files.py). And the job's limits (VOV 5/8/13, GE limits)."""
    given_gpus = set(config.gres.get("gpu", []))
    containment = choose(config.containment_name or spool.name, config.memory_mib, config.cpu_ids,
                         config.cluster, pids_limit(config),
                         [index for index in range(config.node_gpus) if index not in given_gpus])
    write_json(spool.record(layout.CONTAINMENT), containment.record(), mode=0o600)
    limits = setup.for_attempt(config.priority, config.cpu_ids, dict(config.rlimits),
                               config.queue_nice)
    spool_files.write_where(spool, containment.record(), limits.cpus)
    trace.step(f"containment {containment.name}")
    if containment.hidden_gpus:
        trace.step(f"GPUs {','.join(map(str, containment.hidden_gpus))} of the node denied (devices cgroup)")
    return containment, limits


def build_job_environment(spool: layout.SpoolDir, trace: Trace, config: ShepherdConfig, containment: Containment,
                          limits: setup.Setup, identity: Identity | None) -> Attempt:
    """Step 3, GE process flow, "Setting up the job's environment": the job's environment, with a
    TMPDIR of the attempt's own (the owner's); GE's pe_hostfile; a checkpointing job's
    RESTARTED, SGE_CKPT_ENV and SGE_CKPT_DIR (checkpoint.py); VOV 11's HOME, USER, LOGNAME, SHELL."""
    tmpdir = os.path.join(spool.path, "tmp")
    os.makedirs(tmpdir, mode=0o700, exist_ok=True)
    env = build_environment(config, tmpdir)
    env["JOB_SCRIPT"] = spool.record(layout.JOB_SCRIPT)  # GE submit(1): the script, the owner's to read
    parallel.write_hostfiles(config, spool.path, tmpdir)  # GE: pe_hostfile, and $PE_HOSTFILE in TMPDIR
    write_nodefile(config, env, tmpdir)  # PBS: $PBS_NODEFILE, of a job PBS's qsub submitted
    write_hostfile(config, env, tmpdir)  # LSF: $LSB_DJOB_HOSTFILE, of a job LSF's bsub submitted
    checkpoint_problems = checkpoint.prepare(config.checkpoint, spool, identity) if config.checkpoint is not None else []
    env.update(checkpoint.environment(config.checkpoint) if config.checkpoint is not None else {})
    if identity is not None:
        env.update(identity.environment())
        if identity.switches:
            os.chown(tmpdir, identity.uid, identity.gid)
    trace.step("environment built")
    return Attempt(spool, trace, config, containment, limits, identity, tmpdir, env, checkpoint_problems)


def verify_methods(config: ShepherdConfig, identity: Identity | None) -> dict[str, SignalMethod | CommandMethod]:
    """GE Initialization, verify_method: the suspend, resume and terminate methods (control.py),
    and the checkpointing interface (checkpoint.py); StartFailure for one that cannot work."""
    control_methods = control.verify(config, identity)
    checkpoint.verify(config.checkpoint, identity)
    return control_methods


def enter_as_owner(attempt: Attempt) -> Opened:
    """Step 4, VOV 16/17: the working directory, opened by the job's owner (retried); GE
    process flow, "redirection of stdin, stdout, stderr": the job's output files, created as its
    owner; HTCondor's input transfer: the files staged in for it, written beneath its working
    directory as the owner. StartFailure for what cannot be done."""
    config, identity, trace = attempt.config, attempt.identity, attempt.trace
    workdir_fd = _open_workdir(attempt.spool, config, identity)
    trace.step(f"working directory {config.workdir} entered as {identity.user if identity else 'the shepherd'}")
    try:
        staged_in = staged_in_files(attempt.spool)
        with acting_as(identity):
            stdout, stderr = _open_outputs(config)
            try:
                stage_in(staged_in, workdir_fd)
            except StartFailure:
                _close(stdout, stderr)
                raise
    except BaseException:
        os.close(workdir_fd)  # nothing of a failed attempt stays open in its shepherd
        raise
    trace.step("output files opened" + (f", {len(staged_in)} file(s) staged in" if staged_in else ""))
    return Opened(workdir_fd, stdout, stderr)


def methods_around_job(attempt: Attempt, opened: Opened) -> Around:
    """GE: the methods around the job, "prolog, PE start-up" before it and "PE shut-down,
    epilog" after it, PE start and stop only "if the job is a parallel job" (parallel.py); VOV
    18/19: the named environments (environments.py). How methods run is made only where one is
    configured: the site's environment looks up the node daemon's user in the password database
    (about half a millisecond)."""
    config = attempt.config
    before_job, after_job = parallel.with_pe_methods(config, attempt.spool.path, methods(config, BEFORE_JOB),
                                                     methods(config, AFTER_JOB))
    if config.pe_task:
        # GE process flow, tight integration: a task of a parallel job started on one of its
        # hosts is only the command, under its own shepherd: the prologs, epilogs and PE
        # procedures ran (or run) once, around the job's script on its master.
        before_job, after_job = [], []
    switch = environments.Switch(config, attempt.trace)
    options = _popen_options(opened.workdir_fd, attempt.env, opened.stdout, opened.stderr, attempt.identity,
                             attempt.limits)
    site_options = None
    if before_job or after_job:
        site_options = _site_popen_options(config, opened.stdout, opened.stderr, setup.saved(attempt.limits))
    return Around(before_job, after_job, switch, options, site_options)


def run_before_job(attempt: Attempt, opened: Opened, around: Around, inbox: SignalInbox) -> int | None:
    """Step 5, first half. GE: prolog, PE start (and VOV 20, the job's own precmd); a failure
    means the job does not run, and so does a stop (a cancel, requeue or hold) that came
    meanwhile: the job is not started only to be killed. A method that runs is let finish; the
    next one does not start. None when the job is to start; else the attempt gave up (_give_up)."""
    failed = None
    for method in around.before_job:
        if around.switch.due(method):
            around.switch.setup(attempt.env, around.options, attempt.containment)
        around.ran.append(method)
        failed = _run_methods([method], around.options, around.site_options, attempt.containment, attempt.config,
                              trace=attempt.trace)
        if failed is not None or inbox.stop_requested():
            break
    if failed is None and around.switch.due(None):
        around.switch.setup(attempt.env, around.options, attempt.containment)
    stopped = inbox.stop_requested()
    if failed is None and not stopped:
        return None
    if failed is not None:
        reason = f"the {failed[0].level} {failed[0].step} exited with status {failed[1]}; the job did not run"
    else:
        came = "during its prolog" if around.ran else "first"
        reason = f"stopped before the job started (a {_stopped_by(attempt.spool)} came {came})"
    return _abandon(attempt, opened, around, StartFailure(reason), failed, terminated=stopped)


def start_job(attempt: Attempt, opened: Opened) -> tuple[int, PtyRelay | None]:
    """Step 5, GE start_child, VOV 21: the job itself, started from inside the attempt's cgroup
    so it is born a member (_start); VOV 4/9: an interactive job gets a pseudo-terminal,
    relayed to its user. Its pid, and its terminal's relay."""
    identity = attempt.identity
    relay = None
    if attempt.config.job["pty"]:
        relay = PtyRelay(attempt.spool.path, identity.uid if identity is not None and identity.switches else None,
                         undelivered_to=opened.stdout)
    attempt.containment.enter()
    try:
        with held_signals():
            rss_mark.lower_own_mark()
            job_pid = _start(attempt.spool, attempt.config, attempt.env, opened.stdout, opened.stderr, identity,
                             opened.workdir_fd, attempt.limits, relay.slave if relay else None)
            attempt.inherited_rss_kib = rss_mark.own_mark_kib()
    finally:
        attempt.containment.leave()
        if relay is not None:
            os.close(relay.slave)
    return job_pid, relay


def record_job_pid(attempt: Attempt, job_pid: int, inbox: SignalInbox, pty: bool = False) -> list[int]:
    """Step 6, GE process flow, spool file "job_pid": the job's pid, and a hint to the execd
    that it started, which carries the pid and whether the job has a terminal (`pty.sock`), so
    the execd reports the start without reading the records back; the environment it got (GE's spool file "environment"; private: it may
    hold secrets). The signals that came before the job existed, which we kept (the job's own,
    and those the execd wrote into the spool's `signal` record): they go as soon as the job is
    ready for each (supervise.py)."""
    spool = attempt.spool
    write_atomically(spool.record(layout.JOB_PID), f"{job_pid}\n".encode())
    attempt.trace.step(f"job started (pid {job_pid}, containment {attempt.containment.name})")
    before_start = inbox.drain()
    write_atomically(spool.record(layout.ENVIRONMENT),
                     "".join(f"{k}={v}\n" for k, v in sorted(attempt.env.items())).encode(), mode=0o600)
    _hint(spool, "started", str(job_pid), *(["pty"] if pty else []))
    return before_start


def supervise_job(attempt: Attempt, opened: Opened, job_pid: int, inbox: SignalInbox,
                  control_methods: dict[str, SignalMethod | CommandMethod], relay: PtyRelay | None,
                  before_start: list[int]) -> tuple[Ending, checkpoint.Checkpointing | None]:
    """Step 7, GE process flow: the shepherd "controls its child", forwards its signals, "takes
    care of checkpointing/migration of a job"; the time limit (supervise.py). How it ended, and a
    checkpointing job's checkpoints."""
    config, env, identity, limits = attempt.config, attempt.env, attempt.identity, attempt.limits
    checkpoints = _checkpointing(attempt.spool, config, attempt.containment, attempt.checkpoint_problems,
                                 lambda: _popen_options(opened.workdir_fd, env, opened.stdout, opened.stderr,
                                                        identity, limits))
    ending = supervise(job_pid, inbox, config.job["time_limit_s"], config.kill_grace_s, attempt.containment,
                       warning=_warning(config), relay=relay, checkpoint=_signal_number(config.job["checkpoint_signal"]),
                       before_start=before_start, by_record=SignalReader(attempt.spool.record(layout.SIGNAL)),
                       control=_job_control(control_methods, attempt.containment, config, env, opened.workdir_fd,
                                            identity, limits),
                       checkpointing=checkpoints)
    return ending, checkpoints


def reap_job(attempt: Attempt, job_pid: int, ending: Ending, checkpoints: checkpoint.Checkpointing | None,
             ended_at: float) -> int:
    """Step 8, GE: the parent reaped the job with wait4 (supervise.py), which gives its usage;
    HTCondor's starter: what the job left behind is killed, in its process group and in its
    cgroup. A running checkpoint ends. The forks refused at the process limit (0: none)."""
    trace, containment = attempt.trace, attempt.containment
    checkpointed = list(checkpoints.trace) if checkpoints is not None else []  # while the job ran
    trace.extend(sorted(ending.events + ending.ignored + checkpointed))  # each stamped when it happened
    trace.step(f"job ended (wait status {ending.wait_status})", ended_at)
    try:
        os.killpg(job_pid, signal.SIGKILL)  # what the job left behind in its process group...
    except (ProcessLookupError, PermissionError):
        pass
    containment.kill_all()  # ...and everything that escaped it (setsid, double forks)
    # Like an OOM kill: the job hit its process limit (pids.events "max"), which the exit record
    # names, whatever the job's own status says (a fork bomb's shell may still exit 0).
    pids_refused = containment.pids_refused()
    if pids_refused:
        trace.step(f"process limit: {pids_refused} fork(s) refused at pids.max {containment.pids_limit}")
    if checkpoints is not None:  # the clean_command follows a job that ended on its own
        checkpoints.finish(ended_on_its_own=not (ending.terminated or ending.timed_out or ending.out_of_memory))
        trace.extend(checkpoints.trace[len(checkpointed):])
    return pids_refused


def note_out_of_memory(attempt: Attempt, opened: Opened, ending: Ending) -> None:
    """Step 8, as Slurm's step daemon does: an attempt the kernel's out-of-memory killer ended gets
    a line in its error file, which its owner reads first (oom_note.py), written as the owner
    through the descriptor the job wrote to. Before the epilogs: the line follows the job's own."""
    kills = attempt.containment.oom_kills() if ending.out_of_memory else 0
    if not kills or attempt.config.job["pty"]:
        return
    text = oom_note.line(attempt.config, kills, attempt.containment.memory_limit_mib)
    problem = oom_note.append(opened.stderr, text, attempt.identity)
    attempt.trace.step(problem or f"out of memory: {kills} process(es) killed; said in the error file")


def run_after_job(attempt: Attempt, around: Around) -> list[tuple[Method, int]]:
    """Step 8, GE: PE stop, then the epilogs (VOV 22, the job's postcmd; the node's epilog): all
    of them run, each after the named environments' post scripts that are due. Each with its
    exit status."""
    after: list[tuple[Method, int]] = []
    for method in around.after_job:
        if around.switch.post_due(method):
            around.switch.post(around.options, attempt.containment)
        status_of_method = _run_methods([method], around.options, around.site_options, attempt.containment,
                                        attempt.config, stop_on_failure=False, trace=attempt.trace)
        after.append((method, 0 if status_of_method is None else status_of_method[1]))
    if around.switch.post_due(None):
        around.switch.post(around.options, attempt.containment)
    attempt.containment.kill_all()
    return after


def stage_out_outputs(attempt: Attempt, opened: Opened) -> list[str]:
    """Step 8, HTCondor's output transfer, read as the owner: what the job declared, and its
    output when it ran in a scratch directory; the execd's cleanup sends it on from the spool.
    jobd's --mail-output, --done-output and --zap, as the owner (outputs.py). The notes on
    output files that filled their filesystem (output_space.py)."""
    config, identity, trace = attempt.config, attempt.identity, attempt.trace
    notes = output_space.full_outputs(config, opened.stdout, opened.stderr,
                                      identity.uid if identity is not None else os.getuid())
    for note in notes:
        trace.step(note)
    _close(opened.stdout, opened.stderr)
    stage_out(attempt.spool, config, opened.workdir_fd, identity)
    os.close(opened.workdir_fd)
    unfinished = outputs.finish(attempt.spool, config, identity)
    trace.step("output staged out and finished")
    for problem in unfinished:
        trace.step(problem)
    return notes


def record_outcome(attempt: Attempt, ending: Ending, after: list[tuple[Method, int]], notes: list[str],
                   pids_refused: int, started_at: float, ended_at: float, wall_s: float) -> int:
    """Step 9, GE: "shepherd_about_to_exit", then exit_status: written last, since its presence
    means "done", and holding the usage (GE's "exit code" and "usage / accounting information"
    spooled after the job exits), so both are there, whole, or neither is: one atomic write
    where there were two. The containment and the TMPDIR go first. The shepherd's exit code: 0,
    an outcome was recorded."""
    spool, trace, containment = attempt.spool, attempt.trace, attempt.containment
    peak, cpu = containment.peak_memory_bytes(), containment.cpu_time_s()
    containment.remove()
    shutil.rmtree(attempt.tmpdir, ignore_errors=True)
    ru = ending.rusage
    usage: Usage = {
        "user_cpu_s": ru.ru_utime, "sys_cpu_s": ru.ru_stime,
        "max_rss_kib": rss_mark.job_max_rss_kib(ru.ru_maxrss, attempt.inherited_rss_kib), "minor_faults": ru.ru_minflt,
        "major_faults": ru.ru_majflt, "voluntary_switches": ru.ru_nvcsw,
        "involuntary_switches": ru.ru_nivcsw,
        "wall_s": wall_s, "started_at": started_at, "ended_at": ended_at,
        "containment": containment.name,
    }
    if attempt.inherited_rss_kib is not None:
        usage["max_rss_inherited_kib"] = attempt.inherited_rss_kib
    if peak is not None:
        usage["cgroup_peak_memory_bytes"] = peak
    if cpu is not None:
        usage["cgroup_cpu_s"] = cpu
    status = ending.wait_status
    exit_status: EndRecord = {
        "exit_code": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
        "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
        "failure": None,
        "timed_out": ending.timed_out,
        "terminated": ending.terminated,
        "out_of_memory": ending.out_of_memory,
        "methods": [{"step": m.step, "level": m.level, "exit_code": code} for m, code in after],
        "usage": usage,
    }
    if pids_refused:
        exit_status["pids_refused"], exit_status["pids_max"] = pids_refused, containment.pids_limit
    if notes:
        exit_status["notes"] = notes
    trace.step("about to exit; exit_status follows")
    write_outcome(spool, spool.record(layout.TRACE), trace.data())
    spool_files.write_about_to_exit(spool)
    write_outcome(spool, spool.record(layout.EXIT_STATUS), _json(exit_status))
    _hint(spool, "exited")
    return 0


def _abandon(attempt: Attempt, opened: Opened, around: Around, failure: StartFailure,
             failed: tuple[Method, int] | None = None, terminated: bool = False) -> int:
    """The job does not run, after step 4: what it started is killed, the methods that clean up
    after a prolog run (_clean_up_without_job), its output files are closed and finished, and the
    attempt gives up with `failure`. `failed`: the method that failed before the job, if one did."""
    attempt.containment.kill_all()
    cleaned = _clean_up_without_job(around.ran, around.after_job, attempt.config, around.options,
                                    around.site_options, attempt.containment, attempt.trace)
    _close(opened.stdout, opened.stderr)
    os.close(opened.workdir_fd)
    outputs.finish(attempt.spool, attempt.config, attempt.identity)
    return _give_up(attempt.spool, attempt.trace, attempt.containment, attempt.tmpdir, failure,
                    methods_run=([failed] if failed else []) + cleaned, terminated=terminated)


MAX_DEBUG_PAUSE_S = 3600.0


def _pause_for_debugger(spool: layout.SpoolDir, pid: int, inbox: SignalInbox, seconds: float) -> None:
    """Say our pid in the node's log (our stderr is the execd's) and wait, at most an hour; a
    stop (SIGTERM: a cancel, requeue or hold) ends the wait, and is acted on as usual after it."""
    seconds = min(max(seconds, 0.0), MAX_DEBUG_PAUSE_S)
    print(f"drover shepherd {spool.name}: pid {pid} waits {seconds:g}s for a debugger (DROVER_DEBUG_SHEPHERD)",
          file=sys.stderr, flush=True)
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0 and not inbox.stop_requested():
        select.select([inbox], [], [], left)
    print(f"drover shepherd {spool.name}: pid {pid} goes on", file=sys.stderr, flush=True)


def _warning(config: ShepherdConfig) -> tuple[int, float] | None:
    """Slurm's --signal=SIG@T: (signal, seconds before the time limit), if the job asked."""
    name = config.job["warn_signal"]
    if not name or not config.job["time_limit_s"]:
        return None
    return int(signal.Signals[str(name)]), config.job["warn_before_s"]


def _job_control(methods: dict[str, SignalMethod | CommandMethod], containment: Containment, config: ShepherdConfig,
                 env: dict[str, str], workdir_fd: int, identity: Identity | None,
                 limits: setup.Setup) -> control.JobControl:
    """How the job is suspended, resumed and stopped (control.py). How a method's command runs,
    and its placeholders' values (a copy of the environment, the host's name), are made only
    where a queue or the node configured a command: most attempts have none."""
    if not any(isinstance(method, CommandMethod) for method in methods.values()):
        return control.JobControl(methods, containment, config.kill_grace_s, config.notify_s)
    return control.JobControl(
        methods, containment, config.kill_grace_s, config.notify_s,
        control.method_popen_options(env, _entered(workdir_fd), identity, _set_up(reset_for_exec, limits)),
        control.facts_of(config))


def _entered(workdir_fd: int) -> str:
    """Popen's cwd for a directory the owner opened: the child's chdir (done before it switches
    to the owner) goes through the descriptor, not through the path, so it lands exactly where
    the owner's open did."""
    return f"/proc/self/fd/{workdir_fd}"


def _checkpointing(spool: layout.SpoolDir, config: ShepherdConfig, containment: Containment, problems: list[str],
                   options: Callable[[], ProcessOptions]) -> checkpoint.Checkpointing | None:
    """A checkpointing job's checkpoints (checkpoint.py); None for any other job. `problems`:
    trace lines of its set-up."""
    record = config.checkpoint
    if record is None:
        return None
    found = checkpoint.Checkpointing(record, spool, options(), containment, float(config.kill_grace_s),
                                     config.method_timeout_s)
    found.trace += problems
    return found


def _signal_number(name: object) -> int | None:
    return int(signal.Signals[name]) if isinstance(name, str) and name in signal.Signals.__members__ else None


def _popen_options(workdir_fd: int, env: dict[str, str], stdout: int, stderr: int,
                   identity: Identity | None, limits: setup.Setup) -> ProcessOptions:
    """How the job's own methods (its --prolog and --epilog: VOV's precmd and postcmd) run: as
    the job does, with its nice, CPUs and rlimits (VOV 8 and 13 come before VOV 20)."""
    user, group, extra_groups = identity.popen_ids() if identity is not None else (None, None, None)
    return ProcessOptions(_entered(workdir_fd), env, stdout, stderr, _set_up(reset_for_exec, limits),
                          user, group, extra_groups)


def _set_up(first: Callable[[], None], limits: setup.Setup) -> Callable[[], None]:
    """A preexec function for one of the job's processes: `first`, then its nice, CPUs and
    rlimits (the hard ones too where the shepherd is root: the owner cannot raise them again)."""
    lock_hard = os.geteuid() == 0

    def preexec() -> None:
        first()
        setup.apply(limits, lock_hard)

    return preexec


def _site_popen_options(config: ShepherdConfig, stdout: int, stderr: int, before: setup.Saved) -> ProcessOptions:
    """How the site's methods (node and queue prolog and epilog, PE start and stop) run: as the
    node daemon's user (root on a shared node, like Slurm's Prolog and Epilog), in /, with a
    clean environment (environment.site_environment), so nothing of the job's changes how
    they load or run, and the job's owner can neither signal nor trip them: their failure is
    the node's, and puts it in ERROR. Their output still goes to the job's files. They run
    without the job's nice, CPUs and rlimits: with what the shepherd had before (`before`),
    should it have taken the job's to start it (setup.py)."""

    def preexec() -> None:
        reset_for_exec()
        setup.restore(before)

    return ProcessOptions("/", site_environment(config), stdout, stderr, preexec)


def _run_methods(found: list[Method], options: ProcessOptions, site_options: ProcessOptions | None,
                 containment: Containment, config: ShepherdConfig,
                 stop_on_failure: bool = True, trace: Trace | None = None) -> tuple[Method, int] | None:
    """Run methods in order inside the attempt's containment; the first failure, if any."""
    timeout = config.method_timeout_s
    failure = None
    for method in found:
        if trace is not None:
            trace.step(f"{method.level} {method.step} started")
        # The job's own methods (and a PE's run as the owner) are the job's processes: inside its
        # containment. The site's run outside it, in the shepherd's own cgroup: not pinned to the
        # job's cpuset, not held to its memory limit, not frozen with it (setup.py says why).
        owners = method.level == "job" or method.as_owner
        chosen = options if owners else site_options
        assert chosen is not None, "the site's options are made wherever there is a method (methods_around_job)"
        if owners:
            containment.enter()
        try:
            code = run_method(method, chosen, timeout)
        except OSError as error:
            code = 126 if error.errno != 2 else 127
        finally:
            if owners:
                containment.leave()
        if trace is not None:
            trace.step(f"{method.level} {method.step} exited {code}")
        if code != 0 and failure is None:
            failure = (method, code)
            if stop_on_failure:
                break
    return failure


def _stopped_by(spool: layout.SpoolDir) -> str:
    """What the stop meant, as the execd recorded it before it signalled us: cancel, requeue or
    hold; "stop" otherwise (an attempt the controller gave up on, or a SIGTERM from elsewhere)."""
    why = (read_json(spool.record(layout.STOP_REQUEST)) or {}).get("why")
    return why if why in ("cancel", "requeue", "hold") else "stop"


def _clean_up_without_job(ran: list[Method], after_job: list[Method], config: ShepherdConfig, options: ProcessOptions,
                          site_options: ProcessOptions | None, containment: Containment,
                          trace: Trace) -> list[tuple[Method, int]]:
    """The methods that still run when the job does not (a prolog or PE start failed, a stop came
    before the job started, or the job could not be started), each with its exit status.

    GE shepherd: it "sets up resources before the job start (prolog, PE start-up)" and "after job
    termination cleans up resources (PE shut-down, epilog)": what the site set up before the job,
    it cleans up after, whether or not the job ran in between. So once an attempt got as far as
    its prologs, the queue's and the node's epilogs run, and PE stop does if PE start ran. The
    job's own epilog does not: VOV 20, "If the precommand exits with a status that is not 0
    (zero), the job is done and failed", and VOV 22, the postcmd that follows the job, whose "exit
    status ... is used as exit status of the job": with no job, there is nothing for it to follow."""
    pe_started = {method.level for method in ran if method.step == "pe_start"}
    after: list[tuple[Method, int]] = []
    for method in after_job:
        if method.level == "job" or (method.step == "pe_stop" and method.level not in pe_started):
            continue
        failed = _run_methods([method], options, site_options, containment, config, stop_on_failure=False,
                              trace=trace)
        after.append((method, 0 if failed is None else failed[1]))
    containment.kill_all()
    return after


def _give_up(spool: layout.SpoolDir, trace: Trace, containment: Containment, tmpdir: str, failure: StartFailure,
             methods_run: list[tuple[Method, int]] | None = None, terminated: bool = False) -> int:
    """The job did not run: say why, clean up, tell the execd. `methods_run`: the failed method
    and the clean-up methods that ran after it, with their exit statuses."""
    containment.remove()
    shutil.rmtree(tmpdir, ignore_errors=True)
    _record_failure(spool, trace, str(failure), failure.details, methods_run or [], terminated)
    _hint(spool, "exited")
    return 0


def _close(stdout: int, stderr: int) -> None:
    os.close(stdout)
    if stderr != stdout:
        os.close(stderr)


def _open_outputs(config: ShepherdConfig) -> tuple[int, int]:
    """As the owner (the caller acts as the owner): regular files or /dev/null only."""
    paths = [config.stdout] + ([config.stderr] if config.stderr else [])
    fds: list[int] = []
    try:
        for path in paths:
            fds.append(open_output(path, append=config.job["open_mode"] == "append"))
    except OSError as error:
        for fd in fds:
            os.close(fd)
        raise StartFailure(f"cannot open output file {error.filename or path}: {error.strerror}") from None
    return fds[0], fds[-1]


def _start(spool: layout.SpoolDir, config: ShepherdConfig, env: dict[str, str], stdout: int, stderr: int,
           identity: Identity | None, workdir_fd: int, limits: setup.Setup, pty: int | None = None) -> int:
    """Start the job; its pid. A job of the shepherd's own user is posix_spawn'ed (launch.py).
    Otherwise Popen does the child's set-up in C: the process group, the working directory,
    setgid → setgroups → setuid; then only `reset_for_exec` runs in Python (VOV 12: signals to
    their defaults) and the job's set-up (VOV 8/13, setup.py), or, for a job posix_spawn'ed, the
    shepherd takes the job's set-up first (only one it can give back: setup.reversible); a failed chdir, switch or exec comes back here as an exception. VOV 11: a
    failed identity switch is retried. A job given as a command line is exec'd without bash
    (launch.py); if that exec fails, bash runs the line and reports it as it always has."""
    tries = config.identity_tries
    pause = config.identity_retry_s
    switching = identity is not None and identity.switches
    user, group, extra_groups = identity.popen_ids() if identity is not None else (None, None, None)
    script = spool.record(layout.JOB_SCRIPT)
    command = launch.command_of(_read_script(script))
    attempt = 0
    while True:
        argv, job_env = (command, launch.environment(env, config.workdir)) if command else (["/bin/bash", script], env)
        # GE queue_conf starter_method, VOV 3 (-E): the site's command starts the job (starter.py).
        argv, job_env = starter.wrap(starter.starter_of(config), argv, job_env, command is not None)
        try:
            if pty is not None:  # its own session, the terminal its controlling one
                process = subprocess.Popen(
                    argv, cwd=_entered(workdir_fd), env=job_env, stdin=pty, stdout=pty, stderr=pty,
                    close_fds=True, start_new_session=True, restore_signals=True,
                    preexec_fn=_set_up(_terminal_and_default_signals, limits), user=user, group=group,
                    extra_groups=extra_groups,
                )
            elif not switching and setup.reversible(limits, lock_hard=os.geteuid() == 0):
                # No code of ours runs in between: the job inherits the shepherd's set-up, which
                # the shepherd gives back as soon as the job has it (as far as its user may: an
                # unprivileged one cannot lower its nice again), and the site's methods after it
                # are given back too (_site_popen_options).
                before = setup.saved(limits)
                setup.apply(limits, lock_hard=os.geteuid() == 0)
                try:
                    return launch.spawn_as_self(argv, job_env, workdir_fd, stdout, stderr)
                finally:
                    setup.restore(before)
            else:
                process = subprocess.Popen(
                    argv, cwd=_entered(workdir_fd), env=job_env, stdin=subprocess.DEVNULL, stdout=stdout,
                    stderr=stderr, close_fds=True, process_group=0, restore_signals=True,
                    preexec_fn=_set_up(reset_for_exec, limits), user=user, group=group, extra_groups=extra_groups,
                )
            process.returncode = 0  # reaped by supervise's wait4, never by Popen
            return process.pid
        except OSError as error:
            if command is not None:  # bash takes over: it says why, or runs a file without #!
                command = None
                continue
            attempt += 1
            # A failed chdir or exec names its file; a failed setgid, setgroups or setuid does not.
            if not switching or error.filename is not None:
                raise _start_failure(config, error) from None
            assert identity is not None
            if attempt >= tries:
                reason = f"cannot switch to user {identity.user}: {error.strerror}"
                details = run_diagnostics(config.diagnostics_setuid, [spool.name, identity.user, reason],
                                          spool.name, identity.user, reason, config.diagnostics_identity)
                raise StartFailure(reason, details) from None
            time.sleep(pause)


SCRIPT_READ_LIMIT = 64 * 1024  # a longer script is no command line: it runs under bash unread


def _read_script(path: str) -> bytes:
    """The head of the job's script in the spool (the execd wrote it; the owner may only have
    rewritten its content, which bash would run anyway): enough to recognise a command line."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return b""  # bash will say what is wrong with it
    try:
        head = os.read(fd, SCRIPT_READ_LIMIT + 1)
    finally:
        os.close(fd)
    return head if len(head) <= SCRIPT_READ_LIMIT else b""


def _terminal_and_default_signals() -> None:
    reset_for_exec()
    take_controlling_terminal()


def _check_identity(spool: layout.SpoolDir, config: ShepherdConfig, identity: Identity | None) -> None:
    """Switch to the owner and back, as the Accelerator's subtasker tries: 3 times, 10 s apart by
    default; then the site's diagnostics script, and the attempt fails with the reason."""
    if identity is None or not identity.switches:
        return
    tries = max(config.identity_tries, 1)
    pause = config.identity_retry_s
    for attempt in range(1, tries + 1):
        try:
            with acting_as(identity):
                return
        except OSError as error:
            if attempt == tries:
                reason = f"cannot switch to user {identity.user}: {error.strerror}"
                details = run_diagnostics(config.diagnostics_setuid, [spool.name, identity.user, reason],
                                          spool.name, identity.user, reason, config.diagnostics_identity)
                raise StartFailure(reason, details) from None
            time.sleep(pause)


def _open_workdir(spool: layout.SpoolDir, config: ShepherdConfig, identity: Identity | None) -> int:
    """Open the working directory as the job's owner, retrying (an automounter or a network
    filesystem may need a moment: VOV_RETRY_CHDIR, VOV_RETRY_CHDIR_SLEEP); then the site's
    diagnostics script, and the attempt fails with the reason. The descriptor is how every
    process of the attempt enters the directory (_entered)."""
    tries = max(config.chdir_tries, 1)
    pause = config.chdir_retry_s
    workdir = config.workdir
    for attempt in range(1, tries + 1):
        try:
            with acting_as(identity):
                fd = os.open(workdir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
                try:
                    os.fchdir(fd)  # search permission, as the owner: what entering it needs
                except OSError:
                    os.close(fd)
                    raise
                finally:
                    os.chdir("/")
            return fd
        except OSError as error:
            if attempt == tries:
                reason = f"cannot enter {workdir}: {error.strerror}"
                # VOV 17: "vov_diagnostics_chdir with arguments ID and DIR (the directory that
                # could not be accessed)".
                details = run_diagnostics(config.diagnostics_chdir, [str(config.job_id), workdir],
                                          spool.name, identity.user if identity else "", reason,
                                          config.diagnostics_identity)
                raise StartFailure(reason, details) from None
            time.sleep(pause)
    raise AssertionError("unreachable")


def _start_failure(config: ShepherdConfig, error: OSError) -> StartFailure:
    method = starter.starter_of(config)
    if method is not None and error.filename == method:
        return StartFailure(f"cannot run the starter method {method}: {error.strerror or error}")
    if error.filename == config.workdir or (not os.path.isdir(config.workdir) and error.errno in (2, 13, 20)):
        return StartFailure(f"cannot enter {config.workdir}: {error.strerror}")
    return StartFailure(f"cannot start the job: {error.strerror or error}")


def _record_failure(spool: layout.SpoolDir, trace: Trace, failure: str, detail: str = "",
                    methods_run: list[tuple[Method, int]] | None = None, terminated: bool = False) -> None:
    write_outcome(spool, spool.record(layout.ERROR), (failure + "\n" + detail).encode())
    trace.step(failure)
    exit_status: ExitStatus = {
        "exit_code": None, "signal": None, "failure": failure, "timed_out": False,
        "terminated": terminated, "out_of_memory": False,
        "methods": [{"step": m.step, "level": m.level, "exit_code": code} for m, code in methods_run or []],
    }
    write_outcome(spool, spool.record(layout.TRACE), trace.data())
    spool_files.write_about_to_exit(spool)
    write_outcome(spool, spool.record(layout.EXIT_STATUS), _json(exit_status))


def _json(record: object) -> bytes:
    return json.dumps(record, separators=(",", ":")).encode()


def pids_limit(config: ShepherdConfig) -> int:
    """The attempt's process limit: the job's own (--pids-max) within the node's pids_max; 0: none."""
    limits = [value for value in (config.pids_max, config.job["pids_max"]) if value]
    return min(limits) if limits else 0


def _hint(spool: layout.SpoolDir, what: str, *details: str) -> None:
    """Tell the execd to look at our records now ("<what> <attempt>[ <detail>...]"). Best
    effort: the records are the truth, and a lost hint only makes the execd find them later."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
            sock.setblocking(False)
            sock.sendto(" ".join((what, spool.name, *details)).encode(), spool.notify_socket)
    except OSError:
        pass
