"""scontrol: show job|node|partition|hostnames|hostlist, hold, uhold, release, requeue,
requeuehold, suspend, resume, update JobId=N Priority=P|Nice=N|Partition=Q, update PartitionName=Q
State=UP|DOWN|DRAIN|INACTIVE|MaxTime=…|DefaultTime=…|Nodes=…|PriorityJobFactor=…, ping, version. Options as
src/scontrol/scontrol.c reads them; the others of its commands are refused with a clear error."""

from __future__ import annotations

import os
import sys
import time
from typing import TYPE_CHECKING

from drover.compat.optiontable import Arity, Mark, Option
from drover.compat.slurm import timefmt
from drover.compat.slurm.actions import INVALID_JOB_ID, NOT_PENDING, Refusal, act, slurm_ref
from drover.compat.slurm.common import (
    CONNECT_FAILURE,
    VERSION,
    Refused,
    command_line,
    recent,
)
from drover.compat.slurm.hostlist import compress_hosts, expand
from drover.compat.slurm.jobs import slurm_jobs
from drover.compat.slurm.scontrol_show import job_record, layout, node_record, partition_record
from drover.core.errors import DroverError, NotFound, Unreachable

if TYPE_CHECKING:
    from drover.client.client import Client
    from drover.protocol.api import QueueInfo, TaskInfo

S, M, R = Mark.SUPPORTED, Mark.MEANINGLESS, Mark.REFUSED
NONE, REQ, OPT = Arity.NONE, Arity.REQUIRED, Arity.OPTIONAL
ONE_CLUSTER = "Drover is one cluster"

OPTIONS = [
    Option(("-a", "--all"), NONE, M, "no partition is hidden"),
    Option(("--autocomplete",), REQ, S, "", "OPTION"),
    Option(("-M", "--cluster", "--clusters"), REQ, M, ONE_CLUSTER, "CLUSTER"),
    Option(("-d", "--details"), NONE, S, "adds DerivedExitCode"),
    Option(("--federation",), NONE, M, ONE_CLUSTER),
    Option(("-F", "--future"), NONE, M, "Drover has no FUTURE nodes"),
    Option(("-h", "--help", "--usage"), NONE, S),
    Option(("--hide",), NONE, M, "no partition is hidden"),
    Option(("--json",), OPT, R, "the data_parser output is not produced", "[DATA_PARSER]"),
    Option(("--local",), NONE, M, ONE_CLUSTER),
    Option(("-o", "--oneliner"), NONE, S),
    Option(("-Q", "--quiet"), NONE, S, "no error messages"),
    Option(("--sibling",), NONE, M, ONE_CLUSTER),
    Option(("-u", "--uid"), REQ, M, "the API knows who you are", "UID"),
    Option(("-v", "--verbose"), NONE, M, "nothing more to say"),
    Option(("-V", "--version"), NONE, S),
    Option(("--yaml",), OPT, R, "the data_parser output is not produced", "[DATA_PARSER]"),
]
# Slurm's words for refusing an action on a job that is there and has not ended.
ACTIVE_REFUSALS = {"hold": NOT_PENDING, "uhold": NOT_PENDING, "release": NOT_PENDING,
                   "suspend": "Job is pending execution", "resume": "Job is not suspended",
                   "requeue": "Job is pending execution", "requeuehold": "Job is pending execution"}
COMMANDS = ("show", "hold", "uhold", "release", "requeue", "requeuehold", "suspend", "resume", "update", "ping",
            "version")


