"""drover queue list|show|create|set|stop|start|drain|suspend|unsuspend|delete: the cluster's
queues, their state, settings and contents; changing them at runtime (operators, and the owners of
queues)."""

from __future__ import annotations

import sys

from drover.cli.common import client, parser, print_json

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse

    from drover.client.client import Client
    from drover.protocol.api import QueueInfo

# The settings `create` and `set` take, KEY=VALUE, and what each means.
SETTINGS: dict[str, str] = {
    "priority": "the queue's priority (its jobs' queue factor)",
    "nice": "added to its jobs' nice value",
    "nodes": "comma list of node name patterns it may use (empty: every node)",
    "max_running": "its tasks running at once",
    "max_running_per_user": "one user's tasks of it running at once",
    "max_memory": "the most memory a task of it may ask for (e.g. 4G, 512M)",
    "default_time": "the time limit of a job naming none (e.g. 1:00:00, 2-00:00:00, UNLIMITED)",
    "max_time": "the longest time limit a job may ask for (same forms)",
    "window": "when it starts jobs: e.g. 'Mon-Fri 18:00-08:00; Sat,Sun', nights, weekends, always",
    "owner": "the user who manages it besides the operators",
    "mail_finished": "yes: mail when its last job finishes (to its owner, else that job's --mail-user or owner)",
    "suspend_method": "a signal (SIGUSR1) sent instead of freezing a job; NONE: the default (operators only; a "
                      "command is set by root in drover.toml; docs/methods.md)",
    "resume_method": "the same, instead of thawing it",
    "terminate_method": "the same, instead of SIGTERM when a job is stopped",
    "notify": "seconds (or HH:MM:SS) between a --notify job's SIGUSR1/SIGUSR2 and its suspend/stop",
}
ACTIONS = {
    "stop": "Stop a queue: it takes jobs but starts none (Slurm's State=DOWN, Grid Engine's qmod -d).",
    "start": "Open a stopped, draining or inactive queue again (State=UP, qmod -e).",
    "drain": "Drain a queue: it starts the jobs it has but takes no new ones (State=DRAIN).",
    "suspend": "Suspend a queue on one node (NAME@NODE) or on every node (NAME): its jobs running there are "
               "frozen (a job whose checkpoint environment has the x occasion migrates) and none of its jobs "
               "starts there (Grid Engine's qmod -sq).",
    "unsuspend": "Unsuspend a queue on one node (NAME@NODE) or on every node where it is suspended: the jobs it "
                 "froze go on, but for those also suspended on their own (qmod -usq).",
}
SUBCOMMANDS = ("list", "show", "create", "set", "stop", "start", "drain", "suspend", "unsuspend", "delete")
_USAGE = """usage: drover queue SUBCOMMAND [ARGS] [--json]

  list                       the queues: state, priority, nodes, jobs, limits, window
  show NAME                  every setting of a queue, and which were changed at runtime
  create NAME [KEY=VALUE...] a new queue (operators; users too where drover.toml allows it)
  set NAME KEY=VALUE...      change settings (KEY= with no value undoes a change)
  stop NAME [--reason TEXT]  take jobs, start none
  start NAME                 open again
  drain NAME [--reason TEXT] start the jobs it has, take no new ones
  suspend NAME[@NODE] [--reason TEXT]
                             freeze its jobs on that node (every node), start none there
  unsuspend NAME[@NODE]      let them go on, start its jobs there again
  delete NAME                remove a queue made with create, once it has no jobs

settings: """ + ", ".join(SETTINGS)


class UsageError(ValueError):
    """Bad words on the command line: the message, and exit status 2."""


def parse_settings(words: list[str], need_one: bool) -> dict[str, str]:
    """KEY=VALUE words, as `scontrol update` takes them; a key once, known keys only."""
    settings: dict[str, str] = {}
    for word in words:
        key, equals, value = word.partition("=")
        key = key.strip().lower().replace("-", "_")
        if not equals or not key:
            raise UsageError(f"expected KEY=VALUE, not {word!r}")
        if key not in SETTINGS:
            raise UsageError(f"unknown setting {key!r} (settings: {', '.join(SETTINGS)})")
        if key in settings:
            raise UsageError(f"{key} is given twice")
        settings[key] = value.strip()
    if need_one and not settings:
        raise UsageError("give at least one KEY=VALUE (settings: " + ", ".join(SETTINGS) + ")")
    return settings


def memory_text(mib: int | None) -> str:
    if mib is None:
        return "-"
    if mib and mib % (1024 * 1024) == 0:
        return f"{mib // (1024 * 1024)}T"
    if mib and mib % 1024 == 0:
        return f"{mib // 1024}G"
    return f"{mib}M"


