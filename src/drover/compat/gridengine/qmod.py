"""qmod: suspend, resume, clear the error state of, and reschedule jobs; disable (-d) and enable
(-e) queues, as `drover queue stop` and `drover queue start` (a disabled queue keeps its jobs and
starts none); clear the error state of queue instances (`-c all.q@node`, `-cq all.q`), as `drover
node resume NODE --queue QUEUE`; suspend and unsuspend queue instances (-sq, -usq, and -s, -us
given queues) and reschedule their jobs (-rq, and -r given queues): qmod_queues.py. A queue is
enabled or disabled on all its nodes at once, so a queue instance is refused by -d and -e."""

from __future__ import annotations

import sys
from collections.abc import Callable

from drover.compat.gridengine.common import failed, host_name
from drover.compat.gridengine.jobaction import parse_or_usage, run
from drover.compat.gridengine.jobrefs import Target
from drover.compat.optiontable import Arity, Mark, Option

TYPE_CHECKING = False
if TYPE_CHECKING:
    from drover.client.client import Client
    from drover.protocol.api import ActionResult

N = Arity.NONE
OK, MEANINGLESS, REFUSED = Mark.SUPPORTED, Mark.MEANINGLESS, Mark.REFUSED
_INSTANCE = ("a Drover queue has one state on all its nodes: give the queue (all.q), suspend the instance "
             "(-sq), or take the node out with drover node drain")
OPTIONS = [
    Option(("-c",), N, OK, "on jobs, as `-cj`; on queues and queue instances (`all.q@node`), as `-cq`"),
    Option(("-cj",), N, OK, "clears the error state (Eqw after exit 100): the job waits again"),
    Option(("-cq",), N, OK, "clears the error state of queue instances (`all.q@node`, or `all.q`: on every "
           "node), set by a failing prolog, epilog or PE method (drover node resume NODE --queue QUEUE)"),
    Option(("-d",), N, OK, "disables queues (drover queue stop): they keep their jobs and start none; "
           "`queue@host` ✗"),
    Option(("-e",), N, OK, "enables queues again (drover queue start)"),
    Option(("-f",), N, MEANINGLESS, "Drover acts the same with or without it"),
    Option(("-help",), N, OK, "prints the usage"),
    Option(("-r",), N, OK, "on jobs, as `-rj`; on queues and queue instances, as `-rq`"),
    Option(("-rj",), N, OK, "reschedules running jobs: stopped, then run again as a new attempt"),
    Option(("-rq",), N, OK, "reschedules every job running in queue instances (`all.q@node`, or `all.q`: on "
           "every node), as drover requeue of each"),
    Option(("-s",), N, OK, "on jobs, as `-sj`; on queues and queue instances, as `-sq`"),
    Option(("-sj",), N, OK, "suspends running jobs (all their processes are frozen)"),
    Option(("-sq",), N, OK, "suspends queue instances (`all.q@node`, or `all.q`: on every node; drover queue "
           "suspend): their jobs are frozen (those checkpointing on `x` migrate) and none of theirs starts there"),
    Option(("-us",), N, OK, "on jobs, as `-usj`; on queues and queue instances, as `-usq`"),
    Option(("-usj",), N, OK, "resumes suspended jobs (a job whose queue instance is suspended stays so)"),
    Option(("-usq",), N, OK, "unsuspends queue instances (drover queue unsuspend): their jobs go on, but for "
           "those also suspended on their own"),
]
ACTIONS = {"c": "clear", "cj": "clear", "cq": "clear_queue", "r": "requeue", "rj": "requeue", "s": "suspend", "sj": "suspend",
           "us": "resume", "usj": "resume", "sq": "suspend_queue", "usq": "unsuspend_queue", "rq": "reschedule_queue"}
# -s, -us and -r take jobs or queues; the queue form each stands for then.
_QUEUE_FORMS = {"s": "suspend_queue", "us": "unsuspend_queue", "r": "reschedule_queue"}


# Clearing Grid Engine's error state is releasing Drover's hold after exit 100.
CALLS: dict[str, Callable[[Client, list[str]], list[ActionResult]]] = {
    "suspend": lambda client, refs: client.suspend(refs), "resume": lambda client, refs: client.resume(refs),
    "clear": lambda client, refs: client.release(refs), "requeue": lambda client, refs: client.requeue(refs),
}


def _report(action: str) -> Callable[[Target, str], list[str]]:
    def report(target: Target, user: str) -> list[str]:
        labels = ([f"job {target.job.id}"] if target.indices is None else
                  [f"job-array task {target.job.id}.{index}" for index in target.indices])
        words = {"suspend": f"{user} - suspended", "resume": f"{user} - unsuspended",
                 "clear": f"{user}@{host_name()} cleared error state of", "requeue": "rescheduling"}[action]
        return [f"{words} {label}" for label in labels]
    return report


