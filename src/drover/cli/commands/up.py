"""drover up: start a personal cluster in the background."""

from __future__ import annotations

import os

from drover.cli.cluster import is_serving, up
from drover.cli.common import parser, print_json, seconds_up_to, whole_number
from drover.config import SERVICE_USER, SYSTEM_STATE_DIR, Paths
from drover.config_schema import KILL_GRACE_S, MAX_KILL_GRACE_S
from drover.core.errors import Forbidden
from drover.core.limits import MAX_CPUS, MAX_MEMORY_MIB


def run(command: str, argv: list[str]) -> int:
    p = parser(command, "Start a personal cluster: a controller and one execd for you, in the background.")
    p.add_argument("--cpus", type=whole_number(1, MAX_CPUS), help="CPUs the node offers (default: all)")
    p.add_argument("--memory", type=whole_number(1, MAX_MEMORY_MIB), metavar="MIB",
                   help="memory the node offers (default: all)")
    p.add_argument("--kill-grace", type=seconds_up_to(MAX_KILL_GRACE_S), metavar="S", help=f"seconds between SIGTERM and SIGKILL (default {KILL_GRACE_S:g})")
    p.add_argument("--system", action="store_true",
                   help=f"as root: a cluster every local user shares (state in {SYSTEM_STATE_DIR}); its controller "
                        f"runs as the service user {SERVICE_USER} (made if missing), each user's jobs as that user")
    p.add_argument("--state-dir", help=f"where the cluster keeps its state (default: yours; with --system, {SYSTEM_STATE_DIR})")
    p.add_argument("--listen", metavar="ADDR:PORT",
                   help="also serve other hosts on TCP, with TLS only (`drover join` makes them nodes); "
                        "makes the cluster's CA first (drover cluster init)")
    args = p.parse_args(argv)
    if args.system and os.geteuid() != 0:
        raise Forbidden("only root starts a shared cluster (drover up --system)")
    paths = Paths(os.path.abspath(args.state_dir) if args.state_dir else (SYSTEM_STATE_DIR if args.system else None))
    execd_args = (["--cpus", str(args.cpus)] if args.cpus else []) + (
        ["--memory", str(args.memory)] if args.memory else []
    )
    controller_args = ["--kill-grace", str(args.kill_grace)] if args.kill_grace is not None else []
    if args.system:
        controller_args.append("--system")
    initialized: list[str] = []
    service_user = None
    if args.system or args.listen:
        # The cluster's CA and the controller's certificate, the first time (drover cluster init).
        from drover.cli.commands.cluster import init_cluster, init_shared_cluster
        from drover.cluster.tls import parse_address

        hosts = [parse_address(args.listen, "--listen")[0]] if args.listen else []
        if not args.system:
            initialized = init_cluster(paths, hosts).made
        elif not is_serving(paths):
            # The controller runs as the service user: made if missing, and given its files
            # (moved from where an earlier Drover's root controller kept them) before it starts.
            service_user, result = init_shared_cluster(paths, hosts)
            initialized = result.made
        else:
            from drover.cli.service_account import service_user as existing_service_user

            service_user = existing_service_user(paths.root)  # it serves: its files are in use
        if args.listen:
            controller_args += ["--listen", args.listen]
    started = up(paths, controller_args, execd_args, shared=args.system, service_user=service_user)
    if args.json:
        print_json({"state_dir": paths.root, "socket": paths.socket, "started": started, "made": initialized})
        return 0
    for path in initialized:
        print(f"made {path}")
    if started:
        for line in started:
            print(f"started {line}")
    else:
        print(f"the {'shared' if args.system else 'personal'} cluster is already running")
    print(f"state in {paths.root}; API on {paths.socket}")
    return 0
