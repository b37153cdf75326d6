"""`drover execd`: the composition root of the node daemon.

The fork server starts first, before this process has threads or an event loop, so no shepherd
is ever forked from a threaded process.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import ssl
import sys

from drover import eventloop
from drover.config import Paths, api_socket, cluster_tag, default_spool

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from drover.config_schema import ExecdSection
    from drover.execd.cleanup import CleanupSettings
    from drover.execd.enforcement import Enforcer
    from drover.execd.forkserver import ForkServer
    from drover.execd.gres_inventory import NodeInventory
    from drover.execd.site_methods import SiteMethods
    from drover.pid_file import Claimed
    from drover.records import NodeOptions


def enforcer(options: ExecdSection, send: Callable[[object], None]) -> Enforcer:
    """What each running job uses against what it reserved, checked after each sampling round."""
    from drover.execd.enforcement import Enforcer, Settings

    return Enforcer(Settings(options.enforce_cpu, options.enforce_memory, options.cpu_tolerance,
                             options.memory_hard_factor), send)


def serve(argv: list[str]) -> int:
    from drover.execd.leaving import why_given

    parser = argparse.ArgumentParser(prog="drover execd", description="Run the node daemon.")
    parser.add_argument("--state-dir", help="the cluster's state directory (default: the personal one)")
    parser.add_argument("--socket", help="the controller's API socket (default: STATE_DIR/api.sock)")
    parser.add_argument("--spool", help="the spool directory (default: STATE_DIR/spool)")
    parser.add_argument("--node-name", help="this node's name (default: the host name)")
    parser.add_argument("--cpus", type=int, help="CPUs to offer (default: all this process may use)")
    parser.add_argument("--memory", type=int, metavar="MIB", help="memory to offer (default: all)")
    parser.add_argument("--leave-on-stop", metavar="WHY", type=why_given,
                        help="the node leaves its cluster for good when stopped: end its jobs first, reporting WHY "
                             "(one line, at most 1000 characters) as their reason (execd/leaving.py)")
    parser.add_argument("--leave-wait", type=float, default=20.0, metavar="S",
                        help="with --leave-on-stop: how long to wait for the jobs' ends to be reported")
    args = parser.parse_args(argv)

    paths = Paths(os.path.abspath(args.state_dir) if args.state_dir else None)
    from drover.config_file import ConfigError, read_config

    try:
        own = read_config(paths.config_file).config
    except ConfigError as error:
        raise SystemExit(f"drover execd: {error}") from None
    options = own.execd
    from drover.execd.site_methods import SiteMethods

    # What the node runs as root, and as a job's owner unsigned, is its own drover.toml's.
    site = SiteMethods.of(own, paths.config_file)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s execd %(levelname)s %(message)s", stream=sys.stderr)
    # Its lines name no caller, thread or process: each record is built without looking them up
    # (a walk up the stack for every line, one a job on a busy node; the logging HOWTO's
    # "Optimization").
    logging._srcfile = None
    logging.logThreads = logging.logProcesses = logging.logMultiprocessing = False
    claimed = _claim(paths.execd_pid)
    try:
        return _serve(args, paths, options, site)
    finally:
        claimed.release()


def _claim(pid_path: str) -> Claimed:
    """This execd's pid file, locked for its life: one execd a state directory (pid_file.py); an
    exit if another holds it."""
    from drover.pid_file import ALREADY_RUNNING, claim

    try:
        claimed = claim(pid_path)
    except OSError as error:
        raise SystemExit(f"drover execd: cannot write its pid file {pid_path}: {error.strerror or error}") from None
    if claimed is None:
        print(f"drover execd: an execd already runs for this state directory (it holds {pid_path})", file=sys.stderr)
        raise SystemExit(ALREADY_RUNNING)
    return claimed


def _serve(args: argparse.Namespace, paths: Paths, options: ExecdSection, site: SiteMethods) -> int:
    # A controller on another host: the node's TLS files are checked before anything starts.
    tls = node_tls(options) if options.controllers() and not args.socket else None
    inventory = node_inventory(options)  # before the fork server: nvidia-smi may run
    node_options = shepherd_options(options, cluster_tag(paths), gpus=inventory.gpus())  # refused here, before anything starts

    from drover.execd.forkserver import ForkServer
    from drover.execd.host import host_cpus
    from drover.execd.warm_shepherds import keep_for
    from drover.open_files import raise_soft_limit

    # A few descriptors per running attempt, here and in the fork server; its shepherds and their
    # jobs get the limit this daemon was started with back (open_files.py).
    started_with, _ = raise_soft_limit()
    # A shepherd forked ahead for each free slot, up to a few (warm_shepherds.py).
    fork_server = ForkServer.start(warm=keep_for(args.cpus or options.cpus or host_cpus()), open_files=started_with)
    try:
        eventloop.run(_run(args, paths, options, node_options, fork_server, tls, inventory, site))
    finally:
        fork_server.close()
        from drover.shepherd.containment.common import remove_cluster_parents

        remove_cluster_parents(cluster_tag(paths))  # where no attempt runs on
    return 0


async def _run(args: argparse.Namespace, paths: Paths, options: ExecdSection, node_options: NodeOptions,
               fork_server: ForkServer, tls: ssl.SSLContext | None, inventory: NodeInventory,
               site: SiteMethods) -> None:
    from drover.execd import output_index
    from drover.execd.attempts import Attempts
    from drover.execd.channel import ControllerChannel
    from drover.execd.cleanup import Cleanup
    from drover.execd.event_logs import NodeEventLogs
    from drover.execd.faults import Faults
    from drover.execd.host import host_cpus, host_memory_mib, host_name, host_status
    from drover.execd.pe_tasks import PeTasks
    from drover.execd.relays import NodeRelays
    from drover.execd.sampling import Sampler
    from drover.execd.shutdown_checkpoints import checkpoint_on_shutdown
    from drover.protocol.node_channel import (
        PE_TASK_ACK,
        Ack,
        AppendEventLog,
        ChunkKept,
        CloseTerminal,
        Hello,
        OpenTerminal,
        ReadOutput,
        SignalAttempt,
        SignalPeTasks,
        StartAttempt,
        StartPeTask,
        StartPromisedNow,
        StopPeTasks,
        TerminalInput,
    )

    node = args.node_name or options.node_name or host_name()
    cpus = args.cpus or options.cpus or host_cpus()
    memory = args.memory or options.memory_mib or host_memory_mib()
    skipped: list[str] = []  # default spool directories someone else made first
    spool_root = os.path.abspath(args.spool or options.spool or default_spool(paths, skipped))
    for why in skipped:
        logging.getLogger("drover.execd").warning("not using the default spool: %s", why)

    channel: ControllerChannel

    def send(message: object) -> None:
        channel.send(message)

    from drover.spool.own_directory import UnsafeDirectory, own_directory

    try:  # never one a user made, or a link: root would make attempts wherever it points
        own_directory(spool_root, 0o711 if os.geteuid() == 0 else 0o700, set_mode=os.geteuid() == 0)
    except UnsafeDirectory as error:
        raise SystemExit(f"drover execd: the spool: {error}") from None
    faults = Faults.from_environment()
    if faults:
        logging.getLogger("drover.execd").warning("fault injection for testing is on: %s", faults.describe())
    from drover.spool.spare_reserves import SpareReserves

    spares = SpareReserves(spool_root)  # the reserves of ended attempts, for the next ones
    cleanup = Cleanup(spool_root, cleanup_settings(options), send, faults, lambda: channel.connected.is_set(),
                      chunks=lambda: channel.staged_chunks, spares=spares)
    signed_jobs = None
    if options.require_signed_jobs:
        from drover.execd.signatures import SignedJobs

        signed_jobs = SignedJobs(node, options.munge_socket, options.signed_job_max_age_s, options.allow_root_jobs)
    attempts = Attempts(spool_root, fork_server, send, cleanup, node_options, signed_jobs, site, cpus=cpus,
                        spares=spares)
    # Tasks of running parallel jobs (GE's tight integration), each under a shepherd of its own.
    pe_tasks = PeTasks(spool_root, fork_server, send, node_options, attempts.identities, signed_jobs, site, cpus=cpus)
    relays = NodeRelays(spool_root, send)  # users' reads of output files, and terminals
    output_index.forget_old(spool_root)
    event_logs = NodeEventLogs(send, signed_jobs)  # jobs' event logs, for a controller that cannot be their owners

    def on_connect() -> None:
        relays.drop_terminals()
        cleanup.trigger_all()
        pe_tasks.resend()  # the ends of tasks the controller has not acknowledged

    channel = ControllerChannel(
        [args.socket] if args.socket else options.controllers() or [api_socket(paths)],
        hello=lambda: Hello(node, cpus, memory, attempts.known(), gres=list(inventory.gres),
                            features=list(inventory.features), pe_task_attempts=pe_tasks.attempts(),
                            pe_tasks=pe_tasks.known(),
                            ends_at=attempts.leaving_at if attempts.leaving_at is not None else options.ends_at,
                            starts_in_place=True),
        on_connect=on_connect,
        tls=tls,
        heartbeat=lambda: host_status(len(attempts.live) + len(cleanup.pending)),
        reconnect_max_s=options.reconnect_max_s,
    )
    channel.on(StartAttempt, attempts.start)
    channel.on(StartPromisedNow, attempts.start_promised_now)
    channel.on(SignalAttempt, attempts.signal)
    channel.on(ChunkKept, cleanup.chunk_kept)
    channel.on(Ack, lambda ack: (pe_tasks.acknowledged(ack.attempts) if ack.kind == PE_TASK_ACK
                                 else cleanup.acknowledged(ack.attempts, ack.kind)))
    channel.on(ReadOutput, relays.read_output)
    channel.on(OpenTerminal, relays.open_terminal)
    channel.on(TerminalInput, relays.terminal_input)
    channel.on(CloseTerminal, relays.close_terminal)
    channel.on(AppendEventLog, event_logs.append)
    channel.on(StartPeTask, pe_tasks.start)
    channel.on(StopPeTasks, pe_tasks.stop)
    channel.on(SignalPeTasks, pe_tasks.signal)
    pe_tasks.recover()  # first: an attempt directory made only for tasks is no attempt's to recover
    attempts.recover()
    sampler = Sampler(attempts.live, send, options.sample_s, enforcer=enforcer(options, send))  # every sample_s
    logging.getLogger("drover.execd").info(
        "node %s: %d CPUs, %d MiB, gres %s, features %s, spool %s, %d attempts re-attached",
        node, cpus, memory, inventory.described, ",".join(inventory.features), spool_root, len(attempts.live),
    )

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    runner = loop.create_task(channel.run_forever())
    sampling = loop.create_task(sampler.run_forever())
    await stop.wait()
    if args.leave_on_stop:
        from drover.execd.leaving import leave

        await leave(attempts, cleanup, channel, f"node {node} left: {args.leave_on_stop}", args.leave_wait)
    # Running jobs go on: their shepherds do not depend on this process, and the next execd
    # re-attaches to them from the spool. Those whose checkpoint occasions have 's' checkpoint.
    checkpoint_on_shutdown((live.spool, live.shepherd_pid) for live in attempts.live.values())
    sampling.cancel()
    runner.cancel()
    attempts.close()
    pe_tasks.close()
    await relays.close()
    await event_logs.close()


def node_inventory(options: ExecdSection) -> NodeInventory:
    """The node's devices and features; a bad [execd] gres or features stops the node daemon."""
    from drover.execd.gres_inventory import NodeInventory

    try:
        return NodeInventory.of(options.gres, options.features)
    except ValueError as error:
        raise SystemExit(f"drover execd: {error}") from None


