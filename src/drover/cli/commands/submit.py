"""drover submit: a job script, or a command after --. Start-up matters here: it imports only
argparse, json, socket and Drover's own small modules."""

from __future__ import annotations

import os
import sys

from drover.cli.common import NotRegularFile, parser, read_regular, read_regular_file
from drover.core.errors import BadRequest

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable
    from typing import Any

    from drover.core.dependencies import Dependencies
    from drover.protocol.plain import DependencyRequest, JobRequest, StagedFileRequest


def build_parser(command: str) -> argparse.ArgumentParser:
    """drover submit's options, and drover run's (which adds --pty). Each part adds its options in
    turn, in the order `drover submit --help` lists them."""
    if command == "run":
        p = parser(command, "Run COMMAND as a job and stream its output here until it ends; exit with its status "
                   "(like srun). Ctrl-C cancels the job; with --pty, Ctrl-C goes to the job as a key, and before "
                   "the job starts it cancels it.")
        p.usage = "drover run [OPTIONS] -- COMMAND..."
        p.set_defaults(script=None, script_args=[])
    else:
        p = parser(command, "Submit a job: a script file (run with bash), or a command after --.\n\n"
                   "drover submit [OPTIONS] SCRIPT [ARGS...]: the script's contents are taken now and become "
                   "the job's (its #DROVER lines give options); ARGS, and everything after SCRIPT, are its "
                   "$1 $2 ..., as sbatch and qsub pass them.\n"
                   "drover submit [OPTIONS] -- COMMAND [ARGS...]: a command line, run as given where the job "
                   "runs; a script named there is read when the job starts, not copied, and its #DROVER lines "
                   "are not read.")
        p.usage = ("drover submit [OPTIONS] SCRIPT [ARGS...]\n"
                   "       drover submit [OPTIONS] -- COMMAND [ARGS...]\n"
                   "       drover submit [OPTIONS] --each-line FILE")
    _add_script_options(p, command)
    _add_output_options(p)
    _add_resource_options(p)
    _add_environment_options(p)
    _add_start_options(p)
    _add_mail_options(p)
    _add_node_options(p)
    _add_end_options(p)
    _add_staging_options(p)
    _add_run_options(p)
    _add_submission_options(p)
    _add_environment_and_checkpoint_options(p)
    if command == "run":
        p.add_argument("--pty", action="store_true", help="run under a terminal (like srun --pty, qrsh)")
    return p


def _add_script_options(p: argparse.ArgumentParser, command: str) -> None:
    """The job itself: its script (drover run takes a command only), its queue, its name, where
    it runs."""
    if command != "run":
        p.add_argument("script", nargs="?", help="the job script (omit with -- COMMAND or --each-line); "
                       "#DROVER lines at its top give options, which the command line overrides; lines #NEXT "
                       "or #NEXTSCRIPT separate jobs of one file, submitted together")
        p.add_argument("script_args", nargs=_remainder(), metavar="ARGS",
                       help="the script's arguments, its $1 $2 ...: every word after SCRIPT (an option "
                            "there is the script's, not drover submit's)")
    p.add_argument("-q", "--queue", help="the queue (default: default); a queue may have its own prolog and epilog")
    p.add_argument("-J", "--name", type=_job_name, help="the job's name (default: the script's or command's name)")
    p.add_argument("-D", "--workdir", "--chdir", help="working directory (default: the current one)")
    p.add_argument("--comment", help="a note of yours about the job, shown by drover show and given to it "
                   "as $DROVER_COMMENT (sbatch --comment)")


def _add_output_options(p: argparse.ArgumentParser) -> None:
    """Where the job's stdout and stderr go."""
    p.add_argument("-o", "--output", help="stdout file; %%j job id, %%a array index, %%x name, %%u user "
                   "(default: drover-%%j.out, arrays drover-%%j_%%a.out)")
    p.add_argument("-e", "--error", help="stderr file (default: joined with the output)")
    p.add_argument("--open-mode", choices=("truncate", "append"), default="truncate")


