"""qsub: submit a job script as PBS Pro's and Torque's qsub do, and print its id (`12.server`,
an array `12[].server`).

Options come from the script's `#PBS` directives (another prefix with -C or $PBS_DPREFIX) and
the command line, which overrides them. The script is the file named, or stdin when none is
(`echo cmd | qsub`); `qsub [options] -- command [args]` runs a command.
"""

from __future__ import annotations

import os
import shlex
import sys
import time

from drover.cli.common import NotRegularFile, read_regular_file
from drover.compat.pbs.common import (
    EXIT_UNKNOWN_JOB,
    host_name,
    is_strict,
    job_id,
    start,
    user_name,
    warn,
)
from drover.compat.pbs.submission import Submission, build
from drover.compat.pbs.submit_options import QSUB_OPTIONS
from drover.compat.pbs.syntax import Given, PbsUsageError, directive_words, last, parse
from drover.compat.submit_context import Context
from drover.core.errors import BadRequest, NotFound

TYPE_CHECKING = False
if TYPE_CHECKING:
    from drover.client.client import Client

OPTIONS = QSUB_OPTIONS
EXIT_SCRIPT = 1  # qsub: the script cannot be read

USAGE = """usage: qsub [-a date_time] [-A account_string] [-c interval]
	[-C directive_prefix] [-e path] [-f ] [-h ] [-I [-X]] [-j oe|eo] [-J X-Y[:Z]]
	[-k keep] [-l resource_list] [-m mail_options] [-M user_list]
	[-N jobname] [-o path] [-p priority] [-P project] [-q queue] [-r y|n]
	[-R o|e|oe] [-S path] [-u user_list] [-W otherattributes=value...]
	[-v variable_list] [-V ] [-z] [script | -- command [arg1 ...]]
       qsub --version"""


def main(argv: list[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    return start("qsub", words, OPTIONS, USAGE, lambda given, operands: _main(words, given, operands), permute=False)


def _main(argv: list[str], command_line: list[Given], operands: list[str]) -> int:
    arguments: list[str] = []
    before_operands = len(argv) - len(operands)
    command_given = before_operands > 0 and argv[before_operands - 1] == "--"
    if command_given:
        if not operands:
            raise PbsUsageError("qsub: -- must be followed by a command")
        script_name, script = operands[0], f"exec {shlex.join(operands)}\n"
    elif len(operands) > 1:
        raise PbsUsageError("qsub: only one script may be given (use -- to run a command with arguments)")
    elif "I" in {g.key for g in command_line}:
        script_name, script = "-", ""
    else:
        script_name = operands[0] if operands else "-"
        script = _read_script(script_name)
    prefix_option = last(command_line, "C")
    prefix = prefix_option.value or "" if prefix_option else os.environ.get("PBS_DPREFIX", "#PBS")
    directives, _ = parse("qsub", directive_words(script, prefix), OPTIONS, permute=False, source="directive")
    given: list[Given] = [g for g in directives if g.key != "C"] + command_line
    cwd, home = os.getcwd(), os.path.expanduser("~")
    ctx = Context(cwd=cwd, home=home, user=user_name(), host=host_name(), environ=dict(os.environ), now=time.time())
    submission = build(given, script, "STDIN" if script_name == "-" else script_name, arguments, ctx, _approximate)
    if submission.interactive:
        return _interactive(submission)
    from drover.client.client import Client

    with Client(timeout_s=None) as client:
        _check_dependencies(client, submission)
        (number,) = client.submit([submission.job])
        if not submission.quiet:
            print(job_id(number, submission.array), flush=True)
        if not submission.block:
            return 0
        info = client.wait(number)
    status = info.exit_status if info is not None else None
    return status if status is not None else 0


def _check_dependencies(client: Client, submission: Submission) -> None:
    """A dependency on a job the cluster does not know is PBS's error for a job id it does not
    know, and nothing is submitted."""
    for dependency in submission.job.get("dependencies", []):
        try:
            client.job(dependency["job"])
        except NotFound:
            raise PbsUsageError(f"qsub: Unknown Job Id {job_id(dependency['job'])}", EXIT_UNKNOWN_JOB,
                                usage=False) from None


def _approximate(message: str) -> None:
    if is_strict():
        raise BadRequest(f"{message} (refused under DROVER_COMPAT_STRICT=1)")
    warn("qsub", message)


def _read_script(name: str) -> str:
    if name == "-":
        if sys.stdin.isatty():
            print("Job script will be read from standard input. Submit with CTRL+D.", file=sys.stderr)
        return sys.stdin.read()
    try:
        data = read_regular_file(name)
    except NotRegularFile:
        raise PbsUsageError(f"qsub: script file:: {name} is not a regular file", EXIT_SCRIPT, usage=False) from None
    except OSError as error:
        raise PbsUsageError(f"qsub: script file:: {error.strerror}", EXIT_SCRIPT, usage=False) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise PbsUsageError(f"qsub: {name} is not UTF-8 text; Drover takes job scripts in UTF-8", EXIT_SCRIPT,
                            usage=False) from None


def _interactive(submission: Submission) -> int:
    """-I: the job runs on a terminal here, as `drover run --pty` runs it, with qsub -I's
    banners; without a terminal, the commands on stdin run; its exit status is qsub's."""
    job = submission.job
    if job.get("array") or job.get("pe"):
        raise BadRequest("-I: an interactive job is one job on one node (no -J, no chunks on several nodes)")
    from drover.compat.interactive import run_arguments

    environment = dict(job.get("environment", {}))
    environment["PBS_ENVIRONMENT"] = "PBS_INTERACTIVE"
    arguments = run_arguments(job, environment)
    shell = os.environ.get("SHELL") or "/bin/bash"
    from drover.client.client import Client

    with Client() as client:  # a front end never starts a cluster: no server is an error
        client.ping()
    print("qsub: waiting for job to start", file=sys.stderr)
    from drover.cli.main import main as drover

    # Without a terminal, the commands qsub -I reads from stdin are the shell's (`drover run`
    # relays a job's input only on a terminal).
    command = [shell, "-l"] if sys.stdin.isatty() else [shell, "-c", sys.stdin.read()]
    status = drover(["run", *arguments, "--", *command])
    print("qsub: job completed", file=sys.stderr)
    return status

