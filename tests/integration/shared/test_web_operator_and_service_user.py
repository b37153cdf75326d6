"""`drover web` (the installed command) on the shared cluster, for the actors beside two users
(test_web_two_users.py): an operator, and the controller's service user, in a real headless
Chromium.

An operator's dashboard shows every user's jobs and offers the actions an operator may take on
them (cancel, hold, release, requeue), which the controller carries out; but never a job's
output, which is read with its owner's rights. The service user's own dashboard is an admin's
and shows the same, no output either. A user's dashboard listens on loopback, and no other
local user, the service user included, gets anything of it without its one-time token: not with
a guessed token, session or CSRF token, nor with the token once it was used."""

from __future__ import annotations

import json
import os
import pwd
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest
from tests.helpers.browser import (
    SECRET_NAME,
    SECRET_OUTPUT,
    Browser,
    dashboard_of,
    secret_job,
    stop_dashboards,
)
from tests.helpers.system_cluster import SystemCluster
from tests.helpers.users import create_user, remove_user, run_as_user
from tests.helpers.wait import wait_until

from drover.config import SERVICE_USER


@pytest.fixture
def operator(users: tuple[str, str]) -> Iterator[str]:
    """A third real user, the cluster's operator."""
    name = f"drvo{uuid.uuid4().hex[:6]}"
    create_user(name)
    yield name
    remove_user(name)


def alices_private_job(cluster: SystemCluster, alice: str) -> int:
    """A running job of alice's whose output is in a directory only she may enter."""
    entry = pwd.getpwnam(alice)
    private = Path(entry.pw_dir) / "private"
    private.mkdir(mode=0o700)
    os.chown(private, entry.pw_uid, entry.pw_gid)
    return secret_job(cluster, alice, "-o", "private/out")


def output_shown(browser: Browser, base: str, job: int, updates: int = 3) -> str:
    """The output a job's page shows once its stream has sent `updates` updates (each comes with
    what the task wrote since, where the dashboard's user may read it)."""
    browser.goto(f"{base}/jobs/{job}")
    wait_until(lambda: browser.live_updates() >= updates, timeout=30, describe=f"{updates} live updates of job {job}")
    return str(browser.evaluate("document.getElementById('output').textContent"))


def act(browser: Browser, action: str, job: int) -> list[dict[str, object]]:
    """`action` on `job` from the page, with its session and CSRF token, as its buttons send it."""
    reply = browser.evaluate(
        f"fetch('/actions/{action}', {{method: 'POST', headers: {{'Content-Type': 'application/json', "
        "'X-CSRF-Token': document.querySelector('meta[name=csrf-token]').content}, "
        f"body: JSON.stringify({{refs: ['{job}']}})}}).then(r => r.status === 200 ? r.json() : r.status)")
    return reply["results"] if isinstance(reply, dict) else [{"status": reply}]  # type: ignore[no-any-return]


def test_an_operators_dashboard_shows_every_job_and_its_actions_but_no_users_output(
        system_cluster_factory: Callable[..., SystemCluster], users: tuple[str, str], operator: str,
        browser: Browser) -> None:
    alice, bob = users
    cluster = system_cluster_factory(config_toml=f'[controller]\noperators = ["{operator}"]\n')
    alices = alices_private_job(cluster, alice)
    bobs = cluster.submit_as(bob, "--name", "bobs-held-job", "--hold", "--", "true")
    processes = []
    try:
        process, url = dashboard_of(cluster, alice)
        processes.append(process)
        browser.goto(url)
        base = url.split("/?")[0]
        # Her own dashboard shows her output: what the operator's must not.
        wait_until(lambda: SECRET_OUTPUT in output_shown(browser, base, alices, 1), timeout=30,
                   describe="alice's output on her own dashboard")

        process, url = dashboard_of(cluster, operator)
        processes.append(process)
        browser.goto(url)
        base = url.split("/?")[0]
        browser.goto(f"{base}/jobs")
        wait_until(lambda: browser.live_updates() > 0, describe="the operator's job list")
        page = browser.text()
        assert SECRET_NAME in page and "bobs-held-job" in page  # every user's jobs
        for job, actions in ((alices, ("cancel", "requeue")), (bobs, ("cancel", "release"))):
            for action in actions:
                assert f'data-action="{action}" data-ref="{job}"' in page, (job, action)
        browser.goto(f"{base}/jobs?user={alice}")
        wait_until(lambda: browser.live_updates() > 0, describe="alice's jobs on the operator's dashboard")
        assert SECRET_NAME in browser.text() and "bobs-held-job" not in browser.text()
        browser.goto(f"{base}/history?user={alice}")
        assert browser.evaluate("document.querySelector('main .refusal') === null"), browser.visible()

        # Her job's page: what `drover show` tells an operator, but not what her job wrote.
        assert output_shown(browser, base, alices) == ""
        assert SECRET_NAME in browser.visible()
        assert SECRET_OUTPUT not in browser.text()
        # The operator's own command reads it with the operator's rights, and says why it cannot.
        reading = cluster.run_as(operator, "drover", "logs", str(alices))
        assert reading.returncode == 1 and "Traceback" not in reading.stderr, reading.stderr
        assert "cannot read the output file" in reading.stderr and "permission denied" in reading.stderr, reading.stderr
        assert SECRET_OUTPUT not in reading.stdout

        # What the page offers an operator, the controller carries out; nothing else is offered.
        results = act(browser, "release", bobs)
        assert results[0]["ok"] is True, results
        wait_until(lambda: cluster.job(bobs)["state"] == "completed", timeout=30, describe="bob's released job to run")
        for action in ("signal", "suspend", "priority", "logs", "attach"):
            assert act(browser, action, alices) == [{"status": 404}], action
        results = act(browser, "cancel", alices)
        assert results[0]["ok"] is True, results
        assert cluster.wait_ended(alices)["state"] == "cancelled"
    finally:
        stop_dashboards(processes)


