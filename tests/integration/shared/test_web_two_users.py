"""Two real users' dashboards (`drover web`, the installed command, run as each) on the shared
cluster, in a real headless Chromium: bob's never shows alice's job, its output or a control for
it, and a cancel of her job forged from bob's page is refused by the controller."""

from __future__ import annotations

import json

from tests.helpers.browser import (
    SECRET_NAME,
    SECRET_OUTPUT,
    Browser,
    dashboard_of,
    secret_job,
    stop_dashboards,
)
from tests.helpers.system_cluster import SystemCluster
from tests.helpers.wait import wait_until


def forge_cancel(browser: Browser, job: int) -> list[dict[str, object]]:
    """A cancel of `job` sent from the page with everything the page has (cookie, CSRF token)."""
    reply = browser.evaluate(
        "fetch('/actions/cancel', {method: 'POST', headers: {'Content-Type': 'application/json', "
        "'X-CSRF-Token': document.querySelector('meta[name=csrf-token]').content}, "
        f"body: JSON.stringify({{refs: ['{job}']}})}}).then(r => r.json())")
    return list(reply["results"])


def test_bobs_dashboard_never_shows_alices_job_and_cannot_cancel_it(
        system_cluster: SystemCluster, users: tuple[str, str], browser: Browser) -> None:
    alice, bob = users
    alices = secret_job(system_cluster, alice)
    bobs = system_cluster.submit_as(bob, "--name", "bobs-own-job", "--hold", "--", "true")
    processes = []
    try:
        # Alice's own dashboard shows her job and its output: what bob's must not.
        process, url = dashboard_of(system_cluster, alice, "--listen", "127.0.0.1:0")
        processes.append(process)
        base = url.split("/?")[0]
        browser.goto(url)
        browser.goto(f"{base}/jobs/{alices}")
        wait_until(lambda: SECRET_OUTPUT in browser.evaluate("document.getElementById('output').textContent"),
                   timeout=30, describe="alice's output on her own dashboard")
        assert SECRET_NAME in browser.visible()

        process, url = dashboard_of(system_cluster, bob, "--listen", "127.0.0.1:0")
        processes.append(process)
        base = url.split("/?")[0]
        browser.goto(url)
        assert bob in browser.visible()
        for path in ("/", "/jobs", "/jobs?all=1", f"/jobs?user={alice}", f"/jobs/{alices}", f"/jobs/{alices}?task=0",
                     "/history", f"/history?user={alice}"):
            browser.goto(base + path)
            # Its live part has come at least once from the stream too.
            wait_until(lambda: browser.live_updates() > 0,
                       describe=f"{path}'s first live update")
            page = browser.text()
            assert SECRET_NAME not in page and SECRET_OUTPUT not in page, path
            assert f'data-ref="{alices}"' not in page, path
            if path in ("/", "/jobs", "/history"):  # his own views: the controller answers them
                assert browser.evaluate("document.querySelector('main .refusal') === null"), (path, browser.visible())
        browser.goto(f"{base}/jobs/{alices}")
        refusal = browser.evaluate("document.querySelector('main .refusal').textContent")
        assert str(alices) in refusal and SECRET_NAME not in refusal  # the controller's refusal, as the CLI says it
        browser.goto(base + "/jobs")
        assert "bobs-own-job" in browser.visible()  # bob sees his own

        results = forge_cancel(browser, alices)
        assert len(results) == 1 and results[0]["ok"] is False, results
        assert SECRET_NAME not in json.dumps(results)
        browser.evaluate(f"window.droverAct('cancel', ['{alices}'])")  # the page's own control, pointed at hers
        wait_until(lambda: f"{alices}:" in browser.evaluate("document.getElementById('notice').textContent"),
                   describe="the controller's refusal on bob's page")
        assert "refusal" in browser.evaluate("document.querySelector('#notice p').className")
        assert system_cluster.job(alices)["state"] == "running"
        kinds = [event["kind"] for event in json.loads(system_cluster.as_root("events", "--json", str(alices)).stdout)]
        assert kinds == ["submitted", "dispatched", "started"], kinds
        assert system_cluster.job(bobs)["state"] == "held"
    finally:
        stop_dashboards(processes)
