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
import sys

from drover import eventloop
from drover.config import Paths, api_socket, cluster_tag, default_spool, load_file_config

TYPE_CHECKING = False
if TYPE_CHECKING:
    from drover.execd.cleanup import CleanupSettings


def serve(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="drover execd", description="Run the node daemon.")
    parser.add_argument("--state-dir", help="the cluster's state directory (default: the personal one)")
    parser.add_argument("--socket", help="the controller's API socket (default: STATE_DIR/api.sock)")
    parser.add_argument("--spool", help="the spool directory (default: STATE_DIR/spool)")
    parser.add_argument("--node-name", help="this node's name (default: the host name)")
    parser.add_argument("--cpus", type=int, help="CPUs to offer (default: all this process may use)")
    parser.add_argument("--memory", type=int, metavar="MIB", help="memory to offer (default: all)")
    args = parser.parse_args(argv)

    paths = Paths(os.path.abspath(args.state_dir) if args.state_dir else None)
    options = load_file_config(paths).get("execd", {})
    logging.basicConfig(level=logging.INFO, format="%(asctime)s execd %(levelname)s %(message)s", stream=sys.stderr)

    from drover.execd.forkserver import ForkServer

    fork_server = ForkServer.start()
    try:
        eventloop.run(_run(args, paths, options, fork_server))
    finally:
        fork_server.close()
    return 0


async def _run(args: argparse.Namespace, paths: Paths, options: dict[str, object], fork_server: object) -> None:
    from drover.execd.attempts import Attempts
    from drover.execd.channel import ControllerChannel
    from drover.execd.cleanup import Cleanup
    from drover.execd.faults import Faults
    from drover.execd.host import host_cpus, host_memory_mib, host_name
    from drover.protocol.node_channel import Ack, Hello, SignalAttempt, StartAttempt

    node = args.node_name or str(options.get("node_name") or host_name())
    cpus = args.cpus or int(options.get("cpus") or host_cpus())  # type: ignore[call-overload]
    memory = args.memory or int(options.get("memory_mib") or host_memory_mib())  # type: ignore[call-overload]
    spool_root = os.path.abspath(args.spool or str(options.get("spool") or default_spool(paths)))

    channel: ControllerChannel

    def send(message: object) -> None:
        channel.send(message)

    os.makedirs(spool_root, mode=0o700, exist_ok=True)
    faults = Faults.from_environment()
    if faults:
        logging.getLogger("drover.execd").warning("fault injection for testing is on: %s", faults.describe())
    cleanup = Cleanup(spool_root, cleanup_settings(options), send, faults)
    attempts = Attempts(spool_root, fork_server, send, cleanup, shepherd_options(options, cluster_tag(paths)))  # type: ignore[arg-type]
    channel = ControllerChannel(
        args.socket or api_socket(paths),
        hello=lambda: Hello(node, cpus, memory, attempts.known()),
        on_connect=cleanup.trigger_all,
    )
    channel.on(StartAttempt, attempts.start)
    channel.on(SignalAttempt, attempts.signal)
    channel.on(Ack, lambda ack: cleanup.acknowledged(ack.attempts, ack.kind))
    attempts.recover()
    logging.getLogger("drover.execd").info(
        "node %s: %d CPUs, %d MiB, spool %s, %d attempts re-attached",
        node, cpus, memory, spool_root, len(attempts.live),
    )

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    runner = loop.create_task(channel.run_forever())
    await stop.wait()
    # Running jobs go on: their shepherds do not depend on this process, and the next execd
    # re-attaches to them from the spool.
    runner.cancel()
    attempts.close()


def cleanup_settings(options: dict[str, object]) -> CleanupSettings:
    """The [execd] options of drover.toml that shape the cleanup pipeline."""
    from drover.execd.cleanup import CleanupSettings

    return CleanupSettings(
        exit_hook=str(options["exit_hook"]) if options.get("exit_hook") else None,
        keep_spool=bool(options.get("keep_spool", False)),
        smtp_host=str(options.get("smtp_host", "localhost")),
        smtp_port=int(options.get("smtp_port", 25)),  # type: ignore[call-overload]
        mail_tries=int(options.get("mail_tries", 5)),  # type: ignore[call-overload]
    )


def shepherd_options(options: dict[str, object], cluster: str = "") -> dict[str, object]:
    """The [execd] options that travel to each shepherd in its attempt's config; `cluster` is
    the cluster's tag, part of the name of each attempt's cgroup."""
    return {
        "cluster": cluster,
        "identity_tries": int(options.get("identity_tries", 3)),  # type: ignore[call-overload]
        "identity_retry_s": float(options.get("identity_retry_s", 10.0)),  # type: ignore[arg-type]
        "diagnostics_setuid": options.get("diagnostics_setuid"),
        "chdir_tries": int(options.get("chdir_tries", 3)),  # type: ignore[call-overload]
        "chdir_retry_s": float(options.get("chdir_retry_s", 2.0)),  # type: ignore[arg-type]
        "diagnostics_chdir": options.get("diagnostics_chdir"),
        # The cluster's methods (GE prolog, epilog, PE start and stop), run by every shepherd.
        "node_prolog": options.get("prolog"),
        "node_epilog": options.get("epilog"),
        "node_pe_start": options.get("pe_start"),
        "node_pe_stop": options.get("pe_stop"),
        "method_timeout_s": float(options.get("method_timeout_s", 600.0)),  # type: ignore[arg-type]
        "rlimits": dict(options.get("rlimits") or {}),  # type: ignore[call-overload]
        # Stage-out per attempt, collected by the shepherd: what is over is named, not sent.
        "stage_out_limit_bytes": int(options.get("stage_out_limit_bytes", 64 * 1024 * 1024)),  # type: ignore[call-overload]
    }