def _add_resource_options(p: argparse.ArgumentParser) -> None:
    """What each task holds while it runs: CPUs, memory, devices, node features, licences, a
    parallel environment's slots (its CPUs), and time."""
    p.add_argument("-c", "--cpus", default="1", help="CPUs per task (default 1)")
    p.add_argument("--mem", help="memory per task, e.g. 512M, 4G (default: none reserved)")
    p.add_argument("--gres", action="append", default=[], type=_gres, metavar="LIST",
                   help="generic resources per task, name[:type][:count],... e.g. gpu:2, gpu:a100:1,nic:1 "
                        "(repeatable)")
    p.add_argument("--gpus", type=_gpus, metavar="[TYPE:]N", help="GPUs per task: the same as --gres gpu[:TYPE]:N")
    p.add_argument("-C", "--constraint", type=_constraint, metavar="EXPR",
                   help="node features the job needs: a feature, or features joined by & (all) or | (any), "
                        "e.g. avx512&bigmem")
    p.add_argument("--exclusive", action="store_true", help="each task gets a whole node (all its CPUs) to itself")
    p.add_argument("-L", "--licenses", type=_licenses, metavar="LIST",
                   help="licences each task holds while it runs, NAME[:COUNT],... e.g. matlab:2,fluent")
    p.add_argument("--pe", nargs=2, metavar=("NAME", "SLOTS"),
                   help="a parallel environment of the cluster's (drover pe list) and its slots, N or a range "
                        "n-m (the largest that fits is given): one CPU a slot, on one node")
    p.add_argument("--pe-per-node", type=int, metavar="N",
                   help="with --pe: exactly N slots on each node the job gets, in place of its PE's allocation rule")
    p.add_argument("-t", "--time", help="time limit: minutes, MM:SS, HH:MM:SS, D-HH:MM:SS, or 90s, 10m, 2h")


def _add_environment_options(p: argparse.ArgumentParser) -> None:
    """The job's environment variables."""
    p.add_argument("--env", action="append", default=[], metavar="NAME=VALUE", help="set a variable (repeatable)")
    p.add_argument("--export", default="ALL", metavar="ALL|NONE|NAMES",
                   help="what of your environment the job gets: ALL (default), NONE, or NAME[=VALUE],...")


def _add_start_options(p: argparse.ArgumentParser) -> None:
    """Its array's tasks, and when they may start: held, by priority, after other jobs, not before
    a time."""
    p.add_argument("-a", "--array", help="array tasks: 1-100, 1-100:2, 1,3,5, with %%N to run at most N at once")
    p.add_argument("-H", "--hold", action="store_true", help="submit held; `drover release` lets it start")
    p.add_argument("-p", "--priority", default="0", help="higher starts first (-1023..1023, default 0)")
    p.add_argument("-d", "--dependency", metavar="KIND:ID[:ID...][,...]",
                   help="start only after other jobs: after, afterok, afternotok, afterany, aftercorr (ID: 12 or "
                        "12.3), singleton; joined with ',' (all) or '?' (any)")
    p.add_argument("--kill-on-invalid-dep", metavar="yes|no",
                   help="cancel the job when its dependency can never be met (yes, the default), or let it wait")
    p.add_argument("-b", "--begin", metavar="TIME",
                   help="start no earlier than TIME: HH:MM[:SS], YYYY-MM-DD[THH:MM[:SS]], now+N[minutes|hours|days], "
                        "midnight, noon, teatime, today, tomorrow")


def _add_mail_options(p: argparse.ArgumentParser) -> None:
    """Mail about the job."""
    p.add_argument("--mail-user", metavar="ADDRESS", help="where to send mail about the job")
    p.add_argument("--mail-type", metavar="TYPES", help="BEGIN, END, FAIL, REQUEUE, ALL, ARRAY_TASKS or NONE "
                   "(comma-separated; default END,FAIL when --mail-user is given)")


def _add_node_options(p: argparse.ArgumentParser) -> None:
    """On its node: whether its spool directory stays, how many processes it may have."""
    p.add_argument("--keep-spool", action="store_true", help="keep the attempt's spool directory on the node")
    p.add_argument("--pids-max", type=int, metavar="N",
                   help="at most N processes and threads at once (its cgroup's pids.max; the node's pids_max "
                        "caps it): a fork past it fails")


def _add_end_options(p: argparse.ArgumentParser) -> None:
    """What becomes of its output when it ends, and where its events are written."""
    p.add_argument("--zap", action="store_true",
                   help="remove the job's output files when it ends (after --mail-output read them), as jobd's "
                        "zapthisjob")
    p.add_argument("--done-output", metavar="FILE",
                   help="put the job's output, stdout and stderr together, in FILE when it is done (patterns as "
                        "for --output); meanwhile it goes to the --output file")
    p.add_argument("--mail-output", action="store_true",
                   help="send the job's output with its end mail (to --mail-user, by default you)")
    p.add_argument("--event-log", metavar="FILE", help="also append the job's events to FILE (JSON lines)")


