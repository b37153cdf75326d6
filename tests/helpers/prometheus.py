"""A private Prometheus server for the metrics' tests: Debian's `prometheus`, started on a free
loopback port with a scrape configuration and a data directory of its own in a temporary
directory, in its own process group, and stopped (that group alone) when the test ends; no
system service is touched.

Where the binary is missing it tries `apt-get install -y --no-install-recommends prometheus`
once (after `apt-get update` if the package lists do not have it); where it still is not, the
tests that need it skip and say why.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import debian
from tests.helpers.wait import wait_until


class Unavailable(Exception):
    """Why no Prometheus can be started here."""


def _install_once() -> str:
    try:
        debian.installed(("prometheus",), "prometheus", recommends=False)
    except debian.Unavailable as why:
        raise Unavailable(str(why)) from None
    found = shutil.which("prometheus")
    assert found is not None
    return found


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class PrivateServer:
    """Prometheus scraping `target` (HOST:PORT, /metrics) every `interval_s`."""

    def __init__(self, binary: str, target: str, interval_s: float = 1.0) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="drv-prom-", dir="/tmp"))
        self.port = free_port()
        config = self.root / "prometheus.yml"
        config.write_text(
            "global:\n"
            f"  scrape_interval: {round(interval_s * 1000)}ms\n"
            f"  scrape_timeout: {round(interval_s * 1000)}ms\n"
            "scrape_configs:\n"
            "  - job_name: drover\n"
            "    metrics_path: /metrics\n"
            "    static_configs:\n"
            f"      - targets: ['{target}']\n")
        self.log = self.root / "prometheus.log"
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen(
                [binary, f"--config.file={config}", f"--storage.tsdb.path={self.root / 'data'}",
                 f"--web.listen-address=127.0.0.1:{self.port}"],
                stdin=subprocess.DEVNULL, stdout=log, stderr=log, process_group=0)
        try:
            wait_until(lambda: self.process.poll() is not None or self._ready(), timeout=60,
                       describe="Prometheus to be ready")
            if self.process.poll() is not None:
                raise AssertionError(f"prometheus exited {self.process.returncode}: {self.log.read_text()[-2000:]}")
        except BaseException:
            self.stop()
            raise

    def _ready(self) -> bool:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/-/ready", timeout=5) as reply:
            return bool(reply.status == 200)

    def query(self, promql: str) -> list[dict[str, Any]]:
        """An instant query's result vector through the HTTP API (/api/v1/query)."""
        url = f"http://127.0.0.1:{self.port}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
        with urllib.request.urlopen(url, timeout=10) as reply:
            answer = json.loads(reply.read())
        assert answer["status"] == "success", answer
        result: list[dict[str, Any]] = answer["data"]["result"]
        return result

    def targets(self) -> list[dict[str, Any]]:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/api/v1/targets", timeout=10) as reply:
            active: list[dict[str, Any]] = json.loads(reply.read())["data"]["activeTargets"]
        return active

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        shutil.rmtree(self.root, ignore_errors=True)


def prometheus_binary() -> str:
    """Debian's prometheus, installed if need be; the test skips, saying why, where it cannot be had."""
    try:
        return _install_once()
    except (Unavailable, OSError, subprocess.SubprocessError) as why:
        pytest.skip(f"no Prometheus to scrape the controller: {why}")
