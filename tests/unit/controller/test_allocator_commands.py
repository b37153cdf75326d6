"""How the allocator runs an outer scheduler's command: with the join token added to its
environment (never on its command line), the batch script on its standard input for those that
read it there (bsub < script), and a missing or hanging command as a failure like any other."""

from __future__ import annotations

from pathlib import Path

from drover.controller.allocations.allocator import run_command


def test_the_environment_is_added_and_the_script_is_the_standard_input(tmp_path: Path) -> None:
    script = tmp_path / "q1.sh"
    script.write_text("#!/bin/bash\necho inside\n")
    code, out, err = run_command(["sh", "-c", 'echo "token=$DROVER_JOIN_TOKEN home=${HOME:+set}"; cat'],
                                 env={"DROVER_JOIN_TOKEN": "drv1.a.b.c"}, input_path=str(script))
    assert (code, err) == (0, "")
    assert out == "token=drv1.a.b.c home=set\n#!/bin/bash\necho inside\n"  # the rest of the environment stays


def test_without_an_input_the_command_reads_nothing() -> None:
    assert run_command(["cat"]) == (0, "", "")


def test_a_missing_or_hanging_command_fails() -> None:
    assert run_command(["/nonexistent/qsub"])[0] == 127
    code, _, err = run_command(["sleep", "5"], timeout_s=0.2)
    assert code == 124 and "did not answer" in err
