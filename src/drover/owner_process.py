"""A small helper process that runs as one user and answers one JSON line at a time: how a root
daemon touches a user's files without touching them itself (the kernel checks every open of the
helper's against that user's rights).

The helper is a module of the standard library's only, whose source is run by the interpreter
behind this one's virtual environment (`python -I -c`): the user may not be allowed into the
directory Drover is installed in, and needs nothing of it. Its environment is empty but for PATH
and LANG, and its directory is `/`.

The user owns the helper, and may stop it, kill it, or (were it dumpable) attach a debugger to
it and keep its pipes open from a process of their own. So the daemon never blocks on it:

- It drops to the user itself, after exec (`_PRELUDE`): until the exec the child is root's, so
  no user can stop it while this process waits for the exec, and after the drop it makes itself
  non-dumpable, so its /proc entries are root's and its owner can neither trace it nor open its
  pipes through /proc/PID/fd. (An exec after a drop would make it dumpable again.)
- Its pipes are read and written by the event loop, never by a thread: a request has a deadline
  that covers its wait behind the same helper's earlier ones too; past it the daemon closes its
  ends of the pipes and kills the helper, which is reaped when it dies (a pidfd the loop
  watches), never waited for.
- A reply is at most `max_reply` bytes, and at most `max_waiting` requests wait for one helper:
  more are refused at once. One helper serves one user (OwnerProcesses keeps one per user), so a
  user's requests wait behind their own only, and nothing of anyone else's waits for them.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from typing import Any

HELPER_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
MAX_REPLY = 4 << 20  # bytes of one reply line: an output reader's MiB, base64, and room to spare
MAX_WAITING = 16  # requests queued for one helper (one user's): more are refused at once
CLOSE_GRACE_S = 2.0  # an idle helper told to end (EOF on its stdin) is killed after this


class HelperBusy(Exception):
    """Too many of this user's requests wait for their helper already."""


# The helper's program. The module's source runs first, as root when the daemon is root: it only
# imports from the standard library and defines functions, and so the helper needs nothing on
# disk once it is the user. Then it drops to the user (argv: uid gid groups; none: it stays the
# daemon's own user), makes itself non-dumpable, and serves: the module's main().
_PRELUDE = r"""
import ctypes, os, sys
_helper = {"__name__": "drover_helper", "__builtins__": __builtins__}
exec(compile(_SOURCE, _NAME, "exec"), _helper)
_libc = ctypes.CDLL(None, use_errno=True)
if len(sys.argv) > 1:
    _uid, _gid = int(sys.argv[1]), int(sys.argv[2])
    os.setgroups([int(g) for g in sys.argv[3].split(",") if g])
    os.setresgid(_gid, _gid, _gid)
    os.setresuid(_uid, _uid, _uid)
    if os.getresuid() != (_uid,) * 3 or os.getresgid() != (_gid,) * 3:
        sys.exit("could not become the user")
if _libc.prctl(4, 0, 0, 0, 0) != 0:  # PR_SET_DUMPABLE 0: /proc/PID is root's, no ptrace by the user
    sys.exit("could not make the helper non-dumpable")
with open("/proc/self/status") as _status:  # traced before the prctl: give up (a new one is started)
    if any(line.startswith("TracerPid:") and line.split()[1] != "0" for line in _status):
        sys.exit("the helper is traced")
del sys.argv[1:]
sys.exit(_helper["main"]())
"""


class _Helper:
    """One running helper: its process, the root side of its pipes, and its end (`exited` is set
    once it has died and been reaped: a pidfd the loop watches, never a wait)."""

    def __init__(self, process: subprocess.Popen[bytes], reader: asyncio.StreamReader,
                 read_transport: asyncio.ReadTransport, writer: asyncio.StreamWriter) -> None:
        self.process, self.reader, self.read_transport, self.writer = process, reader, read_transport, writer
        self.exited = _reaped_when_dead(process)

    def stop(self, graceful: bool) -> None:
        """Close the root side of the pipes; kill the helper unless `graceful` (it ends by itself
        at the EOF on its stdin)."""
        with _suppress():
            self.writer.transport.abort()
        with _suppress():
            self.read_transport.close()
        with _suppress():
            self.reader.feed_eof()
        if not graceful:
            _kill(self.process)

    async def end(self) -> None:
        """Stop it, and give it CLOSE_GRACE_S to end at EOF before it is killed; waits for its
        death a bounded time only (a process the kernel holds in a hung filesystem may take long:
        it is reaped whenever it dies)."""
        self.stop(graceful=True)
        for _ in range(2):
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.exited.wait(), CLOSE_GRACE_S)
                return
            _kill(self.process)


