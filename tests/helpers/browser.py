"""A real headless Chromium driven through its DevTools protocol (a WebSocket, with the
`websockets` package Drover already uses): no WebDriver, no browser download.

`Browser()` starts one in a profile of its own and closes it, with every process it started,
on `close()`. Skips the test, saying why, where Chromium cannot be installed.
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
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import debian
from tests.helpers.wait import wait_until


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
