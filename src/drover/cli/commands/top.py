"""drover top: the running jobs, what each uses against what it reserved, redrawn like top."""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import time

from drover.cli.common import client, parser, print_json, seconds, whole_number

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from drover.protocol.api import TopList

CLEAR = "\x1b[H\x1b[2J"  # cursor home, clear the screen: what top does between frames
COLUMNS = ("JOB", "NODE", "USER", "CPU", "MEM", "PEAK", "TIME", "CMD")


def run(command: str, argv: list[str]) -> int:
    p = parser(command, "Watch the running jobs: CPU used against CPUs reserved, memory against the "
                        "request, peak memory, run time and the biggest process, refreshed like top. "
                        "Figures come from each node's samples ([execd] sample_s). On a terminal, q quits "
                        "and lines are cut at its width.")
    p.add_argument("-d", "--delay", type=seconds, default=2.0, metavar="SECONDS", help="between frames (default 2)")
    p.add_argument("-n", "--iterations", type=whole_number(1), metavar="N", help="stop after N frames")
    p.add_argument("--once", action="store_true", help="print one frame and exit")
    p.add_argument("-u", "--user", help="only this user's jobs (operators see everyone's by default)")
    args = p.parse_args(argv)
    frames = 1 if args.once or args.json else args.iterations
    live = sys.stdout.isatty() and frames != 1
    with client() as api, _keys(live and sys.stdin.isatty()) as pressed:
        shown = 0
        while True:
            listing = api.top(args.user)
            if args.json:
                print_json(listing.rows)
                return 0
            text = frame(listing)
            if live:
                sys.stdout.write(CLEAR)
                text = _cut(text, shutil.get_terminal_size().columns)
            sys.stdout.write(text)
            sys.stdout.flush()
            shown += 1
            if frames is not None and shown >= frames:
                return 0
            try:
                if pressed(args.delay, "qQ"):
                    return 0
            except KeyboardInterrupt:
                return 0


@contextlib.contextmanager
def _keys(interactive: bool) -> Iterator[Callable[[float, str], bool]]:
    """A wait of so many seconds that a key among those given ends early (True), read from a
    terminal in cbreak mode (each key as it is pressed, not echoed): the terminal's mode is
    restored however the command ends. Not interactive: a plain sleep."""
    if not interactive:
        yield _sleep
        return
    import select
    import termios
    import tty

    stdin = sys.stdin.fileno()
    saved = termios.tcgetattr(stdin)

    def pressed(delay: float, keys: str) -> bool:
        deadline = time.monotonic() + delay
        while (left := deadline - time.monotonic()) > 0:
            if select.select([stdin], [], [], left)[0]:
                key = os.read(stdin, 64)
                if not key or any(chr(byte) in keys for byte in key):  # end of input quits too
                    return True
        return False

    try:
        tty.setcbreak(stdin)
        yield pressed
    finally:
        termios.tcsetattr(stdin, termios.TCSADRAIN, saved)


def _sleep(delay: float, _keys: str) -> bool:
    time.sleep(delay)
    return False


def _cut(text: str, columns: int) -> str:
    """Each line at most `columns` characters, as top cuts them, so that none wraps."""
    return "".join(line[:columns] + "\n" for line in text.splitlines())


def frame(listing: TopList) -> str:
    """One screen: a header line, then a row per running attempt, the busiest CPU first."""
    from drover.cli.usage_render import cpu_against, memory_against, memory_bytes
    from drover.core.units import format_duration

    rows = [(f"{row.job_id}.{row.task}" if row.is_array else str(row.job_id), row.node, row.owner,
             cpu_against(row.cpu, row.cpus), memory_against(row.memory_bytes, row.memory_mib),
             memory_bytes(row.peak_bytes), format_duration(row.runtime_s), row.cmd or row.name)
            for row in listing.rows]
    used = sum(row.cpu for row in listing.rows)
    reserved = sum(row.cpus for row in listing.rows)
    lines = [f"drover top - {time.strftime('%H:%M:%S', time.localtime(listing.at))}: {len(rows)} running, "
             f"CPU {used:.1f} used of {reserved} reserved", ""]
    widths = [max([len(column), *(len(row[i]) for row in rows)]) for i, column in enumerate(COLUMNS[:-1])]
    for cells in [COLUMNS, *rows]:
        lines.append("  ".join(cell.ljust(width) for cell, width in zip(cells, widths, strict=False))
                     + "  " + cells[-1])
    return "\n".join(lines) + "\n"
