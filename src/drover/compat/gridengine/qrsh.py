"""qrsh: an interactive job on a terminal (`drover run --pty`); with a command, that command."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    while args and args[0].startswith("-"):  # -now, -N, -l ... are not needed on one Drover cluster
        args = args[2:] if args[0] in ("-N", "-l", "-q", "-P", "-now", "-pe") else args[1:]
    from drover.cli.main import main as drover

    command = args or ["bash", "-l"]
    return drover(["run", "--pty", "--", *command] if sys.stdin.isatty() else ["run", "--", *command])


if __name__ == "__main__":
    raise SystemExit(main())
