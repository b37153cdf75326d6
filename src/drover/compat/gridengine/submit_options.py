"""The options of submit(1) (qsub, qalter, qrsh), as data: each name as the Son of Grid Engine
8.1.9 man page spells it, how many words it takes, and what Drover does with it."""

from __future__ import annotations

from dataclasses import replace

from drover.compat.optiontable import Arity, Mark, Option

N, R, TWO = Arity.NONE, Arity.REQUIRED, Arity.TWO
OK, APPROX, MEANINGLESS, REFUSED = Mark.SUPPORTED, Mark.APPROXIMATED, Mark.MEANINGLESS, Mark.REFUSED

# Options qsub and qalter share, in the man page's order.
_COMMON = [
    Option(("-@",), R, OK, "more options, read from the file where it stands (`#` starts a comment)",
           "optionfile"),
    Option(("-a",), R, OK, "the job waits until then (`[[CC]YY]MMDDhhmm[.SS]`, local time)", "date_time"),
    Option(("-ac",), R, APPROX, "the job context is not kept: ignored, with a warning", "variable[=value],..."),
    Option(("-ar",), R, REFUSED, "Drover has no advance reservations", "ar_id"),
    Option(("-A",), R, MEANINGLESS, "Drover keeps no accounts; qacct shows `sge`", "account_string"),
    Option(("-binding",), R, MEANINGLESS, "each job is bound to its own CPUs by its node already",
           "[set|env|pe] strategy"),
    Option(("-c",), R, OK, "`n`, `s`, `m`, `x`, `r` override the environment's `when`; an interval `hh:mm:ss` "
           "checkpoints that often (at least the environment's `min_cpu_interval_s`); alone, nothing",
           "occasion_specifier"),
    Option(("-ckpt",), R, OK, "a checkpoint environment of the cluster's (`[checkpoints.NAME]`, "
           "docs/checkpointing.md)", "ckpt_name"),
    Option(("-cwd",), N, OK, "the job runs where qsub ran (else in the home directory)"),
    Option(("-dc",), R, APPROX, "the job context is not kept: ignored, with a warning", "variable,..."),
    Option(("-dl",), R, APPROX, "no deadline scheduling: ignored, with a warning", "date_time"),
    Option(("-e",), R, OK, "a directory means `<dir>/<name>.e<job>[.<task>]`; `$JOB_ID $TASK_ID $JOB_NAME "
           "$USER $HOME $HOSTNAME`; a `host:` prefix is dropped", "[[hostname]:]path,..."),
    Option(("-hard",), N, OK, "the `-l` and `-q` requests after it must be met (the default)"),
    Option(("-help",), N, OK, "prints the usage"),
    Option(("-hold_jid",), R, OK, "ids, your jobs' names or name patterns; the job waits until they have ended, "
           "in any way (Slurm's afterany)", "wc_job_list"),
    Option(("-hold_jid_ad",), R, OK, "task *i* waits until task *i* of each array has ended, in any way",
           "wc_job_list"),
    Option(("-i",), R, REFUSED, "a job's standard input is always /dev/null", "[[hostname]:]file,..."),
    Option(("-j",), R, OK, "y: stderr goes to the output file", "y[es]|n[o]"),
    Option(("-js",), R, MEANINGLESS, "no share tree: every job's share is the same", "job_share"),
    Option(("-l",), R, OK, "`h_rt`, `s_rt` (the time limit), `h_vmem`, `s_vmem`, `mem_free`, `virtual_free`, "
           "`mem` (memory for the whole job: × slots as in GE's per-slot requests); `gpu=N` (`gpus`) N GPUs; "
           "`arch=VALUE` (`a`, `a|b` either) nodes with that feature; `exclusive=true` (`excl`) the whole node; "
           "any other `NAME=VALUE` is a licence, generic resource or node feature of the cluster's, else refused "
           "(unknown resource); `-soft` requests are preferences: ignored", "resource=value,..."),
    Option(("-m",), R, OK, "`b`, `e`, `a` mail at begin, end, abort; `s` ≈ (no mail on suspend); `n` none",
           "b|e|a|s|n,..."),
    Option(("-M",), R, OK, "where the mail goes", "user[@host],..."),
    Option(("-masterq",), R, APPROX, "read as `-q`: a job runs on one node, in one queue", "wc_queue_list"),
    Option(("-notify",), N, OK, "SIGUSR1 before a suspend, SIGUSR2 before a stop or the time limit's kill, the "
           "queue's `notify_s` (default 60) seconds ahead (`drover submit --notify`)"),
    Option(("-N",), R, OK, "the job's name", "name"),
    Option(("-o",), R, OK, "as `-e`, with `.o`", "[[hostname]:]path,..."),
    Option(("-P",), R, MEANINGLESS, "Drover has no projects", "project_name"),
    Option(("-p",), R, OK, "−1023…1024; above 0 for operators only, as in Grid Engine", "priority"),
    Option(("-pe",), TWO, OK, "a parallel environment of drover.toml's (`smp` always exists), with its start "
           "and stop procedures; the slots are CPUs, on one node or spread over several by its allocation rule; "
           "a range `n-m` gets the largest the nodes can hold, "
           "per-slot memory counted for `n` (≈, with a warning)",
           "parallel_environment n[-[m]]|[-]m"),
    Option(("-q",), R, OK, "a Drover queue; `queue@host` runs in that queue (≈: on any of its nodes)",
           "wc_queue_list"),
    Option(("-R",), R, MEANINGLESS, "the scheduler reserves for big jobs by itself", "y[es]|n[o]"),
    Option(("-r",), R, OK, "n: a job whose node fails is not run again", "y[es]|n[o]"),
    Option(("-sc",), R, APPROX, "the job context is not kept: ignored, with a warning", "variable[=value],..."),
    Option(("-soft",), N, OK, "the `-l` and `-q` requests after it are preferences, which Drover ignores"),
    Option(("-S",), R, OK, "the interpreter of the script (`sh`-like shells run it directly)",
           "[[hostname]:]pathname,..."),
    Option(("-t",), R, OK, "an array job", "n[-m[:s]]"),
    Option(("-tc",), R, OK, "at most this many tasks at once", "max_running_tasks"),
    Option(("-v",), R, OK, "`NAME` takes its value from qsub's environment", "variable[=value],..."),
    Option(("-verify",), N, OK, "prints the job as it would be submitted and submits nothing"),
    Option(("-V",), N, OK, "the whole environment of qsub"),
    Option(("-w",), R, MEANINGLESS, "`e`, `v`: a request no node can meet is refused at submission anyway; "
           "`w`, `n`, `p` are accepted", "e|w|n|p|v"),
    Option(("-wd",), R, OK, "the job's working directory", "working_dir"),
]

