"""bsub: submit a job as IBM Spectrum LSF's bsub does, and say so as it does (`Job <12> is
submitted to default queue <normal>.`), the line clients read the job's id from.

The job is the command given (`bsub sleep 100`, run by /bin/sh as LSF runs it), or a script read
from stdin (`bsub < job.sh`). Options come from the script's `#BSUB` lines, then the command
line, which overrides them; a command that is a script file with `#BSUB` lines has them read
too, as LSF does with LSB_BSUB_PARSE_SCRIPT=Y.
"""

from __future__ import annotations

import os
import sys
import time

from drover.cli.common import NotRegularFile, read_regular_file
from drover.compat.lsf.common import (
    EXIT_FAILURE,
    host_name,
    is_strict,
    queue_name,
    start,
    user_name,
    warn,
)
from drover.compat.lsf.submission import Context, Submission, build, command_line_script
from drover.compat.lsf.submit_options import BSUB_OPTIONS
from drover.compat.lsf.syntax import Given, LsfUsageError, directive_words, parse, value
from drover.core.errors import BadRequest, NotFound

TYPE_CHECKING = False
if TYPE_CHECKING:
    from drover.client.client import Client

OPTIONS = BSUB_OPTIONS
USAGE = """Usage: bsub [-h] [-V] [-H] [-x] [-r | -rn] [-N] [-B] [-I | -Ip | -Is | -K]
            [-q queue_name ...] [-m "host_name[+[pref_level]] ..."]
            [-n min_processors[,max_processors]] [-R "res_req"]
            [-J job_name_spec] [-Jd "job_description"] [-b [[year:][month:]day:]hour:minute]
            [-w 'dependency_expression'] [-sp priority] [-u mail_user]
            [-o out_file | -oo out_file] [-e err_file | -eo err_file] [-cwd "current_working_dir"]
            [-env "none" | "all, [~]var_name[=var_value]..."] [-E "pre_exec_command"]
            [-Ep "post_exec_command"] [-L login_shell] [-M mem_limit] [-W [hour:]minute]
            [-p process_limit] [-gpu "num=N..."] [-P project_name] [-G user_group]
            [command [argument ...]]"""


def main(argv: list[str] | None = None) -> int:
    return start("bsub", argv, OPTIONS, USAGE, _submit, permute=False)


def _submit(command_line: list[Given], operands: list[str]) -> int:
    try:
        return _main(command_line, operands)
    except BadRequest as error:
        print(f"bsub: {error}. Job not submitted.", file=sys.stderr)
        return EXIT_FAILURE


def _main(command_line: list[Given], operands: list[str]) -> int:
    keys = {g.key for g in command_line}
    arguments: list[str] = []
    interactive = bool(keys & {"I", "Ip", "Is"})
    if operands:
        script_file = _script_file(operands[0])
        if script_file is not None:
            script, arguments, name = script_file, operands[1:], " ".join(operands)
        else:
            script, name = command_line_script(operands, value(command_line, "L") or None), " ".join(operands)
    elif interactive:
        script, name = "", os.path.basename(os.environ.get("SHELL") or "/bin/bash")
    else:
        if sys.stdin.isatty():
            print("bsub> ", end="", file=sys.stderr, flush=True)
        script = sys.stdin.read()
        name = next((line.strip() for line in script.splitlines() if line.strip()), "")
        if not name:
            raise LsfUsageError("No command is specified. Job not submitted.", usage=False)
    directives, _ = parse("bsub", directive_words(script), OPTIONS, permute=False, source="directive")
    given = directives + command_line
    ctx = Context(cwd=os.getcwd(), home=os.path.expanduser("~"), user=user_name(), host=host_name(),
                  environ=dict(os.environ), now=time.time(), unit=limits_unit())
    submission = build(given, script, name, arguments, ctx, _approximate)
    if submission.interactive:
        return _interactive(submission, operands)
    from drover.client.client import Client

    with Client(timeout_s=None) as client:
        _dependencies(client, submission, ctx.user)
        (number,) = client.submit([submission.job])
        queue = queue_name(submission.job.get("queue", "default"))
        where = f"queue <{queue}>" if submission.queue_given else f"default queue <{queue}>"
        print(f"Job <{number}> is submitted to {where}.", flush=True)
        if not submission.block:
            return 0
        return _wait(client, number)