def main(argv: list[str] | None = None) -> int:
    parsed = parse_or_usage("qmod", list(sys.argv[1:] if argv is None else argv), OPTIONS)
    if isinstance(parsed, int):
        return parsed
    refused = [g for g in parsed.given if g.option.mark is REFUSED]
    if refused:
        print(f"qmod: {refused[0].option.names[0]}: {refused[0].option.note}", file=sys.stderr)
        return 1
    actions = {ACTIONS[g.key] for g in parsed.given if g.key in ACTIONS}
    states = {g.key for g in parsed.given if g.key in ("d", "e")}
    if states and (actions or len(states) > 1):
        print("qmod: give one of -d and -e, with queue names", file=sys.stderr)
        return 1
    if states:
        return queue_state("qmod", "stop" if states == {"d"} else "start", parsed.operands)
    if len(actions) != 1:
        print("qmod: give one of -sj, -usj, -cj, -rj (or -s, -us, -c, -r) and job ids, one of -sq, -usq, -cq, -rq "
              "and queues, or -d or -e and queue names", file=sys.stderr)
        return 1
    (action,) = actions
    if action == "clear_queue" or (action == "clear" and any(not word.split(".")[0].isdigit()
                                                             for word in parsed.operands)):
        return clear_queue_errors("qmod", parsed.operands)
    queues = [word for word in parsed.operands if not word.split(".")[0].isdigit()]
    jobs = [word for word in parsed.operands if word not in queues]
    keys = {g.key for g in parsed.given if g.key in ACTIONS}
    if queues and action in CALLS:
        if jobs or not keys <= set(_QUEUE_FORMS):
            print(f"qmod: {queues[0]}: give job ids to -sj, -usj and -rj, queues to -sq, -usq and -rq; -s, -us and "
                  "-r take either, not both at once", file=sys.stderr)
            return 1
        action = _QUEUE_FORMS[next(iter(keys))]
    if action in ("suspend_queue", "unsuspend_queue", "reschedule_queue"):
        if jobs:
            print(f"qmod: {jobs[0]}: -sq, -usq and -rq take queues (all.q, all.q@node); give job ids to -sj, "
                  "-usj and -rj", file=sys.stderr)
            return 1
        from drover.compat.gridengine import qmod_queues

        if action == "reschedule_queue":
            return qmod_queues.reschedule("qmod", parsed.operands)
        return qmod_queues.suspension("qmod", action.removesuffix("_queue"), parsed.operands)
    return run("qmod", parsed, CALLS[action], _report(action))


def clear_queue_errors(command: str, words: list[str]) -> int:
    """qmod -cq (or -c with `queue@node`): clear the error state of queue instances, each named
    `queue@node`, or every instance in error of a queue named alone."""
    from drover.compat.gridengine.common import user_name
    from drover.compat.gridengine.queues import drover_name
    from drover.core.errors import DroverError

    if not words:
        print("ERROR! no option argument", file=sys.stderr)
        return 1
    jobs = [word for word in words if word.split(".")[0].isdigit()]
    if jobs:
        print(f"{command}: {jobs[0]}: give queue instances (all.q@node) to -cq, or job ids to -cj", file=sys.stderr)
        return 1
    from drover.client.client import Client

    status = 0
    me, host = user_name(), host_name()
    try:
        with Client() as client:
            errors = {q.name: q.errors for q in client.queues()}
            nodes = {n.name for n in client.nodes()}
            for word in words:
                queue_word, _, node = word.partition("@")
                queue = drover_name(queue_word)
                if queue not in errors or (node and node not in nodes):
                    print(f'invalid queue "{word}"', file=sys.stderr)
                    status = 1
                    continue
                for name in [node] if node else sorted(errors[queue]):
                    if name not in errors[queue]:
                        print(f'Queue instance "{queue_word}@{name}" is already in the specified state: no error')
                        continue
                    client.clear_queue_error(name, queue)
                    print(f'{me}@{host} cleared error state of queue "{queue_word}@{name}"')
    except DroverError as error:
        return failed(command, error)
    return status


def queue_state(command: str, action: str, words: list[str]) -> int:
    """qmod -d (action `stop`) or -e (`start`) on cluster queues named or matched by patterns."""
    from fnmatch import fnmatchcase

    from drover.compat.gridengine.common import user_name
    from drover.compat.gridengine.queues import ge_name
    from drover.core.errors import DroverError

    if not words:
        print("ERROR! no option argument", file=sys.stderr)
        return 1
    instances = [word for word in words if "@" in word]
    if instances:
        print(f"{command}: {instances[0]}: {_INSTANCE}", file=sys.stderr)
        return 1
    from drover.client.client import Client

    status = 0
    me, host = user_name(), host_name()
    word = "disabled" if action == "stop" else "enabled"
    try:
        with Client() as client:
            queues = {ge_name(q.name): q for q in client.queues()}
            for pattern in words:
                matched = [name for name in queues if fnmatchcase(name, pattern)]
                if not matched:
                    print(f'invalid queue "{pattern}"', file=sys.stderr)
                    status = 1
                for name in matched:
                    state = queues[name].state
                    if state in ("stopped", "inactive") if action == "stop" else state == "open":
                        print(f'Queue instance "{name}" is already in the specified state: {word}')
                        continue
                    client.queue_action(queues[name].name, action)
                    print(f'{me}@{host} changed state of "{name}" ({word})')
    except DroverError as error:
        return failed(command, error)
    return status


if __name__ == "__main__":
    raise SystemExit(main())
