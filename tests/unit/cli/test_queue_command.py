"""`drover queue`: its KEY=VALUE words, its list and show on plain QueueInfo records, and its
usage errors (exit status 2, before anything is sent)."""

from __future__ import annotations

from typing import Any

import pytest

from drover.cli.commands import queue as command
from drover.cli.commands.queue import (
    UsageError,
    limits_text,
    list_rows,
    memory_text,
    parse_settings,
    show_lines,
    time_text,
    window_text,
)
from drover.protocol.api import QueueInfo


def queue(**fields: Any) -> QueueInfo:
    base: dict[str, Any] = dict(name="night", state="open", defined_in="drover.toml")
    base.update(fields)
    return QueueInfo(**base)


def test_settings_are_key_value_words_of_known_keys() -> None:
    assert parse_settings(["priority=10", "max-memory=4G", "nodes=", "window=Mon-Fri 18:00-08:00; Sat,Sun"],
                          need_one=True) == {"priority": "10", "max_memory": "4G", "nodes": "",
                                             "window": "Mon-Fri 18:00-08:00; Sat,Sun"}
    assert parse_settings([], need_one=False) == {}
    for words, message in ((["priority"], "expected KEY=VALUE"), (["=3"], "expected KEY=VALUE"),
                           (["colour=red"], "unknown setting 'colour'"), (["nice=1", "nice=2"], "nice is given twice"),
                           ([], "at least one KEY=VALUE")):
        with pytest.raises(UsageError, match=message):
            parse_settings(words, need_one=True)


def test_sizes_and_times_print_as_set_takes_them() -> None:
    assert [memory_text(m) for m in (None, 512, 4096, 1536, 1024 * 1024)] == ["-", "512M", "4G", "1536M", "1T"]
    assert [time_text(t) for t in (None, 90, 3600, 2 * 86400 + 61)] == ["-", "00:01:30", "01:00:00", "2-00:01:01"]


def test_list_rows_are_concise() -> None:
    busy = queue(state="stopped", reason="maintenance (by root)", priority=10, nice=5, nodes=["n*"],
                 node_names=["n1", "n2"], max_running=4, max_running_per_user=2, max_memory_mib=4096,
                 max_time_s=3600, window="nights", window_open=True, pending=3, running=1, cpus=8, cpus_used=2)
    plain = queue(name="default", defined_in="built in")
    assert list_rows([busy, plain]) == [
        ("night", "STOPPED", "10 nice 5", "n* (2/8 CPUs)", "1", "3",
         "running 4, per user 2, memory 4G, time 01:00:00", "nights (open)", "maintenance (by root)"),
        ("default", "OPEN", "0", "all (0/0 CPUs)", "0", "0", "-", "-", ""),
    ]
    assert len(command.LIST_COLUMNS) == len(list_rows([plain])[0])
    assert limits_text(queue(max_running_per_user=1)) == "per user 1"


def test_a_closed_window_says_when_it_opens() -> None:
    closed = queue(window="weekends", window_open=False, opens_at=None)
    assert window_text(closed) == "weekends (closed)"
    assert window_text(queue(window="weekends", window_open=False, opens_at=1.0e9)).startswith(
        "weekends (closed, opens ")


def test_show_marks_what_was_changed_at_runtime() -> None:
    lines = show_lines(queue(priority=20, nodes=["gpu*"], node_names=[], owner="alice",
                             changed={"priority": "20", "window": "nights"}, window="nights"))
    assert lines[0] == "Queue night"
    by_label = {line[2:15].strip(): line[15:] for line in lines[1:]}
    assert by_label["priority"] == "20   [changed at runtime: priority=20]"
    assert by_label["window"].endswith("[changed at runtime: window=nights]")
    assert by_label["nodes"] == "gpu* = none now"
    assert by_label["owner"] == "alice"
    assert by_label["max time"] == "-"
    assert "changed" not in by_label["nice"]
    plain = show_lines(queue())
    assert {"  window       always", "  mail at end  no", "  suspend      -", "  notify       60s"} <= set(plain)


def test_show_gives_the_queue_conf_methods_and_notify_and_marks_a_runtime_change() -> None:
    lines = show_lines(queue(suspend_method="SIGUSR1", terminate_method="/bin/stop $job_pid", notify_s=5,
                             changed={"suspend_method": "SIGUSR1"}))
    by_label = {line[2:15].strip(): line[15:] for line in lines[1:]}
    assert by_label["suspend"] == "SIGUSR1   [changed at runtime: suspend_method=SIGUSR1]"
    assert by_label["resume"] == "-" and by_label["terminate"] == "/bin/stop $job_pid"
    assert by_label["notify"] == "5s"


def _never(*args: object, **kwargs: object) -> None:
    raise AssertionError("a usage error reached the cluster")


