"""The wording of `drover status`'s NOTE and of `drover why`, on plain API records."""

from __future__ import annotations

from typing import Any

from drover.cli.why import explain, held_reason, latest_holds, status_note
from drover.protocol.api import AttemptInfo, DependencyOn, Event, JobInfo, NodeInfo, TaskInfo


def job(**fields: Any) -> JobInfo:
    base: dict[str, Any] = dict(id=12, name="train", owner="alice", state="pending", submitted_at=0.0, priority=0,
                                cpus=1, memory_mib=100, time_limit_s=None, array=None, task_counts={"pending": 1},
                                workdir="/w", output="drover-%j.out", error=None)
    base.update(fields)
    return JobInfo(**base)


def node(name: str = "n1", cpus: int = 8, memory_mib: int = 16000, cpus_used: int = 0, state: str = "up") -> NodeInfo:
    return NodeInfo(name=name, state=state, cpus=cpus, memory_mib=memory_mib, cpus_used=cpus_used,
                    memory_mib_used=0, running=0, last_seen=None)


def event(seq: int, kind: str, index: int | None = None, attempt: int | None = None, **detail: Any) -> Event:
    return Event(seq=seq, time=float(seq), job_id=12, index=index, attempt=attempt, kind=kind, detail=detail)


def attempt(number: int = 1, exit_code: int | None = None, failure: str | None = None) -> AttemptInfo:
    return AttemptInfo(number=number, node="n1", cpu_ids=[0], dispatched_at=1.0, started_at=None, ended_at=2.0,
                       exit_code=exit_code, signal=None, failure=failure, timed_out=False, terminated=False,
                       usage=None)


def test_status_notes_a_held_job_with_how_to_release_it() -> None:
    assert status_note(job(state="held", task_counts={"held": 1})) == (
        "held (release with drover release 12; drover why 12 says why)")
    array = job(state="held", array="1-3", task_counts={"held": 2, "completed": 1})
    assert status_note(array) == (
        "1 completed, 2 held; release with drover release 12 (drover why 12 says why)")


def test_status_keeps_the_planners_words_and_notes_an_unplanned_pending_job() -> None:
    assert status_note(job(pending_reason="dependency", pending_explanation="waiting for job 9 (afterok) to complete")
                       ) == "waiting for job 9 (afterok) to complete"
    assert status_note(job()).startswith("not planned yet")
    assert status_note(job(state="running", task_counts={"running": 1})) == ""


def test_why_a_job_waits_for_a_dependency_and_when_it_starts() -> None:
    waiting = job(pending_reason="dependency", pending_explanation="waiting for job 9 (afterok) to complete",
                  dependencies=[DependencyOn(kind="afterok", job=9)])
    assert explain(waiting) == ["Job 12 (train) is PENDING", "pending:",
                                "  waiting for job 9 (afterok) to complete",
                                "  it starts when job 9 completes successfully"]


def test_why_a_job_is_too_big_names_the_largest_node() -> None:
    big = job(cpus=64, pending_reason="too_big", pending_explanation="no node that is up has that many CPUs or that much memory")
    lines = explain(big, nodes=[node("a", 4), node("b", 8), node("c", 128, state="down")])
    assert "  no node up has 64 CPUs: the largest has 8" in lines


def test_why_a_job_waits_for_resources_says_what_must_free_up() -> None:
    lines = explain(job(cpus=4, pending_reason="resources"), nodes=[node(cpus=8, cpus_used=6)])
    assert lines[2:] == ["  waiting for CPUs or memory to free up", "  it starts when a node has 4 CPU(s) and 100 MiB free",
                         "  now the most free on one node is 2 CPU(s) and 16000 MiB; running jobs must end first"]


def test_why_a_user_hold_says_to_release_it() -> None:
    held = job(state="held", task_counts={"held": 1})
    assert explain(held, [event(1, "held")]) == [
        "Job 12 (train) is HELD",
        "held: held by a user (drover hold, or submitted with --hold); release it with drover release 12"]


def test_a_hold_says_who_held_it() -> None:
    held = job(state="held", task_counts={"held": 1})
    assert explain(held, [event(1, "submitted", held=False), event(2, "held", by="alice")])[1] == (
        "held: held by alice (drover hold); release it with drover release 12")
    assert explain(held, [event(2, "held", by="root")])[1] == (
        "held: held by root, not its owner alice (an administrator's or operator's drover hold); "
        "release it with drover release 12")
    assert explain(held, [event(1, "submitted", held=True)])[1] == (
        "held: held since it was submitted (submitted with --hold); release it with drover release 12")


def test_a_hold_in_error_says_which_attempt_and_why() -> None:
    task = TaskInfo(index=3, state="held", state_since=2.0, attempts=[attempt(1, exit_code=100)])
    assert held_reason("12.3", task, latest_holds([event(1, "held_in_error", 3, 1)])[3]) == (
        "held in error: attempt 1 exited with status 100, which asks for a hold "
        "(fix the cause, then release it with drover release 12.3)")
    failed = TaskInfo(index=0, state="held", state_since=2.0, attempts=[attempt(2, failure="prolog failed")])
    # An event of a controller that did not record the cause: no rule is blamed.
    assert held_reason("12", failed, latest_holds([event(1, "held_in_error", 0, 2)])[0]) == (
        "held in error after attempt 2 ended on node n1 (prolog failed); release it with drover release 12 "
        "to run it again")


