"""The dashboard's pages as HTML, from the API's own models: pure functions, no I/O.

Every value from the cluster is escaped where it is put into the page (`_e`), so a job's name or
output can never become markup. The live part of each page (`<main id="live">`) is rendered
alone too: the server sends it again whenever it changes, and the page swaps it in.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from html import escape

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from drover.protocol.api import (
        AttemptInfo,
        AttemptSamples,
        Event,
        HistoryRow,
        HistorySummary,
        JobInfo,
        JobSamples,
        NodeInfo,
        QueueInfo,
        TaskInfo,
    )

ACTIONS = ("cancel", "hold", "release", "requeue")
# Which actions a job's state makes sense for; the controller still decides each one.
_ACTIONS_FOR = {
    "pending": ("cancel", "hold"), "held": ("cancel", "release"), "running": ("cancel", "requeue"),
    "suspended": ("cancel", "requeue"), "completing": ("cancel",),
}


def _e(value: object) -> str:
    return escape(str(value), quote=True)


def clock(at: float | None) -> str:
    """A time as the CLI prints it, in the dashboard's local time zone."""
    if at is None:
        return "-"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(at))


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    whole = max(int(seconds), 0)
    hours, rest = divmod(whole, 3600)
    return f"{hours:02d}:{rest // 60:02d}:{rest % 60:02d}"


def size_mib(mib: float) -> str:
    return f"{mib / 1024:.1f}G" if mib >= 1024 else f"{mib:.0f}M"


def size_bytes(count: float | None) -> str:
    return "-" if count is None else size_mib(count / 1048576)


def bar(label: str, used: float, total: float, text: str) -> str:
    """A horizontal bar: `used` of `total`, with `text` written on it."""
    share = 0.0 if total <= 0 else min(max(used / total, 0.0), 1.0)
    level = "high" if share >= 0.9 else "mid" if share >= 0.6 else "low"
    return (f'<div class="bar" title="{_e(label)}: {_e(text)}"><span class="bar-label">{_e(label)}</span>'
            f'<span class="bar-track"><span class="bar-fill {level}" style="width:{share * 100:.1f}%"></span>'
            f'<span class="bar-text">{_e(text)}</span></span></div>')


def gpu_counts(gres: str, gres_used: str) -> tuple[int, int]:
    """(GPUs in use, GPUs) from a node's generic resources: "gpu:a100:2,nic:1" and
    "gpu:a100:1(IDX:0)" give (1, 2)."""
    def count(text: str) -> int:
        total = 0
        for entry in _split_gres(text):
            parts = entry.split("(")[0].split(":")
            if parts[0] == "gpu" and len(parts) >= 2 and parts[-1].isdigit():
                total += int(parts[-1])
        return total
    return count(gres_used), count(gres)


def _split_gres(text: str) -> list[str]:
    """Split on the commas between entries, not those inside an entry's "(IDX:0,2)"."""
    entries, depth, current = [], 0, ""
    for char in text:
        depth += (char == "(") - (char == ")")
        if char == "," and depth == 0:
            entries.append(current)
            current = ""
        else:
            current += char
    return [entry for entry in [*entries, current] if entry]


@dataclass
class Filters:
    """A listing's filters, as `drover status` and `drover history` take them."""

    state: str = ""
    name: str = ""
    user: str = ""
    include_ended: bool = False
    queue: str = ""
    since_days: float | None = None
    by: str = "user"
    extra: dict[str, str] = field(default_factory=dict)

    def query(self) -> str:
        from urllib.parse import urlencode

        pairs = {"state": self.state, "name": self.name, "user": self.user, "queue": self.queue,
                 "all": "1" if self.include_ended else "", "by": self.by if self.by != "user" else "",
                 "since_days": "" if self.since_days is None else f"{self.since_days:g}"}
        return urlencode({key: value for key, value in pairs.items() if value})


# -- the frame around every page ------------------------------------------------------------------

def document(title: str, live: str, *, csrf: str, stream: str, user: str, current: str, tail: str = "") -> str:
    """A whole page: the navigation, `live` (the part the stream `stream` replaces) and `tail`
    (what stays, e.g. a job's output, which its stream appends to)."""
    links = [("/", "Cluster"), ("/jobs", "My jobs"), ("/history", "History")]
    nav = "".join(f'<a href="{href}"{" class=current" if href == current else ""}>{_e(text)}</a>'
                  for href, text in links)
    return (
        "<!doctype html>\n"
        f'<html lang="en"><head><meta charset="utf-8"><title>{_e(title)} - Drover</title>'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<meta name="csrf-token" content="{_e(csrf)}">'
        '<link rel="stylesheet" href="/static/dashboard.css">'
        '<script src="/static/dashboard.js" defer></script></head>'
        f'<body><header><span class="brand">Drover</span><nav>{nav}</nav>'
        f'<span class="whoami">signed in as <b id="user">{_e(user)}</b></span>'
        '<span id="connection" class="connection">live</span></header>'
        '<div id="notice" role="status"></div>'
        f'<main id="live" data-stream="{_e(stream)}">{live}</main>{tail}</body></html>\n'
    )


