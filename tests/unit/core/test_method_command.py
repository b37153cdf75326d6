"""queue_conf(5)'s suspend_method, resume_method and terminate_method as drover/method_command.py
reads them: a signal or an absolute command with placeholders. Plain data."""

from __future__ import annotations

import signal

import pytest

from drover.method_command import (
    CommandMethod,
    SignalMethod,
    describe,
    expand,
    methods_in_effect,
    parse_method,
)


def test_queue_conf_a_signal_name_with_the_sig_prefix_as_kill_l_prints_it() -> None:
    """queue_conf(5): "A signal must be either a positive number or a signal name with the SIG
    prefix, as printed by kill -l (e.g. SIGTERM)"."""
    assert parse_method("suspend_method", "SIGUSR1") == SignalMethod(int(signal.SIGUSR1))
    assert parse_method("terminate_method", " SIGINT ") == SignalMethod(int(signal.SIGINT))
    assert parse_method("resume_method", "sigcont") == SignalMethod(int(signal.SIGCONT))
    assert parse_method("suspend_method", "19") == SignalMethod(19)
    assert describe(parse_method("suspend_method", "10")) == "SIGUSR1"


@pytest.mark.parametrize(("text", "error"), [
    ("USR1", "suspend_method: unknown signal 'USR1'"),
    ("SIGNOPE", "suspend_method: unknown signal 'SIGNOPE'"),
    ("0", "suspend_method: 0 is not a signal number"),
    ("999", "suspend_method: 999 is not a signal number"),
    ("bin/stop.sh", "command needs an absolute path"),
    ("", "suspend_method: empty"),
    ("/bin/echo 'unclosed", "No closing quotation"),
    ("/bin/echo $nope", "suspend_method: unknown placeholder $nope"),
    ("/opt/$queue/stop", "may not hold a placeholder"),
])
def test_queue_conf_a_bad_method_is_one_clear_error_naming_it(text: str, error: str) -> None:
    with pytest.raises(ValueError, match=None) as raised:
        parse_method("suspend_method", text)
    assert error in str(raised.value)
    assert "\n" not in str(raised.value)


def test_queue_conf_an_absolute_path_is_a_command_with_its_arguments() -> None:
    """queue_conf(5): "If an executable path is given (it must be an absolute path starting with
    a "/"); then this command, together with its arguments, is started"."""
    method = parse_method("terminate_method", "/usr/local/bin/stop --pid $job_pid 'two words' ${job_id}.x")
    assert method == CommandMethod(("/usr/local/bin/stop", "--pid", "$job_pid", "two words", "${job_id}.x"))
    assert method.path == "/usr/local/bin/stop"


def test_queue_conf_special_variables_are_expanded_at_runtime_each_in_its_word() -> None:
    """queue_conf(5)'s $host, $ja_task_id, $job_owner, $job_id, $job_name, $queue, $job_pid; a job
    name with spaces or shell characters stays one argument, and no shell reads it."""
    method = parse_method("suspend_method", "/bin/tool $host $ja_task_id $job_owner $job_id $job_name $queue "
                                            "$job_pid $task_id $sge_cell")
    assert isinstance(method, CommandMethod)
    facts = {"host": "n1", "ja_task_id": 3, "task_id": 3, "job_owner": "alice", "job_id": 42,
             "job_name": "a b; rm -rf ~", "queue": "fast", "job_pid": 4242, "sge_cell": "default"}
    assert expand(method.argv, facts) == ["/bin/tool", "n1", "3", "alice", "42", "a b; rm -rf ~", "fast", "4242",
                                          "3", "default"]
    assert expand(("/bin/x", "pid=$job_pid,${job_id}x", "$$", "cost: 5$"), {"job_pid": 7, "job_id": 1}) == \
        ["/bin/x", "pid=7,1x", "$$", "cost: 5$"]
    assert expand(("/bin/x", "$sge_root"), {}) == ["/bin/x", ""]  # no fact: empty


def test_the_queue_method_wins_over_the_node_default_and_unset_keeps_drovers_default() -> None:
    node = {"suspend_method": "SIGUSR1", "terminate_method": "/bin/stop $job_pid", "resume_method": None}
    queue = {"suspend_method": "SIGTSTP", "terminate_method": None, "resume_method": None}
    chosen = methods_in_effect(node, queue)
    assert chosen["suspend_method"] == SignalMethod(int(signal.SIGTSTP))
    assert chosen["terminate_method"] == CommandMethod(("/bin/stop", "$job_pid"))
    assert "resume_method" not in chosen
    assert methods_in_effect({}, {}) == {}
    with pytest.raises(ValueError, match="resume_method: unknown signal"):
        methods_in_effect({"resume_method": "CONT"}, {})


def test_queue_set_takes_the_methods_and_notify_checked_as_drover_toml_does() -> None:
    """`drover queue set NAME suspend_method=... notify=...` (Grid Engine's qconf -mq): checked
    as drover.toml's values are, signals and NONE only (a command is root's, in drover.toml);
    NONE is Drover's default whatever drover.toml says; operators only (none of them is an
    owner's setting)."""
    from drover.config_schema import QueueSection
    from drover.core.queues import OWNER_SETTINGS, QueueRecord, effective, parse_setting

    assert parse_setting("suspend_method", " SIGUSR1 ") == "SIGUSR1"
    with pytest.raises(ValueError, match=r"a command runs as the owner .* drover.toml \(\[queues.NAME\] terminate_method\)"):
        parse_setting("terminate_method", "/bin/stop $job_pid")  # root's, in drover.toml: never an operator's
    assert parse_setting("resume_method", "NONE") is None
    assert parse_setting("notify", "30") == 30 and parse_setting("notify", "00:00:60") == 60
    for key, text, error in (("suspend_method", "STOP", "suspend_method: unknown signal 'STOP'"),
                             ("terminate_method", "/bin/x $nope", "unknown placeholder $nope"),
                             ("resume_method", "/bin/true", "takes a signal (SIGUSR1, a number) or NONE here"),
                             ("notify", "3601", "notify must be between 0 and 3600 seconds")):
        with pytest.raises(ValueError, match=None) as raised:
            parse_setting(key, text)
        assert error in str(raised.value)
    assert not {"suspend_method", "resume_method", "terminate_method", "notify"} & OWNER_SETTINGS
    section = QueueSection(suspend_method="SIGUSR1", terminate_method="SIGINT", notify_s=5)
    record = QueueRecord("q", settings={"terminate_method": "NONE", "resume_method": "SIGUSR2", "notify": "7"})
    queue = effective("q", section, record)
    assert (queue.suspend_method, queue.resume_method, queue.terminate_method, queue.notify_s) == \
        ("SIGUSR1", "SIGUSR2", None, 7)
    # A command a store kept from before they were refused is not in effect: drover.toml's is.
    kept = effective("q", section, QueueRecord("q", settings={"suspend_method": "/bin/sh -c id"}))
    assert kept.suspend_method == "SIGUSR1"
    assert effective("default", None, None).notify_s == 60
