"""A node that leaves its cluster for good: `drover execd --leave-on-stop WHY`, as `drover alloc
worker` starts it inside an outer scheduler's allocation, whose end takes the host (and the
node's state directory) away.

An execd that stops leaves its jobs running, for the next execd to re-attach to from the spool.
One that leaves for good has no next one: on SIGTERM or SIGINT it first tells the controller that
it ends now (it opens its channel again, its Hello's `ends_at` now: the planner starts nothing
more there, as near any node's end), then ends every attempt it
runs (Attempts.leave_cluster: their shepherds' terminate sequence, with its kill grace), reports
each end to the controller, which decides it as a lost node's (requeued if the job may run
again, else NODE_FAIL, with WHY as the reason), and waits for those reports to be acknowledged
and their spools cleaned up, for `wait_s` at most; then it stops. Signals that come meanwhile
(the outer scheduler's own, which may reach the execd as well as the worker) change nothing.
"""

from __future__ import annotations

import asyncio
import logging
import time

from drover.core.shown_text import MAX_REASON, has_control_characters

TYPE_CHECKING = False
if TYPE_CHECKING:
    from drover.execd.attempts import Attempts
    from drover.execd.channel import ControllerChannel
    from drover.execd.cleanup import Cleanup

log = logging.getLogger("drover.execd")
POLL_S = 0.1
# WHY reaches the job's owner as their job's reason (`drover show`, its events and mail): as a
# drain's reason, at most this long, and as a job's name, one line without control characters.
MAX_WHY = MAX_REASON


def why_given(text: str) -> str:
    """WHY of --leave-on-stop as given, or the reason it is refused (argparse's type check)."""
    import argparse

    if not text.strip():
        raise argparse.ArgumentTypeError("say why the node leaves")
    if len(text) > MAX_WHY:
        raise argparse.ArgumentTypeError(f"at most {MAX_WHY} characters, not {len(text)}")
    if has_control_characters(text):
        raise argparse.ArgumentTypeError("one line of printable characters (no control characters: it is shown "
                                         "on the terminals of the users whose jobs end)")
    return text


async def leave(attempts: Attempts, cleanup: Cleanup, channel: ControllerChannel, why: str, wait_s: float) -> bool:
    """End every attempt here and wait for their reports to be acknowledged; False if some were
    not within `wait_s`."""
    running = len(attempts.live) + len(attempts.promised)
    log.info("the node leaves its cluster (%s): ending its %d attempt(s)", why, running)
    attempts.leave_cluster(why)  # an order that still comes ends at once, as the node left
    await channel.reconnect()  # its reports are sent again on the new channel, read again
    deadline = time.monotonic() + wait_s
    while attempts.live or attempts.promised or cleanup.pending:
        if time.monotonic() >= deadline:
            log.warning("the node leaves with %d attempt(s) still running and %d report(s) not acknowledged "
                        "after %gs", len(attempts.live), len(cleanup.pending), wait_s)
            return False
        await asyncio.sleep(POLL_S)
    if running:
        log.info("the node's attempts ended and were reported")
    return True
