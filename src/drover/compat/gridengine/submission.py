"""From qsub's options to a Drover job: what each option means, decided once, on plain data.

Grid Engine's defaults: the job runs in the home directory unless -cwd or -wd; its output goes
to `<name>.o<job>` (arrays `<name>.o<job>.<task>`) and its errors to `.e` unless -j y; an
output path that is a directory gets those names inside it. Pure: the caller passes the
environment and the current and home directories, and `approximate` (warn, or refuse under
-strict).
"""

from __future__ import annotations

import fnmatch
import os
import secrets
import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from drover.compat.gridengine.syntax import GeUsageError, Given, yes_no
from drover.compat.gridengine.values import memory_mib, task_range, time_s
from drover.compat.optiontable import Mark
from drover.compat.submit_context import Context
from drover.core.begin_time import parse_sge_time
from drover.core.errors import BadRequest
from drover.protocol.plain import JobRequest

TIME_LIMITS = ("h_rt", "s_rt")
# Memory requests and their complex shortcuts (vf, mf); m_mem_free is Univa's, which tools send too.
MEMORY = ("h_vmem", "s_vmem", "mem_free", "mf", "virtual_free", "vf", "mem", "h_data", "s_data", "mem_req",
          "m_mem_free")
GPUS = ("gpu", "gpus")  # a count of GPUs: the generic resource gpu
ARCH = ("arch", "a")  # the node's architecture (complex shortcut `a`): the node feature arch=VALUE
EXCLUSIVE = ("exclusive", "excl")  # the exclusive complex (shortcut `excl`): the whole node
DEFAULT_QUEUE = "all.q"  # Grid Engine's default cluster queue: Drover's "default"
SHELLS_RUN_DIRECTLY = ("bash", "sh")  # a job script is run by bash on Drover


@dataclass
class Submission:
    job: JobRequest
    hold_on: list[str] = field(default_factory=list)  # -hold_jid: ids, names or patterns, resolved later
    hold_on_tasks: list[str] = field(default_factory=list)  # -hold_jid_ad: the same, task by task
    sync: bool = False
    terse: bool = False
    verify: bool = False
    array: tuple[int, int, int] | None = None


def last(given: list[Given], key: str) -> Given | None:
    """The option's last occurrence: a later one overrides (the command line overrides the
    script, which overrides sge_request)."""
    found = [g for g in given if g.key == key]
    return found[-1] if found else None


def every(given: list[Given], key: str, soft: bool | None = False) -> list[str]:
    """Every value of a list option (`-l`, `-v`, `-hold_jid`...), comma lists split."""
    values: list[str] = []
    for g in given:
        if g.key == key and (soft is None or g.soft == soft) and g.value is not None:
            values += [item for item in g.value.split(",") if item]
    return values


def after_clear(sources: list[list[Given]]) -> list[Given]:
    """The options of all sources (sge_request files, directives, command line), in that order of
    priority, less what a later source's -clear discards: everything given before it."""
    merged: list[Given] = []
    for options in sources:
        if any(g.key == "clear" for g in options):
            merged = []
            options = options[max(i for i, g in enumerate(options) if g.key == "clear") + 1:]
        merged += options
    return merged


