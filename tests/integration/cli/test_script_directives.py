"""`drover submit script.sh` reads the script's #DROVER lines as options; the command line wins."""

from __future__ import annotations

from tests.helpers.cluster import LocalCluster
from tests.helpers.wait import wait_until

SCRIPT = """#!/bin/bash
#DROVER --name from-directive --time 10m
#DROVER -o directive.out --env GREETING=hello
echo "$GREETING from $DROVER_JOB_NAME"
"""


def test_directives_give_options_and_the_command_line_overrides_them(cluster: LocalCluster) -> None:
    (cluster.workdir / "job.sh").write_text(SCRIPT)
    job = cluster.submit("job.sh")
    shown = cluster.drover_json("show", str(job))
    assert shown["name"] == "from-directive" and shown["time_limit_s"] == 600
    wait_until(lambda: (cluster.workdir / "directive.out").exists()
               and cluster.drover_json("show", str(job))["state"] == "completed", describe="the job")
    assert (cluster.workdir / "directive.out").read_text() == "hello from from-directive\n"

    overridden = cluster.submit("--name", "from-command-line", "-t", "5m", "job.sh")
    shown = cluster.drover_json("show", str(overridden))
    assert shown["name"] == "from-command-line" and shown["time_limit_s"] == 300


def test_a_bad_directive_names_the_file_and_line_and_submits_nothing(cluster: LocalCluster) -> None:
    (cluster.workdir / "bad.sh").write_text("#!/bin/bash\n\n#DROVER --bogus 1\necho no\n")
    refused = cluster.drover("submit", "bad.sh", check=False)
    assert refused.returncode == 1
    assert refused.stderr.strip() == "drover submit: bad.sh: line 3: #DROVER --bogus: not an option of drover submit"
    assert cluster.drover_json("status", "--all") == []


ARGUMENTS_SCRIPT = """#!/bin/bash
#DROVER --name with-arguments -o arguments.out
echo "$# [$1] [$2] [$DROVER_JOB_NAME]"
"""


def test_a_script_and_its_arguments_are_spooled_as_sbatch_and_qsub_do(cluster: LocalCluster) -> None:
    script = cluster.workdir / "args.sh"
    script.write_text(ARGUMENTS_SCRIPT)
    job = cluster.submit("--hold", "args.sh", "a", "b c", "--cpus")  # after the script: its arguments
    script.unlink()  # the job runs the copy taken at submission
    shown = cluster.drover_json("show", str(job))
    assert shown["name"] == "with-arguments" and shown["cpus"] == 1
    cluster.drover("release", str(job))
    out = cluster.workdir / "arguments.out"
    wait_until(lambda: cluster.drover_json("show", str(job))["state"] == "completed", describe="the job")
    assert out.read_text() == "3 [a] [b c] [with-arguments]\n"


def test_a_command_after_dashes_is_a_command_line_not_a_spooled_script(cluster: LocalCluster) -> None:
    (cluster.workdir / "cmd.sh").write_text("#!/bin/bash\n#DROVER --name not-read\necho \"cmd $1\"\n")
    job = cluster.submit("-o", "cmd.out", "--", "bash", str(cluster.workdir / "cmd.sh"), "x")
    assert cluster.drover_json("show", str(job))["name"] == "bash"
    wait_until(lambda: cluster.drover_json("show", str(job))["state"] == "completed", describe="the job")
    assert (cluster.workdir / "cmd.out").read_text() == "cmd x\n"
    shown_help = cluster.drover("submit", "--help").stdout
    assert "SCRIPT [ARGS...]" in shown_help and "-- COMMAND [ARGS...]" in shown_help
