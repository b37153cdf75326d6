"""A job followed from the terminal that submitted it (`drover run`, qrsh, srun and salloc outside
a job): its output streamed here as it is written, or its own terminal relayed to this one.

Where the job runs on this host, its files and its terminal's socket are read here directly.
Where it runs on another host (this host joined a cluster, or the cluster has nodes elsewhere),
both are reached through the controller and the node (GET .../output and the .../terminal
WebSocket), which read them as the job's owner.

Ctrl-C before the job starts cancels it where it waits ("Job allocation N has been revoked."),
so that nothing is left queued to start later with nobody attached.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import tempfile
import time

from drover.cli.output_files import Labelled, Sink, TaskOutput, all_nodes_here
from drover.cli.start_notice import StartNotice, Wording
from drover.client.client import Client
from drover.protocol.plain import JobRequest, WaitReply

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from websockets.sync.client import ClientConnection as WebSocket


class Revoked(KeyboardInterrupt):
    """Ctrl-C while the job still waited to start: it was cancelled (nothing is left queued to
    start later with nobody attached), and `reply` is its last wait reply. A KeyboardInterrupt,
    so that a command that does not catch it exits as an interrupted command does (130)."""

    def __init__(self, reply: WaitReply) -> None:
        super().__init__()
        self.reply = reply


def stream(client: Client, job: JobRequest, prefix: str, on_start: str | None = None,
           on_interrupt: str | None = None, named_files: bool = False,
           on_revoke: str = "{prefix}: Job allocation {id} has been revoked.",
           notice: Wording | None = None) -> WaitReply:
    """Submit `job`, copy its stdout and stderr here until it ends (Ctrl-C cancels it), and
    return the last wait reply. `notice`: what to say while it waits and once it starts
    (cli/start_notice.py). `on_start` is printed to stderr once it starts ({id} is its id),
    `on_interrupt` on Ctrl-C once it runs; Ctrl-C before it starts prints `on_revoke` and raises
    Revoked. `named_files`: the job's output files are the user's choice, kept where they said
    (and read through the node, which knows what their patterns made)."""
    array = bool(job.get("array"))
    # Set: the job's files are here, in this temporary directory, read directly.
    spool = None if named_files else _own_output_files(client, job, prefix, array)
    try:
        job_id, interrupted = _submit(client, job)
        followed = _Followed(client, job_id, job, spool is not None, array)
        waiting = StartNotice(notice, job_id)
        to_announce = on_start  # None once printed (or when there is nothing to print)
        started = False
        try:
            if interrupted:
                raise KeyboardInterrupt
            while True:
                reply = client.wait_json(job_id, 0)
                started = started or reply["ended"] or _started(reply)
                waiting.see(reply)
                if to_announce is not None and started:
                    print(to_announce.format(id=job_id), file=sys.stderr, flush=True)
                    to_announce = None
                followed.copy_new(reply)
                if reply["ended"]:
                    followed.close()
                    return reply
                time.sleep(0.05)
        except KeyboardInterrupt:
            if not started:
                try:
                    _revoke(client, job_id, on_revoke.format(prefix=prefix, id="{id}"))
                except Revoked as revoked:  # it may have started meanwhile: what it wrote is shown
                    followed.copy_new(revoked.reply)
                    followed.close()
                    raise
            if on_interrupt:
                print(on_interrupt.format(id=job_id), file=sys.stderr)
            client.action_json("cancel", [str(job_id)])
            while not (reply := client.wait_json(job_id, 60))["ended"]:
                pass
            followed.copy_new(reply)
            followed.close()
            return reply
    finally:
        if spool is not None:
            shutil.rmtree(spool, ignore_errors=True)


def on_terminal(client: Client, job: JobRequest, on_start: str | None = None,
                on_revoke: str = "drover run: Job allocation {id} has been revoked.",
                notice: Wording | None = None) -> WaitReply:
    """Submit `job` to run on a terminal of its own, relay it to this one until it ends (Ctrl-C
    goes to the job, as a key), and return the last wait reply; `notice` as stream's. Ctrl-C before its terminal is
    there (the job waits to start) cancels it, prints `on_revoke` and raises Revoked."""
    from drover.cli.terminal import relay, relay_websocket

    spool = _own_output_files(client, job, "pty", array=False)
    job["pty"] = True
    job.pop("error", None)  # a terminal is one stream
    try:
        job_id, interrupted = _submit(client, job)
        attempt = None
        waiting = StartNotice(notice, job_id)
        try:
            if interrupted:
                raise KeyboardInterrupt
            while attempt is None:
                reply = client.wait_json(job_id, 0)
                waiting.see(reply)
                if reply["ended"]:
                    break
                attempts = [a for t in reply["job"]["tasks"] for a in t["attempts"]]
                attempt = attempts[-1] if attempts and attempts[-1].get("pty_socket") else None
                if attempt is None:
                    time.sleep(0.02)
        except KeyboardInterrupt:
            _revoke(client, job_id, on_revoke)
        if on_start and (attempt is not None or _started(reply)):
            print(on_start.format(id=job_id), file=sys.stderr, flush=True)
        try:
            if attempt is None:
                pass  # it ended before its terminal was there
            elif not client.remote and attempt["node"] in _local_nodes(client):
                relay(str(attempt["pty_socket"]))
            else:
                _relay_through_node(client, job_id, relay_websocket)
        except KeyboardInterrupt:
            client.action_json("cancel", [str(job_id)])
        while not (reply := client.wait_json(job_id, 30))["ended"]:
            pass
        # What the terminal had no one to give to (the job ended before the relay was reached),
        # the node left in the job's output file.
        TaskOutput(client, job_id, 0, "stdout", job["output"] if spool else None).copy_new(sys.stdout.buffer)
        return reply
    finally:
        if spool is not None:
            shutil.rmtree(spool, ignore_errors=True)


def _relay_through_node(client: Client, job_id: int, relay_websocket: Callable[[WebSocket], None]) -> None:
    """The terminal through the job's node; none to reach once the job has ended is no error."""
    from drover.core.errors import Unavailable

    try:
        websocket = client.terminal(job_id, 0)
    except Unavailable:
        if client.wait_json(job_id, 0)["ended"]:
            return
        raise
    relay_websocket(websocket)


