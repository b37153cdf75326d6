"""drover down: stop the personal cluster's daemons."""

from __future__ import annotations

from drover.cli.cluster import down
from drover.cli.common import parser, print_json
from drover.config import Paths


def run(command: str, argv: list[str]) -> int:
    p = parser(command, "Stop the personal cluster. Running jobs go on; they report at the next `drover up`.")
    args = p.parse_args(argv)
    stopped = down(Paths())
    if args.json:
        print_json({"stopped": stopped})
    elif stopped:
        print("stopped " + ", ".join(stopped))
    else:
        print("no personal cluster is running")
    return 0
