"""drover controller / drover execd: the daemons in the foreground."""

from __future__ import annotations


def run(command: str, argv: list[str]) -> int:
    if command == "controller":
        from drover.controller.main import serve
    else:
        from drover.execd.main import serve
    return serve(argv)