def error_live(message: str) -> str:
    """What a page shows where the controller refused or could not answer."""
    return f'<section><p class="refusal">{_e(message)}</p></section>'


def _table(headers: Sequence[str], rows: Iterable[Sequence[str]], empty: str, css: str = "") -> str:
    body = "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows)
    if not body:
        return f'<p class="empty">{_e(empty)}</p>'
    head = "".join(f"<th>{_e(header)}</th>" for header in headers)
    return f'<table class="{css}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _state(state: str) -> str:
    return f'<span class="state state-{_e(state)}">{_e(state)}</span>'


def _job_link(job_id: int, text: str | None = None) -> str:
    return f'<a href="/jobs/{job_id}">{_e(text if text is not None else job_id)}</a>'


def action_buttons(ref: str, state: str) -> str:
    buttons = "".join(f'<button type="button" class="act" data-action="{action}" data-ref="{_e(ref)}">{action}</button>'
                      for action in _ACTIONS_FOR.get(state, ()))
    return f'<span class="actions">{buttons}</span>'


# -- the cluster ----------------------------------------------------------------------------------

def cluster_live(nodes: Sequence[NodeInfo], queues: Sequence[QueueInfo], waiting: Sequence[JobInfo]) -> str:
    """Nodes with their CPU, memory and GPU in use, the queues, and why the caller's jobs wait."""
    cards = []
    for node in nodes:
        bars = [bar("CPU", node.cpus_used, node.cpus, f"{node.cpus_used}/{node.cpus}"),
                bar("Memory", node.memory_mib_used, node.memory_mib,
                    f"{size_mib(node.memory_mib_used)}/{size_mib(node.memory_mib)}")]
        gpus_used, gpus = gpu_counts(node.gres, node.gres_used)
        if gpus:
            bars.append(bar("GPU", gpus_used, gpus, f"{gpus_used}/{gpus}"))
        facts = [f"{node.running} running"]
        if node.load is not None:
            facts.append(f"load {node.load:.2f}")
        if node.reason:
            facts.append(_e(node.reason))
        facts += [f"queue {_e(queue)} in error: {_e(why)}" for queue, why in node.queue_errors.items()]
        cards.append(f'<div class="node" data-node="{_e(node.name)}"><h3>{_e(node.name)} {_state(node.state)}</h3>'
                     f'{"".join(bars)}<p class="facts">{" · ".join(facts)}</p></div>')
    nodes_html = "".join(cards) or '<p class="empty">No nodes have joined.</p>'
    queue_rows = [
        (_e(queue.name), _state(queue.state) + (f" {_e(queue.reason)}" if queue.reason else ""),
         str(queue.pending), str(queue.running), f"{queue.cpus_used}/{queue.cpus}",
         _e(queue.window or "always") + ("" if queue.window_open else " (closed)"))
        for queue in queues
    ]
    reasons: dict[str, list[JobInfo]] = {}
    for job in waiting:
        reasons.setdefault(job.pending_reason or job.state, []).append(job)
    reason_rows = [
        (_e(reason), str(len(jobs)), ", ".join(_job_link(job.id) for job in jobs[:20]) + (" ..." if len(jobs) > 20 else ""))
        for reason, jobs in sorted(reasons.items(), key=lambda item: -len(item[1]))
    ]
    return (f'<section><h2>Nodes</h2><div class="nodes">{nodes_html}</div></section>'
            f'<section><h2>Queues</h2>{_table(("queue", "state", "pending", "running", "CPUs", "window"), queue_rows, "No queues.")}</section>'
            f'<section><h2>Why jobs wait</h2>{_table(("reason", "jobs", "which"), reason_rows, "Nothing waits.", "reasons")}</section>')


# -- a listing of jobs ----------------------------------------------------------------------------

