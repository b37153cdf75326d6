"""qsub's options (PBS Pro's qsub(1B), and Torque's -t, -d and -F), as data: the table qsub
parses with, and docs/compat.md's PBS qsub table is generated from."""

from __future__ import annotations

from drover.compat.optiontable import Arity, Mark, Option

QSUB_OPTIONS = [
    Option(("-a",), Arity.REQUIRED, Mark.SUPPORTED, "the job starts no earlier", "[[[[CC]YY]MM]DD]hhmm[.SS]"),
    Option(("-A",), Arity.REQUIRED, Mark.APPROXIMATED, "Drover keeps no accounts: ignored", "account_string"),
    Option(("-c",), Arity.REQUIRED, Mark.APPROXIMATED, "no checkpoint interval: ignored", "checkpoint_spec"),
    Option(("-C",), Arity.REQUIRED, Mark.SUPPORTED, "the directive prefix (also $PBS_DPREFIX); empty: none read",
           "directive_prefix"),
    Option(("-d",), Arity.REQUIRED, Mark.SUPPORTED, "Torque's: the job's working directory (PBS's default is "
           "the home directory)", "path"),
    Option(("-e",), Arity.REQUIRED, Mark.SUPPORTED, "the error file (a directory gets `NAME.eSEQ` in it); "
           "`host:` is dropped", "[hostname:]path_name"),
    Option(("-f",), Arity.NONE, Mark.MEANINGLESS, "qsub never forks a background process on Drover"),
    Option(("-F",), Arity.REQUIRED, Mark.SUPPORTED, "Torque's: the script's arguments, split as a shell splits them",
           '"arguments"'),
    Option(("-h",), Arity.NONE, Mark.SUPPORTED, "a user hold (qrls releases it)"),
    Option(("-I",), Arity.NONE, Mark.SUPPORTED, "an interactive job on a terminal, as `drover run --pty`"),
    Option(("-j",), Arity.REQUIRED, Mark.SUPPORTED, "`oe` both streams in the output file, `eo` both in the error "
           "file, `n` apart", "oe|eo|n"),
    Option(("-J",), Arity.REQUIRED, Mark.SUPPORTED, "an array of subjobs (PBS_ARRAY_INDEX)", "X-Y[:Z]"),
    Option(("-k",), Arity.REQUIRED, Mark.MEANINGLESS, "the output is always written where it goes while the job "
           "runs (as `-k oed`)", "keep"),
    Option(("-l",), Arity.REQUIRED, Mark.SUPPORTED, "`select=N:ncpus=C:mem=M:ngpus=G`, `nodes=N:ppn=C`, "
           "`walltime`, `mem`, `ncpus`, `ngpus`, `place=excl`; cput, pmem, vmem ≈; another name is a licence, "
           "generic resource or node feature of the cluster", "resource_list"),
    Option(("-m",), Arity.REQUIRED, Mark.SUPPORTED, "mail at `a` abort, `b` begin, `e` end; `n` none", "mail_events"),
    Option(("-M",), Arity.REQUIRED, Mark.SUPPORTED, "whom the mail goes to (default: the owner)", "user_list"),
    Option(("-N",), Arity.REQUIRED, Mark.SUPPORTED, "the job's name (default: the script's name, STDIN)", "name"),
    Option(("-o",), Arity.REQUIRED, Mark.SUPPORTED, "the output file (a directory gets `NAME.oSEQ` in it); "
           "`host:` is dropped", "[hostname:]path_name"),
    Option(("-p",), Arity.REQUIRED, Mark.SUPPORTED, "the priority, -1024 to 1023 (-1024 is Drover's lowest, -1023, with a warning)", "priority"),
    Option(("-P",), Arity.REQUIRED, Mark.APPROXIMATED, "Drover has no projects: ignored", "project"),
    Option(("-q",), Arity.REQUIRED, Mark.SUPPORTED, "the queue (`workq` is Drover's default)", "destination"),
    Option(("-r",), Arity.REQUIRED, Mark.SUPPORTED, "whether the job is rerun when its node is lost", "y|n"),
    Option(("-R",), Arity.REQUIRED, Mark.APPROXIMATED, "output files are never removed: ignored", "remove_options"),
    Option(("-S",), Arity.REQUIRED, Mark.SUPPORTED, "the script's interpreter", "path_list"),
    Option(("-t",), Arity.REQUIRED, Mark.SUPPORTED, "Torque's array (PBS_ARRAYID): `1-10`, `1,3,5-7`, `%N` at most "
           "N at once", "array_request"),
    Option(("-u",), Arity.REQUIRED, Mark.REFUSED, "a job runs as the user who submits it", "user_list"),
    Option(("-v",), Arity.REQUIRED, Mark.SUPPORTED, "these variables, from qsub's environment or as given",
           "variable_list"),
    Option(("-V",), Arity.NONE, Mark.SUPPORTED, "all of qsub's environment"),
    Option(("-W",), Arity.REQUIRED, Mark.SUPPORTED, "`depend=afterok|afternotok|afterany|after:ID[:ID...]`, "
           "`block=true` (wait, exit with the job's status); `umask`, `group_list`, `sandbox` ≈ ignored; "
           "`before*`, `stagein`, `stageout` ✗", "attribute=value"),
    Option(("-X",), Arity.NONE, Mark.APPROXIMATED, "no X11 forwarding: ignored"),
    Option(("-z",), Arity.NONE, Mark.SUPPORTED, "print no job id"),
    Option(("--version",), Arity.NONE, Mark.SUPPORTED, "prints `pbs_version =` Drover's version"),
]
