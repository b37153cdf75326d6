"""The text a node reports is kept cleaned and cut, never refused: a node taken over cannot write
a terminal's escape sequences (nor megabytes) into what `drover show`, `drover why`, `drover
history`, squeue and qstat show the job's owner and operators, nor into what `drover nodes` and
`drover top` show (a node's features, a job's command line, which its owner chose), and an
honest node's report is never lost for the text it carries."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest
from tests.helpers.controller_world import OK, World

from drover.controller.handlers.node_reports import on_reports
from drover.controller.handlers.reported_text import MESSAGE_CHARS, NAME_CHARS, cleaned
from drover.core.shown_text import has_control_characters
from drover.protocol.node_channel import (
    Ack,
    Enforced,
    EventLogAppended,
    Exited,
    Exiting,
    Hello,
    OutputRead,
    PeTaskExited,
    Progress,
    Sample,
    Samples,
    TerminalClosed,
)

ESCAPE = "\x1b]0;owned\x07\x1b[2J\x1b[31mjob ok\x1b[0m\r\n"
LONG = "x" * 200_000


@pytest.fixture
def world(tmp_path: Path) -> World:
    return World(tmp_path / "drover.db")


def report(world: World, *reports: Any) -> list[object]:
    before = len(world.sent)
    world.run(on_reports(world.state, "n1", list(reports), world.now, store=world.store))
    return [s.message for s in world.sent[before:]]


def texts(value: object) -> list[str]:
    """Every string in a stored record or event, keys included."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [text for key, item in value.items() for text in texts(key) + texts(item)]
    if isinstance(value, (list, tuple)):
        return [text for item in value for text in texts(item)]
    return []


def shown(world: World, job: int) -> list[str]:
    """What the store keeps of the job that listings show: its attempts' records and its events
    (a task's failure among them)."""
    found = [text for attempt in world.store.attempts_of(job)
             for text in texts(attempt.exit) + texts(attempt.cleanup) + texts(attempt.usage)]
    found += [text for _, event in world.store.events_of(job, 0, 1000) for text in texts(event.detail)]
    return found


def assert_clean(found: list[str]) -> None:
    assert found
    assert not [text for text in found if has_control_characters(text)]
    # A message, with the step's name before it where an event says which step gave it.
    assert max(len(text) for text in found) <= MESSAGE_CHARS + NAME_CHARS + len(" given up: ")


def test_an_exit_failure_notes_and_methods_with_escapes_and_megabytes_are_kept_cleaned_and_cut(
        world: World) -> None:
    job, name = world.running()
    failed = dict(OK, exit_code=None, failure=ESCAPE + LONG, notes=[ESCAPE, LONG] * 100,
                  methods=[{"step": ESCAPE, "level": LONG, "exit_code": 1}])
    assert report(world, Exiting(name, failed), Exited(name, failed, done=[ESCAPE, LONG] * 100,  # type: ignore[arg-type]
                                                        given_up=[{"step": ESCAPE, "tries": 2, "error": LONG}]))
    assert world.ended == [job]
    assert_clean(shown(world, job))
    (attempt,) = world.store.attempts_of(job)
    assert attempt.exit is not None and attempt.exit["failure"] is not None
    # Kept, not refused: the words are there, the escape's bytes are not.
    assert attempt.exit["failure"].startswith("\ufffd]0;owned\ufffd\ufffd[2J\ufffd[31mjob ok\ufffd[0m  xxx")
    assert attempt.exit["failure"].endswith("…") and len(attempt.exit["failure"]) == MESSAGE_CHARS
    assert len(attempt.exit.get("notes", [])) <= 64
    assert attempt.cleanup is not None and all(len(step) <= NAME_CHARS for step in attempt.cleanup["done"])


def test_a_node_left_reason_with_escapes_is_kept_cleaned(world: World) -> None:
    job, name = world.running()
    left = dict(OK, exit_code=None, signal=15, terminated=True, node_left=True, failure=f"node n1 left: {ESCAPE}")
    report(world, Exited(name, left))
    assert_clean(shown(world, job))
    (attempt,) = world.store.attempts_of(job)
    assert attempt.exit is not None and attempt.exit["failure"] is not None
    assert attempt.exit["failure"].startswith("node n1 left: ")


