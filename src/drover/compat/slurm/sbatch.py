"""sbatch: submit a batch script as Slurm does, with its options and #SBATCH directives.

The script is read and stored when sbatch runs (callers often delete it the moment sbatch
returns). Options Drover cannot honour exactly are approximated with a warning on stderr, or
refused with --strict (or DROVER_COMPAT_STRICT=1).
"""

from __future__ import annotations

import argparse
import os
import sys

from drover.compat.slurm.common import fail, warn
from drover.compat.slurm.directives import directives
from drover.core.errors import BadRequest, DroverError
from drover.core.units import parse_duration_s, parse_memory_mib
from drover.protocol.plain import JobRequest

# Options accepted and ignored: they change nothing a script can see on one Drover cluster.
HARMLESS = ("--account", "-A", "--qos", "-q", "--wckey", "--comment", "--reservation", "--constraint", "-C",
            "--licenses", "-L", "--distribution", "-m", "--mincpus", "--tmp", "--get-user-env", "--requeue",
            "--no-requeue", "--propagate", "--profile", "--kill-on-invalid-dep", "--uid", "--gid")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="sbatch", add_help=True)
    p.add_argument("-J", "--job-name")
    p.add_argument("-o", "--output")
    p.add_argument("-e", "--error")
    p.add_argument("-p", "--partition")
    p.add_argument("-n", "--ntasks", type=int)
    p.add_argument("--ntasks-per-node", type=int)
    p.add_argument("-N", "--nodes")
    p.add_argument("-c", "--cpus-per-task", type=int)
    p.add_argument("--mem")
    p.add_argument("--mem-per-cpu")
    p.add_argument("-t", "--time")
    p.add_argument("-a", "--array")
    p.add_argument("-d", "--dependency")
    p.add_argument("-H", "--hold", action="store_true")
    p.add_argument("--export")
    p.add_argument("-D", "--chdir")
    p.add_argument("--exclusive", nargs="?", const="exclusive")
    p.add_argument("--gpus", "-G")
    p.add_argument("--gres")
    p.add_argument("--signal")
    p.add_argument("--open-mode", choices=("append", "truncate"))
    p.add_argument("-W", "--wait", action="store_true")
    p.add_argument("--parsable", action="store_true")
    p.add_argument("--nice", type=int, nargs="?", const=100)
    p.add_argument("--mail-type")
    p.add_argument("--mail-user")
    p.add_argument("--wrap")
    p.add_argument("--strict", action="store_true", help="refuse options Drover can only approximate")
    return p


def split_known(argv: list[str]) -> tuple[list[str], list[str]]:
    """Drop the harmless options (with their values); they get one warning each."""
    kept, dropped = [], []
    i = 0
    while i < len(argv):
        word = argv[i]
        name = word.split("=", 1)[0]
        if name in HARMLESS:
            dropped.append(name)
            takes_value = "=" not in word and name not in ("--requeue", "--no-requeue", "--get-user-env",
                                                           "--kill-on-invalid-dep")
            i += 2 if takes_value and i + 1 < len(argv) and not argv[i + 1].startswith("-") else 1
            continue
        kept.append(word)
        i += 1
    return kept, dropped


def pattern(text: str) -> str:
    """Slurm's file-name patterns in Drover's: %A %j %a %x %u %N %% carry over; %J is %j.0 (the
    batch step); %t is 0 (the one task). For an array task, Slurm's %j is the task's own job id;
    here it is the array's (approximated)."""
    return text.replace("%J", "%j.0").replace("%t", "0")


