"""From a submit description to Drover jobs: decided once, on plain data.

A cluster is one Drover job: an array of its procs when it has more than one, the task index
being the ProcId. What differs between procs (arguments, environment, initialdir, output files,
stdin) is chosen by the job's script from its task index. What Drover holds per job is one
request for all its tasks, so a submit whose procs request differently (request_cpus,
request_memory, request_disk, request_gpus, requirements) is cut where the request changes:
each run of consecutive procs with the same request is a cluster of its own (a Drover job),
its procs keeping the numbers the file gave them (a submit of procs 0-3 cut after 1 is cluster
C with 0 and 1, and cluster C' with 2 and 3), so $(Process) and every name made of it stay
those of the file. Priority and hold must be the same for every proc. A cluster's id is only
known once Drover took the job: values that name $(Cluster) are written with CLUSTER (the
script reads $DROVER_JOB_ID, output patterns %j), and condor_submit puts the number in what it
writes itself (the event log's path).
"""

from __future__ import annotations

import base64
import json
import os
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from drover.compat.htcondor import classad
from drover.compat.htcondor.submit_commands import IGNORED
from drover.compat.htcondor.submitfile import Proc, SubmitFile, SubmitFileError, procs
from drover.compat.htcondor.values import (
    SubmitValueError,
    arguments,
    boolean,
    environment,
    file_list,
    size_kib,
)
from drover.core.errors import BadRequest
from drover.protocol.plain import JobRequest, StagedFileRequest

CLUSTER = "@@DROVER_CLUSTER@@"
PROCESS = "@@DROVER_PROCESS@@"
UNIVERSES = ("vanilla", "standard", "scheduler", "local", "grid", "java", "vm", "parallel", "docker", "container")
VANILLA = 5  # JobUniverse
COMMENT_LIMIT = 1024  # what Drover keeps of a job's comment, where the cluster's ad extras go
LOWEST_PRIORITY, HIGHEST_PRIORITY = -1023, 1023


@dataclass(frozen=True)
class Context:
    """What condor_submit knows besides the file."""

    cwd: str
    environ: Mapping[str, str]
    user: str
    read_bytes: Callable[[str], bytes]  # a file to stage in, read as the user
    is_dir: Callable[[str], bool] = os.path.isdir
    node_ads: list[dict[str, Any]] = field(default_factory=list)  # the cluster's nodes, for requirements


@dataclass
class ProcPlan:
    """What condor_submit and the event log follower need of each proc."""

    process: int
    log: str | None  # absolute, with CLUSTER where $(Cluster) was
    iwd: str


@dataclass
class Plan:
    """One cluster: one Drover job."""

    job: JobRequest
    procs: list[ProcPlan]
    sandbox: bool  # should_transfer_files = YES: output files come back to each proc's iwd
    staged_in: bool
    extras: dict[str, Any]  # what condor_q shows that Drover does not keep (the job's comment)


def build(submit: SubmitFile, ctx: Context, approximate: Callable[[str], None],
          before: Sequence[tuple[str, str]] = (), append: Sequence[str] = ()) -> list[Plan]:
    """The clusters of the submit, in proc order: one, unless its procs' requests differ."""
    said: set[str] = set()

    def once(message: str) -> None:  # each cluster is built alike: each warning said once
        if message not in said:
            said.add(message)
            approximate(message)

    try:
        real = procs(submit, CLUSTER, ctx.environ, before, append)
        if not real:
            raise BadRequest("ERROR: No queue statement: nothing to submit")
        tokened = procs(submit, CLUSTER, ctx.environ, before, append, process_token=PROCESS)
        _same([p.get("hold") for p in real], "hold")
        _same([p.get("priority").strip() for p in real], "priority")
        return [_build(real[start:end], tokened[start:end], ctx, once)
                for start, end in runs([request_key(p) for p in real])]
    except (SubmitValueError, SubmitFileError, classad.ClassAdError) as error:
        raise BadRequest(str(error) if str(error).startswith("ERROR") else f"ERROR: {error}") from None


def runs(keys: Sequence[Any]) -> list[tuple[int, int]]:
    """The runs of equal consecutive keys, as (start, end) slices: [1, 1, 2, 1] → [(0, 2), (2, 3),
    (3, 4)]. Runs, not groups: procs keep their order, so each cluster's ProcIds are one range."""
    out: list[tuple[int, int]] = []
    start = 0
    for i in range(1, len(keys) + 1):
        if i == len(keys) or keys[i] != keys[start]:
            out.append((start, i))
            start = i
    return out