def test_a_cleanup_error_and_a_step_given_up_with_escapes_are_kept_cleaned_and_acknowledged(world: World) -> None:
    job, name = world.running()
    replies = report(world, Progress(name, [ESCAPE], ESCAPE, 1, LONG),
                     Progress(name, ["exit_hook"], "exit_hook", 2, ESCAPE + LONG, given_up=True))
    assert Ack([name], "given_up:exit_hook") in replies
    report(world, Exited(name, dict(OK), done=["exit_hook", "stage_out", "record", "report"]))  # type: ignore[arg-type]
    # After the job ended: a late step given up, stored with the ended attempt.
    replies = report(world, Progress(name, ["remove"], "remove", 5, ESCAPE + LONG, given_up=True))
    assert Ack([name], "given_up:remove") in replies
    assert_clean(shown(world, job))
    (attempt,) = world.store.attempts_of(job)
    assert attempt.cleanup is not None
    assert [step["step"] for step in attempt.cleanup.get("given_up", [])] == ["exit_hook", "remove"]


def test_an_enforcement_detail_with_escapes_is_kept_cleaned(world: World) -> None:
    job, name = world.running()
    report(world, Enforced(name, "memory_warning", {"reason": ESCAPE + LONG, ESCAPE: 1,
                                                    **{f"k{n}": n for n in range(500)}}))
    (event,) = [e for _, e in world.store.events_of(job, 0, 1000) if e.kind == "memory_warning"]
    assert_clean(texts(event.detail))
    assert len(event.detail) <= 64 + 1  # the node's name is the event's own


def test_an_honest_report_is_kept_as_it_was_sent(world: World) -> None:
    job, name = world.running()
    failed = dict(OK, exit_code=1, failure="the queue prolog exited with status 2: /etc/drover/prolog: no\tspace",
                  notes=["the output file /home/alice/out is on a full filesystem"])
    report(world, Exited(name, failed, done=["exit_hook", "stage_out", "record", "report"]))  # type: ignore[arg-type]
    (attempt,) = world.store.attempts_of(job)
    assert attempt.exit is not None
    assert attempt.exit["failure"] == "the queue prolog exited with status 2: /etc/drover/prolog: no space"
    assert attempt.exit.get("notes") == ["the output file /home/alice/out is on a full filesystem"]


def test_what_a_node_says_beside_its_reports_is_cleaned_where_it_is_shown() -> None:
    hello = cleaned(Hello("n1", 2, 4096, features=["arch=lx-amd64", ESCAPE], gres=["gpu:a100", ESCAPE + LONG]))
    assert hello.features[0] == "arch=lx-amd64" and hello.gres[0] == "gpu:a100"
    assert_clean(hello.features + hello.gres)
    sample = Sample(attempt="1.0.1", at=1.0, memory_bytes=1, rss_bytes=1, peak_bytes=1, cpu=0.0, cpu_average=0.0,
                    memory_average_bytes=1, processes=1, threads=1, cmd=f"python3 -c print('{ESCAPE}')")
    honest = msgspec.structs.replace(sample, cmd="python3 train.py --epochs 3")
    said = cleaned(Samples([sample, honest]))
    assert_clean([s.cmd for s in said.samples])
    assert said.samples[1] is honest
    assert_clean([cleaned(EventLogAppended(1, error=ESCAPE + LONG)).error or "",
                  cleaned(OutputRead(1, error=ESCAPE)).error or "", cleaned(TerminalClosed(1, ESCAPE)).why])
    assert cleaned(EventLogAppended(1, last=3)) == EventLogAppended(1, last=3)


def test_a_parallel_tasks_end_is_cleaned_as_an_attempts_is() -> None:
    ended = cleaned(PeTaskExited("1.0.1", "2", dict(OK, exit_code=None, failure=ESCAPE + LONG,  # type: ignore[arg-type]
                                                    notes=[ESCAPE])))
    assert_clean(texts(ended.exit_status))
    assert ended.exit_status["failure"] is not None and ended.exit_status["failure"].endswith("…")
