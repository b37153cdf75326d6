"""A real headless Chromium driven through its DevTools protocol (a WebSocket, with the
`websockets` package Drover already uses): no WebDriver, no browser download; and the dashboards
(`drover web`) the web tests point it at.

`Browser()` starts one in a profile of its own and closes it, with every process it started,
on `close()`. Skips the test, saying why, where Chromium cannot be installed. The `browser`
fixture (tests/conftest.py) is one for a test.
"""

from __future__ import annotations

import base64
import contextlib
import itertools
import json
import os
import shutil
import signal
import subprocess
import tempfile
import urllib.request
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import debian
from tests.helpers.users import user_command
from tests.helpers.wait import wait_until

TYPE_CHECKING = False
if TYPE_CHECKING:
    from tests.helpers.system_cluster import SystemCluster

# What alice's job is named and writes, in the tests of who sees what of another user's job.
SECRET_NAME = "alice-secret-name"
SECRET_OUTPUT = "alice-secret-output"


class Browser:
    def __init__(self) -> None:
        try:
            chromium = debian.chromium()
        except debian.Unavailable as why:
            pytest.skip(f"no Chromium to drive: {why}")
        from websockets.sync.client import connect

        self.profile = Path(tempfile.mkdtemp(prefix="drover-browser-"))
        # Root needs --no-sandbox (Chromium refuses to run its sandbox as root); its own session,
        # so that close() ends every process it forked, and nothing else.
        self.process = subprocess.Popen(
            [chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
             "--no-first-run", "--no-default-browser-check", "--disable-extensions", "--hide-scrollbars",
             "--window-size=1280,900", "--remote-debugging-port=0", f"--user-data-dir={self.profile}",
             "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        port_file = self.profile / "DevToolsActivePort"
        wait_until(lambda: port_file.exists() and len(port_file.read_text().splitlines()) >= 2, timeout=60,
                   describe="Chromium to open its DevTools port")
        port = int(port_file.read_text().splitlines()[0])
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as reply:
            targets = json.load(reply)
        page = next(target for target in targets if target["type"] == "page")
        self.stack = contextlib.ExitStack()
        self.socket = self.stack.enter_context(connect(page["webSocketDebuggerUrl"], max_size=None, open_timeout=20))
        self.ids = itertools.count(1)

    def send(self, method: str, **params: Any) -> dict[str, Any]:
        number = next(self.ids)
        self.socket.send(json.dumps({"id": number, "method": method, "params": params}))
        while True:
            message = json.loads(self.socket.recv(timeout=60))
            if message.get("id") == number:
                if "error" in message:
                    raise AssertionError(f"{method}: {message['error']}")
                return message["result"]  # type: ignore[no-any-return]

    def evaluate(self, expression: str) -> Any:
        result = self.send("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise AssertionError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def goto(self, url: str) -> None:
        """Open `url` and wait for its document to have loaded (scripts included)."""
        self.evaluate("window.droverOldPage = true")  # gone once the new document replaced it
        self.send("Page.navigate", url=url)
        wait_until(lambda: self.evaluate("!window.droverOldPage && document.readyState === 'complete'"),
                   timeout=30, describe=f"{url} to load")

    def text(self) -> str:
        return str(self.evaluate("document.documentElement.outerHTML"))

    def visible(self) -> str:
        return str(self.evaluate("document.body ? document.body.innerText : ''"))

    def live_updates(self) -> int:
        """How many updates the page's live part has had from the dashboard's stream."""
        return int(self.evaluate("Number(document.body.dataset.updates || 0)"))

    def screenshot(self, path: Path) -> None:
        data = self.send("Page.captureScreenshot", format="png")["data"]
        path.write_bytes(base64.b64decode(data))

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.stack.close()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        # Its helpers (zygote, renderers) are in its process group: wait until they are gone too.
        def group_gone() -> bool:
            try:
                os.killpg(self.process.pid, 0)
            except ProcessLookupError:
                return True
            return False
        with contextlib.suppress(AssertionError):
            wait_until(group_gone, timeout=10, describe="Chromium's helpers to exit")
        if not group_gone():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
        shutil.rmtree(self.profile, ignore_errors=True)


@pytest.fixture
def browser() -> Iterator[Browser]:
    """A headless Chromium of the test's own, closed with every process it started."""
    opened = Browser()
    try:
        yield opened
    finally:
        opened.close()


def start_dashboard(command: list[str], env: dict[str, str], cwd: str | None = None,
                    who: str = "drover web") -> tuple[subprocess.Popen[str], str]:
    """`drover web` (`command`) started in the background; its process and the URL it printed
    (with its one-time token)."""
    process = subprocess.Popen(command, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               stdin=subprocess.DEVNULL, text=True, start_new_session=True)
    line = process.stdout.readline() if process.stdout else ""
    if "http://" not in line:
        process.kill()
        raise AssertionError(f"{who} printed no URL: {line!r} {process.communicate()[1]!r}")
    return process, line.split(": ", 1)[1].strip()


def dashboard_of(cluster: SystemCluster, user: str, *options: str) -> tuple[subprocess.Popen[str], str]:
    """`drover web OPTIONS` (the installed command) run as `user` in the background, in / (the
    service user's home may not be there); its process and the URL it printed."""
    command, env = user_command(user, ["drover", "web", *options], cwd="/",
                                env={"PATH": cluster.user_path, "DROVER_SOCKET": cluster.socket})
    return start_dashboard(command, env, cwd="/", who=f"drover web as {user}")


def stop_dashboards(processes: Iterable[subprocess.Popen[str]]) -> None:
    for process in processes:
        process.terminate()
        process.communicate(timeout=20)


def secret_job(cluster: SystemCluster, user: str, *options: str) -> int:
    """A running job of `user`'s (submitted with `options`), named SECRET_NAME, that writes
    SECRET_OUTPUT every half second until it is cancelled."""
    script = f"while true; do echo {SECRET_OUTPUT}; sleep 0.5; done"
    job = cluster.submit_as(user, "--name", SECRET_NAME, *options, "--", "sh", "-c", script)
    wait_until(lambda: cluster.job(job)["state"] == "running", timeout=30, describe=f"{user}'s job to run")
    return job
