"""A small helper process that runs as one user and answers one JSON line at a time: how a root
daemon touches a user's files without touching them itself (the kernel checks every open of the
helper's against that user's rights).

The helper is a module of the standard library's only, whose source is run by the interpreter
behind this one's virtual environment (`python -I -c`): the user may not be allowed into the
directory Drover is installed in, and needs nothing of it. Its environment is empty but for PATH
and LANG, and its directory is `/`. Popen, not the event loop's subprocess support: it switches uid, gid and
groups in C before exec. Requests to one helper are taken one at a time; a helper that times out
or dies is stopped, and the next request starts a new one.
"""

from __future__ import annotations

import asyncio
import functools
import importlib.util
import json
import os
import subprocess
import sys
from typing import Any

HELPER_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


class OwnerProcess:
    def __init__(self, module: str, uid: int | None = None, gid: int | None = None,
                 groups: list[int] | None = None) -> None:
        """`uid` None: the helper runs as this process's own user."""
        self.module = module
        self.uid, self.gid, self.groups = uid, gid, groups
        self.process: subprocess.Popen[bytes] | None = None
        self._lock = asyncio.Lock()

    async def ask(self, request: Any, timeout_s: float) -> Any:
        """The helper's answer to `request` (JSON both ways)."""
        async with self._lock:
            process = self.process or self._start()
            line = json.dumps(request).encode() + b"\n"
            try:
                reply = await asyncio.wait_for(asyncio.to_thread(_exchange, process, line), timeout_s)
            except BaseException:
                await self.close()  # its answer may still come, and would be taken for the next one's
                raise
            return json.loads(reply)

    def _start(self) -> subprocess.Popen[bytes]:
        self.process = subprocess.Popen(
            [os.path.realpath(sys.executable), "-I", "-c", _source(self.module)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            cwd="/", env={"PATH": HELPER_PATH, "LANG": "C.UTF-8"}, close_fds=True,
            user=self.uid, group=self.gid, extra_groups=self.groups,
        )
        return self.process

    async def close(self) -> None:
        process, self.process = self.process, None
        if process is None:
            return
        try:
            if process.stdin is not None:
                process.stdin.close()  # the helper ends at EOF
        except OSError:
            pass
        try:
            await asyncio.wait_for(asyncio.to_thread(process.wait), 2)
        except TimeoutError:
            process.kill()
            await asyncio.to_thread(process.wait)


def _exchange(process: subprocess.Popen[bytes], request: bytes) -> bytes:
    """One request and its reply, blocking (in a thread). A helper stopped meanwhile closes the
    pipes, which ends the wait."""
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(request)
    process.stdin.flush()
    reply = process.stdout.readline()
    if not reply:
        raise RuntimeError("the helper exited")
    return reply


@functools.cache
def _source(module: str) -> str:
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin is not None, module
    with open(spec.origin, encoding="utf-8") as file:
        return file.read()
