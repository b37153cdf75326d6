"""drover show JOB: everything about a job, every attempt."""

from __future__ import annotations

import sys

from drover.cli.common import client, job_ids, parser, print_json
from drover.cli.why import ENFORCED_EVENTS, enforced_line, out_of_memory_text

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeVar

    T = TypeVar("T")

    from drover.protocol.api import Event, JobInfo, JobSamples, PriorityInfo, TaskInfo


def run(command: str, argv: list[str]) -> int:
    p = parser(command, "Show a job: its request, its tasks, and every attempt with its usage.")
    p.add_argument("jobs", nargs="+", metavar="JOB")
    args = p.parse_args(argv)
    ids = job_ids(args.jobs)
    with client() as api:
        jobs = [api.job(job_id) for job_id in ids]
        waiting = any(job.state in ("pending", "held") for job in jobs)
        # What the jobs' records do not hold is read besides, each part as the controller can give it:
        # while its store restarts it answers from memory, but not the events (they are the store's),
        # and the job is shown without that part, which is said on stderr.
        factors = _besides(command, "priority factors", lambda: {
            row.job_id: row for row in api.priority(None).jobs} if waiting else {})
        # What running attempts use now, from their nodes' samples (kept only while they run).
        samples = _besides(command, "live samples", lambda: {
            job.id: api.samples(job.id) for job in jobs if "running" in job.task_counts})
        # What the node did to attempts over their reservation (reniced, warned, killed): events.
        enforced = _besides(command, "what the node enforced", lambda: {
            job.id: [e for e in api.events(job.id) if e.kind in ENFORCED_EVENTS] for job in jobs
            if job.state in ("running", "completing", "out_of_memory")})
    if args.json:
        shown = [as_json(job, factors.get(job.id), samples.get(job.id), enforced.get(job.id, [])) for job in jobs]
        print_json(shown if len(shown) > 1 else shown[0])
        return 0
    from drover.cli.render import elapsed, memory, seconds, when
    from drover.core.units import format_duration

    for job in jobs:
        print(f"Job {job.id}: {job.name}")
        fields = [
            ("state", job.state.upper() + (f" (exit status {job.exit_status})" if job.exit_status is not None else "")),
            ("owner", job.owner),
            ("queue", job.queue),
            ("submitted", when(job.submitted_at)),
            ("ended", when(job.ended_at)),
            *([("reason", job.end_reason)] if job.end_reason else []),
            ("priority", job.priority if job.id not in factors else (
                f"{job.priority}; multifactor {factors[job.id].total:.2f} (age {factors[job.id].age:.2f}, "
                f"fairshare {factors[job.id].fairshare:.2f}, queue {factors[job.id].queue_factor:.2f}: "
                f"drover priority {job.id})")),
            ("request", (f"parallel environment {job.pe}, {job.cpus} slot(s) (CPUs), "
                         + (f"{job.pe_per_node} on each node, " if job.pe_per_node else "") if job.pe else
                         f"{job.cpus} CPU(s), ") + f"{job.memory_mib} MiB, time limit "
                        + (format_duration(job.time_limit_s) if job.time_limit_s else "none")
                        + "".join(f", {item}" for item in job.gres)
                        + (", a node to itself" if job.exclusive else "")),
            *([("licenses", ",".join(f"{name}:{count}" for name, count in sorted(job.licenses.items())))]
              if job.licenses else []),
            *([("constraint", job.constraint)] if job.constraint else []),
            *([("checkpoint", job.checkpoint)] if job.checkpoint else []),
            *job.options.items(),
            ("array", f"{job.array}" + (f" (at most {job.max_running} at once)" if job.max_running else "")
             if job.array else "-"),
            ("depends on", (" or " if job.dependency_any else ", ").join(
                "singleton" if d.kind == "singleton" else
                f"{'aftercorr' if d.per_task and d.kind == 'afterok' else d.kind}:{d.job}"
                + (f".{d.task}" if d.task is not None else "") for d in job.dependencies) or "-"),
            *([("begins", when(job.begin_at))] if job.begin_at else []),
            ("tasks", ", ".join(f"{n} {s}" for s, n in sorted(job.task_counts.items()))),
            ("waiting", job.pending_explanation or "-"),
            ("workdir", job.workdir),
            ("output", job.output + ("" if job.error else " (stderr joined)")),
        ]
        if job.error:
            fields.append(("error", job.error))
        for key, value in fields:
            print(f"  {key:<11} {value}")
        for task in job.tasks:
            label = f"{job.id}.{task.index}" if job.array else str(job.id)
            extra = " (cancel requested)" if task.cancel_requested else ""
            extra += suspended_text(job.queue, task)
            status = f", exit status {task.exit_status}" if task.exit_status is not None else ""
            print(f"  task {label}: {task.state.upper()}{status}{extra}; output {task.stdout}")
            for attempt in task.attempts:
                devices = "".join(f"; {name} {','.join(map(str, ids))}" for name, ids in sorted(attempt.gres.items()))
                print(f"    attempt {attempt.number} on {attempt.node} (CPUs {','.join(map(str, attempt.cpu_ids))}"
                      f"{devices}): "
                      f"dispatched {when(attempt.dispatched_at)}, started {when(attempt.started_at)}, "
                      f"ended {when(attempt.ended_at)}, ran {elapsed(attempt.started_at, attempt.ended_at)}")
                if attempt.after:
                    print(f"      promised: starts on {attempt.node} the moment attempt {attempt.after} ends there")
                outcome = [out_of_memory_text(job.memory_mib)] if attempt.out_of_memory else []
                if attempt.exit_code is not None:
                    outcome.append(f"exit code {attempt.exit_code}")
                if attempt.signal is not None:
                    outcome.append(f"killed by signal {attempt.signal}")
                if attempt.timed_out:
                    outcome.append("time limit reached")
                if attempt.pids_refused:
                    outcome.append(f"hit its process limit of {attempt.pids_max} ({attempt.pids_refused} fork(s) "
                                   "refused; pids_max in [execd] of drover.toml)")
                if attempt.terminated:
                    outcome.append("stopped on request")
                if attempt.failure:
                    outcome.append(f"failed: {attempt.failure}")
                if outcome:
                    print(f"      {'; '.join(outcome)}")
                for pe_task in attempt.pe_tasks:  # started on its hosts by the job (qrsh -inherit)
                    ended = (f"exit status {pe_task.exit_status}" + (f" ({pe_task.failure})" if pe_task.failure else "")
                             if pe_task.ended_at is not None else "running")
                    used = (f", CPU {pe_task.usage.user_cpu_s + pe_task.usage.sys_cpu_s:.1f}s"
                            if pe_task.usage is not None else "")
                    print(f"      task {pe_task.petask} on {pe_task.host}: {' '.join(pe_task.argv)[:60]}: {ended}{used}")
                cleanup = attempt.cleanup
                if cleanup and (task.state == "completing" or cleanup.get("error")):
                    line = f"      cleanup: done {', '.join(cleanup['done']) or 'nothing yet'}"
                    if cleanup.get("error"):
                        line += f"; step {cleanup['step']} failed {cleanup['tries']} time(s): {cleanup['error']}"
                    print(line)
                for given_up in (cleanup.get("given_up") or []) if cleanup else []:
                    print(f"      cleanup: step {given_up['step']} given up after {given_up['tries']} "
                          f"failed tries: {given_up['error']}")
                for event in enforced.get(job.id, []):
                    if (event.index, event.attempt) == (task.index, attempt.number):
                        print(f"      {when(event.time)} {enforced_line(event)}")
                sampled = next((a for a in samples[job.id].attempts if (a.task, a.attempt) == (
                    task.index, attempt.number)), None) if job.id in samples else None
                if sampled is not None:
                    from drover.cli.usage_render import show_lines

                    for line in show_lines(sampled, job.cpus):
                        print(f"      {line}")
                for note in attempt.notes:
                    print(f"      note: {note}")
                if attempt.usage:
                    u = attempt.usage
                    print(f"      usage: user {seconds(u.user_cpu_s)}, sys {seconds(u.sys_cpu_s)}, "
                          f"max RSS {memory(u.max_rss_kib or None)}, wall {seconds(u.wall_s)}, "
                          f"faults {u.major_faults} major / {u.minor_faults} minor, "
                          f"switches {u.voluntary_switches} voluntary / {u.involuntary_switches} involuntary")
    return 0


