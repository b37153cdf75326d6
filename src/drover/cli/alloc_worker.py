"""drover alloc worker URL --manager slurm|pbs|lsf --time-limit S: run inside an outer scheduler's
allocation (its batch script starts it on each node), as whoever the allocation runs as.

1. The node's name says where it came from: <manager>-<allocation id>-<node index>.
2. Its end: the time the outer scheduler says the allocation has left (squeue %L, qstat's
   walltime less the walltime used, bjobs's time_left), else its
   time limit from now; less a margin (core/allocations.end_margin), so the node is gone
   before the outer scheduler ends the allocation.
3. It joins with the allocation's token ($DROVER_JOIN_TOKEN, used once per node) into a
   private state directory under $TMPDIR, as `drover join` does but without root, and writes
   `[execd] ends_at`: the controller starts no job there that would run past it.
4. It runs the node's execd in the foreground until the end, a signal (the allocation is
   cancelled) or the execd's exit. The execd runs with --leave-on-stop (execd/leaving.py): when
   the worker stops it, it ends the jobs running there first (their terminate sequence, with its
   kill grace) and reports their ends, which the controller decides as a lost node's (requeued,
   or NODE_FAIL if the job may not run again), with the allocation's end as the reason: nothing
   of them outlives the allocation, and the state directory holding their spools is removed
   only after. That takes LEAVE_WAIT_S at most, less than the outer schedulers' usual grace
   between their SIGTERM and SIGKILL (Slurm's KillWait: 30 s); the outer scheduler's SIGTERM
   may reach the execd itself too, which means the same to it.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from drover.cli.common import parser
from drover.core.errors import DroverError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from drover.cluster.outer.base import OuterScheduler

JOIN_TRIES = 5
LEAVE_WAIT_S = 20.0  # for the execd to end its jobs and report them
STOP_WAIT_S = 5.0  # then for it to stop


def run(command: str, argv: list[str]) -> int:
    p = parser(command, "Inside an outer scheduler's allocation: join the cluster as a node until the "
                        "allocation ends (started by the allocation's batch script, not by hand).", json_flag=False)
    p.add_argument("controller", metavar="https://ADDR:PORT")
    p.add_argument("--manager", default="slurm", help="the outer scheduler (slurm, pbs, lsf)")
    p.add_argument("--time-limit", type=float, required=True, help="the allocation's time limit, seconds")
    args = p.parse_args(argv)
    token_text = os.environ.pop("DROVER_JOIN_TOKEN", "")
    if not token_text:
        p.error("no join token: $DROVER_JOIN_TOKEN is not set (the allocation's script sets it)")

    from drover.cluster.outer.base import by_name
    from drover.core.allocations import end_margin, node_name

    manager = by_name(args.manager)
    allocation = manager.allocation_id(os.environ)
    if allocation is None:
        raise DroverError(f"not inside a {manager.name} allocation (no allocation id in the environment)")
    name = node_name(manager.name, allocation, manager.node_index(os.environ))
    ends_at = time.time() + _seconds_left(manager, allocation, args.time_limit) - end_margin(args.time_limit)
    root = tempfile.mkdtemp(prefix=f"drover-{name}-", dir=os.environ.get("TMPDIR") or None)
    os.chmod(root, 0o711)  # the jobs' owners reach their spool directories by name
    stopping: list[int] = []
    signal.signal(signal.SIGTERM, lambda number, frame: stopping.append(number))
    signal.signal(signal.SIGINT, lambda number, frame: stopping.append(number))
    try:
        _join(args.controller, token_text, name, root, ends_at)
        print(f"node {name} joined {args.controller}; it leaves at {time.strftime('%H:%M:%S', time.localtime(ends_at))}",
              flush=True)
        return _serve(root, ends_at, stopping, f"its {manager.name} allocation {allocation} ended")
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _seconds_left(manager: OuterScheduler, allocation: str, time_limit: float) -> float:
    try:
        done = subprocess.run(manager.time_left(allocation), capture_output=True, text=True, timeout=30,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return time_limit
    left = manager.seconds_left(done.stdout) if done.returncode == 0 else None
    return min(left, time_limit) if left is not None else time_limit


def _join(url: str, token_text: str, name: str, root: str, ends_at: float) -> None:
    """`drover join`'s steps into a private state directory, without root and without
    starting anything: the node's key, its certificate for the token, its drover.toml."""
    import json

    from drover.cli.commands.join import _node_config, _pinned_ca
    from drover.client import Client
    from drover.cluster.ca import fingerprint, signing_request
    from drover.cluster.files import TlsFiles, write_private
    from drover.cluster.tls import pinned_context
    from drover.cluster.tokens import parse_token
    from drover.config import Paths
    from drover.core.errors import Forbidden

    token = parse_token(token_text)
    paths = Paths(root)
    files = TlsFiles.of(paths.root)
    ca_pem = _pinned_ca(url, token.fingerprint)
    request_pem, key_pem = signing_request(name)
    for attempt in range(JOIN_TRIES):
        try:
            with Client(url, timeout_s=30, tls=pinned_context(ca_pem)) as api:
                reply = api.join(str(token), name, request_pem.decode("ascii"))
            break
        except (ConnectionError, TimeoutError, OSError):
            if attempt + 1 == JOIN_TRIES:
                raise
            time.sleep(2.0 * (attempt + 1))
    if fingerprint(reply.ca.encode()) != token.fingerprint:
        raise Forbidden("the controller answered with another CA than the token pins: not joining")
    write_private(files.node_key, key_pem)
    write_private(files.node_cert, reply.certificate.encode(), 0o644)
    write_private(files.ca_cert, reply.ca.encode(), 0o644)
    config = _node_config([url], reply.node, files, None, None, None)
    config += f"ends_at = {ends_at:.3f}\nspool = {json.dumps(os.path.join(root, 'spool'))}\n"
    write_private(paths.config_file, config.encode(), 0o644)


def _serve(root: str, ends_at: float, stopping: list[int], why: str) -> int:
    execd = subprocess.Popen([sys.executable, "-m", "drover", "execd", "--state-dir", root, "--leave-on-stop", why,
                              "--leave-wait", f"{LEAVE_WAIT_S:g}"], stdin=subprocess.DEVNULL)
    try:
        while not stopping and time.time() < ends_at:
            try:
                code = execd.wait(timeout=1.0)
            except subprocess.TimeoutExpired:
                continue
            print(f"the node's execd exited with status {code}", file=sys.stderr, flush=True)
            return 1
        why = "stopped by a signal" if stopping else "its allocation is about to end"
        print(f"the node leaves: {why}", flush=True)
        return 0
    finally:
        if execd.poll() is None:
            execd.terminate()  # it ends its jobs and reports them first (execd/leaving.py)
            try:
                execd.wait(timeout=LEAVE_WAIT_S + STOP_WAIT_S)
            except subprocess.TimeoutExpired:
                execd.kill()
                execd.wait()