class Output:
    def __init__(self, one_liner: bool, details: bool, quiet: bool) -> None:
        self.one_liner, self.details, self.quiet = one_liner, details, quiet

    def error(self, message: str) -> None:
        if not self.quiet:
            print(message, file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    parsed = command_line("scontrol", argv, OPTIONS)
    if isinstance(parsed, int):
        return parsed
    found, words = parsed
    keys = {option.key for option, _ in found}
    for option, _ in found:
        if option.mark is Mark.REFUSED:
            return _fail(f"{option.names[-1]} is not supported by Drover: {option.note}")
    if "version" in keys:
        print(VERSION)
        return 0
    if "help" in keys or not words:
        print("scontrol [<OPTION>] [<COMMAND>]\n  commands: " + " ".join(COMMANDS))
        return 0 if "help" in keys else 1
    out = Output("oneliner" in keys, "details" in keys, "quiet" in keys)
    try:
        return run(words, out)
    except Refused as error:
        out.error(str(error))
        return 1
    except Unreachable:  # slurm_perror after the load or update that failed
        out.error(f"{'slurm_load_jobs error' if words[0].lower() == 'show' else 'scontrol: error'}: {CONNECT_FAILURE}")
        return 1
    except DroverError as error:
        out.error(f"scontrol: error: {error}")
        return 1


def _fail(message: str) -> int:
    print(f"scontrol: error: {message}", file=sys.stderr)
    return 1


def run(words: list[str], out: Output) -> int:
    command, rest = words[0].lower(), words[1:]
    if command == "version":
        print(VERSION)
        return 0
    if command == "show":
        return show(rest, out)
    if command in ("hold", "uhold", "release", "requeue", "requeuehold", "suspend", "resume"):
        return job_action(command, rest, out)
    if command == "update":
        return update(rest, out)
    if command == "ping":
        from drover.client.client import Client

        with Client() as client:
            client.ping()
        print(f"Slurmctld(primary) at {os.uname().nodename} is UP")
        return 0
    known = ("abort", "cancel_reboot", "completing", "create", "delete", "errnumstr", "fsdump", "getaddrs",
             "listjobs", "listpids", "liststeps", "notify", "pidinfo", "power", "reboot", "reconfigure",
             "schedloglevel", "setdebug", "setdebugflags", "shutdown", "takeover", "top", "token",
             "wait_job", "write")
    if command in known:
        raise Refused(f"scontrol: error: scontrol {command} is not supported by Drover")
    raise Refused(f"invalid keyword: {words[0]}")


def show(words: list[str], out: Output) -> int:
    if not words:
        raise Refused("scontrol: error: show what? (job, node, partition, hostnames, hostlist)")
    entity, names = words[0].lower(), words[1:]
    if entity in ("hostnames", "hostname"):
        text = names[0] if names else os.environ.get("SLURM_JOB_NODELIST") or os.environ.get("SLURM_NODELIST")
        if not text:
            raise Refused("scontrol: error: host list is empty")
        print("\n".join(expand(text)))
        return 0
    if entity in ("hostlist", "hostlistsorted"):
        if not names:
            raise Refused("scontrol: error: host list is empty")
        hosts = expand(",".join(names))
        print(compress_hosts(sorted(hosts) if entity == "hostlistsorted" else hosts))
        return 0
    if entity in ("job", "jobs", "jobid"):
        return show_jobs(names[0] if names else None, out)
    if entity in ("node", "nodes"):
        return show_nodes(names[0] if names else None, out)
    if entity in ("partition", "partitions", "part"):
        return show_partitions(names[0] if names else None, out)
    if entity in ("config", "conf"):
        return show_config()
    if entity in ("step", "steps"):
        raise Refused("scontrol: error: job steps are not recorded by Drover")
    raise Refused(f"scontrol: error: show {entity} is not supported by Drover "
                  "(supported: job, node, partition, hostnames, hostlist, hostlistsorted)")


def show_config() -> int:
    """The settings tools read from `scontrol show config` (snakemake reads MinJobAge), in its
    `Key = Value` layout; only what holds for Drover."""
    from drover.client.client import Client

    with Client() as client:
        ping = client.ping()
    settings = [
        ("ClusterName", "drover"), ("MinJobAge", f"{ping.min_job_age_s} sec"), ("PriorityType", "priority/basic"),
        ("SchedulerType", "sched/builtin"), ("SelectType", "select/cons_tres"),
        ("SlurmctldHost[0]", os.uname().nodename), ("SLURM_VERSION", VERSION.split()[-1]),
        ("DroverVersion", ping.version),
    ]
    print(f"Configuration data as of {timefmt.date(time.time())}")
    for key, value in sorted(settings, key=lambda item: item[0].lower()):
        print(f"{key:<23} = {value}")
    return 0


def show_jobs(name: str | None, out: Output) -> int:
    from drover.client.client import Client
    from drover.compat.slurm.common import load_jobs

    now = time.time()
    index: int | None = None
    with Client() as client:
        if name is None:
            infos = recent(load_jobs(client, None, include_ended=True), now, client.ping().min_job_age_s)
        else:
            job_text, _, index_text = name.partition("_")
            if not (job_text.isascii() and job_text.isdigit()) or (index_text and not (index_text.isascii() and index_text.isdigit())):
                raise Refused(f"scontrol: error: Invalid job id specified: {name}")
            index = int(index_text) if index_text else None
            try:
                infos = [client.job(int(job_text))]
            except NotFound:
                infos = []
            if infos and infos[0].ended_at is not None:
                infos = recent(infos, now, client.ping().min_job_age_s)
            if not infos:
                raise Refused(f"slurm_load_jobs error: {INVALID_JOB_ID}")
    # a task of a pending group is shown on its own when asked for by its index
    lines = [job for info in infos for job in slurm_jobs(info, now, split_pending=index is not None)]
    if index is not None:
        lines = [job for job in lines if job.index == index]
        if not lines:
            raise Refused(f"slurm_load_jobs error: {INVALID_JOB_ID}")
    if not lines:
        print("No jobs in the system")
        return 0
    sys.stdout.write("".join(layout(job_record(job, out.details), out.one_liner) for job in lines))
    return 0


def show_nodes(name: str | None, out: Output) -> int:
    from drover.client.client import Client

    with Client() as client:
        nodes = client.nodes()
        queues = _queues(client)
        boot = client.ping().started_at
    if name is not None:
        wanted = set(expand(name))
        nodes = [node for node in nodes if node.name in wanted]
        if not nodes:
            raise Refused(f"Node {name} not found")
    sys.stdout.write("".join(layout(node_record(node, [q.name for q in queues if node.name in q.node_names], boot),
                                    out.one_liner) for node in nodes))
    return 0


def show_partitions(name: str | None, out: Output) -> int:
    from drover.client.client import Client

    with Client() as client:
        nodes = client.nodes()
        queues = _queues(client)
    if name is not None:
        queues = [queue for queue in queues if queue.name == name]
        if not queues:
            raise Refused(f"Partition {name} not found")
    sys.stdout.write("".join(layout(partition_record(queue, nodes), out.one_liner) for queue in queues))
    return 0


def _queues(client: Client) -> list[QueueInfo]:
    """Drover's queues, `default` first."""
    return sorted(client.queues(), key=lambda queue: (queue.name != "default", queue.name))


def job_action(command: str, words: list[str], out: Output) -> int:
    if not words:
        raise Refused(f"scontrol: error: {command}: a job id is needed")
    from drover.client.client import Client

    refs: list[str] = []
    shown: dict[str, str] = {}
    for word in (w for text in words for w in text.split(",") if w):
        if not _is_job_id(word):
            raise Refused(f"scontrol: error: Invalid job id: {word}")
        refs.append(slurm_ref(word))
        shown[slurm_ref(word)] = word
    with Client() as client:
        action = {
            "hold": client.hold, "uhold": client.hold, "release": client.release, "suspend": client.suspend,
            "resume": client.resume, "requeue": client.requeue, "requeuehold": client.requeue,
        }[command]
        # counted before the requeue: a job that stops at once may start again before we look
        before = {ref: _attempt_count(client, ref) for ref in refs} if command == "requeuehold" else {}
        refusals = act(client, action, refs, shown, ACTIVE_REFUSALS.get(command))
        if command == "requeuehold":
            done = [ref for ref in refs if ref not in {r.ref for r in refusals}]
            refusals += hold_when_stopped(client, done, shown, before)
    for refusal in refusals:
        out.error(f"{refusal.reason} for job {refusal.slurm_id}")
    return 1 if refusals else 0


def _is_job_id(word: str) -> bool:
    """JOB or JOB_INDEX, in ASCII digits."""
    job_text, _, index_text = word.partition("_")
    return (job_text.isascii() and job_text.isdigit()
            and (not index_text or (index_text.isascii() and index_text.isdigit())))


def hold_when_stopped(client: Client, refs: list[str], shown: dict[str, str], attempts: dict[str, int],
                      patience_s: float = 120.0) -> list[Refusal]:
    """Hold jobs just requeued, as `scontrol requeuehold` leaves them: Drover requeues a job by
    stopping its running attempt (SIGTERM, a grace period, SIGKILL), and the job can be held
    once it waits again. A job that started anew before the hold landed is refused in Slurm's
    words. `attempts`: each job's number of attempts before it was requeued."""
    deadline = time.monotonic() + patience_s
    waiting = list(refs)
    refusals: list[Refusal] = []
    while waiting:
        results = {result.ref: result for result in client.hold(waiting)}
        still = []
        for ref in waiting:
            if results[ref].ok:
                continue
            restarted = _attempt_count(client, ref) > attempts[ref] and not _waits(client, ref)
            if restarted or time.monotonic() > deadline:
                refusals.append(Refusal(ref, shown.get(ref, ref), NOT_PENDING, False))
            else:
                still.append(ref)
        waiting = still
        if waiting:
            time.sleep(0.05)
    return refusals


def _tasks(client: Client, ref: str) -> list[TaskInfo]:
    job_text, _, index_text = ref.partition(".")
    tasks = client.job(int(job_text)).tasks
    return [t for t in tasks if not index_text or t.index == int(index_text)]


def _attempt_count(client: Client, ref: str) -> int:
    return sum(len(task.attempts) for task in _tasks(client, ref))


def _waits(client: Client, ref: str) -> bool:
    return any(task.state in ("pending", "held") for task in _tasks(client, ref))


# scontrol update PartitionName=Q: its keys → `drover queue set`'s settings.
PARTITION_SETTINGS = {"maxtime": "max_time", "defaulttime": "default_time", "nodes": "nodes",
                      "priorityjobfactor": "priority"}
# State=… → the queue actions that reach it (stop on a draining queue leaves it inactive).
PARTITION_STATES = {"up": ["start"], "down": ["stop"], "drain": ["drain"], "inactive": ["drain", "stop"]}


def update(words: list[str], out: Output) -> int:
    settings: dict[str, str] = {}
    for word in words:
        key, equals, value = word.partition("=")
        if not equals:
            raise Refused(f"scontrol: error: Invalid input: {word}\nRequest aborted")
        settings[key.lower()] = value
    if "partitionname" in settings:
        return update_partition(settings)
    target = settings.pop("jobid", None) or settings.pop("job", None)
    if target is None:
        raise Refused("scontrol: error: update: only jobs (JobId=...) and partitions (PartitionName=...) can be "
                      "updated on Drover")
    unsupported = sorted(set(settings) - {"priority", "nice", "partition"})
    if unsupported:
        raise Refused(f"scontrol: error: update {unsupported[0]} is not supported by Drover "
                      "(supported: Priority, Nice, Partition)")
    if "priority" in settings and "nice" in settings:
        raise Refused("scontrol: error: update: Priority and Nice together")
    priority: int | None = None
    try:
        if "priority" in settings or "nice" in settings:
            priority = int(settings["priority"]) if "priority" in settings else -int(settings["nice"])
    except ValueError:
        raise Refused("scontrol: error: Invalid priority value") from None
    queue = settings.get("partition")
    if queue is not None and (not queue or "," in queue):
        raise Refused("scontrol: error: Invalid partition name specified" if not queue else
                      "scontrol: error: update Partition: a Drover job waits in one partition")
    if not _is_job_id(target):  # update_job.c: not a job id → ESLURM_INVALID_JOB_ID, nothing sent
        out.error(f"{INVALID_JOB_ID} for job {target}")
        return 1
    from drover.client.client import Client

    ref = slurm_ref(target)
    with Client() as client:
        refusals = act(client, lambda refs: client.alter(refs, priority=priority, queue=queue), [ref], {ref: target})
    for refusal in refusals:
        out.error(f"{refusal.reason} for job {refusal.slurm_id}")
    return 1 if refusals else 0


def partition_changes(settings: dict[str, str]) -> tuple[str, dict[str, str], list[str], str]:
    """`scontrol update PartitionName=Q KEY=VALUE...` as Drover's calls: the queue, the settings
    for set_queue, the queue actions for State=, and the reason. Keys are lower case. Pure."""
    rest = dict(settings)
    name = rest.pop("partitionname")
    if not name:
        raise Refused("scontrol: error: Invalid partition name specified")
    state = rest.pop("state", None)
    reason = rest.pop("reason", "")
    unsupported = sorted(set(rest) - set(PARTITION_SETTINGS))
    if unsupported:
        raise Refused(f"scontrol: error: update {unsupported[0]} of a partition is not supported by Drover "
                      "(supported: State, Reason, MaxTime, DefaultTime, Nodes, PriorityJobFactor)")
    actions: list[str] = []
    if state is not None:
        if state.lower() not in PARTITION_STATES:
            raise Refused(f"scontrol: error: Invalid input: State={state}\n"
                          "Acceptable State values are UP, DOWN, DRAIN and INACTIVE")
        actions = PARTITION_STATES[state.lower()]
    elif reason:
        raise Refused("scontrol: error: update: Reason goes with State=DOWN, DRAIN or INACTIVE")
    changes = {}
    for key, value in rest.items():
        if key == "nodes":
            value = "*" if value.upper() in ("ALL", "") else ",".join(expand(value))  # `*`: every node
        elif key in ("maxtime", "defaulttime") and value.upper() in ("INFINITE", "UNLIMITED"):
            value = "UNLIMITED"
        elif key == "priorityjobfactor" and not (value.isascii() and value.isdigit()):
            raise Refused(f"scontrol: error: Invalid input: PriorityJobFactor={value}")
        changes[PARTITION_SETTINGS[key]] = value
    if not changes and not actions:
        raise Refused("scontrol: error: update PartitionName: nothing to change")
    return name, changes, actions, reason


def update_partition(settings: dict[str, str]) -> int:
    name, changes, actions, reason = partition_changes(settings)
    from drover.client.client import Client

    with Client() as client:
        if changes:
            client.set_queue(name, changes)
        for action in actions:
            client.queue_action(name, action, reason if action != "start" else "")
    return 0