def jobs_live(jobs: Sequence[JobInfo], filters: Filters, now: float) -> str:
    states = ("", "pending", "held", "running", "suspended", "completing", "completed", "failed", "cancelled")
    options = "".join(f'<option value="{state}"{" selected" if state == filters.state else ""}>{state or "any state"}</option>'
                      for state in states)
    form = (f'<form class="filters" method="get" action="/jobs"><select name="state">{options}</select>'
            f'<input name="name" placeholder="name" value="{_e(filters.name)}">'
            f'<input name="user" placeholder="user (operators)" value="{_e(filters.user)}">'
            f'<label><input type="checkbox" name="all" value="1"{" checked" if filters.include_ended else ""}> ended too</label>'
            '<button type="submit">Filter</button></form>')
    rows = []
    for job in sorted(jobs, key=lambda job: -job.id):
        counts = " ".join(f"{state}:{count}" for state, count in sorted(job.task_counts.items()))
        ran = (job.ended_at or now) - job.submitted_at
        why = job.pending_reason if job.state in ("pending", "held") else ""
        rows.append((_job_link(job.id), _e(job.name), _e(job.owner), _state(job.state), _e(job.queue),
                     _e(counts), _e(why or ""), duration(ran), action_buttons(str(job.id), job.state)))
    table = _table(("job", "name", "user", "state", "queue", "tasks", "why it waits", "age", ""), rows,
                   "No jobs match.", "jobs")
    return f"<section><h2>Jobs</h2>{form}{table}</section>"


# -- one job --------------------------------------------------------------------------------------

def job_live(job: JobInfo, events: Sequence[Event], samples: JobSamples | None, now: float) -> str:
    facts = [("owner", _e(job.owner)), ("state", _state(job.state)), ("queue", _e(job.queue)),
             ("CPUs", str(job.cpus)), ("memory", size_mib(job.memory_mib) if job.memory_mib else "-"),
             ("time limit", duration(job.time_limit_s) if job.time_limit_s else "-"),
             ("submitted", clock(job.submitted_at)), ("ended", clock(job.ended_at)),
             ("exit status", _e(job.exit_status) if job.exit_status is not None else "-"),
             ("workdir", _e(job.workdir or "(scratch)"))]
    if job.array:
        facts.append(("array", _e(job.array)))
    facts_html = "".join(f"<dt>{name}</dt><dd>{value}</dd>" for name, value in facts)
    waits = ""
    if job.state in ("pending", "held") and (job.pending_reason or job.pending_explanation):
        waits = (f'<section class="why"><h2>Why it waits</h2><p><b>{_e(job.pending_reason or "")}</b> '
                 f'{_e(job.pending_explanation or "")}</p></section>')
    return (f'<section><h2>Job {job.id}: <span class="job-name">{_e(job.name)}</span> {_state(job.state)} '
            f'{action_buttons(str(job.id), job.state)}</h2><dl class="facts">{facts_html}</dl></section>'
            f"{waits}{_timeline(job, now)}{_usage(samples)}{_sequences(job, events)}")


def _timeline(job: JobInfo, now: float) -> str:
    """Each task's attempts as bars on one time axis, from submission to the last end (or now)."""
    attempts = [(task, attempt) for task in job.tasks for attempt in task.attempts]
    start = job.submitted_at
    end = max([now if job.ended_at is None else job.ended_at,
               *[attempt.ended_at or now for _, attempt in attempts]])
    span = max(end - start, 1e-6)
    rows = []
    for task in job.tasks:
        lanes = "".join(_attempt_bar(attempt, start, span, now) for attempt in task.attempts)
        label = f"{job.id}.{task.index}" if job.array else str(job.id)
        actions = action_buttons(label, task.state) if job.array else ""
        rows.append(f'<div class="lane"><span class="lane-label">{_e(label)} {_state(task.state)} {actions}</span>'
                    f'<span class="lane-track">{lanes}</span></div>')
    if not rows:
        rows.append('<p class="empty">No task has started yet.</p>')
    details = _table(("task", "attempt", "node", "CPUs", "dispatched", "started", "ended", "ran", "how it ended"),
                     [(_e(task.index), str(attempt.number), _e(attempt.node), _e(",".join(map(str, attempt.cpu_ids))),
                       clock(attempt.dispatched_at), clock(attempt.started_at), clock(attempt.ended_at),
                       duration(((attempt.ended_at or now) - attempt.started_at) if attempt.started_at else None),
                       _e(_how_it_ended(task, attempt)))
                      for task, attempt in attempts], "No attempts yet.", "attempts")
    return (f'<section><h2>Tasks and attempts</h2><div class="timeline" data-from="{clock(start)}" '
            f'data-to="{clock(end)}">{"".join(rows)}<div class="axis"><span>{clock(start)}</span>'
            f'<span>{clock(end)}</span></div></div>{details}</section>')