def node_tls(options: ExecdSection) -> ssl.SSLContext:
    """The TLS context of a node whose controller is on another host: its certificate, and the
    cluster's CA to verify the controller with (all three are written by `drover join`)."""
    from drover.cluster.tls import node_context

    for controller in options.controllers():
        if not controller.startswith("https://"):
            raise SystemExit(f"drover execd: [execd] controller must be https://ADDR:PORT (or a list of them), "
                             f"not {controller!r}")
    missing = [key for key in ("tls_cert", "tls_key", "tls_ca") if not getattr(options, key)]
    if missing:
        raise SystemExit(f"drover execd: [execd] controller is on another host, and {', '.join(missing)} "
                         "is not set; `drover join` writes them")
    assert options.tls_ca and options.tls_cert and options.tls_key
    try:
        return node_context(options.tls_ca, options.tls_cert, options.tls_key)
    except (OSError, ssl.SSLError) as error:
        raise SystemExit(f"drover execd: cannot use the node's TLS files ({options.tls_cert}, "
                         f"{options.tls_key}, {options.tls_ca}): {error}") from None


def cleanup_settings(options: ExecdSection) -> CleanupSettings:
    """The [execd] options of drover.toml that shape the cleanup pipeline."""
    from drover.execd.cleanup import CleanupSettings

    return CleanupSettings(
        exit_hook=options.exit_hook or None, keep_spool=options.keep_spool,
        smtp_host=options.smtp_host, smtp_port=options.smtp_port, mail_tries=options.mail_tries,
        exit_hook_tries=options.exit_hook_tries, stage_out_tries=options.stage_out_tries,
        record_tries=options.record_tries, remove_tries=options.remove_tries,
    )


