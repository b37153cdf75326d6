"""qrls: take the user hold off jobs and array tasks."""

from __future__ import annotations

import sys

from drover.compat.gridengine.jobaction import parse_or_usage, run, with_task_option
from drover.compat.gridengine.qhold import OPTIONS, holds_refused, report

__all__ = ["OPTIONS", "main"]


def main(argv: list[str] | None = None) -> int:
    parsed = parse_or_usage("qrls", list(sys.argv[1:] if argv is None else argv), OPTIONS)
    if isinstance(parsed, int):
        return parsed
    if holds_refused("qrls", parsed):
        return 1
    return run("qrls", with_task_option(parsed), lambda client, refs: client.release(refs), report)


if __name__ == "__main__":
    raise SystemExit(main())