def _add_staging_options(p: argparse.ArgumentParser) -> None:
    """Files carried to the job's node before it starts, and back after it exits."""
    p.add_argument("--stage-in", action="append", default=[], metavar="FILE",
                   help="copy FILE to the job's working directory on its node before it starts (repeatable); "
                        "without --workdir the job then runs in a scratch directory of its own")
    p.add_argument("--stage-out", action="append", default=[], metavar="PATTERN",
                   help="copy the files matching PATTERN back after the job exits (repeatable); "
                        "`drover fetch JOB` brings them to you")


def _add_run_options(p: argparse.ArgumentParser) -> None:
    """Around its run: its own prolog and epilog, the signals it is sent, whether a node's failure
    runs it again."""
    p.add_argument("--prolog", metavar="COMMAND", help="run before the job (as you); if it fails, the job does not run")
    p.add_argument("--epilog", metavar="COMMAND", help="run after the job (as you)")
    p.add_argument("--epilog-sets-exit", action=_boolean_option(), default=None,
                   help="the epilog's exit status becomes the job's, as the Accelerator's postcmd's does (the "
                        "default); --no-epilog-sets-exit keeps the job's own")
    p.add_argument("--signal", metavar="SIG[@SECONDS]",
                   help="send SIG to the job SECONDS (default 60) before its time limit (Slurm's --signal)")
    p.add_argument("--checkpoint-signal", metavar="SIG", help="what `drover checkpoint JOB` sends the job, e.g. USR2")
    p.add_argument("--no-requeue", action="store_true",
                   help="if the node fails the job (its shepherd dies), fail it instead of running it again (Slurm's --no-requeue)")


def _add_submission_options(p: argparse.ArgumentParser) -> None:
    """Many jobs from one file's lines, and how the submission answers."""
    p.add_argument("--each-line", metavar="FILE", help="submit each line of FILE as a job of its own, in one request")
    p.add_argument("--parsable", action="store_true", help="print only the job id")


def _add_environment_and_checkpoint_options(p: argparse.ArgumentParser) -> None:
    """The cluster's named environments it runs in, its notices before a suspend or a stop, and
    its checkpoint environment."""
    p.add_argument("--environment", type=_environments, metavar="NAME[+NAME...]",
                   help="switch to the cluster's named environments, in order, before the job's prolog")
    p.add_argument("--notify", action="store_true",
                   help="SIGUSR1 before the job is suspended, SIGUSR2 before it is stopped or killed at its time "
                        "limit, the queue's notify_s (60) seconds ahead (Grid Engine's qsub -notify)")
    p.add_argument("--checkpoint", metavar="NAME",
                   help="a checkpoint environment of the cluster's ([checkpoints.NAME]; qsub -ckpt): how the job "
                        "is checkpointed, migrated and restarted (docs/checkpointing.md)")
    p.add_argument("--checkpoint-interval", metavar="WHEN",
                   help="with --checkpoint: checkpoint every DURATION of run time (hh:mm:ss, 10m), or when "
                        "(letters of qsub -c: s shutdown, m periodically, x suspend, n never, r requeue)")


def run(command: str, argv: list[str]) -> int:
    command_argv: list[str] = []
    if "--" in argv:
        split = argv.index("--")
        argv, command_argv = argv[:split], argv[split + 1:]
    parser = build_parser(command)
    args = parser.parse_args(argv)
    script = None
    parts: list[tuple[int, str]] = []
    if args.script and not command_argv and not args.each_line:
        script = _read(args.script)
        parts = script_parts(script)
    if len(parts) > 1:
        jobs = _jobs_of_parts(parser, args, argv, parts)
    elif script is not None:
        lines: list[tuple[int, list[str]]] = []
        args = _with_directives(parser, args, argv, script, lines)
        jobs = _naming_the_line(parser, args.script, lines, argv, lambda: jobs_from_arguments(args, [], script))
    else:
        jobs = jobs_from_arguments(args, command_argv, script)

    ids = _submit(jobs)
    if args.json:
        from drover.cli.common import print_json

        print_json({"ids": ids})
    elif args.parsable:
        print("\n".join(str(job_id) for job_id in ids))
    elif len(ids) == 1:
        array = jobs[0].get("array")
        print(f"Submitted job {ids[0]}" + (f" (array {array})" if array else ""))
    else:
        print(f"Submitted {len(ids)} jobs: {ids[0]}-{ids[-1]}")
    return 0