def shepherd_options(options: ExecdSection, cluster: str = "", environ: Mapping[str, str] = os.environ,
                     gpus: int = 0) -> NodeOptions:
    """The [execd] options that travel to each shepherd in its attempt's config; `cluster` is
    the cluster's tag, part of the name of each attempt's cgroup. Raises SystemExit, saying
    why, for a diagnostics user or a debug pause the node cannot use."""
    from drover.execd.identities import diagnostics_identity

    try:
        diagnostics = diagnostics_identity(options.diagnostics_user)
    except ValueError as error:
        raise SystemExit(f"drover execd: {error}") from None
    node: NodeOptions = {
        "cluster": cluster,
        "identity_tries": options.identity_tries,
        "identity_retry_s": options.identity_retry_s,
        "diagnostics_setuid": options.diagnostics_setuid,
        "chdir_tries": options.chdir_tries,
        "chdir_retry_s": options.chdir_retry_s,
        "diagnostics_chdir": options.diagnostics_chdir,
        # The cluster's methods (GE prolog, epilog, PE start and stop), run by every shepherd.
        "node_prolog": options.prolog,
        "node_epilog": options.epilog,
        "node_pe_start": options.pe_start,
        "node_pe_stop": options.pe_stop,
        "method_timeout_s": options.method_timeout_s,
        "rlimits": options.rlimits.set(),
        # Stage-out per attempt, collected by the shepherd: what is over is named, not sent.
        "stage_out_limit_bytes": options.stage_out_limit_bytes,
        "pids_max": pids_max(options),
        "node_gpus": gpus,  # those an attempt is not given are denied it, where the devices cgroup is writable
        "diagnostics_identity": diagnostics,
        "debug_pause_s": debug_pause_s(options, environ),
        "node_suspend_method": options.suspend_method,
        "node_resume_method": options.resume_method,
        "node_terminate_method": options.terminate_method,
    }
    if options.starter_method:
        node["starter_method"] = options.starter_method
    return node