def _attempt_bar(attempt: AttemptInfo, start: float, span: float, now: float) -> str:
    left = (attempt.dispatched_at - start) / span * 100
    width = max(((attempt.ended_at or now) - attempt.dispatched_at) / span * 100, 0.5)
    kind = "ended" if attempt.ended_at is not None else "live"
    title = f"attempt {attempt.number} on {attempt.node}: {clock(attempt.dispatched_at)} to {clock(attempt.ended_at)}"
    return (f'<span class="attempt {kind}" style="left:{left:.2f}%;width:{width:.2f}%" title="{_e(title)}">'
            f"{attempt.number}</span>")


def _how_it_ended(task: TaskInfo, attempt: AttemptInfo) -> str:
    if attempt.ended_at is None:
        return "running" if attempt.started_at else "starting"
    parts = []
    if attempt.exit_code is not None:
        parts.append(f"exit {attempt.exit_code}")
    if attempt.signal:
        parts.append(f"signal {attempt.signal}")
    if attempt.failure:
        parts.append(attempt.failure)
    parts += [word for flag, word in ((attempt.timed_out, "time limit"), (attempt.out_of_memory, "out of memory"),
                                       (attempt.terminated, "terminated")) if flag]
    return ", ".join(parts) or task.state


def _usage(samples: JobSamples | None) -> str:
    if samples is None or not samples.attempts:
        return ""
    blocks = [_attempt_usage(attempt) for attempt in samples.attempts]
    return f'<section><h2>CPU and memory now</h2>{"".join(blocks)}</section>'


def _attempt_usage(attempt: AttemptSamples) -> str:
    latest = attempt.latest
    history = attempt.history or [latest]
    return (f'<div class="usage"><h3>task {attempt.task}, attempt {attempt.attempt} on {_e(attempt.node)}</h3>'
            f'<p>memory now {size_bytes(latest.memory_bytes)}, peak {size_bytes(attempt.peak_bytes)}, '
            f'average {size_bytes(attempt.memory_average_bytes)} {sparkline([s.memory_bytes for s in history], "memory")}</p>'
            f'<p>CPU now {latest.cpu:.2f}, average {attempt.cpu_average:.2f} cores '
            f'{sparkline([s.cpu for s in history], "cpu")}</p>'
            f'<p class="facts">processes {latest.processes}, threads {latest.threads}; biggest: '
            f'<code>{_e(latest.cmd)}</code></p></div>')


def sparkline(values: Sequence[float], css: str, width: int = 160, height: int = 28) -> str:
    """An inline SVG line of `values`, scaled to their largest."""
    if not values:
        return ""
    if len(values) == 1:  # one sample yet: a flat line, not an empty box
        values = [values[0], values[0]]
    top = max(max(values), 1e-9)
    step = width / max(len(values) - 1, 1)
    points = " ".join(f"{index * step:.1f},{height - value / top * (height - 2) - 1:.1f}"
                      for index, value in enumerate(values))
    return (f'<svg class="spark {css}" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
            f'role="img" aria-label="{css}"><polyline points="{points}"/></svg>')


def _sequences(job: JobInfo, events: Sequence[Event]) -> str:
    """Per attempt, its firing sequence (dispatch, start, exit, ...) and its staged cleanup steps,
    each with its time, from the job's events; and what each attempt's node could not do."""
    firing: dict[tuple[int, int], list[Event]] = {}
    cleanup: dict[tuple[int, int], list[Event]] = {}
    job_events = []
    for event in events:
        if event.index is None or event.attempt is None:
            job_events.append(event)
            continue
        key = (event.index, event.attempt)
        (cleanup if event.kind.startswith("cleanup") else firing).setdefault(key, []).append(event)
    blocks = []
    if job_events:
        blocks.append("<h3>the job</h3>" + _event_list(job_events))
    for key in sorted(set(firing) | set(cleanup)):
        task, number = key
        name = f"task {task}, attempt {number}"
        given_up = _given_up(job, task, number)
        blocks.append(f'<div class="sequence"><h3>{_e(name)}</h3><div class="columns">'
                      f'<div><h4>firing sequence</h4>{_event_list(firing.get(key, []))}</div>'
                      f'<div><h4>staged cleanup</h4>{_event_list(cleanup.get(key, []))}{given_up}</div></div></div>')
    return f'<section><h2>What happened</h2>{"".join(blocks) or "<p class=empty>No events yet.</p>"}</section>'


