"""Grid Engine's queue_conf(5) starter_method and Altair Accelerator's `vovtasker -E` (firing
sequence, step 3): a site's command starts the job in its place, as the job's owner, given the
job's script (or its command line) as its arguments, on a personal cluster with real scripts."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.helpers.cluster import LocalCluster
from tests.helpers.wait import wait_until

# Records its arguments and what Grid Engine tells a starter, then starts the job as the shepherd
# would have: the script with the shell, or the command itself.
STARTER = """#!/bin/bash
{{
  echo "who=$(id -un)"
  echo "args=$*"
  echo "shell=$SGE_STARTER_SHELL_PATH"
  echo "mode=$SGE_STARTER_SHELL_START_MODE"
  echo "login=${{SGE_STARTER_USE_LOGIN_SHELL-unset}}"
  echo "queue=$QUEUE"
}} > "$DROVER_SUBMIT_DIR/{name}.seen"
if [ -n "$SGE_STARTER_SHELL_PATH" ]; then exec "$SGE_STARTER_SHELL_PATH" "$@"; fi
exec "$@"
"""


def _seen(cluster: LocalCluster, name: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in (cluster.workdir / f"{name}.seen").read_text().splitlines())


def _starter(tmp_path: Path, name: str) -> Path:
    path = tmp_path / f"{name}.sh"
    path.write_text(STARTER.format(name=name))
    path.chmod(0o755)
    return path


def test_gridengine_queue_conf_starter_method_starts_the_jobs_of_its_queue(tmp_path: Path) -> None:
    queue_starter, node_starter = _starter(tmp_path, "queue"), _starter(tmp_path, "node")
    cluster = LocalCluster(config_toml=f'[execd]\nstarter_method = "{node_starter}"\n'
                                       f'[queues.wrapped]\nstarter_method = "{queue_starter}"\n')
    try:
        cluster.start()
        # A job script: the starter is given the script, and the shell that would have run it.
        script = cluster.workdir / "job.sh"
        script.write_text("#!/bin/bash\necho ran as script \"$QUEUE\"\nexit 3\n")
        job = cluster.submit("--queue", "wrapped", "-o", "script.out", str(script))
        assert cluster.drover("wait", str(job), check=False).returncode != 0
        shown = cluster.drover_json("show", str(job))
        assert shown["tasks"][0]["attempts"][0]["exit_code"] == 3  # the job's own status
        assert (cluster.workdir / "script.out").read_text() == "ran as script wrapped\n"
        seen = _seen(cluster, "queue")
        assert seen["args"].endswith("/job_script") and len(seen["args"].split()) == 1, seen
        assert seen["shell"] == "/bin/bash" and seen["mode"] == "posix_compliant" and seen["login"] == "unset"
        assert seen["queue"] == "wrapped" and not (cluster.workdir / "node.seen").exists()

        # A command line, in a queue with none of its own: the node's starter, given the command.
        job = cluster.submit("-o", "command.out", "--", "echo", "a b", "c")
        cluster.drover("wait", str(job))
        assert (cluster.workdir / "command.out").read_text() == "a b c\n"
        seen = _seen(cluster, "node")
        assert seen["args"] == "echo a b c" and seen["shell"] == "" and seen["mode"] == "unix_behavior"
        assert seen["queue"] == "default"
    finally:
        problems = cluster.stop()
    assert not problems, problems


def test_accelerator_vovtasker_E_a_missing_starter_fails_the_job_saying_so(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-starter"
    cluster = LocalCluster(config_toml=f'[execd]\nstarter_method = "{missing}"\n')
    try:
        cluster.start()
        job = cluster.submit("--", "true")
        attempt = wait_until(lambda: next((a for a in cluster.drover_json("show", str(job))["tasks"][0]["attempts"]
                                           if a.get("failure")), None), describe="the attempt's failure")
        assert f"cannot run the starter method {missing}" in attempt["failure"], attempt
    finally:
        problems = cluster.stop()
    assert not problems, problems


@pytest.mark.parametrize("value", ["starter.sh", "/bin/env bash", ""])
def test_a_starter_method_must_be_an_absolute_program(value: str) -> None:
    import msgspec

    from drover.config_schema import QueueSection

    with pytest.raises(msgspec.ValidationError, match="starter_method must be the absolute path"):
        msgspec.convert({"starter_method": value}, QueueSection)
