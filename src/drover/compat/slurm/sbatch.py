"""sbatch: submit a batch script as Slurm's sbatch does (src/sbatch/sbatch.c and opt.c).

The options are read from the script's #SBATCH lines, then the SBATCH_* variables, then the
command line, each winning over the one before. The script is read and stored when sbatch
runs (callers often delete it the moment sbatch returns), and it runs with its own interpreter
(its #! line) and its arguments, as on Slurm. Exit statuses as sbatch's: 0 when submitted; 255
for an option sbatch refuses while reading its options; 1 (or SLURM_EXIT_ERROR) when the script
or the submission fails; with --wait, the job's exit status.
"""

from __future__ import annotations

import os
import secrets
import shlex
import sys
from collections.abc import Sequence

from drover.cli.common import NotRegularFile, read_regular_file
from drover.compat.slurm import submit_options
from drover.compat.slurm.common import VERSION, slurm_words
from drover.compat.slurm.directives import sbatch_directives
from drover.compat.slurm.reporting import reporting_errors
from drover.compat.slurm.request import OptionError, Refused, Request, apply_marks, parse
from drover.compat.slurm.submission import to_job
from drover.core.errors import DroverError

OPTIONS = submit_options.options_for("sbatch")


def main(argv: Sequence[str] | None = None) -> int:
    return reporting_errors("sbatch", lambda: _main(list(sys.argv[1:] if argv is None else argv)))


def _main(argv: list[str]) -> int:
    # First pass, as sbatch's: the command line alone, to find the script and its arguments.
    found, operands = parse("sbatch", argv)
    command_line = Request("sbatch")
    command_line.add(found, "the command line")
    if command_line.has("help") or command_line.has("usage"):
        return _help(command_line.has("help"))
    if command_line.has("version"):
        print(VERSION)
        return 0
    wrap = command_line.value("wrap")
    if wrap is not None and operands:
        raise Refused("Script arguments not permitted with --wrap option")
    if wrap is not None:
        script, file, default_name = f"#!/bin/sh\n# This script was created by sbatch --wrap.\n\n{wrap}\n", "", "wrap"
    else:
        file = operands[0] if operands else ""
        script = read_script(file)
        default_name = os.path.basename(file) if file else "sbatch"

    # Second pass: the script's directives, then the environment, then the command line.
    request = Request("sbatch")
    if wrap is None:
        found_in_script = sbatch_directives(script, file or "stdin")
        if found_in_script.old_prefix:
            print("sbatch: error: Change from #SLURM to #SBATCH in your script and verify the options are valid "
                  "in sbatch", file=sys.stderr)
        _add_directives(request, found_in_script.words, found_in_script.lines)
    request.add_environment(os.environ)
    request.add(found, "the command line")
    strict = request.has("strict") or os.environ.get("DROVER_COMPAT_STRICT") == "1"
    apply_marks(request, strict)
    job = to_job(request, wrapped(script, operands[1:]) if wrap is None else script, default_name)

    from drover.client.client import Client

    with Client(timeout_s=None) as client:
        try:
            (job_id,) = client.submit([job])
        except DroverError as error:
            raise Refused(f"Batch job submission failed: {slurm_words(error)}") from None
        if not request.has("quiet") or request.has("parsable"):
            print(job_id if request.has("parsable") else f"Submitted batch job {job_id}", flush=True)
        if not request.has("wait"):
            return 0
        ended = client.wait(job_id)
    return job_exit_status(ended)


def _add_directives(request: Request, words: list[str], lines: list[int]) -> None:
    """The directives are one argument list to getopt, as in sbatch; a word that is not an option
    ends it, and sbatch calls that an invalid directive."""
    found, rest = parse("sbatch", words)
    if rest:
        index = len(words) - len(rest)
        line = lines[index] if index < len(lines) else 0
        raise OptionError(f"Invalid directive found in batch script: {rest[0]}" + (f" (line {line})" if line else ""))
    request.add(found, "#SBATCH")


def read_script(file: str) -> str:
    """The script, checked as sbatch checks it; from standard input when no file is named."""
    try:
        data = read_regular_file(file) if file else sys.stdin.buffer.read()
    except NotRegularFile:
        raise Refused(f"Unable to open file {file}: not a regular file") from None
    except OSError:
        raise Refused(f"Unable to open file {file}") from None
    if not data:
        raise Refused("Batch script is empty!")
    if not data.strip():
        raise Refused("Batch script contains only whitespace!")
    if not data.startswith(b"#!"):
        raise Refused("This does not look like a batch script.  The first\n"
                      "sbatch: error: line must start with #! followed by the path to an interpreter.\n"
                      "sbatch: error: For instance: #!/bin/sh")
    if b"\0" in data:
        raise Refused("The Slurm controller does not allow scripts that\n"
                      "sbatch: error: contain a NULL character '\\0'.")
    if b"\r\n" in data:
        raise Refused("Batch script contains DOS line breaks (\\r\\n)\n"
                      "sbatch: error: instead of expected UNIX line breaks (\\n).")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise Refused(f"{file or 'the script'} is not UTF-8 text (byte {error.start}); Drover takes job scripts "
                      "in UTF-8") from None


def wrapped(script: str, arguments: list[str]) -> str:
    """Drover runs a job's script with bash; Slurm runs it as a program, with its own #! line and
    its arguments. So the job is a few lines of bash that write the script, unchanged, where
    Slurm keeps it (a file named slurm_script), and start it with its interpreter and arguments
    as the kernel would (the #! line's one optional argument, whole), so a node whose TMPDIR
    does not allow executing files runs it all the same."""
    end = "SLURM_SCRIPT_" + secrets.token_hex(8)
    body = script if script.endswith("\n") else script + "\n"
    interpreter, *argument = script[2:].split("\n", 1)[0].strip().split(None, 1)
    start = [shlex.quote(word.strip()) for word in (interpreter, *argument)]
    return ("#!/bin/bash\n"
            'slurm_script="${TMPDIR:-/tmp}/slurm_script"\n'
            f"cat > \"$slurm_script\" <<'{end}'\n{body}{end}\n"
            'chmod 700 "$slurm_script"\n'
            "export SLURM_TASK_PID=$$\n"  # the batch step's task is this process, after the exec
            f'exec {" ".join(start)} "$slurm_script"{"".join(" " + shlex.quote(word) for word in arguments)}\n')


def job_exit_status(job: object) -> int:
    """sbatch --wait: the highest exit code of the job's tasks; 1 for one killed by a signal."""
    from drover.protocol.api import JobInfo

    assert isinstance(job, JobInfo)
    worst = 0
    for task in job.tasks:
        attempt = task.attempts[-1] if task.attempts else None
        if attempt is not None and attempt.exit_code is not None and attempt.signal is None:
            worst = max(worst, attempt.exit_code)
        elif task.state != "completed":
            worst = max(worst, 1)
    return worst


def _help(full: bool) -> int:
    print("Usage: sbatch [OPTIONS(0)...] [ : [OPTIONS(N)...]] script(0) [args(0)...]")
    if full:
        print("\nOptions Drover takes (docs/compat.md says what each does here):")
        for option in OPTIONS:
            print(f"  {', '.join(option.names):<28} {option.metavar:<20} {option.mark.value} {option.note}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
