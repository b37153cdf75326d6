"""WHY of `drover execd --leave-on-stop WHY` becomes the reason of every job the leaving node
ends, which their owners read in `drover show`, `drover events`, squeue's and bjobs' reasons and
the end mail: as a drain's reason it is at most 1000 characters, and as a job's name it is one
line without control characters (no newline to forge a line of another user's listing, no
terminal escape to rewrite their screen). Refused at once, the execd does not start."""

from __future__ import annotations

import subprocess
import sys

import pytest

from drover.execd.leaving import MAX_WHY, why_given

REFUSED = {
    "an escape that clears the screen": "allocation ended\x1b[2J\x1b[H",
    "a line of its own": "allocation ended\njob 7 completed",
    "a carriage return": "allocation ended\rjob 7 completed",
    "a C1 control (CSI)": "allocation ended\x9b2J",
    "a bell": "allocation ended\x07",
    "nothing": "  ",
    "too long": "x" * (MAX_WHY + 1),
}


@pytest.mark.parametrize("why", REFUSED.values(), ids=REFUSED.keys())
def test_a_why_that_could_rewrite_another_users_output_is_refused_before_the_execd_starts(why: str) -> None:
    ran = subprocess.run([sys.executable, "-m", "drover", "execd", "--state-dir", "/nonexistent/drover-state",
                          "--leave-on-stop", why], capture_output=True, text=True, timeout=60)
    assert ran.returncode == 2, ran
    assert ran.stderr.startswith("usage: drover execd") and ran.stdout == ""
    assert "argument --leave-on-stop: " in ran.stderr


def test_a_plain_why_is_kept_as_given() -> None:
    for why in ("its slurm allocation 4711 ended", "fin de l'allocation 4711 — Größe", "x" * MAX_WHY):
        assert why_given(why) == why
