"""qmod on queue instances: -sq and -usq (and -s, -us given queues) suspend and unsuspend them, as
`drover queue suspend|unsuspend NAME@NODE`; -rq (and -r given queues) reschedules every job
running in them, as `drover requeue` of each. A word names a queue instance (`all.q@node`) or a
queue (`all.q`: each of its instances); either part may be a pattern (`'*'`, `all.q@node*`).
The answers are the qmaster's (MSG_QINSTANCE_CHANGEDST_SSSS, MSG_QINSTANCE_HASSTATE_SS)."""

from __future__ import annotations

import sys
from fnmatch import fnmatchcase

from drover.compat.gridengine.common import failed, host_name, user_name
from drover.compat.gridengine.queues import drover_name, ge_name
from drover.core.errors import DroverError, NotFound

TYPE_CHECKING = False
if TYPE_CHECKING:
    from drover.client.client import Client
    from drover.protocol.api import JobInfo, QueueInfo

# The task states of a job that holds its queue instance (what -rq reschedules).
_IN_INSTANCE = ("dispatched", "running", "suspended")


def instances(queues: list[QueueInfo], word: str) -> list[tuple[QueueInfo, str]]:
    """The queue instances (queue, node) a word names, in name order."""
    queue_pattern, _, node_pattern = word.partition("@")
    return [(queue, node) for queue in sorted(queues, key=lambda q: ge_name(q.name))
            if fnmatchcase(ge_name(queue.name), queue_pattern)
            for node in queue.node_names if not node_pattern or fnmatchcase(node, node_pattern)]


def _named(queues: list[QueueInfo], words: list[str]) -> tuple[list[tuple[QueueInfo, str]], int]:
    """The instances the words name, in their order, and 1 if a word named none (said so)."""
    found, status = [], 0
    for word in words:
        named = instances(queues, word)
        if not named:
            print(f'invalid queue "{word}"', file=sys.stderr)
            status = 1
        found += named
    return found, status


def suspension(command: str, action: str, words: list[str]) -> int:
    """qmod -sq (`action` "suspend") or -usq ("unsuspend") on the instances the words name."""
    if not words:
        print("ERROR! no option argument", file=sys.stderr)
        return 1
    from drover.client.client import Client

    me, host = user_name(), host_name()
    wanted = action == "suspend"
    try:
        with Client() as client:
            found, status = _named(client.queues(), words)
            for queue, node in found:
                name = f"{ge_name(queue.name)}@{node}"
                if (node in queue.suspended) == wanted:
                    print(f'Queue instance "{name}" is already in the specified state: {action}ed')
                    continue
                try:
                    (client.suspend_queue if wanted else client.unsuspend_queue)(queue.name, node)
                except DroverError as error:
                    print(f"{command}: {name}: {error}", file=sys.stderr)
                    status = 1
                    continue
                print(f'{me}@{host} changed state of "{name}" ({action}ed)')
    except DroverError as error:
        return failed(command, error)
    return status


def reschedule(command: str, words: list[str]) -> int:
    """qmod -rq: every job running in the instances the words name is rescheduled (drover
    requeue): stopped, and run again as a new attempt, where the scheduler finds room."""
    if not words:
        print("ERROR! no option argument", file=sys.stderr)
        return 1
    from drover.client.client import Client

    try:
        with Client() as client:
            found, status = _named(client.queues(), words)
            jobs = _holding(client) if found else []
            for queue, node in found:
                status |= _reschedule_instance(command, client, jobs, queue.name, node)
    except DroverError as error:
        return failed(command, error)
    return status


def _holding(client: Client) -> list[JobInfo]:
    """The jobs that have tasks in queue instances, with their tasks and attempts (a listing has
    neither)."""
    jobs = []
    for listed in client.jobs():
        if any(listed.task_counts.get(state) for state in _IN_INSTANCE):
            try:
                jobs.append(client.job(listed.id))
            except NotFound:
                continue  # ended and gone between the two calls
    return jobs


def _reschedule_instance(command: str, client: Client, jobs: list[JobInfo], queue: str, node: str) -> int:
    status = 0
    for ref, label in running_in(jobs, queue, node):
        result = client.requeue([ref])[0]
        if result.ok:
            print(f"rescheduling {label}")
        else:
            print(f"{command}: {label}: {result.message}", file=sys.stderr)
            status = 1
    return status


def running_in(jobs: list[JobInfo], queue: str, node: str) -> list[tuple[str, str]]:
    """(ref, label) of each task of `queue` whose attempt holds `node`: `12` and `job 12`, or
    `12.3` and `job-array task 12.3`."""
    found = []
    for job in jobs:
        if drover_name(job.queue) != queue:
            continue
        for task in job.tasks:
            if task.state in _IN_INSTANCE and task.attempts and task.attempts[-1].node == node:
                found.append((f"{job.id}.{task.index}", f"job-array task {job.id}.{task.index}") if job.array
                             else (str(job.id), f"job {job.id}"))
    return found