def _own_output_files(client: Client, job: JobRequest, prefix: str, array: bool) -> str | None:
    """Point the job's output and error files where this command reads them: a temporary
    directory of this host's, returned (its caller removes it), when every node runs here; else
    hidden files in its working directory, read through its node (None returned)."""
    if all_nodes_here(client):
        spool = tempfile.mkdtemp(prefix=f"drover-{prefix}-")
        os.chmod(spool, 0o755)  # the job may run as its owner under a root-run node daemon
        # An array's tasks each a file of their own (%a their index), or they would overwrite each other.
        job["output"], job["error"] = (os.path.join(spool, name + (".%a" if array else "")) for name in ("out", "err"))
        return spool
    # On another host this host's temporary directory does not exist: the files stay in the
    # working directory there (hidden), and come here through the node.
    suffix = "%j_%a" if array else "%j"
    job["output"], job["error"] = f".drover-run-{suffix}.out", f".drover-run-{suffix}.err"
    return None


class _Followed:
    """The job's stdout and stderr, each task's, copied here as they grow: a plain job's as they
    are, an array's tasks' each line labelled with its index (output_files.Labelled)."""

    def __init__(self, client: Client, job_id: int, job: JobRequest, here: bool, array: bool) -> None:
        self.client, self.job_id, self.job, self.here, self.array = client, job_id, job, here, array
        self.streams: dict[tuple[int, str], tuple[TaskOutput, Sink]] = {}

    def copy_new(self, reply: WaitReply) -> None:
        for task in reply["job"]["tasks"] if self.array else [{"index": 0}]:
            self._follow(int(task["index"]))
        for output, out in self.streams.values():
            output.copy_new(out)

    def _follow(self, index: int) -> None:
        for stream, field, out in (("stdout", "output", sys.stdout.buffer), ("stderr", "error", sys.stderr.buffer)):
            pattern = self.job.get(field)
            if (index, stream) in self.streams or not isinstance(pattern, str):
                continue
            path = pattern.replace("%a", str(index)) if self.here else None
            self.streams[index, stream] = (TaskOutput(self.client, self.job_id, index, stream, path),
                                           Labelled(out, index) if self.array else out)

    def close(self) -> None:
        for _, out in self.streams.values():
            if isinstance(out, Labelled):
                out.close()


def _submit(client: Client, job: JobRequest) -> tuple[int, bool]:
    """Submit `job`: its id, and whether Ctrl-C came meanwhile. Held back until the id is known:
    a job the controller took but whose id never came back could not be cancelled."""
    pressed: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, _frame: pressed.append(signum))
    try:
        (job_id,) = client.submit([job])
    finally:
        signal.signal(signal.SIGINT, previous)
    return job_id, bool(pressed)


def _revoke(client: Client, job_id: int, message: str) -> None:
    """Ctrl-C before the job started: cancel it, wait for it to end, say so, raise Revoked."""
    client.action_json("cancel", [str(job_id)])
    while not (reply := client.wait_json(job_id, 60))["ended"]:
        pass
    print(message.format(id=job_id), file=sys.stderr, flush=True)
    raise Revoked(reply)


def _started(reply: WaitReply) -> bool:
    return any(task["state"] not in ("pending", "held") for task in reply["job"]["tasks"])


def _local_nodes(client: Client) -> set[str]:
    return {node.name for node in client.nodes() if node.local}


def exit_code(reply: WaitReply) -> int | None:
    """The job's exit status as a shell shows it; None when it never ran to an exit."""
    status = reply["job"]["exit_status"]
    return None if status is None else int(status)
