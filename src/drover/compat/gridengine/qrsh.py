"""qrsh: run a command (or a login shell) on the cluster as an interactive job, its terminal and
exit status relayed here: `drover run`, with `--pty` when qrsh has a terminal or -pty y."""

from __future__ import annotations

import os
import sys

from drover.compat.gridengine.common import approximator, failed, is_strict
from drover.compat.gridengine.jobaction import usage
from drover.compat.gridengine.qsub import read_text
from drover.compat.gridengine.submission import (
    ARCH,
    EXCLUSIVE,
    GPUS,
    arch_constraint,
    boolean_value,
    every,
    gpus_request,
    last,
)
from drover.compat.gridengine.submit_options import QRSH_OPTIONS
from drover.compat.gridengine.syntax import GeUsageError, Given, Operands, parse, yes_no
from drover.compat.gridengine.values import memory_mib, time_s
from drover.compat.optiontable import Mark
from drover.core.errors import DroverError

OPTIONS = QRSH_OPTIONS


def main(argv: list[str] | None = None) -> int:
    try:
        parsed = parse(list(sys.argv[1:] if argv is None else argv), OPTIONS, Operands.SCRIPT, read=read_text)
        given = parsed.given
        if any(g.key == "help" for g in given):
            print(usage("qrsh", OPTIONS, "[ command [ command_args ]]"))
            return 0
        if any(g.key == "inherit" for g in given):
            return _inherit(parsed.operands)
        arguments = drover_run_arguments(given, parsed.operands, sys.stdin.isatty())
    except GeUsageError as error:
        print(f"qrsh: {error}", file=sys.stderr)
        return error.status
    except DroverError as error:
        print(f"qrsh: {error}", file=sys.stderr)
        return 1
    from drover.client.client import Client

    try:  # a front end never starts a cluster (`drover run` would): no qmaster is an error
        with Client() as client:
            client.ping()
    except DroverError as error:
        return failed("qrsh", error)
    from drover.cli.main import main as drover

    return drover(["run", *arguments])


def _inherit(operands: list[str]) -> int:
    """GE's tight integration: `qrsh -inherit HOST CMD [ARGS]`, from inside a running parallel job,
    starts CMD on HOST (a host of the job's) as a task of the job, prints its output, and exits
    with its status (`drover task start HOST -- CMD`)."""
    if len(operands) < 2:
        raise GeUsageError("-inherit: give the host and the command: qrsh -inherit HOST COMMAND [ARGS]", 1)
    from drover.cli.commands.task import start_and_wait

    return start_and_wait(operands[0], operands[1:], "qrsh")


def drover_run_arguments(given: list[Given], command: list[str], on_terminal: bool) -> list[str]:
    """qrsh's options as `drover run`'s. Pure but for the warnings it prints."""
    approximate = approximator("qrsh", is_strict())
    for option in {g.option.names[0]: g.option for g in given}.values():
        if option.mark is Mark.REFUSED:
            raise GeUsageError(f"{option.names[0]}: {option.note}", 1)
        if option.mark is Mark.APPROXIMATED and option.key not in ("l", "pe", "q"):
            approximate(f"{option.names[0]}: {option.note}")
    out: list[str] = []
    name = last(given, "N")
    if name is not None:
        out += ["--name", name.value or ""]
    wd = last(given, "wd")
    out += ["--workdir", os.path.abspath(wd.value or ".") if wd else
            os.getcwd() if last(given, "cwd") else os.path.expanduser("~")]
    slots = 1
    pe = last(given, "pe")
    if pe is not None and pe.value:
        pe_name, _, spec = pe.value.partition(" ")
        slots = int(spec.split("-")[0] or 1) if spec.split("-")[0].isdigit() else 1
        out += ["--pe", pe_name, spec]  # the cluster's parallel environment of that name
    for item in every(given, "l"):
        key, _, value = item.partition("=")
        if key in ("h_rt", "s_rt"):
            limit = time_s(value)
            if limit is not None:
                out += ["--time", f"{limit}s"]
        elif key in ("h_vmem", "s_vmem", "mem_free", "virtual_free", "mem"):
            out += ["--mem", f"{memory_mib(value) * slots}M"]
        elif key in GPUS:
            out += ["--gres", gpus_request(key, value)]
        elif key in ARCH:
            out += ["--constraint", arch_constraint(key, value)]
        elif key in EXCLUSIVE:
            if boolean_value(key, value or "TRUE"):
                out.append("--exclusive")
        else:
            approximate(f"-l {key}: qrsh on Drover sends only time, memory, gpu, arch and exclusive requests; "
                        "ignored")
    queue = last(given, "q")
    if queue is not None and queue.value and not queue.soft:
        name_only = queue.value.split(",")[0].split("@")[0]
        out += ["--queue", "default" if name_only == "all.q" else name_only]
    priority = last(given, "p")
    if priority is not None:
        out += ["--priority", priority.value or "0"]
    for item in every(given, "v", None):
        key, sep, value = item.partition("=")
        out += ["--env", f"{key}={value if sep else os.environ.get(key, '')}"]
    pty = last(given, "pty")
    if yes_no(pty) if pty is not None else on_terminal:
        out.append("--pty")
    return [*out, "--", *(command or ["bash", "-l"])]


if __name__ == "__main__":
    raise SystemExit(main())