def _submit(jobs: list[JobRequest]) -> list[int]:
    """Send the jobs; where no cluster answers, start the personal one (zero configuration) and
    send them there. Trying first costs nothing where a cluster runs, where probing it first would
    cost every submission a connection of its own. A refused connection sent nothing: the jobs
    are sent once."""
    from drover.cli.cluster import ensure_running
    from drover.cli.common import client
    from drover.core.errors import Unavailable

    try:
        with client() as api:
            return api.submit(jobs)
    except Unavailable:
        if not ensure_running():
            raise
    with client() as api:
        return api.submit(jobs)


def _with_directives(parser: argparse.ArgumentParser, args: argparse.Namespace, argv: list[str],
                     script: str, lines: list[tuple[int, list[str]]] | None = None) -> argparse.Namespace:
    """The options of the script's #DROVER lines, then the command line's, which win. `lines`
    gets each directive line's number and words."""
    words = _directive_words(parser, args.script, script, lines=lines)
    return parser.parse_args(words + argv) if words else args


def _naming_the_line(parser: argparse.ArgumentParser, source: str, lines: list[tuple[int, list[str]]],
                     argv: list[str], build: Callable[[], list[JobRequest]]) -> list[JobRequest]:
    """`build()`; a value it refuses that a #DROVER line gave (not the command line, which wins)
    is refused naming that line, as an unknown option there is: the last line that sets an
    option the message names, or gives a value the message quotes."""
    import re
    import shlex

    from drover.cli.directives import PREFIX

    try:
        return build()
    except BadRequest as error:
        message = str(error)

        def names(words: list[str]) -> bool:
            for word in words:
                value = word.split("=", 1)[-1]
                if value and f"{value!r}" in message:
                    return True
                action = parser._option_string_actions.get(word.split("=", 1)[0]) if word.startswith("-") else None
                if action is not None and any(
                        re.search(rf"(?<![\w-]){re.escape(spelling)}(?![\w-])", message)
                        for spelling in action.option_strings):
                    return True
            return False

        if names(argv):
            raise
        for number, words in reversed(lines):
            if names(words):
                raise BadRequest(f"{source}: line {number}: {PREFIX} {shlex.join(words)}: {message}") from None
        raise


def _directive_words(parser: argparse.ArgumentParser, source: str, script: str, first_line: int = 1,
                     lines: list[tuple[int, list[str]]] | None = None) -> list[str]:
    """The words of the #DROVER lines at the top of `script` (which starts at line `first_line`
    of the file `source`), each line checked on its own so that its errors name it; `lines`, if
    given, gets each line's number and words."""
    import shlex

    from drover.cli.common import parse_from
    from drover.cli.directives import PREFIX, directives

    words: list[str] = []
    for number, line_words in directives(script, source):
        number += first_line - 1
        where = f"{source}: line {number}: {PREFIX} {shlex.join(line_words)}"
        parse_from(parser, where)  # its errors name the line
        try:
            given, unknown = parser.parse_known_args(line_words)
        finally:
            parse_from(parser, None)
        if unknown or given.script:
            bad = unknown[0] if unknown else given.script  # a stray word (and those after it, ARGS)
            raise BadRequest(f"{source}: line {number}: {PREFIX} {bad}: not an option of drover submit")
        words += line_words
        if lines is not None:
            lines.append((number, line_words))
    return words


NEXT_MARKERS = ("#NEXT", "#NEXTSCRIPT")


def script_parts(script: str) -> list[tuple[int, str]]:
    """jobd: "it is possible for a user to submit many jobs in one script file (each job is
    separated by the line "#NEXT" or "#NEXTSCRIPT" in the script file)". The parts, in order,
    each with the number of its first line in the file; a part of blank lines only is no job."""
    parts: list[tuple[int, str]] = []
    first, lines = 1, list[str]()
    for number, line in enumerate(script.splitlines(keepends=True), start=1):
        if line.strip() in NEXT_MARKERS:
            parts.append((first, "".join(lines)))
            first, lines = number + 1, []
        else:
            lines.append(line)
    parts.append((first, "".join(lines)))
    kept = [(first, text if text.endswith("\n") else text + "\n") for first, text in parts if text.strip()]
    return kept or [(1, script)]


