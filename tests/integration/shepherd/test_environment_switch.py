"""Altair Accelerator's steps 18 and 19 in the shepherd alone (`python -m drover.shepherd SPOOL`):
the environments switch in order before the precmd, their post scripts run in the reverse order
after the postcmd and before the node's epilog, and one the controller no longer defines fails
the attempt before anything of the job runs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.helpers.spools import exit_status, make_spool
from tests.integration.shepherd.test_firing_as_the_owner import unique_job


def _run(spool: Path) -> None:
    assert subprocess.run([sys.executable, "-m", "drover.shepherd", str(spool)], timeout=60).returncode == 0


def _script(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_accelerator_18_19_environments_switch_in_order_and_post_in_reverse(tmp_path: Path) -> None:
    log = tmp_path / "log"
    environments = [
        {"name": "a", "setup": _script(tmp_path, "a.sh", f"echo 'setup a' >> {log}; export A=1 LEVEL=a\n"),
         "post": _script(tmp_path, "pa.sh", f"echo \"post a $LEVEL\" >> {log}\n")},
        {"name": "b", "setup": _script(tmp_path, "b.sh", f"echo \"setup b $A\" >> {log}; export LEVEL=b\n"),
         "post": _script(tmp_path, "pb.sh", f"echo \"post b $LEVEL\" >> {log}\n")},
    ]
    spool = make_spool(tmp_path, f'echo "job $A $LEVEL" >> {log}\n', name=f"{unique_job()}.0.1",
                       environments=environments,
                       prolog=f'echo "precmd $LEVEL" >> {log}', epilog=f'echo "postcmd $LEVEL" >> {log}',
                       node_epilog=f'echo "node epilog ${{LEVEL-none}}" >> {log}')
    _run(spool)
    assert exit_status(spool)["exit_code"] == 0
    assert log.read_text().splitlines() == [
        "setup a", "setup b 1", "precmd b", "job 1 b", "postcmd b", "post b b", "post a b",
        "node epilog none",  # the site's methods never get the job's environment
    ]
    trace = (spool / "trace").read_text()
    assert "environment a setup exited 0" in trace and "environment a post exited 0" in trace
    assert "LEVEL=b" in (spool / "environment").read_text().splitlines()


def test_accelerator_environments_one_no_longer_defined_fails_the_attempt(tmp_path: Path) -> None:
    spool = make_spool(tmp_path, "touch ran\n", name=f"{unique_job()}.0.1", environments=[{"name": "gone", "setup": None, "post": None,
                                                                "unknown": True}])
    _run(spool)
    record = exit_status(spool)
    assert record["failure"] == "environment gone is not defined in the controller's drover.toml"
    assert not (tmp_path / "ran").exists()
