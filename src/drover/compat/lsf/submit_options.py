"""bsub's options (IBM Spectrum LSF 10.1's bsub(1)), as data: the table bsub parses with, and
docs/compat.md's bsub table is generated from."""

from __future__ import annotations

from drover.compat.optiontable import Arity, Mark, Option

R, N = Arity.REQUIRED, Arity.NONE
S, A, M, X = Mark.SUPPORTED, Mark.APPROXIMATED, Mark.MEANINGLESS, Mark.REFUSED

BSUB_OPTIONS = [
    Option(("-app",), R, A, "Drover has no application profiles: ignored", "application_profile_name"),
    Option(("-B",), N, S, "mail when the job begins"),
    Option(("-b",), R, S, "the job starts no earlier", "[[year:][month:]day:]hour:minute"),
    Option(("-C",), R, A, "no core file limit: ignored", "core_limit"),
    Option(("-c",), R, A, "Drover limits a job's time, not its CPU time: ignored", "[hour:]minute"),
    Option(("-cwd",), R, S, "the job's working directory (default: where bsub ran)", "current_working_directory"),
    Option(("-D",), R, A, "no data segment limit: ignored", "data_limit"),
    Option(("-E",), R, S, "a command run before the job (its prolog); if it fails, the job fails",
           '"pre_exec_command"'),
    Option(("-Ep",), R, S, "a command run after the job (its epilog)", '"post_exec_command"'),
    Option(("-e",), R, S, "the error file, appended to; `%J` the job id, `%I` the element's index; a "
           "directory gets `ID.err` in it", "error_file"),
    Option(("-eo",), R, S, "the error file, overwritten", "error_file"),
    Option(("-env",), R, S, "`all` (the default: bsub's whole environment), `none`, `all, ~NAME`, "
           "`NAME=VALUE, NAME...`", '"none" | "all, [~]NAME[=VALUE]..." | "NAME[=VALUE]..."'),
    Option(("-F",), R, A, "no file size limit: ignored", "file_limit"),
    Option(("-f",), R, X, "Drover does not copy files to and from the execution host (the job's nodes "
           "share its files)", '"local_file op [remote_file]"'),
    Option(("-G",), R, A, "Drover has no fairshare user groups: ignored", "user_group"),
    Option(("-g",), R, A, "Drover has no job groups: ignored", "job_group_name"),
    Option(("-gpu",), R, S, "`num=N[/task|/host]`: N GPUs on the job's node (other keywords ≈ ignored)",
           "num=N[...]"),
    Option(("-H",), N, S, "held (PSUSP) until `bresume`"),
    Option(("-hl",), N, A, "no host-based limits: ignored"),
    Option(("-I",), N, S, "an interactive job, its terminal here (as `drover run --pty`)"),
    Option(("-Ip",), N, S, "an interactive job on a pseudo-terminal"),
    Option(("-Is",), N, S, "an interactive shell on a pseudo-terminal"),
    Option(("-i",), R, X, "a job reads no input file on Drover", "input_file"),
    Option(("-J",), R, S, "the job's name; `name[1-10:2,15]%N` an array, at most N elements at once",
           '"job_name[index_list]%job_slot_limit"'),
    Option(("-Jd",), R, S, "the job's description (kept as its comment)", '"job_description"'),
    Option(("-K",), N, S, "wait for the job to end; bsub exits with its exit code"),
    Option(("-k",), R, X, "checkpointing is Drover's `--checkpoint` environments", '"checkpoint_dir"'),
    Option(("-L",), R, S, "the shell that runs the script", "login_shell"),
    Option(("-M",), R, S, "the job's memory: its limit and what it holds (LSF_UNIT_FOR_LIMITS, KB unless "
           "lsf.conf sets it)", "mem_limit[!]"),
    Option(("-m",), R, A, "a job runs on the hosts the scheduler chooses: ignored", '"host_name..."'),
    Option(("-N",), N, S, "mail when the job ends"),
    Option(("-n",), R, S, "the job's slots (CPUs); `min,max` takes max", "num_tasks[,max]"),
    Option(("-nnodes",), R, A, "CSM's node count: the job holds one CPU on each of that many nodes",
           "num_nodes"),
    Option(("-o",), R, S, "the output file, appended to (the errors too, without -e); `%J`, `%I`; a "
           "directory gets `ID.out` in it", "output_file"),
    Option(("-oo",), R, S, "the output file, overwritten", "output_file"),
    Option(("-outdir",), R, A, "output files are written where -o and -e say: ignored", "output_directory"),
    Option(("-P",), R, A, "Drover has no projects: ignored", "project_name"),
    Option(("-p",), R, S, "the job's process limit", "process_limit"),
    Option(("-q",), R, S, "the queue (`normal` is Drover's default)", '"queue_name"'),
    Option(("-R",), R, S, "`span[hosts=1]`, `span[ptile=N]` (N slots per host), `rusage[mem=M]`, "
           "`select[FEATURE]`; `order[]`, `same[]`, `cu[]`, `affinity[]` ≈ ignored", '"res_req"'),
    Option(("-r",), N, S, "rerun on another host when its host is lost"),
    Option(("-rn",), N, S, "never rerun"),
    Option(("-S",), R, A, "no stack limit: ignored", "stack_limit"),
    Option(("-sp",), R, S, "the job's priority among the user's, 1 to 100 (Drover's scale: 0 to 1023)",
           "priority"),
    Option(("-T",), R, A, "the job's thread limit is its process limit", "thread_limit"),
    Option(("-tty",), N, A, "output is written to the files, not the terminal"),
    Option(("-u",), R, S, "whom the mail goes to", "mail_user"),
    Option(("-v",), R, A, "no swap limit: ignored", "swap_limit"),
    Option(("-W",), R, S, "the run limit", "[hour:]minute[/host_name | /host_model]"),
    Option(("-We",), R, A, "no estimated run time: ignored", "[hour:]minute[/host_name | /host_model]"),
    Option(("-w",), R, S, "`done(ID)` afterok, `exit(ID)` afternotok, `ended(ID)` afterany, `started(ID)` "
           "after; a job name for ID; all joined by `&&` or all by `||`; `numdone(ID,*)`; `exit(ID,code)`, "
           "`post_done`, `post_err` ≈", "'dependency_expression'"),
    Option(("-x",), N, S, "the job's host to itself"),
    Option(("-XF",), N, X, "no X11 forwarding"),
    Option(("-Zs",), N, A, "the script is always spooled: ignored"),
    Option(("-h",), N, S, "print the usage"),
    Option(("-V",), N, S, "print Drover's version, as LSF's release"),
]
