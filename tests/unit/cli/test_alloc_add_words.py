"""`drover alloc add`: each outer scheduler takes its own word for where allocations wait
(Slurm's --partition, PBS's and LSF's --queue); the other word is refused with the right one,
before anything is asked of the controller."""

from __future__ import annotations

import pytest

from drover.cli.commands.alloc import run


def _refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as exited:
        run("drover alloc", argv)
    assert exited.value.code == 2
    return capsys.readouterr().err


@pytest.mark.parametrize("manager", ["pbs", "lsf"])
def test_pbs_and_lsf_have_queues_not_partitions(manager: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert f"{manager} has queues, not partitions: say --queue debug" in _refused(
        ["add", manager, "--partition", "debug"], capsys)


def test_slurm_has_partitions_not_queues(capsys: pytest.CaptureFixture[str]) -> None:
    assert "Slurm calls its queues partitions: say --partition debug" in _refused(
        ["add", "slurm", "--queue", "debug"], capsys)


def test_a_bad_queue_name_is_named_as_a_queue(capsys: pytest.CaptureFixture[str]) -> None:
    assert "--queue 'a b' is not a queue name" in _refused(["add", "pbs", "--queue", "a b"], capsys)
    assert "--partition 'a b' is not a partition name" in _refused(["add", "slurm", "--partition", "a b"], capsys)


def test_an_unknown_scheduler_is_named_with_those_there_are(capsys: pytest.CaptureFixture[str]) -> None:
    assert "unknown outer scheduler 'cron' (known: slurm, pbs, lsf)" in _refused(["add", "cron"], capsys)


def test_only_add_takes_a_queue(capsys: pytest.CaptureFixture[str]) -> None:
    assert "info takes no --partition or --queue" in _refused(["info", "1", "--queue", "q"], capsys)
