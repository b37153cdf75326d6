"""The dashboard's pages rendered from the API's models: the right data, escaped."""

from __future__ import annotations

import re
from typing import Any

import msgspec

from drover.protocol.api import (
    Event,
    HistoryRow,
    HistorySummary,
    JobInfo,
    JobSamples,
    NodeInfo,
    QueueInfo,
)
from drover.web import pages


def _job(**fields: Any) -> JobInfo:
    base: dict[str, Any] = {
        "id": 7, "name": "train", "owner": "alice", "state": "running", "submitted_at": 1000.0, "priority": 0,
        "cpus": 2, "memory_mib": 512, "time_limit_s": None, "array": None, "task_counts": {"running": 1},
        "workdir": "/home/alice", "output": "drover-7.out", "error": None,
    }
    return msgspec.convert({**base, **fields}, JobInfo)


def _text(html: str) -> str:
    return re.sub(r"<[^>]+>", " ", html)


def test_a_jobs_name_can_never_become_markup() -> None:
    html = pages.jobs_live([_job(name='<script>alert(1)</script>"x')], pages.Filters(), now=1010.0)
    assert "<script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;&quot;x" in html


def test_the_listing_shows_each_job_with_the_actions_its_state_allows() -> None:
    html = pages.jobs_live([_job(), _job(id=8, name="later", state="held", pending_reason="JobHeldUser")],
                           pages.Filters(state="held"), now=1010.0)
    assert 'data-action="cancel" data-ref="7"' in html and 'data-action="requeue" data-ref="7"' in html
    assert 'data-action="release" data-ref="8"' in html and 'data-action="hold" data-ref="8"' not in html
    assert "JobHeldUser" in html
    assert '<option value="held" selected>' in html
    assert html.index('href="/jobs/8"') < html.index('href="/jobs/7"')  # newest first


def test_nodes_show_cpu_memory_and_gpu_bars() -> None:
    node = msgspec.convert({"name": "gpu1", "state": "up", "cpus": 8, "memory_mib": 16384, "cpus_used": 6,
                            "memory_mib_used": 4096, "running": 3, "last_seen": 1.0,
                            "gres": "gpu:a100:2,nic:1", "gres_used": "gpu:a100:1(IDX:0)"}, NodeInfo)
    queue = msgspec.convert({"name": "short", "state": "open", "defined_in": "drover.toml", "pending": 4,
                             "running": 2, "cpus": 8, "cpus_used": 6}, QueueInfo)
    waiting = [_job(id=9, state="pending", pending_reason="Resources"), _job(id=10, state="pending", pending_reason="Resources"),
               _job(id=11, state="held", pending_reason="JobHeldUser")]
    text = _text(pages.cluster_live([node], [queue], waiting))
    assert "gpu1" in text and "6/8" in text and "4.0G/16.0G" in text and "1/2" in text
    assert "width:75.0%" in pages.cluster_live([node], [], [])
    assert re.search(r"Resources\s+2\s+9 ,\s+10", text)
    assert re.search(r"JobHeldUser\s+1\s+11", text)
    assert re.search(r"short\s+open\s+4\s+2\s+6/8", text)


def test_gpu_counts_read_the_generic_resources() -> None:
    assert pages.gpu_counts("gpu:a100:2,nic:1", "gpu:a100:1(IDX:0)") == (1, 2)
    assert pages.gpu_counts("gpu:4", "gpu:2(IDX:0,1)") == (2, 4)
    assert pages.gpu_counts("nic:1", "") == (0, 0)


