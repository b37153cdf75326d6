"""qsub: submit a job script, or with `-b y` a command, as Grid Engine's qsub does.

Options come from, in rising priority: the sge_request files ($SGE_ROOT/$SGE_CELL/common/,
~/.sge_request, ./.sge_request), the script's `#$` directives (another prefix with -C), and the
command line; `-@ FILE` reads more where it stands, and -clear forgets what came before.
"""

from __future__ import annotations

import fnmatch
import os
import sys

from drover.cli.common import NotRegularFile, read_regular_file
from drover.compat.gridengine.common import (
    approximator,
    host_name,
    is_strict,
    no_qmaster,
    user_name,
)
from drover.compat.gridengine.submission import Submission, after_clear, build, last
from drover.compat.gridengine.submit_options import QSUB_OPTIONS
from drover.compat.gridengine.syntax import (
    GeUsageError,
    Given,
    Operands,
    directive_words,
    file_words,
    parse,
    yes_no,
)
from drover.compat.optiontable import DROVER_OWN, Arity, Mark, Option
from drover.compat.submit_context import Context
from drover.core.errors import DroverError, NotFound, Unreachable

STATUS_EDISK = 14  # sgeobj/sge_answer.h: a file could not be read

OPTIONS = [*QSUB_OPTIONS, Option(("-strict",), Arity.NONE, Mark.SUPPORTED,
                                 f"{DROVER_OWN}: refuse what would be approximated (also DROVER_COMPAT_STRICT=1)")]

TYPE_CHECKING = False
if TYPE_CHECKING:
    from drover.client.client import Client


def main(argv: list[str] | None = None) -> int:
    try:
        return _main(list(sys.argv[1:] if argv is None else argv))
    except GeUsageError as error:
        print(f"qsub: {error}", file=sys.stderr)
        return error.status
    except Unreachable as error:  # before the submission (a -hold_jid name to look up)
        print(_unable_to_run(error), file=sys.stderr)
        return 1
    except DroverError as error:
        print(f"qsub: {error}", file=sys.stderr)
        return error.exit_code


def read_text(path: str) -> str:
    """A script or an option file (-@, sge_request): a regular file, in UTF-8 (what Drover
    carries of a job is text)."""
    try:
        data = read_regular_file(path)
    except NotRegularFile:
        raise GeUsageError(f"error opening {path}: not a regular file", STATUS_EDISK) from None
    except OSError as error:
        raise GeUsageError(f"error opening {path}: {error.strerror}", STATUS_EDISK) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise GeUsageError(f"{path} is not UTF-8 text (byte {error.start}); Drover takes job scripts in UTF-8",
                           STATUS_EDISK) from None


def default_requests(cwd: str, home: str) -> list[Given]:
    """The options of the sge_request files that exist, each read once, cluster-wide first."""
    paths = [os.path.join(home, ".sge_request"), os.path.join(cwd, ".sge_request")]
    if os.environ.get("SGE_ROOT"):
        cell = os.environ.get("SGE_CELL") or "default"
        paths.insert(0, os.path.join(os.environ["SGE_ROOT"], cell, "common", "sge_request"))
    given: list[Given] = []
    seen: set[str] = set()
    for path in paths:
        if not os.path.isfile(path) or os.path.realpath(path) in seen:
            continue
        seen.add(os.path.realpath(path))
        given += parse(file_words(read_text(path)), OPTIONS, Operands.NONE, path, read_text).given
    return given


def usage() -> str:
    lines = ["usage: qsub [options] [ command [ command_args ] | -- [ command_args ]]"]
    lines += [f"   [{' '.join(filter(None, (option.names[0], option.metavar)))}]" for option in OPTIONS]
    return "\n".join(lines)


def _main(argv: list[str]) -> int:
    command_line = parse(argv, OPTIONS, Operands.SCRIPT, read=read_text)
    if any(g.key == "help" for g in command_line.given):
        print(usage())
        return 0
    cwd, home = os.getcwd(), os.path.expanduser("~")
    defaults = default_requests(cwd, home)
    b_option = last(command_line.given, "b") or last(defaults, "b")
    binary = b_option is not None and yes_no(b_option)
    script_name, *arguments = command_line.operands or ["-"]
    if binary:
        if script_name == "-":
            raise GeUsageError("ERROR! -b y needs a command")
        script, from_script = script_name, []
    else:
        script = _read_script(script_name)
        prefix_option = last(command_line.given, "C")
        prefix = "#$" if prefix_option is None else prefix_option.value or ""
        from_script = [g for g in parse(directive_words(script, prefix), OPTIONS, Operands.NONE, "script",
                                        read_text).given if g.key != "C"]  # -C counts on the command line only
    given = after_clear([defaults, from_script, command_line.given])
    strict = is_strict(any(g.key == "strict" for g in given))
    ctx = Context(cwd=cwd, home=home, user=user_name(), host=host_name(), environ=dict(os.environ))
    terse = any(g.key == "terse" for g in command_line.given)  # qsub reads -terse from its command line only
    submission = build(given, script, arguments, script_name, binary, ctx, approximator("qsub", strict), terse)
    if submission.verify:
        _show(submission)
        return 0
    from drover.client.client import Client

    with Client(timeout_s=None) as client:
        # Grid Engine's holds end when the predecessor ends, however it ended (Slurm's afterany);
        # -hold_jid_ad holds each task for the task of the same index.
        submission.job["dependencies"] = [
            {"kind": "afterany", "job": job_id, "per_task": per_task}
            for names, per_task in ((submission.hold_on, False), (submission.hold_on_tasks, True))
            for job_id in _dependencies(client, names)]
        try:
            (job_id,) = client.submit([submission.job])
        except DroverError as error:
            print(_unable_to_run(error), file=sys.stderr)
            return 1
        print(_submitted(job_id, submission), flush=True)
        if not submission.sync:
            return 0
        return _sync(client, job_id)


