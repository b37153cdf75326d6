"""condor_submit: submit the jobs a submit description file queues, as one cluster (one Drover
job, an array of its procs), and print `N job(s) submitted to cluster C.`. Procs whose requests
differ are several clusters (submission.py), submitted together in one request: all or none;
then one such line for each.

The file is the one named, or stdin (`-` or none); `key=value` operands come before its first
line, `-append` lines just before its queue statement. The job event log (`log = FILE`) is
written as the submitter: its submit events here, the rest by the follower (follow.py) this
starts when the file names a log or transfers files back.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from typing import Any

from drover.compat.htcondor import eventlog
from drover.compat.htcondor.common import (
    CondorUsageError,
    every,
    last,
    parse,
    schedd_address,
    user_name,
)
from drover.compat.htcondor.submission import CLUSTER, Context, Plan, build
from drover.compat.htcondor.submitfile import Queue, SubmitFileError
from drover.compat.htcondor.submitfile import parse as parse_file
from drover.compat.optiontable import Arity, Mark, Option
from drover.core.errors import BadRequest, DroverError

OPTIONS = [
    Option(("-append", "-a"), Arity.REQUIRED, Mark.SUPPORTED, "a command, as if just before the queue statement "
           "(a `queue` line when the file has none)", "command"),
    Option(("-batch-name",), Arity.REQUIRED, Mark.SUPPORTED, "the batch name (JobBatchName; the Drover job's name)",
           "name"),
    Option(("-disable",), Arity.NONE, Mark.MEANINGLESS, "no file permission checks are made"),
    Option(("-dry-run",), Arity.REQUIRED, Mark.REFUSED, "Drover submits or refuses; it writes no job ads", "file"),
    Option(("-file",), Arity.REQUIRED, Mark.SUPPORTED, "the submit description file", "submit-file"),
    Option(("-help",), Arity.NONE, Mark.SUPPORTED, "the usage"),
    Option(("-interactive",), Arity.NONE, Mark.REFUSED, "an interactive job is `drover run --pty`"),
    Option(("-maxjobs",), Arity.REQUIRED, Mark.SUPPORTED, "refuse a submit of more jobs", "number"),
    Option(("-name",), Arity.REQUIRED, Mark.REFUSED, "Drover's cluster has one queue of jobs (no other schedd)",
           "schedd"),
    Option(("-pool",), Arity.REQUIRED, Mark.REFUSED, "the cluster is the one `drover` finds", "host"),
    Option(("-queue",), Arity.REQUIRED, Mark.SUPPORTED, "a queue statement for a file that has none", "queue-opts"),
    Option(("-remote",), Arity.REQUIRED, Mark.REFUSED, "Drover's cluster has one queue of jobs (no other schedd)",
           "schedd"),
    Option(("-single-cluster",), Arity.NONE, Mark.SUPPORTED, "refuse a submit whose procs' requests differ (which "
           "would be several clusters)"),
    Option(("-spool",), Arity.NONE, Mark.APPROXIMATED, "the files are read where they are"),
    Option(("-terse",), Arity.NONE, Mark.SUPPORTED, "print the first and last job id only"),
    Option(("-verbose",), Arity.NONE, Mark.APPROXIMATED, "prints what the default prints"),
]

USAGE = """Usage: condor_submit [options] [<attrib>=<value>] [- | <submit-file>]
    [options] are
	-file <submit-file>	Read Submit commands from <submit-file>
	-terse  		Display terse output, jobid ranges only
	-append <line>		add line to submit file before processing
	-queue <queue-opts>	append Queue statement to submit file before processing
	-batch-name <name>	append a line to submit file that sets the batch name
	-maxjobs <maxjobs>	Do not submit if number of jobs would exceed <maxjobs>."""


def main(argv: list[str] | None = None) -> int:
    try:
        return _main(list(sys.argv[1:] if argv is None else argv))
    except CondorUsageError as error:
        print(f"{error}\n{USAGE}" if str(error).startswith("Error: unrecognized") else str(error), file=sys.stderr)
        return error.status
    except (BadRequest, SubmitFileError) as error:
        print(f"\n{error}" if str(error).startswith("ERROR") else f"\nERROR: {error}", file=sys.stderr)
        return 1
    except DroverError as error:
        print(f"\nERROR: Failed to connect to local queue manager\n{error}", file=sys.stderr)
        return 1


def _main(argv: list[str]) -> int:
    given, operands = parse("condor_submit", argv, OPTIONS)
    if last(given, "help") is not None:
        print(USAGE)
        return 0
    for g in given:
        if g.option.mark is Mark.REFUSED:
            raise CondorUsageError(f"condor_submit: {g.spelled} is not supported by Drover: {g.option.note}")
        if g.option.mark is Mark.APPROXIMATED:
            _approximate(f"{g.spelled}: {g.option.note}")
    before = [tuple(word.split("=", 1)) for word in operands if "=" in word.split(" ", 1)[0]]
    files = [word for word in operands if "=" not in word.split(" ", 1)[0]]
    if last(given, "file") is not None:
        files.append(last(given, "file").value or "")  # type: ignore[union-attr]
    if len(files) > 1:
        raise CondorUsageError(f"condor_submit: only one submit file may be given, not {' '.join(files)}")
    name = files[0] if files else "-"
    text = _read(name)
    append = every(given, "append")
    if last(given, "batch-name") is not None:
        append.insert(0, f"batch_name = {last(given, 'batch-name').value}")  # type: ignore[union-attr]
    queue = last(given, "queue")
    submit = parse_file(text, _read_items)
    if queue is not None:
        if any(isinstance(s, Queue) for s in submit.statements):
            raise BadRequest("ERROR: -queue argument conflicts with queue statement in submit file")
        append.append(f"queue {queue.value}")
    cwd = os.getcwd()
    from drover.client.client import Client

    with Client(timeout_s=None) as client:
        node_ads = []
        if "requirements" in text.lower() or any("requirements" in a.lower() for a in append):
            from drover.compat.htcondor.machines import machine_ad

            node_ads = [machine_ad(node) for node in client.nodes()]
        ctx = Context(cwd=cwd, environ=dict(os.environ), user=user_name(), read_bytes=_read_bytes,
                      node_ads=node_ads)
        plans = build(submit, ctx, _approximate, [(k.strip(), v.strip()) for k, v in before], append)
        count = sum(len(plan.procs) for plan in plans)
        if len(plans) > 1 and last(given, "single-cluster") is not None:
            raise BadRequest("ERROR: -single-cluster: the procs' requests differ, so Drover would submit them as "
                             f"{len(plans)} clusters (one per run of procs with the same request)")
        most = last(given, "maxjobs")
        if most is not None and (not (most.value or "").isdigit() or count > int(most.value or 0)):
            raise BadRequest(f"ERROR: Number of submitted jobs would exceed -maxjobs ({most.value})")
        clusters = client.submit([plan.job for plan in plans])
    requests = [_log_submission(plan, cluster) for plan, cluster in zip(plans, clusters, strict=True)]
    _hand_over([r for r in requests if r is not None])
    if last(given, "terse") is not None:
        for plan, cluster in zip(plans, clusters, strict=True):
            print(f"{cluster}.{plan.procs[0].process} - {cluster}.{plan.procs[-1].process}")
    else:
        print("Submitting job(s)" + "." * count)
        for plan, cluster in zip(plans, clusters, strict=True):
            print(f"{len(plan.procs)} job(s) submitted to cluster {cluster}.")
    sys.stdout.flush()
    return 0


def _read(name: str) -> str:
    from drover.cli.common import NotRegularFile, read_regular_file

    if name == "-":
        return sys.stdin.read()
    try:
        data = read_regular_file(name)
    except NotRegularFile:
        raise BadRequest(f"ERROR: Failed to open command file ({name}) (not a regular file)") from None
    except OSError as error:
        raise BadRequest(f"ERROR: Failed to open command file ({name}) ({error.strerror})") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise BadRequest(f"ERROR: {name} is not UTF-8 text") from None


def _read_items(path: str) -> str:
    from drover.cli.common import read_regular_file

    return read_regular_file(path).decode("utf-8", errors="replace")


def _read_bytes(path: str) -> bytes:
    from drover.cli.common import read_regular_file

    return read_regular_file(path)


def _approximate(message: str) -> None:
    if os.environ.get("DROVER_COMPAT_STRICT") == "1":
        raise BadRequest(f"ERROR: {message} (refused under DROVER_COMPAT_STRICT=1)")
    print(f"WARNING: {message}", file=sys.stderr)


def _log_submission(plan: Plan, cluster: int) -> dict[str, Any] | None:
    """The submit events (and a hold's), here, as the submitter; and what the follower needs
    for the rest (None: nothing to follow)."""
    now = time.time()
    host = schedd_address()
    logs = {p.process: p.log.replace(CLUSTER, str(cluster)) for p in plan.procs if p.log}
    held = bool(plan.job.get("hold"))
    for process, path in list(logs.items()):  # each proc's own: one log refused, the others are written
        text = eventlog.submitted(cluster, process, now, host)
        if held:
            text += eventlog.held(cluster, process, now, "submitted on hold at user's request", 15)
        try:
            eventlog.append(path, text)
        except OSError as error:
            print(f"\nWARNING: Can't open \"{path}\" for the job event log ({error.strerror or error})", file=sys.stderr)
            logs.pop(process)
    if not logs and not plan.sandbox:
        return None
    job = plan.job
    return {"cluster": cluster, "owner": user_name(), "logs": {str(k): v for k, v in logs.items()},
            "iwds": {str(p.process): p.iwd.replace(CLUSTER, str(cluster)) for p in plan.procs},
            "sandbox": plan.sandbox, "staged_in": plan.staged_in, "held": held,
            "request": {"cpus": job.get("cpus", 1), "memory_mb": job.get("memory_mib", 0),
                        "disk_kb": plan.extras.get("disk", 0), "gpus": _gpus(job.get("gres", []))}}


def _hand_over(requests: list[dict[str, Any]]) -> None:
    """The clusters to the user's event log follower for this cluster: the one that runs, else
    one started here, holding the lock this took (handoff.py says why no request is lost)."""
    if not requests:
        return
    from drover.compat.htcondor import handoff
    from drover.config import api_socket

    tag = handoff.tag(api_socket())
    try:
        path = handoff.directory()
        for request in requests:
            handoff.put(path, f"{tag}.{request['cluster']}", request)
        fd = handoff.claim(path, tag)
    except OSError as error:
        print(f"\nWARNING: the job event log will not be written past the submit: {error}", file=sys.stderr)
        return
    if fd is None:
        return  # the running follower takes them
    try:
        subprocess.Popen([sys.executable, "-m", "drover.compat.htcondor.follow", path, tag, str(fd)],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True, cwd="/", close_fds=True, pass_fds=(fd,))
    except OSError as error:  # the request stays: the next condor_submit's follower takes it
        print(f"\nWARNING: the job event log follower could not be started: {error}", file=sys.stderr)
    finally:
        os.close(fd)  # the follower holds the lock through its own copy


def _gpus(gres: list[str]) -> int:
    return sum(int(item.rsplit(":", 1)[-1]) for item in gres if item.startswith("gpu") and item[-1].isdigit())




if __name__ == "__main__":
    raise SystemExit(main())
