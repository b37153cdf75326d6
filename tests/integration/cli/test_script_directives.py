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
