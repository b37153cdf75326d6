"""drover up: start a personal cluster in the background."""

from __future__ import annotations

from drover.cli.cluster import up
from drover.cli.common import parser, print_json
from drover.config import Paths


def run(command: str, argv: list[str]) -> int:
    p = parser(command, "Start a personal cluster: a controller and one execd for you, in the background.")
    p.add_argument("--cpus", type=int, help="CPUs the node offers (default: all)")
    p.add_argument("--memory", type=int, metavar="MIB", help="memory the node offers (default: all)")
    p.add_argument("--kill-grace", type=float, metavar="S", help="seconds between SIGTERM and SIGKILL (default 10)")
    args = p.parse_args(argv)
    paths = Paths()
    execd_args = (["--cpus", str(args.cpus)] if args.cpus else []) + (
        ["--memory", str(args.memory)] if args.memory else []
    )
    controller_args = ["--kill-grace", str(args.kill_grace)] if args.kill_grace is not None else []
    started = up(paths, controller_args, execd_args)
    if args.json:
        print_json({"state_dir": paths.root, "socket": paths.socket, "started": started})
        return 0
    if started:
        for line in started:
            print(f"started {line}")
    else:
        print("the personal cluster is already running")
    print(f"state in {paths.root}; API on {paths.socket}")
    return 0
