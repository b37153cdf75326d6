"""The controller's metrics (GET /metrics), for Prometheus and what reads its formats.

Every value comes from what the controller holds in memory: the working set (jobs, tasks, the
reasons the last pass gave, nodes and what their attempts hold, the nodes' heartbeats) and the
tallies it keeps as it works (controller/tallies.py). A scrape reads no row of the store; the
store's size is its file's, where it is a file (SQLite).

`METRICS` defines each metric once: its name, type, labels and meaning. The exposition is
built from it, and so is the table of docs/metrics.md (scripts/metrics_docs.py). The formats
and their negotiation are prometheus_client's: OpenMetrics 1.0.0 for a client that asks for it
(Prometheus does), else the Prometheus text format 0.0.4. The library is imported on the first
scrape only, never by the client's commands.
"""

from __future__ import annotations

import os
import resource
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from drover.controller.handlers import resource_requests
from drover.controller.reads import promised_view
from drover.core.job_state import JobState
from drover.core.node_state import NodeState
from drover.core.views import job_state
from drover.scheduler.reasons import PendingReason
from drover.store.sqlite import SqliteStore

if TYPE_CHECKING:
    from drover.controller.service import ControllerService
    from drover.controller.tallies import Histogram

MIB = 1024 * 1024
GAUGE, COUNTER, HISTOGRAM = "gauge", "counter", "histogram"


@dataclass(frozen=True, slots=True)
class MetricDef:
    name: str  # the family's name: a counter's samples add _total, a histogram's _bucket, _sum, _count
    kind: str  # gauge, counter or histogram
    labels: tuple[str, ...]
    help: str
    unit: str = ""  # seconds or bytes, where the name ends with it (OpenMetrics' UNIT)

    @property
    def sample_name(self) -> str:
        """The name a query uses: a counter's with _total."""
        return f"{self.name}_total" if self.kind == COUNTER else self.name