def pids_max(options: ExecdSection) -> int:
    """Each job's process limit (pids.max of its cgroup): [execd] pids_max, else one from the
    host's pid_max and CPUs (host.default_pids_max); 0: none."""
    from drover.execd.host import default_pids_max, host_cpus, host_pid_max

    if options.pids_max is not None:
        return options.pids_max
    return default_pids_max(host_pid_max(), host_cpus())


def debug_pause_s(options: ExecdSection, environ: Mapping[str, str]) -> float:
    """VOV 10 (VOV_DEBUG_TASKER): how long each shepherd waits for a debugger after it started;
    DROVER_DEBUG_SHEPHERD=SECONDS in the execd's environment, else [execd] debug_shepherd_s."""
    from drover.config_schema import MAX_DEBUG_PAUSE_S

    text = environ.get("DROVER_DEBUG_SHEPHERD", "").strip()
    if not text:
        return options.debug_shepherd_s
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not 0 <= seconds <= MAX_DEBUG_PAUSE_S:  # NaN too
        raise SystemExit(f"drover execd: DROVER_DEBUG_SHEPHERD must be a number of seconds from 0 to "
                         f"{MAX_DEBUG_PAUSE_S}, not {text!r}")
    if seconds:
        logging.getLogger("drover.execd").warning(
            "DROVER_DEBUG_SHEPHERD=%s: every shepherd waits %gs for a debugger after it starts", text, seconds)
    return seconds