_QSUB_ONLY = {
    "b": Option(("-b",), R, OK, "y: the command is not read for directives; with `-shell y` its words are "
                "joined and run by the shell, as Grid Engine does", "y[es]|n[o]"),
    "clear": Option(("-clear",), N, OK, "forgets the options given before it (sge_request, directives)"),
    "C": Option(("-C",), R, OK, "the directive prefix (`#$`); empty: the script is not scanned",
                "prefix_string"),
    "h": Option(("-h",), N, OK, "submitted on hold (a user hold)"),
    "jsv": Option(("-jsv",), R, REFUSED, "job submission verifiers are not run", "jsv_url"),
    "now": Option(("-now",), R, APPROX, "y: the job is queued like any other (no immediate scheduling), "
                  "with a warning", "y[es]|n[o]"),
    "shell": Option(("-shell",), R, OK, "with `-b y`: n runs the command without a shell", "y[es]|n[o]"),
    "sync": Option(("-sync",), R, OK, "y: waits for the end; exit status is the job's", "y[es]|n[o]"),
    "terse": Option(("-terse",), N, OK, "prints only the job id (`N`, or `N.1-3:1` for an array)"),
}

# submit(1)'s order, which the generated tables keep.
MAN_ORDER = str.split("-@ -a -ac -ar -A -binding -b -c -ckpt -clear -cwd -C -dc -display -dl -e -hard -h -help -hold_jid "
             "-hold_jid_ad -i -inherit -j -js -jsv -l -m -M -masterq -notify -now -N -noshell -nostdin -o -ot -P "
             "-p -pe -pty -q -R -r -sc -shell -soft -sync -S -t -tc -terse -u -v -verbose -verify -V -w -wd")