METRICS: tuple[MetricDef, ...] = (
    # The working set: jobs and tasks that have not ended.
    MetricDef("drover_jobs", GAUGE, ("state", "queue", "user"),
              "Jobs that have not ended, by the state `drover status` shows (the first of running, suspended, "
              "completing, dispatched, pending, held their tasks are in), queue and owner"),
    MetricDef("drover_tasks", GAUGE, ("state", "queue", "user"),
              "Tasks of the jobs that have not ended (an array's every task), by state, queue and owner "
              "(a promised task, which has not started, as pending)"),
    MetricDef("drover_jobs_pending", GAUGE, ("reason",),
              "Jobs with work waiting, by the reason the planner's last pass gave (`drover why`), or `promised` "
              "for a job whose waiting tasks are all promised"),
    # Nodes, and what their attempts hold.
    MetricDef("drover_node_state", GAUGE, ("node", "state"), "1 for the state the node is in, 0 for the others"),
    MetricDef("drover_node_cpus", GAUGE, ("node",), "CPUs the node offers"),
    MetricDef("drover_node_cpus_allocated", GAUGE, ("node",), "CPUs of the node its running attempts hold"),
    MetricDef("drover_node_memory_bytes", GAUGE, ("node",), "Memory the node offers", "bytes"),
    MetricDef("drover_node_memory_allocated_bytes", GAUGE, ("node",),
              "Memory of the node its running attempts hold", "bytes"),
    MetricDef("drover_node_devices", GAUGE, ("node", "device"),
              "Generic resources the node offers, by name (GPUs are device=\"gpu\")"),
    MetricDef("drover_node_devices_allocated", GAUGE, ("node", "device"),
              "Generic resources of the node its running attempts hold, by name"),
    MetricDef("drover_node_attempts_running", GAUGE, ("node",), "Attempts holding room on the node"),
    MetricDef("drover_node_load1", GAUGE, ("node",),
              "The node's 1-minute load average, from its last heartbeat (nodes that sent none are left out)"),
    MetricDef("drover_node_memory_available_bytes", GAUGE, ("node",),
              "Memory available for new processes on the node's host (MemAvailable), from its last heartbeat",
              "bytes"),
    # The same holdings by queue.
    MetricDef("drover_queue_attempts_running", GAUGE, ("queue",), "Attempts holding room, by their job's queue"),
    MetricDef("drover_queue_cpus_allocated", GAUGE, ("queue",), "CPUs held by the queue's running attempts"),
    MetricDef("drover_queue_memory_allocated_bytes", GAUGE, ("queue",),
              "Memory held by the queue's running attempts", "bytes"),
    MetricDef("drover_queue_devices_allocated", GAUGE, ("queue", "device"),
              "Generic resources held by the queue's running attempts, by name"),
    MetricDef("drover_licenses", GAUGE, ("license",), "Each licence's count, as [licenses] of drover.toml sets it"),
    MetricDef("drover_licenses_used", GAUGE, ("license",), "Of each licence, what the running attempts hold"),
    # The planner and the store.
    MetricDef("drover_scheduler_passes", COUNTER, (), "Planner passes run"),
    MetricDef("drover_scheduler_pass_duration_seconds", HISTOGRAM, (), "How long each planner pass took", "seconds"),
    MetricDef("drover_scheduler_backfill_starts", COUNTER, (),
              "Tasks started ahead of a job whose room is reserved (EASY backfill)"),
    MetricDef("drover_store_commits", COUNTER, (), "Transactions the store committed"),
    MetricDef("drover_store_commit_failures", COUNTER, (), "Transactions the store refused or failed"),
    MetricDef("drover_store_commit_duration_seconds", HISTOGRAM, (), "How long each committed transaction took",
              "seconds"),
    MetricDef("drover_store_size_bytes", GAUGE, (),
              "The store's file and its write-ahead log (SQLite; a PostgreSQL store is not measured here)", "bytes"),
    # Attempts and their cleanup, as the committed changes say.
    MetricDef("drover_attempts_started", COUNTER, (), "Attempts the planner started (dispatched to a node to start "
              "now; a promised one when its node starts it, or with its end if it ends first: it failed to set "
              "up, or was lost with its node, taken back or not; a promise taken back that ended before it "
              "started with nothing gone wrong, which `drover history` shows with no exit status, is counted "
              "neither started nor ended)"),
    MetricDef("drover_attempts_ended", COUNTER, ("outcome",),
              "Attempts ended, by what ended them: completed, failed, timed_out, out_of_memory, cancelled, "
              "node_failed, requeued, held, held_in_error"),
    MetricDef("drover_attempts_requeued", COUNTER, (), "Attempts whose task went back to the queue to run again"),
    MetricDef("drover_cleanup_failures", COUNTER, ("step",),
              "Failed tries of an attempt's cleanup steps, as nodes reported them, by step"),
    MetricDef("drover_cleanup_steps_failing", GAUGE, ("step",),
              "Attempts whose cleanup is stopped at a failing step now, by step"),
    # Allocation queues (`drover alloc`): allocations asked of an outer scheduler.
    MetricDef("drover_allocations", GAUGE, ("queue", "state"),
              "Allocations of each allocation queue that have not ended, queued or running in the outer scheduler"),
    MetricDef("drover_allocation_failures", COUNTER, ("queue",),
              "Allocations the outer scheduler refused, or that ended before any of their nodes joined, by queue"),
    # The API's requests that wait on the controller.
    MetricDef("drover_requests_waiting", GAUGE, ("waiting_for",),
              "API requests waiting on the controller now: for a job's end (waiting_for=\"job_end\", `drover wait`), "
              "for new events (waiting_for=\"events\", a long poll); a controller that stops answers each at once"),
    # The controller's process.
    MetricDef("drover_controller_cpu_seconds", COUNTER, (), "CPU time the controller's process used (user and "
              "system)", "seconds"),
    MetricDef("drover_controller_resident_memory_bytes", GAUGE, (), "The controller's resident memory", "bytes"),
    MetricDef("drover_controller_start_time_seconds", GAUGE, (), "When the controller started, Unix time",
              "seconds"),
)
BY_NAME = {metric.name: metric for metric in METRICS}

Labels = tuple[str, ...]
Values = dict[Labels, float]