def build(given: list[Given], script: str, arguments: list[str], script_name: str, binary: bool,
          ctx: Context, approximate: Callable[[str], None], terse: bool = False) -> Submission:
    """`script`: the script's text, or for -b y the command (its first word) and `arguments`."""
    o = {g.key: g for g in given}  # the last of each
    for g in given:
        if g.option.mark is Mark.REFUSED:
            raise BadRequest(f"{g.option.names[0]} is not supported by Drover: {g.option.note}")
    name = o["N"].value if "N" in o else os.path.basename(script_name) if script_name != "-" else "STDIN"
    assert name is not None
    if "wd" in o:
        workdir = os.path.join(ctx.cwd, o["wd"].value or "")
    else:
        workdir = ctx.cwd if "cwd" in o else ctx.home
    array = task_range(o["t"].value or "") if "t" in o else None
    job: JobRequest = {"script": "", "name": name, "workdir": os.path.normpath(workdir),  # the script below
                       "submit_dir": ctx.cwd, "hold": "h" in o}
    job["output"] = _output_path(o.get("o"), "o", array is not None, job["workdir"], ctx)
    joined = "j" in o and yes_no(o["j"])
    job["error"] = None if joined else _output_path(o.get("e"), "e", array is not None, job["workdir"], ctx)
    if array:
        first, last_index, step = array
        job["array"] = f"{first}-{last_index}:{step}" + (f"%{int(o['tc'].value or 0)}" if "tc" in o else "")
    slots = _slots(o.get("pe"), approximate)
    if "pe" in o and o["pe"].value:  # the cluster's parallel environment of that name (sge_pe(5))
        job["pe"], _, job["pe_slots"] = o["pe"].value.partition(" ")
    _resources(given, job, slots, approximate)
    if "p" in o:
        priority = _integer(o["p"], "-p")
        if not -1023 <= priority <= 1024:
            raise BadRequest(f"-p {priority}: the priority must be between -1023 and 1024")
        job["priority"] = priority
    if "r" in o:
        job["rerunnable"] = yes_no(o["r"])
    if "masterq" in o:
        approximate("-masterq: read as -q (a job runs on one node, in one queue)")
    queue = last(given, "q") if "q" in o else last(given, "masterq")
    if queue is not None and not queue.soft:
        job["queue"] = _queue(queue, approximate)
    if "notify" in o:
        job["notify"] = True
    _mail(o, job, ctx.user, approximate)
    job["environment"] = _environment(given, ctx)
    for key, what in (("ac", "job context"), ("sc", "job context"), ("dc", "job context"),
                      ("dl", "deadline scheduling")):
        if key in o:
            approximate(f"-{key}: Drover has no {what}; ignored")
    if "c" in o:
        check_occasion(o["c"].value or "")
    if "ckpt" in o:  # checkpoint(5)'s environment; -c overrides its `when` (the controller checks both)
        job["checkpoint"] = o["ckpt"].value or ""
        if "c" in o:  # without -ckpt, as in Grid Engine, -c makes no job a checkpointing one
            job["checkpoint_occasion"] = o["c"].value or ""
    if "now" in o and yes_no(o["now"]):
        approximate("-now y: the job is queued like any other, not scheduled immediately or refused")
    if "a" in o:
        job["begin_at"] = parse_sge_time(o["a"].value or "", time.time())
    shell = o["S"].value.split(",")[0].split(":")[-1] if "S" in o and o["S"].value else None
    if binary:
        job["script"] = _binary_script(script, arguments, shell, "shell" not in o or yes_no(o["shell"]))
    else:
        job["script"] = _script(script, arguments, shell)
    for key in ("b", "sync", "shell"):
        if key in o:
            yes_no(o[key])  # a bad value is refused, as Grid Engine refuses it
    return Submission(job, every(given, "hold_jid", None), every(given, "hold_jid_ad", None), sync="sync" in o and yes_no(o["sync"]), terse=terse,
                      verify="verify" in o, array=array)


def _integer(given: Given, option: str) -> int:
    text = given.value or ""
    if not text.isascii() or not text.removeprefix("-").isdigit():  # int() also takes '٣' and '1_0'
        raise BadRequest(f"{option} {given.value}: expected a whole number")
    return int(text)


def _slots(pe: Given | None, approximate: Callable[[str], None]) -> int:
    """`-pe NAME n[-[m]]|[-]m`: the least number of slots the job asked for, for its per-slot
    memory requests; the controller gives it the largest of the range its parallel environment
    and a node can hold, each slot a CPU of that node."""
    if pe is None or pe.value is None:
        return 1
    _name, _, spec = pe.value.partition(" ")
    low, dash, high = spec.partition("-")
    try:
        slots = int(low) if low else 1
        if dash and high and int(high) < slots:
            raise ValueError
    except ValueError:
        raise BadRequest(f'-pe {pe.value}: expected a slot range n[-[m]]|[-]m') from None
    if dash and high != low:
        approximate(f"-pe {pe.value}: the job gets the largest of the range that its node can hold, fixed when "
                    f"it is submitted; per-slot memory (-l h_vmem) is counted for {slots}")
    if slots < 1:
        raise BadRequest(f"-pe {pe.value}: a job needs at least one slot")
    return slots


