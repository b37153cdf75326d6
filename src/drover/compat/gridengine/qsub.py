"""qsub: submit a job script as Grid Engine does, with `#$` directives and its options.

Defaults follow Grid Engine: the job runs in the home directory unless -cwd or -wd; output goes
to `<name>.o<job>` (arrays `<name>.o<job>.<task>`) and errors to `.e` unless -j y; an output path
that is a directory gets those names inside it.
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


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="qsub", add_help=False, prefix_chars="-")
    for flag in ("-N", "-q", "-P", "-o", "-e", "-j", "-wd", "-b", "-t", "-tc", "-hold_jid", "-a", "-m", "-M",
                 "-p", "-sync", "-S", "-A", "-v", "-r"):
        p.add_argument(flag, action="append" if flag in ("-v",) else "store")
    p.add_argument("-l", action="append", default=[])
    p.add_argument("-pe", nargs=2)
    p.add_argument("-cwd", action="store_true")
    p.add_argument("-V", action="store_true")
    p.add_argument("-h", action="store_true")
    p.add_argument("-notify", action="store_true")
    p.add_argument("-terse", action="store_true")
    p.add_argument("-now", default=None)
    p.add_argument("-strict", action="store_true")
    return p


def _output(path: str | None, kind: str, name: str, is_array: bool, workdir: str) -> str:
    default = f"%x.{kind}%j" + (".%a" if is_array else "")
    if path is None:
        return default
    path = path.split(":", 1)[-1]  # [[host]:]path
    path = path.replace("$JOB_ID", "%j").replace("$TASK_ID", "%a").replace("$JOB_NAME", "%x").replace("$USER", "%u")
    full = path if os.path.isabs(path) else os.path.join(workdir, path)
    if os.path.isdir(full):
        return os.path.join(path, default)
    return path


def to_job(args: argparse.Namespace, script: str, strict: bool) -> JobRequest:
    def approximate(message: str) -> None:
        if strict:
            raise BadRequest(f"{message} (refused under -strict)")
        warn("qsub", message)

    workdir = os.path.abspath(args.wd) if args.wd else (os.getcwd() if args.cwd else os.path.expanduser("~"))
    is_array = bool(args.t)
    name = args.N or "STDIN"
    job: JobRequest = {"script": script, "name": name, "workdir": workdir, "submit_dir": os.getcwd(),
                              "hold": bool(args.h)}
    job["output"] = _output(args.o, "o", name, is_array, workdir)
    if (args.j or "n").lower() not in ("y", "yes", "true"):
        job["error"] = _output(args.e, "e", name, is_array, workdir)
    if args.t:
        job["array"] = args.t + (f"%{args.tc}" if args.tc else "")
    if args.pe:
        job["cpus"] = int(args.pe[1].split("-")[-1])
    for request in args.l:
        for item in request.split(","):
            key, _, value = item.partition("=")
            if key in ("h_rt", "s_rt"):
                job["time_limit_s"] = int(value) if value.isdigit() else parse_duration_s(value)
            elif key in ("h_vmem", "mem_free", "virtual_free", "mem"):
                job["memory_mib"] = parse_memory_mib(value)
            else:
                approximate(f"-l {key}: not a resource Drover schedules; ignored")
    if args.hold_jid:
        job["after_ok"] = [int(x) for x in args.hold_jid.split(",")]
        approximate("-hold_jid waits for the jobs to complete successfully (afterok), not just to end")
    if args.p:
        job["priority"] = int(args.p)
    if args.r is not None:  # -r y|n: whether the job may run again if its host fails it
        if args.r.lower() not in ("y", "yes", "n", "no"):
            raise BadRequest(f"-r takes y or n, not {args.r!r}")
        job["rerunnable"] = args.r.lower() in ("y", "yes")
    if args.q:
        job["queue"] = args.q.split("@")[0]
    if args.a:
        raise BadRequest("-a (deferred start) is not supported by Drover")
    if args.S and os.path.basename(args.S) not in ("bash", "sh"):
        approximate(f"-S {args.S}: the script runs with bash")
    if args.notify:
        job["warn_signal"], job["warn_before_s"] = "SIGUSR2", 60
        approximate("-notify: SIGUSR2 60 s before the time limit (no notice before suspend)")
    if args.M or args.m:
        if not args.M:
            raise BadRequest("-m needs -M (where to send the mail)")
        letters = args.m or "e"
        types = [t for letter, t in (("b", "BEGIN"), ("e", "END"), ("a", "FAIL")) if letter in letters]
        job["mail_user"], job["mail_type"] = args.M, types
    environment: dict[str, str] = dict(os.environ) if args.V else {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    for setting in args.v or []:
        for item in setting.split(","):
            key, sep, value = item.partition("=")
            environment[key] = value if sep else os.environ.get(key, "")
    job["environment"] = environment
    if args.P or args.A:
        approximate("-P/-A (project, account) are accepted and ignored")
    return job


def main(argv: list[str] | None = None) -> int:
    try:
        return _main(list(sys.argv[1:] if argv is None else argv))
    except (DroverError, ValueError) as error:
        return fail("qsub", str(error))


def _main(argv: list[str]) -> int:
    p = parser()
    options, rest = _split(argv, p)
    first = p.parse_args(options)
    binary = (first.b or "n").lower() in ("y", "yes", "true")
    if binary:
        import shlex

        if not rest:
            raise BadRequest("-b y needs a command")
        script, command_args = "#!/bin/sh\nexec " + " ".join(shlex.quote(w) for w in rest) + "\n", []
    elif rest:
        try:
            with open(rest[0], encoding="utf-8", errors="surrogateescape") as file:
                script = file.read()
        except OSError as error:
            raise BadRequest(f"Unable to read script file because of error: {error.strerror}") from None
        command_args = rest[1:]
    else:
        script, command_args = sys.stdin.read(), []
    file_options = [] if binary else directives(script, prefix="#$")
    args = p.parse_args(file_options + options)
    strict = args.strict or os.environ.get("DROVER_COMPAT_STRICT") == "1"
    if command_args:
        import shlex

        script = "set -- " + " ".join(shlex.quote(a) for a in command_args) + "\n" + script
    job = to_job(args, script, strict)

    from drover.cli.cluster import ensure_running
    from drover.client.client import Client

    ensure_running()
    with Client(timeout_s=None) as client:
        (job_id,) = client.submit([job])
        label = f"{job_id}.{args.t}:1" if args.t and ":" not in args.t else (f"{job_id}.{args.t}" if args.t else str(job_id))
        if args.terse:
            print(label, flush=True)
        elif args.t:
            print(f'Your job-array {label} ("{job["name"]}") has been submitted', flush=True)
        else:
            print(f'Your job {job_id} ("{job["name"]}") has been submitted', flush=True)
        if (args.sync or "n").lower() not in ("y", "yes"):
            return 0
        while not (reply := client.wait_json(job_id, 60))["ended"]:
            pass
    info = reply["job"]
    code = int(info["exit_status"] or (0 if info["state"] == "completed" else 1))
    if not args.terse:
        print(f"Job {job_id} exited with exit code {code}.")
    return code


def _split(argv: list[str], p: argparse.ArgumentParser) -> tuple[list[str], list[str]]:
    flags = {a: action for action in p._actions for a in action.option_strings}
    i = 0
    while i < len(argv):
        action = flags.get(argv[i])
        if action is None:
            return argv[:i], argv[i:]
        i += 1 + (action.nargs if isinstance(action.nargs, int) else 1)
    return argv, []


if __name__ == "__main__":
    raise SystemExit(main())
