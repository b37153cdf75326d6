"""Altair Accelerator's firing sequence, steps 18 and 19: "The subtasker tries to switch
environment" and "executes the .pre. scripts of the environment", before the precmd (step 20):
`drover submit --environment A+B` on a personal cluster, with real setup and post scripts."""

from __future__ import annotations

from pathlib import Path

from tests.helpers.cluster import LocalCluster
from tests.helpers.wait import wait_until

SETUP_A = """# sourced by bash as the job's owner
export TOOL_HOME=/opt/tool-a
export PATH="/opt/tool-a/bin:$PATH"
unset DROP_ME
echo "setup a ran"
"""
SETUP_B = """export TOOL_B="b-on-$TOOL_HOME"
"""
POST = """echo "post $TOOL_B" >> "$DROVER_SUBMIT_DIR/posts"
"""
FAILING = """echo "no licence for tool c"
false
"""


def _cluster(tmp_path: Path) -> LocalCluster:
    scripts = {}
    for name, text in (("a.sh", SETUP_A), ("b.sh", SETUP_B), ("post.sh", POST), ("c.sh", FAILING)):
        scripts[name] = tmp_path / name
        scripts[name].write_text(text)
    return LocalCluster(config_toml=(
        f'[environments.a]\nsetup = "{scripts["a.sh"]}"\n'
        f'[environments.b]\nsetup = "{scripts["b.sh"]}"\npost = "{scripts["post.sh"]}"\n'
        f'[environments.c]\nsetup = "{scripts["c.sh"]}"\n'))


def test_accelerator_firing_sequence_18_19_environments_switch_before_the_precmd(tmp_path: Path) -> None:
    cluster = _cluster(tmp_path)
    try:
        cluster.start()
        job = cluster.submit(
            "--environment", "a+b", "--env", "DROP_ME=1", "-o", "out", "-e", "err",
            "--prolog", 'echo "precmd $TOOL_B" > precmd',
            "--", "bash", "-c", 'echo "$TOOL_HOME $TOOL_B ${DROP_ME-unset} ${PATH%%:*}"')
        cluster.drover("wait", str(job))
        # The job and its precmd got the environment the scripts left, in the order given.
        assert (cluster.workdir / "out").read_text() == "/opt/tool-a b-on-/opt/tool-a unset /opt/tool-a/bin\n"
        assert (cluster.workdir / "precmd").read_text() == "precmd b-on-/opt/tool-a\n"
        assert "setup a ran" in (cluster.workdir / "err").read_text()  # what a setup prints: the job's stderr
        # b's post ran after the job, in the switched environment.
        wait_until((cluster.workdir / "posts").exists, describe="b's post script")
        assert (cluster.workdir / "posts").read_text() == "post b-on-/opt/tool-a\n"
    finally:
        problems = cluster.stop()
    assert not problems, problems


def test_accelerator_environments_unknown_name_is_refused_at_submission(tmp_path: Path) -> None:
    cluster = _cluster(tmp_path)
    try:
        cluster.start()
        answer = cluster.drover("submit", "--environment", "a+nope", "--", "true", check=False)
        assert answer.returncode != 0
        assert "unknown environment 'nope' (--environment); this cluster has a, b, c" in answer.stderr
        bad = cluster.drover("submit", "--environment", "a++b", "--", "true", check=False)
        assert bad.returncode != 0 and "an environment's name is 1 to 64" in bad.stderr
    finally:
        problems = cluster.stop()
    assert not problems, problems


def test_accelerator_environments_a_failing_setup_fails_the_job_which_does_not_run(tmp_path: Path) -> None:
    cluster = _cluster(tmp_path)
    try:
        cluster.start()
        job = cluster.submit("--environment", "c", "-o", "out", "--", "touch", "ran")
        assert cluster.drover("wait", str(job), check=False).returncode != 0
        shown = cluster.drover_json("show", str(job))
        attempt = shown["tasks"][0]["attempts"][0]
        assert shown["state"] == "failed", shown
        assert attempt["failure"] == "the environment c setup exited with status 1; the job did not run", attempt
        assert not (cluster.workdir / "ran").exists()
        assert "no licence for tool c" in (cluster.workdir / "out").read_text()
    finally:
        problems = cluster.stop()
    assert not problems, problems
