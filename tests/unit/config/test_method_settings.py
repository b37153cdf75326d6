"""drover.toml's suspend_method, resume_method, terminate_method ([execd] and [queues.NAME]) and a
queue's notify_s: an obviously bad value is refused when the file is read, naming the table, the
method and the line."""

from __future__ import annotations

import pytest

from drover.config_file import ConfigError, parse_config
from drover.execd.main import shepherd_options


def _refused(text: str) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        parse_config(text, "drover.toml")
    return caught.value


def test_queue_conf_methods_are_read_from_the_node_and_the_queue() -> None:
    loaded = parse_config('[execd]\nsuspend_method = "SIGUSR1"\nterminate_method = "/bin/stop $job_pid"\n'
                          '[queues.fast]\nresume_method = "SIGCONT"\nnotify_s = 5\n').config
    assert loaded.execd.suspend_method == "SIGUSR1"
    assert loaded.queues["fast"].resume_method == "SIGCONT"
    assert loaded.queues["fast"].notify_s == 5
    options = shepherd_options(loaded.execd)
    assert options["node_suspend_method"] == "SIGUSR1"
    assert options["node_terminate_method"] == "/bin/stop $job_pid"
    assert options["node_resume_method"] is None
    assert parse_config("").config.execd.suspend_method is None


def test_verify_method_at_configuration_an_unknown_signal_names_the_queue_table_and_line() -> None:
    error = _refused('[queues.default]\nnice = 1\n\n[queues.fast]\nsuspend_method = "SIGNOPE"\n')
    assert error.line == 4
    assert "[queues.fast]" in str(error) and "suspend_method: unknown signal 'SIGNOPE'" in str(error)
    assert "\n" not in str(error)


def test_verify_method_at_configuration_a_relative_command_and_a_bad_placeholder_are_refused() -> None:
    error = _refused('[execd]\nterminate_method = "stop.sh $job_pid"\n')
    assert error.line == 1 and "[execd]" in str(error) and "terminate_method" in str(error)
    assert "absolute path" in str(error)
    error = _refused('[execd]\ncpus = 1\nresume_method = "/bin/go $pid"\n')
    assert "resume_method: unknown placeholder $pid" in str(error)
    assert "notify_s must be a whole number from 0 to 3600" in str(_refused('[queues.q]\nnotify_s = 3601\n'))
    assert "notify_s" in str(_refused('[queues.q]\nnotify_s = -1\n'))