def time_text(seconds: int | None) -> str:
    """A time limit in a form `drover queue set` takes back: [D-]HH:MM:SS."""
    if seconds is None:
        return "-"
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    text = f"{hours:02d}:{minutes:02d}:{secs:02d}"
    return f"{days}-{text}" if days else text


def nodes_text(queue: QueueInfo) -> str:
    return "all" if queue.nodes is None else ",".join(queue.nodes) or "none"


def limits_text(queue: QueueInfo) -> str:
    """The queue's limits in a few words: `running 4, per user 2, memory 4G, time 01:00:00`."""
    parts = []
    if queue.max_running is not None:
        parts.append(f"running {queue.max_running}")
    if queue.max_running_per_user is not None:
        parts.append(f"per user {queue.max_running_per_user}")
    if queue.max_memory_mib is not None:
        parts.append(f"memory {memory_text(queue.max_memory_mib)}")
    if queue.max_time_s is not None:
        parts.append(f"time {time_text(queue.max_time_s)}")
    return ", ".join(parts) or "-"


def window_text(queue: QueueInfo) -> str:
    """`nights (closed, opens 18:00)`; `-` for a queue that may always start jobs."""
    if not queue.window:
        return "-"
    if queue.window_open:
        return f"{queue.window} (open)"
    from drover.cli.render import when as render_when

    opens = f", opens {render_when(queue.opens_at)}" if queue.opens_at else ""
    return f"{queue.window} (closed{opens})"


def list_rows(queues: list[QueueInfo]) -> list[tuple[str, ...]]:
    return [(q.name, q.state.upper(), str(q.priority) + (f" nice {q.nice}" if q.nice else ""),
             f"{nodes_text(q)} ({q.cpus_used}/{q.cpus} CPUs)", str(q.running), str(q.pending), limits_text(q),
             window_text(q), reason_text(q)) for q in queues]


def reason_text(queue: QueueInfo) -> str:
    """Why it is stopped or drained, and the nodes where it is in error or suspended (queue@node)."""
    errors = [f"in error on {', '.join(queue.errors)}"] if queue.errors else []
    suspended = [f"suspended on {', '.join(queue.suspended)}"] if queue.suspended else []
    return "; ".join(([queue.reason] if queue.reason else []) + errors + suspended)


LIST_COLUMNS = ("QUEUE", "STATE", "PRIORITY", "NODES", "RUNNING", "PENDING", "LIMITS", "WINDOW", "REASON")

# A field `show` prints → the setting that changes it.
_FIELD_SETTING = {"priority": "priority", "nice": "nice", "nodes": "nodes", "max running": "max_running",
                  "per user": "max_running_per_user", "max memory": "max_memory", "default time": "default_time",
                  "max time": "max_time", "window": "window", "owner": "owner", "mail at end": "mail_finished",
                  "suspend": "suspend_method", "resume": "resume_method", "terminate": "terminate_method",
                  "notify": "notify"}


def show_lines(queue: QueueInfo) -> list[str]:
    """Every field of a queue, one a line; a setting changed at runtime is marked so."""
    fields: list[tuple[str, str]] = [
        ("state", queue.state.upper() + (f" ({queue.reason})" if queue.reason else "")),
        ("defined in", queue.defined_in),
        ("owner", queue.owner or "-"),
        ("priority", str(queue.priority)),
        ("nice", str(queue.nice)),
        ("nodes", nodes_text(queue) + (f" = {','.join(queue.node_names) or 'none now'}"
                                       if queue.nodes is not None else "")),
        ("cpus", f"{queue.cpus_used} of {queue.cpus} in use"),
        ("running", f"{queue.running} task(s)"),
        ("pending", f"{queue.pending} task(s)"),
        ("max running", "-" if queue.max_running is None else str(queue.max_running)),
        ("per user", "-" if queue.max_running_per_user is None else str(queue.max_running_per_user)),
        ("max memory", memory_text(queue.max_memory_mib)),
        ("default time", time_text(queue.default_time_s)),
        ("max time", time_text(queue.max_time_s)),
        ("window", window_text(queue) if queue.window else "always"),
        ("mail at end", "yes" if queue.mail_finished else "no"),
        # Grid Engine's queue_conf(5) methods (docs/methods.md); unset: the node's, else the default
        ("suspend", queue.suspend_method or "-"),
        ("resume", queue.resume_method or "-"),
        ("terminate", queue.terminate_method or "-"),
        ("notify", f"{queue.notify_s}s"),
    ]
    if queue.errors:  # its instances in error (queue@node), each with why
        fields += [("in error on", f"{node}: {why}") for node, why in queue.errors.items()]
    if queue.suspended:  # its suspended instances (queue@node), each with by whom and why
        fields += [("suspended on", f"{node}: {why}") for node, why in queue.suspended.items()]
    lines = [f"Queue {queue.name}"]
    for label, value in fields:
        setting = _FIELD_SETTING.get(label)
        mark = f"   [changed at runtime: {setting}={queue.changed[setting]}]" if setting in queue.changed else ""
        lines.append(f"  {label:<13}{value}{mark}")
    return lines