def _resources(given: list[Given], job: JobRequest, slots: int, approximate: Callable[[str], None]) -> None:
    """The hard `-l` requests; soft ones are preferences Grid Engine may leave unmet, as Drover does.
    Time and memory, GPUs, the architecture and the exclusive complex are Drover's own fields;
    any other NAME=VALUE is sent as it is, for the controller to read as a licence, a generic
    resource or a node feature (and refuse if the cluster has no such resource, as Grid Engine
    does). A later request of the same name wins."""
    arch: str | None = None
    for item in every(given, "l"):
        key, equals, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if not key:
            raise BadRequest(f"-l {item}: expected resource=value")
        if not equals and key not in TIME_LIMITS and key not in MEMORY:
            value = "TRUE"  # a boolean complex named alone asks for TRUE, as in Grid Engine
        if key in TIME_LIMITS:
            limit = time_s(value)
            if limit is not None:
                earlier = job.get("time_limit_s")
                job["time_limit_s"] = limit if earlier is None else min(limit, earlier)
        elif key in MEMORY:
            # Grid Engine's memory requests are per slot; Drover's is the whole job's.
            job["memory_mib"] = max(memory_mib(value) * slots, job.get("memory_mib", 0))
        elif key in GPUS:
            job["gres"] = [gpus_request(key, value)]
        elif key in ARCH:
            arch = arch_constraint(key, value)
        elif key in EXCLUSIVE:
            job["exclusive"] = boolean_value(key, value)
        else:
            job.setdefault("resource_requests", {})[key] = value
    constraints = [arch] if arch else []
    if constraints:
        job["constraint"] = "&".join(constraints)


def gpus_request(key: str, value: str) -> str:
    """-l gpu=N: N GPUs, the generic resource gpu:N."""
    from drover.core.gres import describe, parse_request

    if not value.isascii() or not value.isdigit():
        raise BadRequest(f"-l {key}={value}: expected a number of GPUs")
    try:
        return describe(parse_request(f"gpu:{value}", option=f"-l {key}={value}:"))
    except ValueError as error:
        raise BadRequest(str(error)) from None


def arch_constraint(key: str, value: str) -> str:
    """-l arch=VALUE: nodes whose feature arch=VALUE is set; `a|b` is either."""
    names = [name.strip() for name in value.split("|")]
    if not all(names) or any(char in value for char in "*?[]!&()"):
        raise BadRequest(f"-l {key}={value}: expected an architecture, or several joined by |; "
                         "patterns are not matched")
    features = [f"arch={name}" for name in dict.fromkeys(names)]
    return features[0] if len(features) == 1 else "(" + "|".join(features) + ")"


def boolean_value(key: str, value: str) -> bool:
    """A BOOL complex's value as Grid Engine reads it: TRUE/true/1, FALSE/false/0."""
    if value.lower() in ("true", "1"):
        return True
    if value.lower() in ("false", "0"):
        return False
    raise BadRequest(f"-l {key}={value}: expected true or false")


def _queue(queue: Given, approximate: Callable[[str], None]) -> str:
    names = [item for item in (queue.value or "").split(",") if item]
    if len(names) != 1:
        approximate(f"-q {queue.value}: a job runs in one queue; it goes to the first")
    name, at, host = names[0].partition("@") if names else ("", "", "")
    if at and host:
        approximate(f"-q {names[0]}: the job may run on any node of queue {name}")
    if any(char in name for char in "*?[") or not name:
        approximate(f"-q {queue.value}: queue patterns are not matched; the job goes to the default queue")
        return "default"
    return "default" if name == DEFAULT_QUEUE else name


def _mail(o: dict[str, Given], job: JobRequest, user: str, approximate: Callable[[str], None]) -> None:
    """-m: when mail goes; -M: to whom (by default the job's owner, as in Grid Engine)."""
    letters = set("".join((o["m"].value or "").split(","))) if "m" in o else set()
    unknown = letters - set("beasn")
    if unknown:
        raise BadRequest(f"-m {o['m'].value}: the mail options are b, e, a, s and n")
    if not letters - {"n"}:
        return
    if "s" in letters:
        approximate("-m s: no mail is sent when a job is suspended")
    job["mail_user"] = o["M"].value if "M" in o else user
    job["mail_type"] = [kind for letter, kind in (("b", "BEGIN"), ("e", "END"), ("a", "FAIL")) if letter in letters]


