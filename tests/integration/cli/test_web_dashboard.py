"""`drover web` in a real headless Chromium: each page with the cluster's data, a job's output
followed live, a cancel from the page that the cluster carries out, and the token's gate.

With DROVER_WEB_SCREENSHOTS=1 the pages' screenshots are saved into docs/web/ (docs/web.md
shows them); otherwise into the test's temporary directory.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.error
import urllib.request
from pathlib import Path

from tests.helpers.browser import Browser, start_dashboard, stop_dashboards
from tests.helpers.cluster import LocalCluster
from tests.helpers.wait import wait_until

DOCS_SHOTS = Path(__file__).resolve().parents[3] / "docs" / "web"


# `drover web` of this checkout, on a port the kernel chooses.
WEB = [sys.executable, "-m", "drover", "web", "--listen", "127.0.0.1:0"]


def status_of(url: str) -> tuple[int, str]:
    """A request without the browser's session cookie: its status and body."""
    try:
        with urllib.request.urlopen(url, timeout=10) as reply:
            return reply.status, reply.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def shots_dir(tmp_path: Path) -> Path:
    if os.environ.get("DROVER_WEB_SCREENSHOTS") == "1":
        DOCS_SHOTS.mkdir(exist_ok=True)
        return DOCS_SHOTS
    return tmp_path


def test_each_page_renders_the_clusters_data_follows_output_and_cancels(
        cluster: LocalCluster, browser: Browser, tmp_path: Path) -> None:
    shots = shots_dir(tmp_path)
    done = cluster.submit("--name", "warm-up", "--", "sh", "-c", "echo warmed up")
    cluster.drover("wait", str(done))
    script = "for i in $(seq 1 600); do echo \"step $i of the sweep\"; sleep 0.5; done"
    job = cluster.submit("--name", "sweep-runner", "--", "sh", "-c", script)
    held = cluster.submit("--name", "held-for-later", "--hold", "--", "true")
    dashboard, url = start_dashboard(WEB, cluster.env)
    base = url.split("/?")[0]
    try:
        browser.goto(url)  # the token is exchanged for the cookie, and the address loses it
        assert browser.evaluate("location.href") == base + "/"
        page = browser.visible()
        node = cluster.drover_json("nodes")[0]
        assert node["name"] in page and f"/{node['cpus']}" in page
        assert "Why jobs wait" in page and "held-for-later" not in page  # reasons name jobs by id only
        wait_until(lambda: str(held) in browser.visible(), describe="the held job among those that wait")
        browser.screenshot(shots / "cluster.png")

        browser.goto(base + "/jobs")
        wait_until(lambda: "sweep-runner" in browser.visible() and "held-for-later" in browser.visible(),
                   describe="both jobs in the listing")
        assert browser.evaluate(f"!!document.querySelector('button[data-action=release][data-ref=\"{held}\"]')")
        browser.goto(base + "/jobs?name=sweep-runner")
        assert "sweep-runner" in browser.visible() and "held-for-later" not in browser.visible()
        browser.goto(base + "/jobs?state=held")
        assert "held-for-later" in browser.visible() and "sweep-runner" not in browser.visible()
        browser.goto(base + "/jobs")
        browser.screenshot(shots / "jobs.png")

        browser.goto(f"{base}/jobs/{job}")
        wait_until(lambda: "step 3 of the sweep" in browser.evaluate("document.getElementById('output').textContent"),
                   timeout=30, describe="the job's output, followed live")
        text = browser.visible()
        assert "sweep-runner" in text and "firing sequence" in text and "dispatched" in text and "started" in text
        wait_until(lambda: "CPU and memory now" in browser.visible(), timeout=40,
                   describe="the job's samples")  # the node samples every [execd] sample_s
        updates = browser.live_updates()
        wait_until(lambda: browser.live_updates() > updates,
                   describe="a live update of the job's part of the page")
        browser.screenshot(shots / "job.png")

        browser.evaluate("document.querySelector('button.act[data-action=cancel]').click()")
        wait_until(lambda: f"{job}:" in browser.evaluate("document.getElementById('notice').textContent"),
                   describe="the controller's answer on the page")
        wait_until(lambda: cluster.drover_json("show", str(job))["state"] == "cancelled", timeout=30,
                   describe="the job cancelled, as drover show says")
        wait_until(lambda: "cleanup_step" in browser.visible(), timeout=30,
                   describe="the staged cleanup steps on the page")
        assert "cancelled" in browser.visible()

        browser.goto(base + "/history?by=queue")
        wait_until(lambda: "sweep-runner" in browser.visible(), describe="the ended job in the history")
        assert "warm-up" in browser.visible() and "default" in browser.visible()
        browser.screenshot(shots / "history.png")
    finally:
        stop_dashboards([dashboard])


def test_a_wrong_missing_or_used_token_gets_nothing(cluster: LocalCluster, browser: Browser) -> None:
    cluster.submit("--name", "private-name", "--hold", "--", "true")
    dashboard, url = start_dashboard(WEB, cluster.env)
    base, token = url.split("/?token=")
    try:
        for attempt in (base + "/", base + "/jobs", base + "/?token=wrong" + token[:4],
                        base + "/static/dashboard.js", base + "/stream/jobs"):
            status, body = status_of(attempt)
            assert status == 403, attempt
            assert "private-name" not in body and "<html" not in body
        browser.goto(base + "/jobs?token=" + token[::-1])  # a wrong token in a browser
        assert "refused" in browser.visible() and "private-name" not in browser.text()
        browser.goto(url)  # the right one: used up by this exchange
        assert "signed in as" in browser.visible()
        status, body = status_of(url)  # the same URL again, from a client without the cookie
        assert status == 403 and "private-name" not in body
        # A forged action: the session's cookie but not its CSRF token (as another site's page would send).
        refused = browser.evaluate(
            "fetch('/actions/cancel', {method: 'POST', headers: {'Content-Type': 'application/json'},"
            " body: JSON.stringify({refs: ['1']})}).then(r => r.status)")
        assert refused == 403
        assert cluster.drover_json("show", "1")["state"] == "held"
        # The wrong Host (a DNS name rebound to this address) is refused even with the cookie.
        request = urllib.request.Request(base + "/jobs", headers={"Host": f"rebound.example:{base.rsplit(':', 1)[1]}"})
        try:
            urllib.request.urlopen(request, timeout=10)
            raise AssertionError("a request naming another host was answered")
        except urllib.error.HTTPError as error:
            assert error.code == 403
    finally:
        stop_dashboards([dashboard])
    assert json.loads(json.dumps(cluster.drover_json("show", "1")))["state"] == "held"