def values(service: ControllerService) -> dict[str, Values | Histogram]:
    """Every metric's samples now, by name: each label set's value, or a histogram."""
    state, tallies = service.state, service.shell.tallies
    found: dict[str, Values | Histogram] = {}
    found.update(_jobs(service))
    found.update(_nodes(service))
    found.update(_held(service))
    failing: Counter[Labels] = Counter()
    for attempt in state.attempts.values():
        cleanup = attempt.cleanup
        if cleanup is not None and cleanup.get("error"):
            failing[str(cleanup.get("step")),] += 1
    usage = os.times()
    found.update({
        "drover_scheduler_passes": {(): tallies.passes},
        "drover_scheduler_pass_duration_seconds": tallies.pass_seconds,
        "drover_scheduler_backfill_starts": {(): tallies.backfill_starts},
        "drover_store_commits": {(): tallies.commits},
        "drover_store_commit_failures": {(): tallies.commit_failures},
        "drover_store_commit_duration_seconds": tallies.commit_seconds,
        "drover_store_size_bytes": _store_size(service),
        "drover_attempts_started": {(): tallies.attempts_started},
        "drover_attempts_ended": {(outcome,): n for outcome, n in sorted(tallies.attempts_ended.items())},
        "drover_attempts_requeued": {(): tallies.requeued},
        "drover_cleanup_failures": {(step,): n for step, n in sorted(tallies.cleanup_failures.items())},
        "drover_cleanup_steps_failing": dict(failing),
        "drover_requests_waiting": {(kind,): n for kind, n in service.shell.requests_waiting().items()},
        "drover_controller_cpu_seconds": {(): usage.user + usage.system},
        "drover_controller_resident_memory_bytes": {(): _resident_bytes()},
        "drover_controller_start_time_seconds": {(): service.started_at},
    })
    found.update(_allocations(service))
    return found


def _allocations(service: ControllerService) -> dict[str, Values | Histogram]:
    allocator = service.allocator
    if allocator is None:
        return {"drover_allocations": {}, "drover_allocation_failures": {}}
    live: Counter[Labels] = Counter((str(item.queue_id), item.state.value) for item in allocator.allocations.values())
    return {"drover_allocations": dict(live),
            "drover_allocation_failures": {(str(queue),): n for queue, n in sorted(allocator.failure_counts.items())}}


_STATE_NAMES = {state: state.value for state in JobState}  # a dict's lookup: far cheaper than an enum's .value


def _jobs(service: ControllerService) -> dict[str, Values | Histogram]:
    """The working set's jobs and tasks. Most jobs of a long queue are single jobs that never
    started, with no task record: counted as their one task's state, without building their
    task counts (10,000 jobs: a few milliseconds a scrape rather than tens)."""
    state, in_doubt = service.state, service.in_doubt
    jobs: Counter[Labels] = Counter()
    tasks: Counter[Labels] = Counter()
    names = _STATE_NAMES
    for job in state.jobs.values():
        if in_doubt and job.id in in_doubt:  # its last change may not be committed: left out, as reads leave it out
            continue
        queue, owner = job.spec.queue, job.owner
        if not job.tasks and not job.is_array:
            key = (names[job.fresh_state], queue, owner)
            jobs[key] += 1
            tasks[key] += 1
            continue
        # A promised task is counted as it is shown: waiting (promised_view.py).
        counts = promised_view.shown_task_counts(state, job)
        jobs[job_state(counts), queue, owner] += 1
        for task_state, count in counts.items():
            tasks[task_state, queue, owner] += count
    pending: Counter[PendingReason] = Counter()
    live = state.jobs
    for job_id, waiting in state.pending_reasons.items():
        if job_id in live and not (in_doubt and job_id in in_doubt):
            pending[waiting.reason] += 1
    for job_id in promised_view.promised_only(state):  # waiting for no reason of the planner's
        if not (in_doubt and job_id in in_doubt):
            pending[PendingReason.PROMISED] += 1
    return {"drover_jobs": dict(jobs), "drover_tasks": dict(tasks),
            "drover_jobs_pending": {(reason.value,): count for reason, count in pending.items()}}