def test_a_job_page_shows_attempts_firing_sequence_cleanup_samples_and_why_it_waits() -> None:
    attempt = {"number": 1, "node": "n1", "cpu_ids": [0, 1], "dispatched_at": 1001.0, "started_at": 1002.0,
               "ended_at": 1010.0, "exit_code": 3,
               "cleanup": {"done": ["exit_hook"], "step": "stage_out", "tries": 2, "error": "disk full"}}
    job = _job(state="failed", ended_at=1011.0, exit_status=3,
               tasks=[{"index": 0, "state": "failed", "state_since": 1010.0, "attempts": [attempt]}])
    events = [msgspec.convert(event, Event) for event in [
        {"seq": 1, "time": 1000.0, "job_id": 7, "index": None, "attempt": None, "kind": "submitted"},
        {"seq": 2, "time": 1001.0, "job_id": 7, "index": 0, "attempt": 1, "kind": "dispatched",
         "detail": {"trigger": "dispatch", "before": "pending", "after": "dispatched", "node": "n1"}},
        {"seq": 3, "time": 1010.0, "job_id": 7, "index": 0, "attempt": 1, "kind": "exited"},
        {"seq": 4, "time": 1010.5, "job_id": 7, "index": 0, "attempt": 1, "kind": "cleanup_step",
         "detail": {"step": "exit_hook"}},
    ]]
    samples = msgspec.convert({"job_id": 7, "attempts": [{
        "task": 0, "attempt": 1, "node": "n1", "peak_bytes": 3 << 20, "memory_average_bytes": 2 << 20,
        "cpu_average": 1.5, "latest": {"at": 1005.0, "memory_bytes": 2 << 20, "rss_bytes": 1, "cpu": 1.9,
                                       "processes": 2, "threads": 3, "cmd": "python3 train.py"},
        "history": [{"at": t, "memory_bytes": t * 1000, "rss_bytes": 1, "cpu": 1.0, "processes": 1, "threads": 1}
                    for t in (1003, 1004, 1005)]}]}, JobSamples)
    html = pages.job_live(job, events, samples, now=1020.0)
    firing, cleanup = html.split("firing sequence")[1].split("staged cleanup")
    assert "dispatched" in firing and "exited" in firing and "cleanup_step" not in firing
    assert "(pending → dispatched, node n1)" in firing and "trigger" not in firing
    assert "cleanup_step" in cleanup and "exit_hook" in cleanup and pages.clock(1010.5) in cleanup
    assert "step stage_out failed 2 time(s): disk full" in cleanup
    assert "exit 3" in html and "python3 train.py" in html and "<polyline" in html
    assert 'class="attempt ended"' in html
    assert "data-action" not in html.split("</h2>")[0]  # an ended job offers nothing to do

    waiting = pages.job_live(_job(state="pending", pending_reason="Priority",
                                  pending_explanation="3 jobs are ahead of it"), [], None, now=1020.0)
    assert "Why it waits" in waiting and "3 jobs are ahead of it" in waiting


def test_history_shows_the_summary_and_the_rows_newest_first() -> None:
    rows = [msgspec.convert({"job_id": job_id, "index": 0, "is_array": False, "attempt": 1, "name": f"j{job_id}",
                             "owner": "alice", "state": "completed", "node": "n1", "exit_status": 0,
                             "submitted_at": 1.0, "started_at": 2.0, "ended_at": 3.0, "usage": None,
                             "wall_s": 61.0, "cpu_s": 12.5, "cpu_efficiency": 0.5}, HistoryRow)
            for job_id in (1, 2)]
    summary = msgspec.convert({"by": "queue", "groups": [{"key": "default", "jobs": 2, "attempts": 2,
                                                           "cpu_hours": 0.25, "wall_hours": 0.5}]}, HistorySummary)
    html = pages.history_live(rows, summary, pages.Filters(by="queue"))
    text = _text(html)
    assert re.search(r"default\s+2\s+2\s+0\.25\s+0\.50", text)
    assert text.index("j2") < text.index("j1")
    assert "00:01:01" in text and "12.5s" in text and "50%" in text
    assert '<option value="queue" selected>' in html


def test_the_document_carries_the_csrf_token_and_the_stream() -> None:
    html = pages.document("Cluster", "<p>x</p>", csrf="tok&en", stream="/stream/jobs?name=a&b",
                          user="bob", current="/")
    assert '<meta name="csrf-token" content="tok&amp;en">' in html
    assert 'data-stream="/stream/jobs?name=a&amp;b"' in html
    assert "signed in as <b id=\"user\">bob</b>" in html