class OwnerProcess:
    def __init__(self, module: str, uid: int | None = None, gid: int | None = None,
                 groups: list[int] | None = None, max_reply: int = MAX_REPLY,
                 max_waiting: int = MAX_WAITING) -> None:
        """`uid` None: the helper runs as this process's own user."""
        self.module = module
        self.uid, self.gid, self.groups = uid, gid, groups
        self.max_reply, self.max_waiting = max_reply, max_waiting
        self._helper: _Helper | None = None
        self._lock = asyncio.Lock()
        self._waiting = 0

    @property
    def idle(self) -> bool:
        """No request is being answered, or waits."""
        return self._waiting == 0

    @property
    def pid(self) -> int | None:
        return self._helper.process.pid if self._helper is not None else None

    async def ask(self, request: Any, timeout_s: float) -> Any:
        """The helper's answer to `request` (JSON both ways), within `timeout_s` in all (its wait
        behind this helper's earlier requests too); TimeoutError past it, HelperBusy when too many
        wait already, RuntimeError when the helper failed (it is stopped: the next request starts
        a new one)."""
        if self._waiting >= self.max_waiting:
            raise HelperBusy(f"{self._waiting} requests wait for this user's helper already")
        self._waiting += 1
        try:
            async with asyncio.timeout(timeout_s):
                async with self._lock:
                    helper = self._helper
                    if helper is None or helper.exited.is_set():  # none yet, or it died while idle
                        if helper is not None:
                            helper.stop(graceful=False)
                        helper = await self._start()
                    try:
                        reply = json.loads(await self._exchange(helper, json.dumps(request).encode() + b"\n"))
                        if not isinstance(reply, dict):
                            raise RuntimeError("the helper's answer is not an object")
                    except BaseException:
                        # Stalled, dead, or answering garbage: its answer may still come and would
                        # be taken for the next request's, so it goes, and never holds us up.
                        if self._helper is helper:
                            self._helper = None
                        helper.stop(graceful=False)
                        raise
        finally:
            self._waiting -= 1
        return reply

    async def _exchange(self, helper: _Helper, line: bytes) -> bytes:
        helper.writer.write(line)
        await helper.writer.drain()
        try:
            reply = await helper.reader.readuntil(b"\n")
        except asyncio.IncompleteReadError:
            raise RuntimeError("the helper exited") from None
        except asyncio.LimitOverrunError:
            raise RuntimeError(f"the helper's answer is longer than {self.max_reply} bytes") from None
        return reply

    async def _start(self) -> _Helper:
        loop = asyncio.get_running_loop()
        child_stdin, request_end = os.pipe2(os.O_CLOEXEC)
        reply_end, child_stdout = os.pipe2(os.O_CLOEXEC)
        argv = [os.path.realpath(sys.executable), "-I", "-c", _program(self.module)]
        if self.uid is not None:
            argv += [str(self.uid), str(self.gid if self.gid is not None else self.uid),
                     ",".join(str(g) for g in (self.groups or []))]
        try:
            # No user=/group= here: the child stays root until it has exec'd (see the module's
            # docstring), so this wait for its exec is never a wait on something a user controls.
            process = subprocess.Popen(argv, stdin=child_stdin, stdout=child_stdout, stderr=subprocess.DEVNULL,
                                       cwd="/", env={"PATH": HELPER_PATH, "LANG": "C.UTF-8"}, close_fds=True)
        except BaseException:
            os.close(request_end)
            os.close(reply_end)
            raise
        finally:  # the child's ends: only the child holds them now
            os.close(child_stdin)
            os.close(child_stdout)
        reader = asyncio.StreamReader(limit=self.max_reply, loop=loop)
        replies, requests = open(reply_end, "rb", buffering=0), open(request_end, "wb", buffering=0)
        try:
            read_transport, _ = await loop.connect_read_pipe(
                lambda: asyncio.StreamReaderProtocol(reader, loop=loop), replies)
            write_transport, write_protocol = await loop.connect_write_pipe(
                lambda: asyncio.StreamReaderProtocol(asyncio.StreamReader(loop=loop), loop=loop), requests)
        except BaseException:
            replies.close()
            requests.close()
            _kill(process)
            _reaped_when_dead(process)
            raise
        writer = asyncio.StreamWriter(write_transport, write_protocol, None, loop)
        self._helper = _Helper(process, reader, read_transport, writer)
        return self._helper

    async def close(self) -> None:
        """End the helper: at once if a request is in hand (which then fails), else at EOF, or
        killed after CLOSE_GRACE_S. Waits for its end a bounded time."""
        helper, self._helper = self._helper, None
        if helper is not None:
            if not self.idle:
                helper.stop(graceful=False)
            await helper.end()


