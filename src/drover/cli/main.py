"""`drover COMMAND ...`: find the command's module, import only it, run it.

`drover --help` imports nothing but this file, so tools that call drover thousands of times
pay only for the command they use.
"""

from __future__ import annotations

import sys

# name → (module under drover.cli.commands, one-line summary)
COMMANDS: dict[str, tuple[str, str]] = {
    "up": ("up", "start a personal cluster (controller and execd) in the background"),
    "down": ("down", "stop the personal cluster; running jobs go on and report later"),
    "submit": ("submit", "submit a job script, or a command after --"),
    "run": ("run", "run a command as a job, streaming its output; exit with its status (like srun)"),
    "status": ("status", "list jobs and their states"),
    "show": ("show", "everything about a job: its tasks and every attempt"),
    "top": ("top", "the running jobs' CPU and memory against what they reserved, refreshed like top"),
    "why": ("why", "why a job's pending or held tasks do not run, and what would change that"),
    "cancel": ("actions", "cancel jobs or tasks (running ones get SIGTERM, then SIGKILL)"),
    "hold": ("actions", "keep pending jobs or tasks from starting"),
    "release": ("actions", "let held jobs or tasks start"),
    "suspend": ("actions", "suspend running jobs (their whole process tree is frozen)"),
    "resume": ("actions", "resume suspended jobs"),
    "signal": ("actions", "send a signal to running jobs: drover signal JOB... SIGNAL"),
    "requeue": ("actions", "stop running jobs and put them back in the queue, as new attempts"),
    "alter": ("actions", "change a waiting job's priority or queue: drover alter JOB... --priority N --queue Q"),
    "checkpoint": ("actions", "checkpoint running jobs (--checkpoint NAME, or --checkpoint-signal)"),
    "migrate": ("actions", "checkpoint running jobs, then run them again from the checkpoint"),
    "task": ("task", "inside a parallel job: run a command on one of its hosts: drover task start HOST -- CMD"),
    "wait": ("wait", "wait for jobs to end; exit with their exit status"),
    "logs": ("logs", "print a job's output; -f follows it"),
    "fetch": ("fetch", "copy back the files a job staged out"),
    "history": ("history", "ended jobs: exit status, times, CPU and memory used"),
    "efficiency": ("efficiency", "what a job used against what it asked for (like seff)"),
    "priority": ("priority", "pending jobs' priority, factor by factor (like sprio)"),
    "queue": ("queue", "the queues: drover queue list|show|create|set|stop|start|drain|delete"),
    "pe": ("pe", "the parallel environments: drover pe list|show NAME"),
    "nodes": ("nodes", "the cluster's nodes and what they run"),
    "node": ("nodes", "take a node out of service and back: drover node drain|resume NODE (admin)"),
    "events": ("events", "the event log of a job, or of the cluster"),
    "web": ("web", "a dashboard in the browser: the cluster, your jobs, their output, live (drover web)"),
    "compat": ("compat", "install sbatch, squeue, scancel, sacct, qsub, qstat, qdel, qhold, qrls, qacct into a directory"),
    "config": ("config", "check drover.toml and print the settings in effect: drover config check"),
    "cluster": ("cluster", "set up a cluster of many hosts: drover cluster init makes its CA and certificates"),
    "token": ("token", "join tokens for new hosts: drover token create|list|revoke (admin)"),
    "alloc": ("alloc", "nodes inside an outer Slurm's, PBS's or LSF's allocations while work waits: drover alloc add|list|info|pause|resume|remove (admin)"),
    "join": ("join", "join this host to a cluster as a node: drover join https://ADDR:PORT --token T"),
    "leave": ("leave", "take this node out of its cluster: stop its execd, remove its certificate"),
    "store": ("store", "the job store: drover store migrate|check|copy (SQLite or PostgreSQL)"),
    "controller": ("daemons", "run the controller daemon in the foreground"),
    "execd": ("daemons", "run the node daemon in the foreground"),
    "install-units": ("install_units", "write the systemd units that start the daemons at boot (as root)"),
    "completion": ("completion", "print a shell's completion script: drover completion bash|zsh|fish"),
}


def usage() -> str:
    lines = ["usage: drover COMMAND [OPTIONS]", "", "Drover runs batch jobs on a personal or shared cluster.", "", "commands:"]
    width = max(map(len, COMMANDS))
    lines += [f"  {name:<{width}} {summary}" for name, (_, summary) in COMMANDS.items()]
    lines += ["", "Run `drover COMMAND --help` for a command's options.",
              "A personal cluster starts on the first `drover submit`, or with `drover up`."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    from drover.cli.pipes import quiet_on_broken_pipe

    return quiet_on_broken_pipe(lambda: _main(sys.argv[1:] if argv is None else argv))


def _main(args: list[str]) -> int:
    if not args:  # a mistake: the usage goes where errors go
        print(usage(), file=sys.stderr)
        return 2
    if args[0] in ("-h", "--help", "help"):
        print(usage())
        return 0
    if args[0] == "--version":
        from drover import __version__

        print(f"drover {__version__}")
        return 0
    name = args[0]
    if name not in COMMANDS:
        print(f"drover: unknown command {name!r} (`drover --help` lists the commands)", file=sys.stderr)
        return 2
    import importlib

    module = importlib.import_module(f"drover.cli.commands.{COMMANDS[name][0]}")
    from drover.core.errors import DroverError

    try:
        return int(module.run(name, args[1:]))
    except DroverError as error:
        print(f"drover {name}: {error}", file=sys.stderr)
        return error.exit_code
    except KeyboardInterrupt:
        return 130