# Another local user's requests to a dashboard, with what they could have: nothing, guesses, or
# the URL once it was used. The status and the body of each.
KNOCK = """
import json, sys, urllib.error, urllib.request
base, port, token = sys.argv[1:4]
guess = "A" * 43
asked = [("GET", "/", {}), ("GET", "/?token=" + guess, {}), ("GET", "/jobs", {"Cookie": f"drover-web-{port}={guess}"}),
         ("GET", "/stream/jobs", {}), ("GET", "/static/dashboard.js", {}), ("GET", "/?token=" + token, {}),
         ("POST", "/actions/cancel", {"X-CSRF-Token": guess, "Content-Type": "application/json"})]
answers = []
for method, path, headers in asked:
    request = urllib.request.Request(base + path, method=method, headers=headers,
                                     data=b'{"refs": ["1"]}' if method == "POST" else None)
    try:
        with urllib.request.urlopen(request, timeout=20) as reply:
            answers.append([method, path, reply.status, reply.read().decode(errors="replace")])
    except urllib.error.HTTPError as refused:
        answers.append([method, path, refused.code, refused.read().decode(errors="replace")])
print(json.dumps(answers))
"""


def test_a_users_dashboard_is_on_loopback_and_gives_no_other_user_nor_the_service_user_anything(
        system_cluster: SystemCluster, users: tuple[str, str], browser: Browser) -> None:
    alice, bob = users
    cluster = system_cluster
    alices = alices_private_job(cluster, alice)
    processes = []
    try:
        process, url = dashboard_of(cluster, alice)  # as docs/web.md says: no --listen
        processes.append(process)
        base, token = url.split("/?token=")
        port = base.rsplit(":", 1)[1]
        assert base.startswith("http://127.0.0.1:"), url
        listening = [c.laddr for c in psutil.Process(process.pid).net_connections(kind="inet")
                     if c.status == psutil.CONN_LISTEN]
        assert listening == [("127.0.0.1", int(port))], listening
        with open(f"/proc/{process.pid}/cmdline", "rb") as cmdline:
            assert token.encode() not in cmdline.read()  # no other user reads it from the process list

        def knock(user: str) -> list[list[object]]:
            tried = run_as_user(user, ["/usr/bin/python3", "-c", KNOCK, base, port, token], cwd="/")
            assert tried.returncode == 0, tried.stderr
            return json.loads(tried.stdout)  # type: ignore[no-any-return]

        browser.goto(url)  # alice opens her URL: the token is used up
        for user in (bob, SERVICE_USER):
            for method, path, status, body in knock(user):
                assert status == 403, (user, method, path, status, body)
                assert body.startswith("refused: "), (user, method, path, body)
                assert SECRET_NAME not in str(body) and str(alices) not in str(body), (user, path, body)

        # The service user's own dashboard is an admin's: every job, the actions, no output.
        process, url = dashboard_of(cluster, SERVICE_USER)
        processes.append(process)
        browser.goto(url)
        base = url.split("/?")[0]
        browser.goto(f"{base}/jobs")
        wait_until(lambda: browser.live_updates() > 0, describe="the service user's job list")
        assert SECRET_NAME in browser.text() and f'data-action="cancel" data-ref="{alices}"' in browser.text()
        assert output_shown(browser, base, alices) == ""
        assert SECRET_OUTPUT not in browser.text()
        assert cluster.job(alices)["state"] == "running"
    finally:
        stop_dashboards(processes)
