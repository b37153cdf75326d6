"""drover down: stop the personal cluster's daemons."""

from __future__ import annotations

import os

from drover.cli.cluster import down
from drover.cli.common import parser, print_json
from drover.config import SYSTEM_STATE_DIR, Paths


def run(command: str, argv: list[str]) -> int:
    p = parser(command, "Stop the personal cluster. Running jobs go on; they report at the next `drover up`.")
    p.add_argument("--system", action="store_true", help="stop the machine's shared cluster (as root)")
    p.add_argument("--state-dir", help="the cluster's state directory (default: yours, or the system's)")
    args = p.parse_args(argv)
    stopped = down(Paths(os.path.abspath(args.state_dir) if args.state_dir else (SYSTEM_STATE_DIR if args.system else None)))
    if args.json:
        print_json({"stopped": stopped})
    elif stopped:
        print("stopped " + ", ".join(stopped))
    else:
        print("no personal cluster is running")
    return 0