def test_a_hold_in_error_names_the_method_that_asked_for_it_and_blames_requeue_held_only_when_it_held() -> None:
    """A node epilog that exits 100 asks for the hold itself: `drover why` names it, not the
    cluster's requeue_held (which was off); a queue prolog that failed with 1, requeued and held
    by requeue_held, names both."""
    ran = TaskInfo(index=0, state="held", state_since=2.0, attempts=[attempt(1, exit_code=0)])
    asked = latest_holds([event(1, "held_in_error", 0, 1, cause="the node epilog exited with status 100",
                                requeue_held=False)])[0]
    assert held_reason("12", ran, asked) == (
        "held in error: in attempt 1 on node n1, the node epilog exited with status 100, which asks for a hold "
        "(fix the cause, then release it with drover release 12)")
    by_rule = latest_holds([event(1, "held_in_error", 0, 1, cause="the queue prolog exited with status 1",
                                  requeue_held=True)])[0]
    assert held_reason("12", ran, by_rule) == (
        "held: requeued after attempt 1 failed on node n1 (the queue prolog exited with status 1), and the "
        "cluster holds such jobs (requeue_held); release it with drover release 12 to run it again")


def test_a_release_forgets_the_hold_and_array_tasks_are_named_one_by_one() -> None:
    assert latest_holds([event(1, "held"), event(2, "released")]) == {}
    array = job(state="held", array="1-4", task_counts={"held": 3, "running": 1},
                tasks=[TaskInfo(index=2, state="held", state_since=2.0, attempts=[attempt(1, exit_code=100)]),
                       TaskInfo(index=1, state="running", state_since=2.0)])
    lines = explain(array, [event(1, "held"), event(5, "held_in_error", 2, 1)])
    assert lines[1] == "1 task(s) running or starting"
    assert lines[2] == "2 task(s) never started, held: held by a user (drover hold, or submitted with --hold); " \
                       "release it with drover release 12"
    assert lines[3].startswith("task 12.2: held in error: attempt 1 exited with status 100")
    assert lines[3].endswith("release it with drover release 12.2)")


def test_a_running_or_ended_job_says_so() -> None:
    assert explain(job(state="running", task_counts={"running": 1})) == [
        "Job 12 (train) is RUNNING", "1 task(s) running or starting", "no task waits; it is running"]
    assert explain(job(state="completed", ended_at=5.0, exit_status=0, task_counts={"completed": 1})) == [
        "Job 12 (train) is COMPLETED: it has ended, exit status 0; nothing waits"]


def test_begin_time_array_limit_and_never_satisfied_say_what_changes() -> None:
    begin = explain(job(pending_reason="begin_time", begin_at=1000.0), now=940.0)
    assert begin[-1].startswith("  it starts no earlier than ") and begin[-1].endswith("(in 60s)")
    limited = explain(job(array="1-9%2", max_running=2, task_counts={"pending": 7, "running": 2},
                          pending_reason="array_limit"))
    assert limited[-1] == "  at most 2 of its tasks run at once: the next starts when one of the 2 running ends"
    never = explain(job(pending_reason="dependency_never_satisfied", pending_explanation="job 9 failed"))
    assert never[-1].startswith("  it will never run: cancel it with drover cancel 12")


def test_why_says_what_would_start_a_job_its_queue_or_the_nodes_hold_back() -> None:
    stopped = explain(job(queue="night", pending_reason="queue_stopped",
                          pending_explanation="queue night is stopped: no job of it starts"))
    assert stopped[2] == "  queue night is stopped: no job of it starts"
    assert "drover queue start night" in stopped[3] and "drover alter --queue QUEUE 12" in stopped[3]
    window = explain(job(queue="night", pending_reason="queue_window",
                         pending_explanation="queue night starts jobs only in its time window, which opens x"))
    assert "when queue night's window opens" in window[3]
    unmatched = explain(job(pending_reason="no_node_matches", pending_explanation="no node that is up has gpu:4"))
    assert unmatched[2:] == ["  no node that is up has gpu:4", unmatched[3]] and "features" in unmatched[3]
    assert "give licences back" in explain(job(pending_reason="licenses"))[3]
    assert explain(job(pending_reason="something_new", pending_explanation="a new reason"))[2:] == ["  a new reason"]


def test_why_says_what_the_node_did_to_a_running_job_over_its_reservation() -> None:
    running = job(state="running", task_counts={"running": 1})
    reniced = event(3, "reniced", index=0, attempt=1, nice_from=8, nice_to=13, reason="cpu", cpu=2.43, cpus=1,
                    limit=1.25)
    lines = explain(running, [event(1, "submitted"), reniced])
    assert lines[1:] == ["1 task(s) running or starting",
                         "  it: reniced from 8 to 13: it used 2.43 CPUs on average, over its 1 reserved (limit 1.25)",
                         "no task waits; it is running"]