def _environment(given: list[Given], ctx: Context) -> dict[str, str]:
    """-V: all of qsub's environment; -v NAME[=VALUE]; and the SGE_O_* qsub always sends."""
    environment = dict(ctx.environ) if any(g.key == "V" for g in given) else {
        "PATH": ctx.environ.get("PATH", "/usr/local/bin:/bin:/usr/bin")}
    for name, value in (("SGE_O_HOME", ctx.home), ("SGE_O_HOST", ctx.host), ("SGE_O_LOGNAME", ctx.user),
                        ("SGE_O_MAIL", ctx.environ.get("MAIL")), ("SGE_O_PATH", ctx.environ.get("PATH")),
                        ("SGE_O_SHELL", ctx.environ.get("SHELL")), ("SGE_O_TZ", ctx.environ.get("TZ")),
                        ("SGE_O_WORKDIR", ctx.cwd)):
        if value is not None:
            environment[name] = value
    for item in every(given, "v", None):
        key, sep, value = item.partition("=")
        if sep:
            environment[key] = value
        elif key in ctx.environ:
            environment[key] = ctx.environ[key]
    return environment


def _output_path(given: Given | None, kind: str, is_array: bool, workdir: str, ctx: Context) -> str:
    """A -o/-e path in Drover's pattern words; a directory gets Grid Engine's file name in it."""
    default = f"%x.{kind}%j" + (".%a" if is_array else "")
    if given is None or not given.value:
        return default
    path = _for_this_host(given.value, ctx.host)
    path = path.replace("%", "%%")
    for variable, pattern in (("$JOB_ID", "%j"), ("$TASK_ID", "%a"), ("$JOB_NAME", "%x"), ("$USER", "%u"),
                              ("$HOSTNAME", "%N"), ("$HOME", ctx.home)):
        path = path.replace(variable, pattern)
    full = path if os.path.isabs(path) else os.path.join(workdir, path)
    if path in ("/dev/null",):
        return path
    if ctx.is_dir(full):
        return os.path.join(path, default)
    return path


def _for_this_host(paths: str, host: str) -> str:
    """`[[hostname]:]path,...`: the path without a host, or the one for this host."""
    plain = None
    for item in paths.split(","):
        name, colon, path = item.rpartition(":")
        if not colon or not name or fnmatch.fnmatch(host, name):
            plain = plain or path
    return plain or paths.split(",")[0].rpartition(":")[2]


def _script(script: str, arguments: list[str], shell: str | None) -> str:
    """The job's script as Drover runs it (with bash). A script for another interpreter (-S) is
    written to the job's TMPDIR and run by it; arguments become $1...."""
    set_arguments = f"set -- {shlex.join(arguments)}\n" if arguments else ""
    if shell is None or os.path.basename(shell) in SHELLS_RUN_DIRECTLY:
        from drover.core.script_arguments import with_arguments

        return with_arguments(script, arguments)  # as `drover submit SCRIPT ARGS` does
    marker = "DROVER_SCRIPT_" + secrets.token_hex(8)
    body = script if script.endswith("\n") else script + "\n"
    return (f'#!/bin/bash\n{set_arguments}script=$(mktemp "${{TMPDIR:-/tmp}}/job_script.XXXXXX") || exit 1\n'
            f"cat > \"$script\" <<'{marker}'\n{body}{marker}\n"
            f'chmod 700 "$script"\nexec {shlex.quote(shell)} "$script" "$@"\n')


def _binary_script(command: str, arguments: list[str], shell: str | None, with_shell: bool) -> str:
    """-b y: with the shell (the default), the command and its arguments are joined by blanks
    and run by `shell -c`, as Grid Engine's shepherd does; -shell n runs them as they are."""
    if with_shell:
        line = " ".join([command, *arguments]) + " "
        return f"#!/bin/sh\nexec {shlex.quote(shell or '/bin/sh')} -c {shlex.quote(line)}\n"
    return f"#!/bin/sh\nexec {shlex.join([command, *arguments])}\n"


def check_occasion(text: str) -> None:
    """qsub -c as Grid Engine's parser reads it (sge_parse_checkpoint_attr), with or without
    -ckpt: occasion letters (n, s, m, x, and Drover's r), else an interval; anything else is its
    error, and nothing is submitted."""
    from drover.core.checkpoints import OCCASIONS, CheckpointError, parse_occasion

    word = text.strip()
    if word[:1].isalpha():
        if not set(word) <= set(OCCASIONS):
            raise GeUsageError("ERROR! -c specifier invalid")
        return
    try:
        parse_occasion(word)
    except CheckpointError:
        raise GeUsageError("ERROR! -c argument invalid") from None
