"""drover compat install [--flavor sge|pbs] DIR: put Slurm's commands and Grid Engine's (or, with
--flavor pbs, PBS Pro's and Torque's, which share qsub, qstat and qdel's names), and LSF's and
HTCondor's, backed by Drover, into DIR, and their man pages into DIR/man/man1. Opt-in, so they
never shadow a real installation by accident."""

from __future__ import annotations

import os
import sys
from importlib import resources

from drover.cli.common import parser
from drover.core.errors import BadRequest

# command → (module, function). Each front end's module may hold OPTIONS, the option table its
# docs/compat.md section is generated from.
SLURM_COMMANDS = {
    name: (f"drover.compat.slurm.{name}", "main")
    for name in ("sbatch", "srun", "salloc", "squeue", "scancel", "sacct", "sinfo", "scontrol", "sstat", "sprio",
                 "sshare")
}
GRIDENGINE_COMMANDS = {
    name: (f"drover.compat.gridengine.{name}", "main")
    for name in ("qsub", "qstat", "qdel", "qhold", "qrls", "qacct", "qalter", "qrsh", "qmod", "qselect", "qhost",
                 "qconf")
}
PBS_COMMANDS = {
    name: (f"drover.compat.pbs.{name}", "main")
    for name in ("qsub", "qstat", "qdel", "qhold", "qrls", "qalter", "qsig", "qrerun", "pbsnodes")
}
# IBM Spectrum LSF's commands: their names collide with no other's, so every flavour has them.
LSF_COMMANDS = {
    name: (f"drover.compat.lsf.{name}", "main")
    for name in ("bsub", "bjobs", "bkill", "bstop", "bresume", "bqueues", "bhosts", "bhist", "bpeek", "lsid")
}
# HTCondor's commands: their names are no other batch system's, so every flavour installs them.
HTCONDOR_COMMANDS = {
    name: (f"drover.compat.htcondor.{name}", "main")
    for name in ("condor_submit", "condor_q", "condor_history", "condor_rm", "condor_hold", "condor_release",
                 "condor_wait", "condor_status")
}
# The default flavour's commands (the man pages and docs/compat.md's Grid Engine tables are theirs).
COMMANDS = {**SLURM_COMMANDS, **GRIDENGINE_COMMANDS, **LSF_COMMANDS, **HTCONDOR_COMMANDS}
# --flavor: which batch system's commands go beside Slurm's (and LSF's and HTCondor's).
FLAVORS = {"sge": COMMANDS, "pbs": {**SLURM_COMMANDS, **PBS_COMMANDS, **LSF_COMMANDS, **HTCONDOR_COMMANDS}}


def run(command: str, argv: list[str]) -> int:
    p = parser(command, "Install Slurm's and Grid Engine's (or PBS's) commands, backed by Drover, into a "
               "directory.", json_flag=False)
    p.add_argument("action", choices=["install"])
    p.add_argument("directory")
    p.add_argument("--force", action="store_true", help="replace files of the same names")
    p.add_argument("--flavor", choices=sorted(FLAVORS), default="sge",
                   help="qsub, qstat, qdel... as Grid Engine's (sge, the default) or as PBS Pro's and Torque's (pbs)")
    args = p.parse_args(argv)
    commands = FLAVORS[args.flavor]
    pages_dir = os.path.join(args.directory, "man", "man1")
    files = {os.path.join(args.directory, name): _launcher(module, function) for name, (module, function) in commands.items()}
    files.update({os.path.join(pages_dir, f"{name}.1"): page for name in commands
                  if (page := _man_page(args.flavor, name)) is not None})
    there = [path for path in files if os.path.exists(path)]
    if there and not args.force:  # before anything is written: nothing of what is there is lost
        raise BadRequest(f"{there[0]} exists" + (f" (and {len(there) - 1} more)" if len(there) > 1 else "")
                         + "; --force replaces them")
    os.makedirs(pages_dir, exist_ok=True)
    for path, text in files.items():
        with open(path, "w") as file:
            file.write(text)
        if not path.endswith(".1"):
            os.chmod(path, 0o755)
            print(path)
    return 0


def _launcher(module: str, function: str) -> str:
    return (f"#!{sys.executable}\nfrom drover.cli.pipes import quiet_on_broken_pipe\n"
            f"from {module} import {function}\nraise SystemExit(quiet_on_broken_pipe({function}))\n")


def _man_page(flavor: str, name: str) -> str | None:
    """The command's man page, installed in DIR/man/man1, where man finds it for a DIR on PATH
    (man-db looks in DIR/man beside each directory of PATH). PBS's pages are apart from the
    default's, since its qsub, qstat... share Grid Engine's names."""
    pages = resources.files("drover") / "data" / "man"
    for place in ([pages / flavor / "man1"] if flavor != "sge" else []) + [pages / "man1"]:
        page = place / f"{name}.1"
        if page.is_file():
            return page.read_text()
    return None