def request_key(proc: Proc) -> tuple[Any, ...]:
    """What a Drover job holds once for all its tasks and a proc may set apart from the others:
    its request (CPUs, memory, disk, GPUs) and requirements."""
    return (_cpus(proc), _size(proc, "request_memory", 1024) or _size(proc, "requestmemory", 1024),
            _size(proc, "request_disk", 1) or _size(proc, "requestdisk", 1),
            (proc.get("request_gpus") or proc.get("requestgpus")).strip(), proc.get("requirements").strip())


def _same(values: list[Any], what: str) -> Any:
    if any(v != values[0] for v in values):
        raise BadRequest(f"ERROR: {what} differs between the jobs of one cluster: Drover runs a cluster as one "
                         "job whose procs share it (submit them apart)")
    return values[0]


def _build(real: list[Proc], tokened: list[Proc], ctx: Context, approximate: Callable[[str], None]) -> Plan:
    first = real[0]
    for proc in real:
        universe = proc.get("universe", "vanilla").strip().lower()
        if universe not in UNIVERSES:
            raise BadRequest(f"ERROR: I don't know about the '{proc.get('universe').strip()}' universe.")
        if universe != "vanilla":
            raise BadRequest(f"ERROR: the '{universe}' universe is not supported by Drover: it runs vanilla "
                             "universe jobs")
        if not proc.get("executable").strip():
            raise BadRequest("ERROR: No 'executable' parameter was provided")
    _warn_ignored(first, approximate)
    iwds = [_iwd(proc, ctx) for proc in real]
    sandbox = _should_transfer(first)
    job: JobRequest = {"script": "", "workdir": "", "submit_dir": ctx.cwd}
    executable = first.get("executable").strip()
    job["name"] = (first.get("batch_name").strip().strip('"') or os.path.basename(executable))[:200]
    _resources(real, job, approximate)
    _requirements(first, ctx, approximate)
    if _same([p.get("hold") for p in real], "hold"):
        job["hold"] = boolean(first.get("hold"), "hold")
    if first.has("priority"):
        text = _same([p.get("priority").strip() for p in real], "priority")
        try:
            priority = int(text)
        except ValueError:
            raise BadRequest(f"ERROR: priority = {text}: not an integer") from None
        if not LOWEST_PRIORITY <= priority <= HIGHEST_PRIORITY:
            approximate(f"priority = {priority}: Drover's priorities go from {LOWEST_PRIORITY} to "
                        f"{HIGHEST_PRIORITY}; the job gets the nearest")
            priority = max(LOWEST_PRIORITY, min(HIGHEST_PRIORITY, priority))
        job["priority"] = priority
    _mail(first, job, ctx.user)
    if first.has("allowed_execute_duration"):
        job["time_limit_s"] = int(first.get("allowed_execute_duration"))
    staged: dict[str, StagedFileRequest] = {}
    outputs: list[str] = []
    if sandbox:
        job["workdir"] = ""
        for proc, iwd in zip(real, iwds, strict=True):
            for name in file_list(proc.get("transfer_input_files")):
                _stage(os.path.join(iwd, name), staged, ctx)
            if proc.get("input").strip():
                _stage(os.path.join(iwd, proc.get("input").strip()), staged, ctx)
            if _transfer_executable(proc) and not executable.startswith("/"):
                _stage(os.path.join(iwd, proc.get("executable").strip()), staged, ctx, executable=True)
            for name in file_list(proc.get("transfer_output_files")) or ["*"]:
                if name not in outputs:
                    outputs.append(os.path.basename(name.rstrip("/")) or name)
        if staged:
            job["stage_in"] = list(staged.values())
        job["stage_out"] = outputs
    else:
        job["workdir"] = iwds[0]
        if any(p.has("transfer_input_files") or p.has("transfer_output_files") for p in real):
            approximate("transfer_input_files/transfer_output_files: should_transfer_files is not YES, so the job "
                        "runs in its initialdir, whose files it reads and writes where they are")
    job["environment"] = _getenv(first, ctx.environ)
    job["script"], job["output"], job["error"] = _script(real, tokened, iwds, sandbox, job)
    if len(real) > 1 or first.process != 0:
        job["array"] = f"{first.process}-{real[-1].process}" if len(real) > 1 else str(first.process)
    plans = [ProcPlan(p.process, _log(p, iwd), iwd) for p, iwd in zip(real, iwds, strict=True)]
    extras = _extras(first, tokened, iwds[0], job, plans[0].log)
    text = json.dumps(extras, separators=(",", ":"))
    if len(text) > COMMENT_LIMIT:
        extras.pop("args", None)
        attrs = extras.get("attrs", {})
        while attrs and len(json.dumps(extras, separators=(",", ":"))) > COMMENT_LIMIT:
            dropped = attrs.popitem()[0]
            approximate(f"+{dropped}: Drover keeps {COMMENT_LIMIT} characters of a cluster's attributes; "
                        "condor_q does not show it")
        text = json.dumps(extras, separators=(",", ":"))
    job["comment"] = text
    return Plan(job, plans, sandbox, bool(staged), extras)