def _in_man_order(options: list[Option]) -> list[Option]:
    return sorted(options, key=lambda option: MAN_ORDER.index(option.names[0]))


QSUB_OPTIONS = _in_man_order([*_COMMON, *_QSUB_ONLY.values()])

# qalter changes a job that waits; Drover can change its priority, its queue and its holds, nothing else.
_CANNOT_CHANGE = "Drover changes only a waiting job's priority, queue and holds"
QALTER_OPTIONS = _in_man_order([
    *[option if option.key in ("@", "help", "p", "w", "hard", "soft") else
      replace(option, note="moves the job's waiting tasks to one queue (`all.q` is Drover's default; "
                           "`queue@host` ≈ any node of that queue)") if option.key == "q" else
      replace(option, mark=REFUSED, note=_CANNOT_CHANGE) for option in _COMMON if option.key != "verify"],
    Option(("-h",), R, OK, "`u` holds, `U` and `n` release; `s`, `o`, `S`, `O` (operator and system holds) ✗",
           "{u|s|o|n|U|O|S}..."),
    Option(("-ot",), R, REFUSED, "Drover has no tickets", "override_tickets"),
    Option(("-u",), R, OK, "every job of these users (`*`: all users)", "username,..."),
    Option(("-verify",), N, OK, "prints what would change, and changes nothing"),
])

# qrsh runs the command on the cluster and relays its terminal and exit status (`drover run`).
_QRSH_TAKES = {"@", "ac", "ar", "A", "binding", "clear", "cwd", "dc", "dl", "e", "hard", "help", "hold_jid",
               "hold_jid_ad", "j", "js", "l", "m", "M", "masterq", "notify", "N", "o", "P", "p", "pe", "q", "R",
               "sc", "soft", "v", "verify", "V", "w", "wd"}
_QRSH_HONOURED = {"@", "cwd", "hard", "help", "l", "N", "pe", "q", "soft", "v", "V", "wd", "p"}
QRSH_OPTIONS = _in_man_order([
    *[option if option.key in _QRSH_HONOURED or option.mark is not OK else
      replace(option, mark=APPROX, note="ignored by qrsh on Drover, with a warning")
      for option in _COMMON if option.key in _QRSH_TAKES and option.key != "l"],
    Option(("-l",), R, OK, "`h_rt`, `s_rt`, the memory requests, `gpu=N`, `arch=VALUE` and `exclusive=true` "
           "as qsub's; other resources ≈ ignored with a warning; `-soft` requests are ignored",
           "resource=value,..."),
    Option(("-b",), R, OK, "y (the default for qrsh): the command is run as given", "y[es]|n[o]"),
    Option(("-clear",), N, MEANINGLESS, "qrsh on Drover reads no sge_request files: there is nothing to clear"),
    Option(("-display",), R, MEANINGLESS, "DISPLAY is passed on with -v or -V like any variable",
           "display_specifier"),
    Option(("-h",), N, APPROX, "an interactive job is never held: ignored, with a warning"),
    Option(("-inherit",), N, OK, "inside a running parallel job whose PE has control_slaves = true: "
           "`qrsh -inherit HOST CMD` runs CMD on HOST, one of the job's hosts, as a task of the job under its "
           "own shepherd; its output is printed and its exit status returned (docs/parallel-environments.md)"),
    Option(("-noshell",), N, MEANINGLESS, "the command is run without a wrapping shell in any case"),
    Option(("-nostdin",), N, OK, "the job reads no input"),
    Option(("-now",), R, MEANINGLESS, "an interactive job starts as soon as it can in any case", "y[es]|n[o]"),
    Option(("-pty",), R, OK, "y: on a terminal (the default when qrsh has one); n: no terminal", "y[es]|n[o]"),
    Option(("-verbose",), N, MEANINGLESS, "the job's id is printed on stderr in any case"),
])