def _jobs_of_parts(parser: argparse.ArgumentParser, args: argparse.Namespace, argv: list[str],
                   parts: list[tuple[int, str]]) -> list[JobRequest]:
    """One job per part of a script (script_parts), for one request: the #DROVER lines at the
    top of the file apply to every part, a later part's own add to them, and the command line
    wins over both. All of them go into one queue, as jobd's entries of one queue."""
    import functools

    source = args.script
    common_lines: list[tuple[int, list[str]]] = []
    common = _directive_words(parser, source, parts[0][1], lines=common_lines)
    jobs: list[JobRequest] = []
    for index, (first, text) in enumerate(parts):
        own_lines: list[tuple[int, list[str]]] = []
        own = _directive_words(parser, source, text, first, lines=own_lines) if index else []
        part_args = parser.parse_args(common + own + argv)
        (job,) = _naming_the_line(parser, source, common_lines + own_lines, argv,
                                  functools.partial(jobs_from_arguments, part_args, [], text))
        if jobs and job.get("queue") != jobs[0].get("queue"):
            raise BadRequest(f"{source}: line {first}: the jobs of one script go into one queue: this one names "
                             f"{job.get('queue', 'default')}, the first {jobs[0].get('queue', 'default')}")
        jobs.append(job)
    return jobs


# Options whose empty value was once dropped without a word: an empty one is refused.
_NOT_EMPTY = (("queue", "-q/--queue"), ("workdir", "-D/--workdir"), ("mem", "--mem"), ("time", "-t/--time"), ("array", "-a/--array"), ("dependency", "-d/--dependency"),
              ("begin", "-b/--begin"), ("mail_user", "--mail-user"), ("mail_type", "--mail-type"),
              ("event_log", "--event-log"), ("stage_in", "--stage-in"), ("stage_out", "--stage-out"),
              ("prolog", "--prolog"), ("epilog", "--epilog"), ("signal", "--signal"),
              ("checkpoint_signal", "--checkpoint-signal"), ("checkpoint", "--checkpoint"),
              ("checkpoint_interval", "--checkpoint-interval"), ("each_line", "--each-line"))


def jobs_from_arguments(args: Any, command_argv: list[str], script: str | None = None) -> list[JobRequest]:
    """Everything checked here, before the cluster is asked (or started). `script`: the
    script file's text, when the caller read it already. Each part adds the fields of its
    options in turn, and refuses a bad value naming the option."""
    _check_sources(args, command_argv)
    job = _job_basics(args)
    _add_resources(job, args)
    _add_output_files(job, args)
    _add_dependencies(job, args)
    _add_mail_and_end(job, args)
    _add_run_fields(job, args)
    _add_checkpoint_fields(job, args)
    _add_staging(job, args)
    return _with_payloads(job, args, command_argv, script)


def _check_sources(args: Any, command_argv: list[str]) -> None:
    """No option given empty, and exactly one thing to run: a script, a command, or --each-line."""
    for key, option in _NOT_EMPTY:
        value = getattr(args, key, None)
        if value == "" or (isinstance(value, list) and "" in value):
            raise BadRequest(f"{option} must not be empty (leave the option out for none)")
    sources = sum(bool(x) for x in (args.script, command_argv, args.each_line))
    if sources != 1:
        raise BadRequest("give exactly one of: a script file, -- COMMAND [ARGS...], or --each-line FILE")
    if command_argv and not command_argv[0]:
        raise BadRequest("the command is empty: give the program to run after --")


def _job_basics(args: Any) -> JobRequest:
    """The request's fields every job has: where it runs, its CPUs, priority, environment, hold,
    and its queue; the script and name are each job's own (_with_payloads)."""
    staging = bool(args.stage_in or args.stage_out)
    if staging and not args.workdir:
        workdir = ""  # a scratch directory on the node; files travel through the controller
    else:
        workdir = os.path.abspath(args.workdir or os.getcwd())
        if not staging and not os.path.isdir(workdir):
            raise BadRequest(f"the working directory {workdir} does not exist")
    job: JobRequest = {
        "script": "",  # each job's, below
        "workdir": workdir,
        "submit_dir": os.getcwd(),
        "cpus": _integer(args.cpus, "--cpus", minimum=1),
        "priority": _integer(args.priority, "--priority"),
        "open_mode": args.open_mode,
        "environment": environment(args.export, args.env),
        "hold": args.hold,
    }
    if args.queue:
        job["queue"] = args.queue
    if args.comment:
        job["comment"] = args.comment
    return job