def _warn_ignored(proc: Proc, approximate: Callable[[str], None]) -> None:
    for key, why in IGNORED.items():
        if proc.get(key).strip():
            approximate(f"{key}: {why}")
    machines = proc.get("machine_count").strip()
    if machines and machines != "1":
        raise BadRequest("ERROR: machine_count is for the parallel universe; Drover runs vanilla universe jobs")


def _iwd(proc: Proc, ctx: Context) -> str:
    iwd = os.path.normpath(os.path.join(ctx.cwd, proc.get("initialdir").strip() or proc.get("iwd").strip() or "."))
    if CLUSTER not in iwd and not ctx.is_dir(iwd):
        raise BadRequest(f"ERROR: No such directory: {iwd}")
    return iwd


def _should_transfer(proc: Proc) -> bool:
    """YES: the job runs in a sandbox of its own, its files staged in and out; NO and IF_NEEDED
    (every node of a Drover cluster shares the submitter's files): it runs in its initialdir."""
    text = proc.get("should_transfer_files").strip().upper()
    if text not in ("", "YES", "NO", "IF_NEEDED"):
        raise BadRequest(f"ERROR: should_transfer_files = {text} is invalid. Must be YES, NO, or IF_NEEDED.")
    return text == "YES"


def _transfer_executable(proc: Proc) -> bool:
    return boolean(proc.get("transfer_executable") or "true", "transfer_executable")


def _stage(path: str, staged: dict[str, StagedFileRequest], ctx: Context, executable: bool = False,
           under: str = "") -> None:
    """A file (or a directory's files, kept under its name; `dir/` its contents) into the sandbox."""
    name = os.path.join(under, os.path.basename(path.rstrip("/")))
    if ctx.is_dir(path):
        inside = name if not path.endswith("/") else under
        for entry in sorted(os.listdir(path)):
            _stage(os.path.join(path, entry), staged, ctx, under=inside)
        return
    if name in staged:
        return
    try:
        data = ctx.read_bytes(path)
    except OSError as error:
        raise BadRequest(f"ERROR: Can't open \"{path}\"  with flags 00 ({error.strerror})") from None
    staged[name] = {"name": name, "data": base64.b64encode(data).decode(), "mode": 0o755 if executable or
                    os.access(path, os.X_OK) else 0o644}


def _size(proc: Proc, key: str, default_unit_kib: int) -> int | None:
    """A request in KiB: a literal with units, or an expression over the file's MY.* attributes."""
    text = proc.get(key).strip()
    if not text:
        return None
    kib = size_kib(text, default_unit_kib)
    if kib is not None:
        return kib
    value = classad.evaluate(text, _attributes(proc))
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise BadRequest(f"ERROR: {key} = {text}: not a number ({classad.unparse(value)})")
    return int(value * default_unit_kib)


def _attributes(proc: Proc) -> dict[str, Any]:
    """The proc's custom attributes (MY.X, +X) as an ad, each parsed as a ClassAd expression."""
    ad: dict[str, Any] = {}
    for key, text in proc.values.items():
        if key.startswith("my."):
            try:
                ad[key[3:]] = classad.parse(text)
            except classad.ClassAdError:
                ad[key[3:]] = text
    return ad