def _event_list(events: Sequence[Event]) -> str:
    if not events:
        return '<p class="empty">nothing yet</p>'
    items = []
    for event in events:
        detail = event.detail.get("step") if event.kind.startswith("cleanup") else None
        # A state change says from what to what; which code path made it (trigger) is for the log.
        extra = ", ".join(f"{key} {value}" for key, value in event.detail.items()
                          if key not in ("step", "trigger", "before", "after"))
        if "before" in event.detail and "after" in event.detail:
            extra = f"{event.detail['before']} → {event.detail['after']}" + (", " + extra if extra else "")
        items.append(f'<li><time>{clock(event.time)}</time> <b>{_e(event.kind)}</b>'
                     f'{" " + _e(detail) if detail else ""}{" (" + _e(extra) + ")" if extra else ""}</li>')
    return f'<ol class="events">{"".join(items)}</ol>'


def _given_up(job: JobInfo, index: int, number: int) -> str:
    for task in job.tasks:
        for attempt in task.attempts:
            if task.index == index and attempt.number == number and attempt.cleanup:
                lines = [f"step {entry['step']} given up after {entry['tries']} tries: {entry.get('error') or ''}"
                         for entry in attempt.cleanup.get("given_up") or []]
                if attempt.cleanup.get("error"):
                    lines.append(f"step {attempt.cleanup['step']} failed {attempt.cleanup['tries']} time(s): "
                                 f"{attempt.cleanup['error']}")
                return "".join(f'<p class="refusal">{_e(line)}</p>' for line in lines)
    return ""


def output_tail(job: JobInfo, task_index: int) -> str:
    """The part of a job's page that stays while the live part is replaced: its output, which the
    job's stream appends to."""
    tasks = [task.index for task in job.tasks] or [task_index]
    choices = "".join(f'<a href="/jobs/{job.id}?task={index}"{" class=current" if index == task_index else ""}>'
                      f"{job.id}.{index}</a> " for index in tasks) if job.array else ""
    return (f'<section class="output"><h2>Output of task {task_index} (the tail, following)</h2>'
            f'<p class="tasks">{choices}</p><pre id="output" data-task="{task_index}"></pre></section>')


# -- history --------------------------------------------------------------------------------------

def history_live(rows: Sequence[HistoryRow], summary: HistorySummary | None, filters: Filters) -> str:
    bys = "".join(f'<option value="{by}"{" selected" if by == filters.by else ""}>by {by}</option>'
                  for by in ("user", "queue", "node", "day"))
    since = "" if filters.since_days is None else f"{filters.since_days:g}"
    form = (f'<form class="filters" method="get" action="/history">'
            f'<input name="since_days" placeholder="days back" value="{_e(since)}" size="8">'
            f'<input name="state" placeholder="state" value="{_e(filters.state)}">'
            f'<input name="name" placeholder="name (glob)" value="{_e(filters.name)}">'
            f'<input name="queue" placeholder="queue" value="{_e(filters.queue)}">'
            f'<input name="user" placeholder="user (operators)" value="{_e(filters.user)}">'
            f'<select name="by">{bys}</select><button type="submit">Filter</button></form>')
    summary_html = ""
    if summary is not None:
        summary_rows = [(_e(group.key), str(group.jobs), str(group.attempts), f"{group.cpu_hours:.2f}",
                         f"{group.wall_hours:.2f}", duration(group.wait_p50_s), duration(group.wait_p90_s),
                         _percent(group.cpu_efficiency_p50), _percent(group.memory_efficiency_p50))
                        for group in summary.groups]
        summary_html = _table((summary.by, "jobs", "attempts", "CPU hours", "wall hours", "wait p50", "wait p90",
                               "CPU eff. p50", "memory eff. p50"), summary_rows, "Nothing ended yet.", "summary")
    table_rows = [
        (_job_link(row.job_id, f"{row.job_id}.{row.index}" if row.is_array else str(row.job_id)), str(row.attempt),
         _e(row.name), _e(row.owner), _state(row.state), _e(row.node),
         _e(row.exit_status) if row.exit_status is not None else "-", clock(row.ended_at), duration(row.wall_s),
         f"{row.cpu_s:.1f}s" if row.cpu_s is not None else "-",
         size_bytes(row.max_rss_kib * 1024 if row.max_rss_kib else None),
         _percent(row.cpu_efficiency), _e(row.reason or ""))
        for row in reversed(rows)
    ]
    table = _table(("job", "attempt", "name", "user", "state", "node", "exit", "ended", "ran", "CPU", "max RSS",
                    "CPU eff.", "why"), table_rows, "No ended jobs match.", "history")
    return (f'<section><h2>History</h2>{form}<h3>Summary</h3>{summary_html}'
            f'<h3>Ended attempts, newest first</h3>{table}</section>')


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.0f}%"