def to_job(args: argparse.Namespace, script: str, strict: bool) -> JobRequest:
    def approximate(message: str) -> None:
        if strict:
            raise BadRequest(f"{message} (refused under --strict)")
        warn("sbatch", message)

    is_array = bool(args.array)
    cpus = args.cpus_per_task or 1
    if args.ntasks_per_node and args.ntasks_per_node > 1:
        args.ntasks = max(args.ntasks or 1, args.ntasks_per_node)
    if args.ntasks and args.ntasks > 1:
        approximate(f"--ntasks={args.ntasks}: one task with {args.ntasks * cpus} CPUs")
        cpus *= args.ntasks
    if args.nodes and str(args.nodes).split("-")[0] not in ("1",):
        raise BadRequest(f"--nodes={args.nodes}: Drover runs each job on one node")
    if args.gpus or args.gres:
        raise BadRequest("GPUs are not scheduled by Drover yet (--gpus/--gres)")
    if args.exclusive:
        approximate("--exclusive: the job gets the CPUs it asked for, not the whole node")
    job: JobRequest = {
        "script": script,
        "name": args.job_name or "sbatch",
        "workdir": os.path.abspath(args.chdir or os.getcwd()),
        "submit_dir": os.getcwd(),
        "cpus": cpus,
        "output": pattern(args.output) if args.output else ("slurm-%A_%a.out" if is_array else "slurm-%j.out"),
        "hold": bool(args.hold),
    }
    if args.error:
        job["error"] = pattern(args.error)
    if args.open_mode:
        job["open_mode"] = args.open_mode
    if args.mem:
        job["memory_mib"] = parse_memory_mib(args.mem)
    elif args.mem_per_cpu:
        job["memory_mib"] = parse_memory_mib(args.mem_per_cpu) * cpus
    if args.time:
        job["time_limit_s"] = parse_duration_s(args.time)
    if args.array:
        job["array"] = args.array
    if args.dependency:
        job["after_ok"] = dependencies(args.dependency)
    if args.partition and args.partition != "default":
        job["queue"] = args.partition
    if args.nice is not None:
        job["priority"] = max(min(-args.nice, 1023), -1023)
    if args.signal:
        from drover.cli.commands.submit import warning_signal

        job["warn_signal"], job["warn_before_s"] = warning_signal(args.signal)
    if args.mail_user or args.mail_type:
        from drover.mail import parse_mail_types

        if not args.mail_user:
            raise BadRequest("--mail-type needs --mail-user")
        job["mail_user"] = args.mail_user
        job["mail_type"] = parse_mail_types(args.mail_type or "END,FAIL")
    from drover.cli.commands.submit import environment

    job["environment"] = environment(args.export or "ALL", [])
    return job


def dependencies(text: str) -> list[int]:
    ids: list[int] = []
    for part in text.replace("?", ",").split(","):
        kind, _, rest = part.partition(":")
        if kind != "afterok":
            raise BadRequest(f"--dependency: only afterok is supported, not {kind!r}")
        for word in rest.split(":"):
            ids.append(int(word.split("_")[0].split("+")[0]))
    return ids


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        return _main(argv)
    except DroverError as error:
        return fail("sbatch", str(error))
    except ValueError as error:
        return fail("sbatch", str(error))


def _main(argv: list[str]) -> int:
    p = parser()
    # sbatch [options] script [args...]: options end at the script.
    options, rest = _split_at_script(argv)
    options, dropped = split_known(options)
    first = p.parse_args(options)
    if first.wrap is not None:
        script, script_args = f"#!/bin/sh\n{first.wrap}\n", []
    elif rest:
        script_args = rest[1:]
        try:
            with open(rest[0], encoding="utf-8", errors="surrogateescape") as file:
                script = file.read()
        except OSError as error:
            raise BadRequest(f"Unable to open file {rest[0]}: {error.strerror}") from None
    else:
        script, script_args = sys.stdin.read(), []
    if not script.startswith("#!"):
        raise BadRequest("This does not look like a batch script.  The first line must start with #! followed by the path to an interpreter.")
    file_options, file_dropped = split_known(directives(script))
    args = p.parse_args(file_options + options)  # the command line wins
    strict = args.strict or os.environ.get("DROVER_COMPAT_STRICT") == "1"
    for name in sorted(set(dropped + file_dropped)):
        if strict:
            raise BadRequest(f"{name} is not supported by Drover (refused under --strict)")
        warn("sbatch", f"{name} is accepted and ignored")
    if script_args:
        import shlex

        script = script.replace("\n", f"\nset -- {' '.join(shlex.quote(a) for a in script_args)}\n", 1)
    job = to_job(args, script, strict)

    from drover.cli.cluster import ensure_running
    from drover.client.client import Client

    ensure_running()
    with Client(timeout_s=None) as client:
        (job_id,) = client.submit([job])
        print(job_id if args.parsable else f"Submitted batch job {job_id}", flush=True)
        if not args.wait:
            return 0
        while not (reply := client.wait_json(job_id, 60))["ended"]:
            pass
    info = reply["job"]
    return int(info["exit_status"] or (0 if info["state"] == "completed" else 1))


def _split_at_script(argv: list[str]) -> tuple[list[str], list[str]]:
    """Options before the script's name; the script and its arguments after it."""
    takes_value = {a for action in parser()._actions for a in action.option_strings
                   if action.nargs is None and not isinstance(action, argparse._StoreTrueAction)}
    takes_value.update(option for option in HARMLESS if option not in ("--requeue", "--no-requeue"))
    i = 0
    while i < len(argv):
        word = argv[i]
        if not word.startswith("-") or word == "-":
            return argv[:i], argv[i:]
        if "=" not in word and word in takes_value:
            i += 1
        i += 1
    return argv, []


if __name__ == "__main__":
    raise SystemExit(main())
