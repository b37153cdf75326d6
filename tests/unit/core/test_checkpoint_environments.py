"""Grid Engine's checkpoint(5) environments and qsub(1) -c, on plain data (core/checkpoints.py)."""

from __future__ import annotations

import pytest

from drover.core.checkpoints import (
    CheckpointError,
    Environment,
    expand,
    for_attempt,
    in_effect,
    parse_command,
    parse_environment,
    parse_occasion,
    parse_when,
    values_for,
)


def an_environment(interface: str = "application-level", when: str = "x", signal: str = "USR2",
                   min_cpu_interval_s: int = 300, ckpt_dir: str | None = "/scratch/$job_owner/$job_id",
                   **commands: str) -> Environment:
    given = {"ckpt_command": "/opt/ckpt/save $job_pid $ckpt_dir", "migr_command": "/opt/ckpt/migrate $job_id",
             "clean_command": "/opt/ckpt/clean $ckpt_dir", **commands}
    return parse_environment("blcr", interface, given, ckpt_dir, signal, when, min_cpu_interval_s)


def test_checkpoint5_interfaces_application_level_and_userdefined_are_offered() -> None:
    assert an_environment().interface == "application-level"
    user = an_environment("userdefined")
    assert user.command("ckpt_command") is None  # the job checkpoints itself: no command runs
    assert user.ckpt_command == ("/opt/ckpt/save", "$job_pid", "$ckpt_dir")


@pytest.mark.parametrize("interface", ["transparent", "hibernator", "cpr", "cray-ckpt", "kernel"])
def test_checkpoint5_kernel_and_transparent_interfaces_are_refused_with_the_reason(interface: str) -> None:
    with pytest.raises(CheckpointError, match=f"interface '{interface}' is not offered: .*Linux"):
        an_environment(interface)


def test_checkpoint5_an_unknown_interface_is_refused() -> None:
    with pytest.raises(CheckpointError, match="'magic' is not offered; use 'application-level' or 'userdefined'"):
        an_environment("magic")


def test_checkpoint5_commands_are_none_or_absolute_and_split_into_words() -> None:
    assert parse_command("none", "ckpt_command") is None
    assert parse_command("NONE", "ckpt_command") is None
    assert parse_command("/bin/sh -c 'echo $job_pid > x'", "ckpt_command") == ("/bin/sh", "-c", "echo $job_pid > x")
    for bad in ("save.sh $job_pid", "", "/bin/x 'unclosed", "$ckpt_dir/save"):
        with pytest.raises(CheckpointError, match="ckpt_command"):
            parse_command(bad, "ckpt_command")


def test_checkpoint5_placeholders_are_grid_engines_and_task_id() -> None:
    parse_command("/x $host $job_owner $job_id $job_name $queue $job_pid $ckpt_dir $ckpt_signal $task_id ${job_id}",
                  "migr_command")
    with pytest.raises(CheckpointError, match=r"unknown placeholder \$user"):
        parse_command("/x $user", "migr_command")


def test_checkpoint5_when_letters_s_m_x_n_r() -> None:
    assert parse_when("xs") == "sx"
    assert parse_when("n") == "n"
    assert parse_when("mrx") == "mxr"
    for bad in ("", "q", "xx", "nx"):
        with pytest.raises(CheckpointError):
            parse_when(bad)


def test_checkpoint5_the_signal_is_one_a_job_can_catch() -> None:
    assert an_environment(signal="usr1").signal == "SIGUSR1"
    assert an_environment(signal="none").signal is None
    for bad in ("KILL", "TERM", "STOP", "SEGV"):
        with pytest.raises(CheckpointError):
            an_environment(signal=bad)


def test_checkpoint5_userdefined_needs_a_signal_application_level_a_command_or_a_signal() -> None:
    with pytest.raises(CheckpointError, match="userdefined interface needs a signal"):
        an_environment("userdefined", signal="none")
    with pytest.raises(CheckpointError, match="needs a ckpt_command, a migr_command or a signal"):
        an_environment(signal="none", ckpt_command="none", migr_command="none")
    assert an_environment(signal="none", ckpt_command="none").migr_command is not None
    assert an_environment(signal="none").signal is None


def test_checkpoint5_ckpt_dir_is_absolute() -> None:
    with pytest.raises(CheckpointError, match="ckpt_dir must be an absolute path"):
        an_environment(ckpt_dir="ckpt")
    with pytest.raises(CheckpointError, match=r"ckpt_dir: unknown placeholder \$job_pid"):
        an_environment(ckpt_dir="/ckpt/$job_pid")


def test_qsub_c_takes_occasion_letters_or_an_interval() -> None:
    assert parse_occasion("sx") == ("sx", None)
    assert parse_occasion("n") == ("n", None)
    assert parse_occasion("00:10:00") == (None, 600)
    assert parse_occasion("90s") == (None, 90)
    for bad in ("sq", "tomorrow", "0s"):
        with pytest.raises(CheckpointError, match="-c"):
            parse_occasion(bad)


def test_qsub_c_overrides_when_and_an_interval_is_at_least_min_cpu_interval() -> None:
    environment = an_environment(when="sx", min_cpu_interval_s=60)
    assert in_effect(environment, None, None) == ("sx", None)
    assert in_effect(environment, "n", None) == ("n", None)
    assert in_effect(environment, "m", None) == ("m", 60)
    # qsub(1): "The maximum of <interval> and the queue's minimum CPU interval is used"
    assert in_effect(environment, None, 10) == ("smx", 60)
    assert in_effect(environment, None, 600) == ("smx", 600)


def test_placeholders_are_replaced_word_by_word_so_a_job_name_stays_one_argument() -> None:
    environment = an_environment()
    values = values_for(environment, job_id=12, task_id=3, job_name="a b; rm -rf ~", owner="alice", host="n1",
                        queue="fast")
    assert values["ckpt_dir"] == "/scratch/alice/12"
    assert expand(("/x", "$job_name", "${job_id}.$task_id", "$job_pid"), values) == [
        "/x", "a b; rm -rf ~", "12.3", "$job_pid"]  # $job_pid: the shepherd's to fill in


def test_the_attempt_gets_the_commands_expanded_and_knows_whether_it_restarts() -> None:
    environment = an_environment()
    values = values_for(environment, job_id=7, task_id=0, job_name="j", owner="bob", host="n2", queue="default")
    record = for_attempt(environment, values, "mx", 300, restarted=True)
    assert record["ckpt_command"] == ["/opt/ckpt/save", "$job_pid", "/scratch/bob/7"]
    assert record["migr_command"] == ["/opt/ckpt/migrate", "7"]
    assert record["ckpt_dir"] == "/scratch/bob/7" and record["restarted"] is True
    assert record["signal"] == "SIGUSR2" and record["when"] == "mx" and record["interval_s"] == 300
    user = for_attempt(an_environment("userdefined"), values, "x", None, restarted=False)
    assert user["ckpt_command"] is None and user["migr_command"] is None and user["clean_command"] is None