@pytest.mark.parametrize(("argv", "message"), [
    ([], "a subcommand is needed"),
    (["frobnicate"], "unknown subcommand 'frobnicate'"),
    (["set", "night"], "give at least one KEY=VALUE"),
    (["set", "night", "bogus=1"], "unknown setting 'bogus'"),
    (["create", "night", "priority"], "expected KEY=VALUE"),
    (["start", "night", "--reason", "x"], "unrecognized arguments"),
    (["show"], "the following arguments are required: NAME"),
    (["suspend", "night@"], "give NAME@NODE (a queue on one node), or NAME alone (on every node)"),
    (["unsuspend", "@n1"], "give NAME@NODE"),
    (["unsuspend", "night", "--reason", "x"], "unrecognized arguments"),
])
def test_usage_errors_exit_2_with_a_message(argv: list[str], message: str, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(command, "client", _never)
    with pytest.raises(SystemExit) as exited:
        status = command.run("queue", argv)
        raise SystemExit(status)
    assert exited.value.code == 2
    assert message in capsys.readouterr().err


def test_help_lists_the_subcommands(capsys: pytest.CaptureFixture[str]) -> None:
    assert command.run("queue", ["--help"]) == 0
    out = capsys.readouterr().out
    assert all(sub in out for sub in command.SUBCOMMANDS)


class FakeApi:
    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def __enter__(self) -> FakeApi:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def queues(self) -> list[QueueInfo]:
        return [queue(name="default", defined_in="built in"), queue()]

    def set_queue(self, name: str, settings: dict[str, str]) -> QueueInfo:
        self.calls.append(("set", name, settings))
        return queue(changed=settings)

    def queue_action(self, name: str, action: str, reason: str = "") -> QueueInfo:
        self.calls.append((action, name, reason))
        return queue(state={"stop": "stopped", "drain": "draining"}.get(action, "open"), reason=reason or None)

    def delete_queue(self, name: str) -> None:
        self.calls.append(("delete", name))

    def suspend_queue(self, name: str, node: str | None = None, reason: str = "") -> QueueInfo:
        self.calls.append(("suspend", name, node, reason))
        return queue(suspended={"n1": f"{reason} (root)"})

    def unsuspend_queue(self, name: str, node: str | None = None) -> QueueInfo:
        self.calls.append(("unsuspend", name, node))
        return queue()


def test_the_subcommands_call_the_api(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    api = FakeApi()
    monkeypatch.setattr(command, "client", lambda: api)
    assert command.run("queue", ["set", "night", "max_running=4", "window="]) == 0
    assert command.run("queue", ["stop", "night", "--reason", "disk full"]) == 0
    assert command.run("queue", ["--json", "drain", "night"]) == 0
    assert command.run("queue", ["delete", "night"]) == 0
    assert api.calls == [("set", "night", {"max_running": "4", "window": ""}), ("stop", "night", "disk full"),
                         ("drain", "night", ""), ("delete", "night")]
    out = capsys.readouterr().out
    assert "queue night: changed max_running=4 window (back to drover.toml's); open" in out
    assert "queue night: stopped (disk full)" in out
    assert '"state": "draining"' in out
    from drover.core.errors import NotFound

    with pytest.raises(NotFound, match="no queue named 'nosuch'"):
        command.run("queue", ["show", "nosuch"])


def test_a_queue_in_error_on_nodes_says_where_in_list_and_show() -> None:
    failed = queue(reason="maintenance (by root)", errors={"n1": "the node prolog exited with status 1 (attempt 3.0.1)",
                                                          "n2": "the queue epilog exited with status 2 (attempt 4.0.1)"})
    assert list_rows([failed])[0][-1] == "maintenance (by root); in error on n1, n2"
    assert list_rows([queue(errors={"n1": "x"})])[0][-1] == "in error on n1"
    assert show_lines(failed)[-2:] == [
        "  in error on  n1: the node prolog exited with status 1 (attempt 3.0.1)",
        "  in error on  n2: the queue epilog exited with status 2 (attempt 4.0.1)"]


def test_queue_suspend_and_unsuspend_take_a_queue_or_a_queue_instance(monkeypatch: pytest.MonkeyPatch,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    api = FakeApi()
    monkeypatch.setattr(command, "client", lambda: api)
    assert command.run("queue", ["suspend", "night@n1", "--reason", "power work"]) == 0
    assert command.run("queue", ["suspend", "night"]) == 0
    assert command.run("queue", ["unsuspend", "night@n1"]) == 0
    assert api.calls == [("suspend", "night", "n1", "power work"), ("suspend", "night", None, ""),
                         ("unsuspend", "night", "n1")]
    out = capsys.readouterr().out.splitlines()
    assert out == ["queue night@n1: suspended", "queue night: suspended; suspended on n1", "queue night@n1: unsuspended"]


def test_a_suspended_queue_instance_says_where_in_list_and_show() -> None:
    suspended = queue(suspended={"n1": "power work (root)"})
    assert list_rows([suspended])[0][-1] == "suspended on n1"
    assert show_lines(suspended)[-1] == "  suspended on n1: power work (root)"