def _nodes(service: ControllerService) -> dict[str, Values | Histogram]:
    names = ("drover_node_state", "drover_node_cpus", "drover_node_cpus_allocated", "drover_node_memory_bytes",
             "drover_node_memory_allocated_bytes", "drover_node_devices", "drover_node_devices_allocated",
             "drover_node_attempts_running", "drover_node_load1", "drover_node_memory_available_bytes")
    found: dict[str, Values] = {name: {} for name in names}
    for node in service.state.nodes.values():
        key = (node.name,)
        for state in NodeState:
            found["drover_node_state"][node.name, state.value] = 1 if node.state is state else 0
        found["drover_node_cpus"][key] = node.cpus
        found["drover_node_cpus_allocated"][key] = len(node.used_cpu_ids)
        found["drover_node_memory_bytes"][key] = node.memory_mib * MIB
        found["drover_node_memory_allocated_bytes"][key] = node.used_memory_mib * MIB
        offered = Counter(device.name for device in node.devices)
        held = Counter(device.name for device in node.used_devices)
        for device, count in offered.items():
            found["drover_node_devices"][node.name, device] = count
            found["drover_node_devices_allocated"][node.name, device] = held.get(device, 0)
        found["drover_node_attempts_running"][key] = node.running
        if node.load is not None:
            found["drover_node_load1"][key] = node.load
        if node.memory_free_mib is not None:
            found["drover_node_memory_available_bytes"][key] = node.memory_free_mib * MIB
    return dict(found)


def _held(service: ControllerService) -> dict[str, Values | Histogram]:
    """What the running attempts hold, by their job's queue, and the licences they hold."""
    running: Counter[Labels] = Counter()
    cpus: Counter[Labels] = Counter()
    memory: Counter[Labels] = Counter()
    devices: Counter[Labels] = Counter()
    licenses = service.settings.licenses
    used: Counter[str] = Counter({name: 0 for name in licenses})
    for job, attempt in service.state.held():
        queue = job.spec.queue
        running[queue,] += 1
        for _, cpu_ids, memory_mib in attempt.rooms(job.resources.memory_mib):
            cpus[queue,] += len(cpu_ids)
            memory[queue,] += memory_mib * MIB
        for device, indices in attempt.gres.items():
            devices[queue, device] += len(indices)
        if licenses:
            for name, count in resource_requests.of_job(job).licenses:
                used[name] += count
    return {"drover_queue_attempts_running": dict(running), "drover_queue_cpus_allocated": dict(cpus),
            "drover_queue_memory_allocated_bytes": dict(memory), "drover_queue_devices_allocated": dict(devices),
            "drover_licenses": {(name,): count for name, count in sorted(licenses.items())},
            "drover_licenses_used": {(name,): count for name, count in sorted(used.items())}}


def _store_size(service: ControllerService) -> Values:
    store = service.store
    if not isinstance(store, SqliteStore):
        return {}
    size = 0
    for path in (store.path, f"{store.path}-wal"):
        try:
            size += os.stat(path).st_size
        except OSError:
            pass
    return {(): size}


def _resident_bytes() -> int:
    """The process's resident set now, from /proc (getrusage gives only its peak)."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def families(found: dict[str, Values | Histogram]) -> list[Any]:
    """The samples as prometheus_client's metric families, in the order METRICS defines them."""
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily

    from drover.controller.tallies import Histogram

    made: list[Any] = []
    for metric in METRICS:
        samples = found.get(metric.name, {})
        if metric.kind == HISTOGRAM:
            assert isinstance(samples, Histogram)
            family: Any = HistogramMetricFamily(metric.name, metric.help, labels=metric.labels, unit=metric.unit)
            family.add_metric([], [(_bound(bound), count) for bound, count in samples.cumulative()], samples.sum)
        else:
            assert not isinstance(samples, Histogram)
            kind = CounterMetricFamily if metric.kind == COUNTER else GaugeMetricFamily
            family = kind(metric.name, metric.help, labels=metric.labels, unit=metric.unit)
            for labels, value in sorted(samples.items()):
                family.add_metric(list(labels), value)
        made.append(family)
    return made


def _bound(bound: float) -> str:
    return "+Inf" if bound == float("inf") else repr(bound)


class _Families:
    """What prometheus_client's writers read: something to collect from."""

    def __init__(self, made: Iterable[Any]) -> None:
        self.made = list(made)

    def collect(self) -> Iterator[Any]:
        return iter(self.made)


def exposition(service: ControllerService, accept: str) -> tuple[bytes, str]:
    """The metrics in the format the Accept header asks for, and its content type."""
    from prometheus_client.exposition import choose_encoder

    encoder, content_type = choose_encoder(accept)
    return encoder(_Families(families(values(service)))), content_type