class OwnerProcesses:
    """One helper of `module` per user, started at the user's first request; one idle for
    `idle_s` is stopped at the next request of anyone's."""

    def __init__(self, module: str, idle_s: float) -> None:
        self.module = module
        self.idle_s = idle_s
        self._helpers: dict[int | None, tuple[OwnerProcess, float]] = {}  # uid → its helper, last used
        self._closing: set[asyncio.Task[None]] = set()

    def of(self, uid: int | None, gid: int | None = None, groups: list[int] | None = None) -> OwnerProcess:
        """The user's helper. `uid` None: this process's own user (a daemon that is not root
        serves its own user's jobs only)."""
        now = time.monotonic()
        for other, (helper, used) in list(self._helpers.items()):
            if other != uid and now - used > self.idle_s and helper.idle:
                del self._helpers[other]
                task = asyncio.get_running_loop().create_task(helper.close())
                self._closing.add(task)
                task.add_done_callback(self._closing.discard)
        kept = self._helpers.get(uid)
        helper = kept[0] if kept is not None else OwnerProcess(self.module, uid, gid, groups)
        self._helpers[uid] = (helper, now)
        return helper

    async def close(self) -> None:
        """End every helper, side by side: one its user stopped costs CLOSE_GRACE_S twice at most."""
        helpers = [helper for helper, _ in self._helpers.values()]
        self._helpers.clear()
        await asyncio.gather(*(helper.close() for helper in helpers), *self._closing)


def _kill(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        with _suppress():
            process.send_signal(signal.SIGKILL)


def _reaped_when_dead(process: subprocess.Popen[bytes]) -> asyncio.Event:
    """An event set once `process` has died and been reaped, without waiting for it: a pidfd the
    loop watches (it becomes readable at the exit), or, where there is none, a look every second."""
    loop = asyncio.get_running_loop()
    exited = asyncio.Event()
    try:
        pidfd = os.pidfd_open(process.pid)
    except (AttributeError, OSError):  # no pidfds (Linux before 5.3)
        def look() -> None:
            if process.poll() is None:
                loop.call_later(1.0, look)
            else:
                exited.set()

        look()
        return exited

    def dead() -> None:
        loop.remove_reader(pidfd)
        os.close(pidfd)
        process.poll()
        exited.set()

    loop.add_reader(pidfd, dead)
    return exited


def _suppress() -> contextlib.suppress:
    return contextlib.suppress(OSError, RuntimeError, AttributeError)


def _program(module: str) -> str:
    source, name = _source(module)
    return f"_SOURCE = {source!r}\n_NAME = {name!r}\n{_PRELUDE}"


@functools.cache
def _source(module: str) -> tuple[str, str]:
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin is not None, module
    with open(spec.origin, encoding="utf-8") as file:
        source = file.read()
    assert "\ndef main() -> int:" in source, f"{module} serves from main()"
    return source, spec.origin