def _read_script(name: str) -> str:
    if name == "-":
        script = sys.stdin.read()
        if not script:
            raise GeUsageError("Unable to read script file because of error: no input read from stdin", 4)
        return script
    try:
        return read_text(name)
    except GeUsageError as error:
        raise GeUsageError(f"Unable to read script file because of error: {error}", error.status) from None


def _submitted(job_id: int, submission: Submission) -> str:
    label = str(job_id)
    if submission.array:
        first, last_index, step = submission.array
        label = f"{job_id}.{first}-{last_index}:{step}"
    if submission.terse:
        return label
    kind = "job-array" if submission.array else "job"
    return f'Your {kind} {label} ("{submission.job["name"]}") has been submitted'


def _dependencies(client: Client, hold_on: list[str]) -> list[int]:
    """-hold_jid's ids, names and name patterns → the ids of jobs that have not ended. Grid
    Engine ignores a job that is gone (its end satisfies the hold), and so does this."""
    ids: list[int] = []
    patterns = [item for item in hold_on if not (item.isascii() and item.isdigit())]
    for item in hold_on:
        if (item.isascii() and item.isdigit()):
            try:
                if client.job(int(item)).ended_at is None:
                    ids.append(int(item))
            except NotFound:
                pass
    if patterns:
        me = user_name()
        for job in client.jobs():  # a name is the user's own jobs of that name (sge_types(1))
            if (job.owner == me and any(fnmatch.fnmatchcase(job.name, pattern) for pattern in patterns)
                    and job.ended_at is None):
                ids.append(job.id)
    return sorted(set(ids))


def _sync(client: Client, job_id: int) -> int:
    """-sync y: wait for the end and report each task as qsub does; the exit status is the first
    task's that is not 0 (a signal counts as 1). Interrupted (SIGINT, SIGTERM), qsub deletes the
    job, as Grid Engine's does (japi_exit(JAPI_EXIT_KILL_PENDING)), and exits 1."""
    import signal

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        client.wait(job_id)
    except KeyboardInterrupt:
        print("\nInterrupted!\nPlease wait while qsub shuts down.", file=sys.stderr, flush=True)
        from drover.client.client import Client

        with Client() as fresh:  # the interrupted long poll left the other connection mid-reply
            fresh.cancel([str(job_id)])
        return 1
    finally:
        signal.signal(signal.SIGTERM, previous)
    job = client.job(job_id)
    status = 0
    for task in sorted(job.tasks, key=lambda t: t.index):
        label = f"{job_id}.{task.index}" if job.array else str(job_id)
        attempt = task.attempts[-1] if task.attempts else None
        if attempt is None or attempt.started_at is None:
            print(f"Unable to run job {label}")
            continue
        if attempt.signal:
            print(f"Job {label} exited because of signal {signal.Signals(attempt.signal).name}.")
            code = 1
        else:
            code = task.exit_status or 0
            print(f"Job {label} exited with exit code {code}.")
        status = status or code
    return status


def _show(submission: Submission) -> None:
    """-verify: the job as it would be submitted, one `key: value` line each."""
    job = submission.job
    rows = [("job_name", job["name"]), ("cwd", job["workdir"]), ("stdout_path_list", job["output"]),
            ("stderr_path_list", job["error"] or "(joined)"), ("priority", job.get("priority", 0)),
            ("hard_queue_list", job.get("queue", "all.q")), ("job-array tasks", job.get("array")),
            ("h_rt", job.get("time_limit_s")), ("memory_mib", job.get("memory_mib")), ("slots", job["cpus"]),
            ("jid_predecessor_list", ",".join(submission.hold_on) or None),
            ("ja_ad_predecessor_list", ",".join(submission.hold_on_tasks) or None),
            ("mail_list", job.get("mail_user")), ("hold", "user" if job["hold"] else None)]
    for key, value in rows:
        if value is not None:
            print(f"{key + ':':<28}{value}")


if __name__ == "__main__":
    raise SystemExit(main())


def _unable_to_run(error: DroverError) -> str:
    """qsub's words for a submission that failed; for a qmaster that does not answer, commlib's
    line first."""
    if isinstance(error, Unreachable):
        first, reason = no_qmaster().split("\n")
        return f"{first}\nUnable to run job: {reason}.\nExiting."
    return f"Unable to run job: {error}.\nExiting."