def _add_resources(job: JobRequest, args: Any) -> None:
    """What each task holds while it runs (devices, licences, node features, a parallel
    environment's slots, which are its CPUs, memory, time), and the array's tasks."""
    from drover.core.units import parse_array, parse_duration_s, parse_memory_mib

    gres = [text for text in (*args.gres, args.gpus) if text]
    if gres:
        from drover.core.gres import describe, parse_requests

        try:
            job["gres"] = [describe(parse_requests(gres))]
        except ValueError as error:
            raise BadRequest(str(error)) from None
    if args.licenses:
        job["licenses"] = args.licenses
    if args.constraint is not None:
        job["constraint"] = args.constraint
    if args.pe:
        job["pe"], job["pe_slots"] = _pe(args.pe, args.cpus)
    if args.pe_per_node is not None:
        if not args.pe:
            raise BadRequest("--pe-per-node is the slots on each node of a job of a parallel environment: "
                             "give --pe NAME SLOTS")
        job["pe_per_node"] = args.pe_per_node
    if args.exclusive:
        job["exclusive"] = True
    if args.mem is not None:
        job["memory_mib"] = parse_memory_mib(args.mem)
    if args.time is not None:
        job["time_limit_s"] = parse_duration_s(args.time)
    if args.array is not None:
        parse_array(args.array)
        job["array"] = args.array


def _add_output_files(job: JobRequest, args: Any) -> None:
    """Where its stdout and stderr go: patterns, checked here."""
    if args.output is not None or args.error is not None:
        from drover.core.patterns import check_pattern

        if args.output is not None:
            check_pattern(args.output)
            job["output"] = args.output
        if args.error is not None:
            check_pattern(args.error)
            job["error"] = args.error


def _add_dependencies(job: JobRequest, args: Any) -> None:
    """When it may start: after other jobs (and what becomes of it if they never let it), not
    before a time."""
    if args.dependency:
        from drover.core.dependencies import parse_dependencies

        add_dependencies(job, parse_dependencies(args.dependency))
    if args.kill_on_invalid_dep is not None:
        from drover.core.dependencies import kill_on_invalid

        job["kill_on_invalid_dep"] = kill_on_invalid(args.kill_on_invalid_dep)
    if args.begin is not None:
        import time

        from drover.core.begin_time import parse_begin

        job["begin_at"] = parse_begin(args.begin, time.time())


def add_dependencies(job: JobRequest, dependencies: Dependencies) -> None:
    """The job's `dependencies` and `dependency_any`, each spelled as core.dependencies'
    request_fields spells it (a task or per_task only where given)."""
    on: list[DependencyRequest] = []
    for dependency in dependencies.on:
        request: DependencyRequest = {"kind": dependency.kind, "job": dependency.job}
        if dependency.task is not None:
            request["task"] = dependency.task
        if dependency.per_task:
            request["per_task"] = True
        on.append(request)
    job["dependencies"], job["dependency_any"] = on, dependencies.any


def _add_mail_and_end(job: JobRequest, args: Any) -> None:
    """Mail about the job, and what becomes of its output when it ends (removed, put in one
    file, mailed) and of its events."""
    if args.mail_output and not args.mail_user:
        import getpass

        args.mail_user = getpass.getuser()  # jobd mails the job's owner
    if args.mail_user or args.mail_type:
        from drover.mail import parse_mail_types

        if not args.mail_user:
            raise BadRequest("--mail-type needs --mail-user (where to send the mail)")
        job["mail_user"] = args.mail_user
        job["mail_type"] = parse_mail_types(args.mail_type or "END,FAIL")
        if args.mail_output and not {"END", "FAIL"} & set(job["mail_type"]):
            job["mail_type"] = [*job["mail_type"], "END"]  # the output goes with the end mail
    if args.mail_output:
        job["mail_output"] = True
    if args.zap:
        if args.keep_spool:
            raise BadRequest("--zap removes what the job leaves on its node, --keep-spool keeps it: give one of them")
        job["zap"] = True
    if args.done_output is not None:
        from drover.core.patterns import check_pattern

        if args.error is not None:
            raise BadRequest("--done-output holds stdout and stderr together: leave out --error")
        if args.zap:
            raise BadRequest("--zap removes the job's output, --done-output keeps it: give one of them")
        check_pattern(args.done_output)
        job["done_output"] = args.done_output
    if args.event_log:
        job["event_log"] = os.path.abspath(args.event_log)