def _resources(real: list[Proc], job: JobRequest, approximate: Callable[[str], None]) -> None:
    cpus = _same([_cpus(p) for p in real], "request_cpus")
    if cpus is not None:
        job["cpus"] = cpus
    memory = _same([_size(p, "request_memory", 1024) or _size(p, "requestmemory", 1024) for p in real],
                    "request_memory")
    if memory is not None:
        job["memory_mib"] = max((memory + 1023) // 1024, 1)
    disk = _size(real[0], "request_disk", 1) or _size(real[0], "requestdisk", 1)
    if disk is not None:
        approximate("request_disk: Drover does not count disk; the job's node is not chosen by it")
    gpus = _same([(p.get("request_gpus") or p.get("requestgpus")).strip() for p in real], "request_gpus")
    if gpus and gpus != "0":
        if not gpus.isdigit():
            raise BadRequest(f"ERROR: request_gpus = {gpus}: not a whole number")
        job["gres"] = [f"gpu:{gpus}"]


def _cpus(proc: Proc) -> int | None:
    text = (proc.get("request_cpus") or proc.get("requestcpus")).strip()
    if not text:
        return None
    value: Any = int(text) if text.isdigit() else classad.evaluate(text, _attributes(proc))
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise BadRequest(f"ERROR: request_cpus = {text}: not a positive whole number")
    return value


def _requirements(proc: Proc, ctx: Context, approximate: Callable[[str], None]) -> None:
    """requirements, evaluated against each of the cluster's nodes as a machine ad (Machine, Name,
    OpSys, Arch, Cpus, Memory, Gpus...). Drover places a job on any node with room for its
    request, so an expression that some nodes fail is approximated: the job may run there."""
    text = proc.get("requirements").strip()
    if not text or not ctx.node_ads:
        return
    expression = classad.parse(text)
    known = {k.lower() for k in ctx.node_ads[0]} | {k[3:] for k in proc.values if k.startswith("my.")}
    unknown = sorted(expression.attributes() - known - {"requestcpus", "requestmemory", "requestdisk",
                                                         "requestgpus"})
    if unknown:
        approximate(f"requirements: Drover's nodes have no {', '.join(unknown)}; the expression is not used to "
                    "choose a node")
        return
    request = {"RequestCpus": _cpus(proc) or 1, "RequestMemory": (_size(proc, "request_memory", 1024) or 0) // 1024,
               "RequestDisk": _size(proc, "request_disk", 1) or 0}
    matching = [ad["Machine"] for ad in ctx.node_ads
                if expression.matches({**_attributes(proc), **request, **ad})]
    if not matching:
        raise BadRequest(f"ERROR: requirements = {text}: no node of the cluster matches it; the job could never run")
    if len(matching) < len(ctx.node_ads):
        approximate(f"requirements: only {', '.join(matching)} match it; Drover may run the job on any node "
                    "with room for it")


def _mail(proc: Proc, job: JobRequest, user: str) -> None:
    text = proc.get("notification").strip().lower() or "never"
    kinds = {"never": [], "error": ["FAIL"], "complete": ["END", "FAIL"], "always": ["BEGIN", "END", "FAIL",
                                                                                     "REQUEUE"]}
    if text not in kinds:
        raise BadRequest("ERROR: Notification must be 'Never', 'Always', 'Complete', or 'Error'")
    if kinds[text]:
        job["mail_type"] = kinds[text]
        job["mail_user"] = proc.get("notify_user").strip() or user


def _getenv(proc: Proc, environ: Mapping[str, str]) -> dict[str, str]:
    """getenv: True, all of condor_submit's environment; a list of names (with * and ?), those."""
    import fnmatch

    text = proc.get("getenv").strip()
    if not text:
        return {}
    try:
        return dict(environ) if boolean(text, "getenv") else {}
    except SubmitValueError:
        patterns = [p for p in text.replace(",", " ").split() if p]
        return {k: v for k, v in environ.items() if any(fnmatch.fnmatchcase(k, p) for p in patterns)}


def _path(proc: Proc, key: str, iwd: str) -> str | None:
    text = proc.get(key).strip()
    if not text:
        return None
    return os.path.normpath(os.path.join(iwd, text))


def _log(proc: Proc, iwd: str) -> str | None:
    return _path(proc, "log", iwd)


def _pattern(real: list[Proc], tokened: list[Proc], key: str, iwds: list[str], sandbox: bool) -> tuple[bool, str | None]:
    """Output or error as one pattern of Drover's (%j the cluster, %a the proc), when every proc's
    differs only by its $(Cluster) and $(Process): (True, pattern or None for /dev/null); else
    (False, None) and each proc's branch of the script redirects its own."""
    paths = [_path(p, key, iwd) for p, iwd in zip(tokened, iwds, strict=True)]
    if any(path != paths[0] for path in paths):
        return False, None
    path = paths[0]
    if path is None:
        return True, "/dev/null"
    single = len(real) == 1 and real[0].process == 0  # no array: no %a
    return True, (path.replace("%", "%%").replace(CLUSTER, "%j").replace(PROCESS, "0" if single else "%a"))


def _script(real: list[Proc], tokened: list[Proc], iwds: list[str], sandbox: bool,
            job: JobRequest) -> tuple[str, str | None, str | None]:
    """The job's script: one branch per proc, chosen by the task index, that goes to the proc's
    initialdir, sets its environment, redirects its own files if it must and execs the
    executable with its arguments."""
    output_shared, output = _pattern(real, tokened, "output", iwds, sandbox)
    error_shared, error = _pattern(real, tokened, "error", iwds, sandbox)
    if not output_shared or not error_shared:
        output, error = "/dev/null", "/dev/null"
    lines = ["#!/bin/bash", "# condor_submit: each proc of the cluster, by its task index",
             'export _CONDOR_SCRATCH_DIR="$PWD" _CONDOR_SLOT="slot1"',
             'case "${DROVER_ARRAY_TASK_ID:-0}" in']
    for proc, iwd in zip(real, iwds, strict=True):
        branch = [f"{proc.process})"]
        if job["workdir"] and iwd != job["workdir"]:
            branch.append(f"cd {_quote(iwd)} || exit 1")
        branch.append(f"export _CONDOR_JOB_IWD={_quote(iwd)}")
        for name, value in environment(proc.get("environment") or proc.get("env")).items():
            branch.append(f"export {name}={_quote(value)}")
        if not output_shared or not error_shared:
            out, err = _path(proc, "output", iwd) or "/dev/null", _path(proc, "error", iwd) or "/dev/null"
            branch.append(f"exec >{_quote(out)} 2>" + ("&1" if err == out else _quote(err)))
        executable = proc.get("executable").strip()
        if job["workdir"] == "" and _transfer_executable(proc) and not executable.startswith("/"):
            command = "./" + os.path.basename(executable)
        else:
            command = os.path.normpath(os.path.join(iwd, executable))
        words = [command, *arguments(proc.get("arguments") or proc.get("args"))]
        line = "exec " + " ".join(_quote(w) for w in words)
        stdin = proc.get("input").strip()
        if stdin:
            line += " <" + _quote(os.path.basename(stdin) if job["workdir"] == "" else os.path.join(iwd, stdin))
        branch += [line, ";;"]
        lines += ["  " + b for b in branch]
    lines += ["esac", 'echo "no proc ${DROVER_ARRAY_TASK_ID:-0} in this cluster" >&2', "exit 1", ""]
    return "\n".join(lines), output, None if error == output and output != "/dev/null" else error


def _quote(word: str) -> str:
    """A word for the script; $(Cluster) in it becomes the job's id when the script runs."""
    if CLUSTER not in word:
        return shlex.quote(word)
    quoted = "'" + word.replace("'", "'\"'\"'") + "'"
    return quoted.replace(CLUSTER, "'\"${DROVER_JOB_ID}\"'")


def _extras(proc: Proc, tokened_procs: list[Proc], iwd: str, job: JobRequest, log: str | None) -> dict[str, Any]:
    """What condor_q shows of a cluster that Drover does not keep: its command, arguments (one
    string, or one per proc where they differ by more than $(Process)), directory, log, batch
    name, custom attributes ($(Cluster) and $(Process) left as tokens)."""
    tokened = tokened_procs[0]
    out: dict[str, Any] = {"cmd": os.path.normpath(os.path.join(iwd, proc.get("executable").strip())), "iwd": iwd}
    each = [" ".join(arguments(p.get("arguments") or p.get("args"))) for p in tokened_procs]
    if any(each):
        out["args"] = each[0] if all(a == each[0] for a in each) else each
        if tokened.process and not all(a == each[0] for a in each):
            out["first"] = tokened.process  # args[i] is proc first + i's
    if log:
        out["log"] = log
    if proc.get("batch_name").strip():
        out["batch"] = proc.get("batch_name").strip().strip('"')
    leave = proc.get("leave_in_queue").strip()
    if leave and leave.lower() not in ("false", "f", "no", "0"):  # True, or an expression: kept while asked for
        out["leave"] = True
    disk = _size(proc, "request_disk", 1) or _size(proc, "requestdisk", 1)
    if disk:
        out["disk"] = disk
    if job.get("hold"):
        out["held"] = True  # submitted on hold: HoldReasonCode 15 until it first runs
    attrs = {tokened.spelled.get(k, k[3:]): v for k, v in tokened.values.items() if k.startswith("my.")}
    if attrs:
        out["attrs"] = attrs
    return out