def run(command: str, argv: list[str]) -> int:
    words = [w for w in argv if not w.startswith("-")]
    if any(w in ("-h", "--help") for w in argv) and (not words or words[0] not in SUBCOMMANDS):
        print(_USAGE)
        return 0
    if not words or words[0] not in SUBCOMMANDS:
        problem = f"unknown subcommand {words[0]!r}" if words else "a subcommand is needed"
        print(f"drover queue: {problem} (one of {', '.join(SUBCOMMANDS)}; see drover queue --help)",
              file=sys.stderr)
        return 2
    sub = words[0]
    rest = list(argv)
    rest.remove(sub)
    return _sub(sub, rest)


def _sub(sub: str, argv: list[str]) -> int:
    descriptions = {"list": "List the queues: their state, priority, nodes, jobs, limits and window.",
                    "show": "Show every setting of a queue, and which were changed at runtime.",
                    "create": "Create a queue (operators; users too where drover.toml's [controller] "
                              "user_queues allows, and they own it).",
                    "set": "Change a queue's settings (its owner or an operator); KEY= undoes a change, back to "
                           "drover.toml's value. Settings: " + "; ".join(f"{k}: {v}" for k, v in SETTINGS.items()),
                    "delete": "Remove a queue made with drover queue create, once it has no jobs.", **ACTIONS}
    p = parser(f"queue {sub}", descriptions[sub])
    if sub != "list":
        p.add_argument("name", metavar="NAME")
    if sub in ("create", "set"):
        p.add_argument("settings", nargs="*", metavar="KEY=VALUE")
    if sub in ("stop", "drain", "suspend"):
        p.add_argument("--reason", default="", help="why, shown by drover queue list")
    args = p.parse_args(argv)
    if sub in ("suspend", "unsuspend") and (args.name.startswith("@") or args.name.endswith("@")
                                            or args.name.count("@") > 1):
        p.error(f"{args.name!r}: give NAME@NODE (a queue on one node), or NAME alone (on every node)")
    settings: dict[str, str] = {}
    if sub in ("create", "set"):
        try:
            settings = parse_settings(args.settings, need_one=sub == "set")
        except UsageError as error:
            p.error(str(error))
    with client() as api:
        if sub == "list":
            return _list(api.queues(), args)
        if sub == "show":
            found = next((q for q in api.queues() if q.name == args.name), None)
            if found is None:
                from drover.core.errors import NotFound

                raise NotFound(f"no queue named {args.name!r} (drover queue list shows them)")
            return _print_one(found, args, show=True)
        if sub == "delete":
            api.delete_queue(args.name)
            if args.json:
                print_json({"name": args.name, "deleted": True})
            else:
                print(f"queue {args.name}: deleted")
            return 0
        if sub == "create":
            return _print_one(api.create_queue(args.name, settings), args, done="created")
        if sub == "set":
            return _print_one(api.set_queue(args.name, settings), args, done="changed " + " ".join(
                f"{key}={value}" if value else f"{key} (back to drover.toml's)" for key, value in settings.items()))
        if sub in ("suspend", "unsuspend"):
            return _suspension(api, sub, args)
        return _print_one(api.queue_action(args.name, sub, getattr(args, "reason", "")), args)


def _suspension(api: Client, sub: str, args: argparse.Namespace) -> int:
    """`suspend` or `unsuspend` NAME[@NODE]: the instance on NODE, or on every node."""
    name, _, node = args.name.partition("@")
    queue = (api.suspend_queue(name, node or None, args.reason) if sub == "suspend"
             else api.unsuspend_queue(name, node or None))
    if args.json:
        print_json(queue)
    elif node:
        print(f"queue {name}@{node}: {sub}ed")
    else:
        where = ", ".join(queue.suspended) or "no node"
        print(f"queue {name}: {sub}ed; suspended on {where}")
    return 0


def _list(queues: list[QueueInfo], args: argparse.Namespace) -> int:
    if args.json:
        print_json(queues)
        return 0
    from drover.cli.render import table

    table(LIST_COLUMNS, list_rows(queues), right=("RUNNING", "PENDING"))
    return 0


def _print_one(queue: QueueInfo, args: argparse.Namespace, show: bool = False, done: str = "") -> int:
    if args.json:
        print_json(queue)
    elif show:
        print("\n".join(show_lines(queue)))
    else:
        print(f"queue {queue.name}: {done + '; ' if done else ''}{queue.state}"
              + (f" ({queue.reason})" if queue.reason else ""))
    return 0