def _script_file(word: str) -> str | None:
    """A command that is a script file with #BSUB lines: its text (its directives are read)."""
    if not os.path.isfile(word):
        return None
    try:
        data = read_regular_file(word)
    except (NotRegularFile, OSError):
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return text if any(line.startswith("#BSUB") for line in text.splitlines()) else None


def limits_unit() -> str:
    """LSF_UNIT_FOR_LIMITS of lsf.conf ($LSF_ENVDIR, else /etc), as LSF and its clients read it:
    the unit of a memory size given as a bare number; KB unless set."""
    directory = os.environ.get("LSF_ENVDIR") or os.environ.get("LSF_CONFDIR") or "/etc"
    try:
        with open(os.path.join(directory, "lsf.conf")) as conf:
            lines = conf.read().splitlines()
    except OSError:
        return "KB"
    for line in reversed(lines):
        key, equals, setting = line.strip().partition("=")
        if key.strip() == "LSF_UNIT_FOR_LIMITS" and equals and setting.strip()[:1].upper() in "KMGTPE":
            return setting.strip().upper()
    return "KB"


def _dependencies(client: Client, submission: Submission, user: str) -> None:
    """The jobs -w names must be known: by id, or by name (the user's newest job of that name,
    as LSF takes it); nothing is submitted otherwise."""
    for dependency in submission.job.get("dependencies", []):
        try:
            client.job(dependency["job"])
        except NotFound:
            raise LsfUsageError(f"{dependency['job']}: No matching job found. Job not submitted.",
                                usage=False) from None
    for named in submission.named:
        mine = [job for job in client.jobs(user=user, name=named.name, include_ended=True) if job.name == named.name]
        if not mine:
            raise LsfUsageError(f"{named.name}: No matching job found. Job not submitted.", usage=False)
        submission.job.setdefault("dependencies", []).append(
            {"kind": named.kind, "job": max(job.id for job in mine), "task": None})


def _wait(client: Client, number: int) -> int:
    """-K: LSF's messages as the job goes, then its exit code as bsub's."""
    print("<<Waiting for dispatch ...>>", file=sys.stderr, flush=True)
    while True:
        job = client.job(number)
        attempts = [a for task in job.tasks for a in task.attempts if a.started_at is not None]
        if attempts or job.ended_at is not None:
            break
        time.sleep(0.5)
    if attempts:
        print(f"<<Starting on {attempts[0].node}>>", file=sys.stderr, flush=True)
    info = client.wait(number)
    print("<<Job is finished>>", file=sys.stderr, flush=True)
    status = info.exit_status if info is not None else None
    return status if status is not None else 0


def _approximate(message: str) -> None:
    if is_strict():
        raise BadRequest(f"{message} (refused under DROVER_COMPAT_STRICT=1)")
    warn("bsub", message)


def _interactive(submission: Submission, operands: list[str]) -> int:
    """-I, -Ip, -Is: the job runs here, as `drover run` runs it (on a terminal when bsub has
    one; without, the commands on stdin run), with bsub -I's messages; its exit status is
    bsub's."""
    job = submission.job
    if job.get("array") or job.get("pe"):
        raise BadRequest("-I: an interactive job is one job on one host (no array, no span[ptile])")
    from drover.compat.interactive import run_arguments

    arguments = run_arguments(job, dict(job.get("environment", {})))
    shell = os.environ.get("SHELL") or "/bin/bash"
    from drover.client.client import Client

    with Client() as client:  # a front end never starts a cluster: no server is an error
        client.ping()
    print("<<Waiting for dispatch ...>>", file=sys.stderr, flush=True)
    from drover.cli.main import main as drover

    if operands:
        command = ["/bin/sh", "-c", " ".join(operands)]
    elif sys.stdin.isatty():
        command = [shell, "-l"]
    else:
        command = [shell, "-c", sys.stdin.read()]
    status = drover(["run", *arguments, "--", *command])
    print("<<Job is finished>>", file=sys.stderr, flush=True)
    return status


if __name__ == "__main__":
    raise SystemExit(main())