def _add_run_fields(job: JobRequest, args: Any) -> None:
    """How it runs on its node: its spool kept, its process limit, its own prolog and epilog, the
    warning before its time limit, whether a node's failure runs it again, its environments."""
    if args.keep_spool:
        job["keep_spool"] = True
    if args.pids_max is not None:
        from drover.core.limits import MAX_PIDS, bounded

        job["pids_max"] = bounded(args.pids_max, 1, MAX_PIDS, "--pids-max")
    if args.prolog:
        job["prolog"] = args.prolog
    if args.epilog:
        job["epilog"] = args.epilog
    if args.epilog_sets_exit is not None:
        job["epilog_sets_exit"] = args.epilog_sets_exit
    if args.signal:
        job["warn_signal"], job["warn_before_s"] = warning_signal(args.signal)
    if args.no_requeue:
        job["rerunnable"] = False
    if args.environment:
        job["environments"] = args.environment


def _add_checkpoint_fields(job: JobRequest, args: Any) -> None:
    """How it is checkpointed (a signal, or a checkpoint environment and when), and its notices
    before a suspend or a stop."""
    if args.checkpoint_signal:
        from drover.core.signals import job_signal

        job["checkpoint_signal"] = job_signal(args.checkpoint_signal, "--checkpoint-signal").name
    if args.checkpoint is not None:
        job["checkpoint"] = args.checkpoint
    if args.checkpoint_interval is not None:
        if args.checkpoint is None:
            raise BadRequest("--checkpoint-interval needs --checkpoint NAME (a checkpoint environment)")
        from drover.core.checkpoints import parse_occasion

        parse_occasion(args.checkpoint_interval)  # a bad one is refused here, before anything is sent
        job["checkpoint_occasion"] = args.checkpoint_interval
    if args.notify:
        job["notify"] = True


def _add_staging(job: JobRequest, args: Any) -> None:
    """The files carried in with the job (read now), and the patterns of those brought back."""
    if args.stage_in:
        job["stage_in"] = staged_files(args.stage_in)
    if args.stage_out:
        for pattern in args.stage_out:
            if os.path.isabs(pattern) or ".." in pattern.split("/"):
                raise BadRequest(f"--stage-out takes patterns inside the working directory, not {pattern!r}")
        job["stage_out"] = args.stage_out


def _with_payloads(job: JobRequest, args: Any, command_argv: list[str], script: str | None) -> list[JobRequest]:
    """The job with what it runs and its name: one for each line of --each-line's file, or one
    for the command after --, or one for the script."""
    if args.each_line:
        lines = [line.strip() for line in _read(args.each_line).splitlines()]
        commands = [line for line in lines if line and not line.startswith("#")]
        if not commands:
            raise BadRequest(f"{args.each_line} holds no command")
        return [{**job, "script": line + "\n", "name": args.name or line.split()[0]} for line in commands]
    if command_argv:
        import shlex

        script = "exec " + " ".join(shlex.quote(word) for word in command_argv) + "\n"
        name = args.name or os.path.basename(command_argv[0])
    else:
        from drover.core.script_arguments import with_arguments

        script = with_arguments(_read(args.script) if script is None else script, args.script_args)
        name = args.name or os.path.basename(args.script)
    return [{**job, "script": script, "name": name}]


def _remainder() -> str:
    """argparse.REMAINDER (argparse imported only when the parser is built)."""
    import argparse

    return argparse.REMAINDER


def _boolean_option() -> type[argparse.Action]:
    """--NAME and --no-NAME (argparse imported only when the parser is built)."""
    import argparse

    return argparse.BooleanOptionalAction


def warning_signal(text: str) -> tuple[str, int]:
    """Slurm's --signal=[B:]SIG[@TIME]: ("SIGUSR1", 60)."""
    from drover.core.limits import MAX_TIME_LIMIT_S, ascii_int
    from drover.core.signals import job_signal

    name, _, when = text.removeprefix("B:").partition("@")
    seconds = ascii_int(when, "--signal: the time after @ (seconds)", MAX_TIME_LIMIT_S) if when else 60
    return job_signal(name, "--signal").name, seconds