def _besides(command: str, what: str, read: Callable[[], dict[int, T]]) -> dict[int, T]:
    """`read()`, or nothing (said on stderr) when the controller cannot give it now."""
    from drover.core.errors import Unavailable

    try:
        return read()
    except Unavailable as error:
        print(f"drover {command}: {what} not shown: {error}", file=sys.stderr)
        return {}


def as_json(job: JobInfo, factors: PriorityInfo | None, samples: JobSamples | None,
            enforced: list[Event]) -> dict[str, Any]:
    """The job as `--json` gives it: everything the text shows. Its record, and what the text
    adds from elsewhere: the multifactor priority of a waiting job (`priority_factors`), and under
    each attempt its live samples while it runs (`live`: now, peak, averages and the recent
    samples the sparklines are drawn from) and what its node did to it over its reservation
    (`enforced`: the events)."""
    import msgspec

    out: dict[str, Any] = msgspec.to_builtins(job)
    out["priority_factors"] = msgspec.to_builtins(factors) if factors is not None else None
    live = {(a.task, a.attempt): a for a in samples.attempts} if samples is not None else {}
    for task in out["tasks"]:
        for attempt in task["attempts"]:
            key = (task["index"], attempt["number"])
            sampled = live.get(key)
            attempt["live"] = msgspec.to_builtins(sampled) if sampled is not None else None
            attempt["enforced"] = [msgspec.to_builtins(e) for e in enforced if (e.index, e.attempt) == key]
    return out


def suspended_text(queue: str, task: TaskInfo) -> str:
    """Why a task is suspended: on its own (drover suspend), by its queue instance (drover queue
    suspend), or both; each is undone on its own."""
    if not task.suspended_by or task.state not in ("running", "suspended"):
        return ""
    node = task.attempts[-1].node if task.attempts else "?"
    why = {("job",): "on its own", ("queue",): f"by its queue instance {queue}@{node}",
           ("job", "queue"): f"on its own and by its queue instance {queue}@{node}"}
    return f" (suspended {why.get(tuple(sorted(task.suspended_by)), ', '.join(task.suspended_by))})"

