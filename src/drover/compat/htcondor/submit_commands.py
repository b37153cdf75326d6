"""The submit description file's commands, as data: what Drover does with each. docs/compat.md's
condor_submit commands table is generated from it, and condor_submit warns of the commands it
marks approximated-and-ignored (IGNORED) when a file sets them."""

from __future__ import annotations

from drover.compat.optiontable import Arity, Mark, Option


def _command(name: str, mark: Mark, note: str, metavar: str = "") -> Option:
    return Option((name,), Arity.REQUIRED, mark, note, metavar)


S, A, M, R = Mark.SUPPORTED, Mark.APPROXIMATED, Mark.MEANINGLESS, Mark.REFUSED
SUBMIT_COMMANDS = [
    _command("universe", S, "`vanilla` (the default); every other universe is refused"),
    _command("executable", S, "relative to initialdir; staged into the sandbox with should_transfer_files = YES"),
    _command("arguments", S, "the old syntax (blanks, `\\\"`) and the new one (in double quotes, single quotes "
             "group)"),
    _command("environment", S, "`\"A=1 B='x y'\"` (new) or `A=1;B=2` (old)"),
    _command("getenv", S, "`True`: all of condor_submit's environment; a list of names (with `*`): those"),
    _command("input", S, "the proc's stdin"),
    _command("output", S, "relative to initialdir; per proc when it names $(Process) or an item"),
    _command("error", S, "as output; the same file as output: both streams in it"),
    _command("log", S, "the job event log, in HTCondor's format, written as the submitter (see below)"),
    _command("initialdir", S, "the proc's working directory (must exist)"),
    _command("request_cpus", S, "a number, or an expression of the file's `MY.` attributes"),
    _command("request_memory", S, "MB, or with a unit (`K M G T`); an expression of `MY.` attributes"),
    _command("request_disk", A, "Drover does not count disk: not used to choose a node (shown as RequestDisk)"),
    _command("request_gpus", S, "GPUs (Drover's `gpu` generic resource)"),
    _command("requirements", A, "evaluated against each node's ad (Machine, OpSys, Arch, Cpus, Memory, Gpus, "
             "features): no node matching is an error; some nodes: the job may run on any node with room"),
    _command("queue", S, "`queue`, `queue N`, `queue [N] VAR[,VAR] in (...)`, `from FILE`, `from (...)`, "
             "`matching [files|dirs] GLOB`: one cluster, one Drover job (an array of its procs); "
             "procs whose requests differ: one cluster per run of procs with the same request"),
    _command("should_transfer_files", S, "`YES`: a sandbox of its own, files staged in and out; `NO` and "
             "`IF_NEEDED`: the job runs in its initialdir (the nodes share the submitter's files)"),
    _command("transfer_input_files", S, "with YES: staged in (a directory with its files; `dir/` its contents)"),
    _command("transfer_output_files", S, "with YES: staged out and written back to initialdir (default: every "
             "file of the sandbox)"),
    _command("transfer_executable", S, "with YES, `False` runs the executable where it is"),
    _command("when_to_transfer_output", M, "output files come back when the job exits"),
    _command("stream_output", M, "the output is written in place while the job runs"),
    _command("stream_error", M, "the errors are written in place while the job runs"),
    _command("hold", S, "submitted held (a 012 event, code 15); condor_release releases it"),
    _command("priority", S, "the job's priority, -1023 to 1023 (beyond: the nearest, with a warning)"),
    _command("notification", S, "mail at `Complete` (end), `Error` (failure), `Always`; `Never` (default)"),
    _command("notify_user", S, "whom the mail goes to (default: the submitter)"),
    _command("batch_name", S, "JobBatchName: the batch of condor_q's table and the Drover job's name"),
    _command("leave_in_queue", S, "the ended job stays in condor_q (status 4 or 3) while Drover keeps it"),
    _command("allowed_execute_duration", S, "the job's time limit, in seconds"),
    _command("+Attr, MY.Attr", S, "custom attributes: in condor_q's ads, and for request expressions"),
    _command("machine_count", R, "more than 1 is the parallel universe"),
    _command("accounting_group", A, "Drover keeps no accounting groups: ignored"),
    _command("accounting_group_user", A, "Drover keeps no accounting groups: ignored"),
    _command("rank", A, "Drover's scheduler places jobs by its own order: ignored"),
    _command("periodic_remove", A, "not evaluated: ignored"),
    _command("periodic_hold", A, "not evaluated: ignored"),
    _command("periodic_release", A, "not evaluated: ignored"),
    _command("on_exit_hold", A, "not evaluated: ignored"),
    _command("on_exit_remove", A, "not evaluated: ignored"),
    _command("max_retries", A, "not evaluated: ignored"),
    _command("image_size", A, "ignored"),
    _command("job_max_vacate_time", A, "Drover stops a job with its node's grace time: ignored"),
    _command("max_materialize", A, "every proc is queued at once: ignored"),
    _command("transfer_output_remaps", A, "output files come back under their own names: ignored"),
    _command("concurrency_limits", A, "Drover's licences are `drover submit --license`: ignored"),
    _command("nice_user", A, "ignored"),
    _command("coresize", A, "ignored"),
    _command("kill_sig", A, "Drover stops a job with SIGTERM, then SIGKILL: ignored"),
]
# The commands a file may set that change nothing on Drover but a warning: name → why.
IGNORED = {o.names[0]: o.note for o in SUBMIT_COMMANDS if o.mark is A and o.note.endswith("ignored")}