def staged_files(paths: list[str]) -> list[StagedFileRequest]:
    """The files to stage in, read now (callers may delete them once submit returns)."""
    import base64

    from drover.core.limits import Limits

    files: list[StagedFileRequest] = []
    total = 0
    for path in paths:
        try:
            # At most a byte past what the limit leaves: a huge file is refused without being held.
            data, mode = read_regular(path, Limits.max_stage_in_bytes - total)
        except NotRegularFile as error:
            raise BadRequest(f"--stage-in: {error}; stage in regular files only") from None
        except OSError as error:
            raise BadRequest(f"--stage-in: cannot read {path}: {error.strerror}") from None
        total += len(data)
        if total > Limits.max_stage_in_bytes:  # the default; the controller checks its own
            raise BadRequest(f"--stage-in: the files hold more than the limit of {Limits.max_stage_in_bytes // 2**20} MiB "
                             "per job; put big inputs on a shared filesystem")
        files.append({"name": os.path.basename(path), "data": base64.b64encode(data).decode(), "mode": mode})
    return files


def _read(path: str) -> str:
    """The script, whole: a regular file (a FIFO or a device is refused at once, never waited
    on), in UTF-8 (the job's script travels as JSON text)."""
    try:
        if path == "-":
            return sys.stdin.read()
        data = read_regular_file(path)
    except NotRegularFile as error:
        raise BadRequest(f"{error}; give a script file, or - for standard input") from None
    except OSError as error:
        raise BadRequest(f"cannot read {path}: {error.strerror}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise BadRequest(f"{path} is not UTF-8 text (byte {error.start}); Drover takes job scripts in UTF-8") from None


def _job_name(text: str) -> str:
    if not text.strip():
        import argparse

        raise argparse.ArgumentTypeError("a job name must not be empty")
    return text


def _environments(text: str) -> list[str]:
    """--environment A+B: the Accelerator composes environments with '+'."""
    import argparse

    from drover.config_schema import check_environment_name

    names = text.split("+")
    try:
        for name in names:
            check_environment_name(name)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return names


def _gres(text: str) -> str:
    """--gres: checked now, sent in its canonical form ("gpu:a100:1,nic:1"); "" for `none`."""
    import argparse

    from drover.core.gres import describe, parse_request

    if not text.strip():
        raise argparse.ArgumentTypeError("must not be empty (--gres none for none)")
    try:
        return describe(parse_request(text, option="--gres"))
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error).removeprefix("--gres ")) from None


def _gpus(text: str) -> str:
    """--gpus [TYPE:]N: the generic resource gpu[:TYPE]:N."""
    import argparse

    from drover.core.gres import describe, parse_gpus

    try:
        return describe(parse_gpus(text, option="--gpus"))
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error).removeprefix("--gpus ")) from None


def _pe(given: list[str], cpus: str) -> tuple[str, str]:
    """--pe NAME SLOTS, its slots checked (a number or a range n-m); not with --cpus."""
    from drover.core.parallel_env import parse_slots

    name, slots = given
    try:
        parse_slots(slots)
    except ValueError as error:
        raise BadRequest(f"--pe {name} {slots}: {error}") from None
    if cpus != "1":
        raise BadRequest("--pe gives the job its CPUs, one a slot: leave out --cpus")
    return name, slots


def _licenses(text: str) -> dict[str, int]:
    import argparse

    from drover.core.licenses import parse_licenses

    try:
        return parse_licenses(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _constraint(text: str) -> str:
    """The expression as given (the controller reads it against the nodes' features); not empty."""
    if not text.strip():
        import argparse

        raise argparse.ArgumentTypeError("a constraint must name at least one node feature")
    return text.strip()


def _integer(text: str, option: str, minimum: int | None = None) -> int:
    digits = text.removeprefix("-")
    # ASCII digits only: int() would also take '٣', '1_0' and ' 7'.
    if not digits.isascii() or not digits.isdigit():
        raise BadRequest(f"{option} must be a whole number, not {text!r}")
    value = int(text)
    if minimum is not None and value < minimum:
        raise BadRequest(f"{option} must be at least {minimum}, not {value}")
    return value


def environment(export: str, settings: list[str]) -> dict[str, str]:
    """Slurm's --export: ALL, NONE, or a list of NAME (taken from here) and NAME=VALUE."""
    words = [word for word in export.split(",") if word]
    if not words:
        raise BadRequest("--export needs ALL, NONE, or a list of variable names")
    env: dict[str, str] = {}
    for word in words:
        if word == "ALL":
            env.update(os.environ)
        elif word == "NONE":
            continue
        elif "=" in word:
            name, _, value = word.partition("=")
            env[name] = value
        elif word in os.environ:
            env[word] = os.environ[word]
    for setting in settings:
        name, sep, value = setting.partition("=")
        if not sep or not name:
            raise BadRequest(f"--env takes NAME=VALUE, not {setting!r}")
        env[name] = value
    return env
