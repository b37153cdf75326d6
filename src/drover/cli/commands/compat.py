"""drover compat install [--flavor sge|pbs] DIR: put Slurm's commands and Grid Engine's (or, with
--flavor pbs, PBS Pro's and Torque's, which share qsub, qstat and qdel's names), and LSF's,
backed by Drover, into DIR. Opt-in, so they never shadow a real installation by accident."""

from __future__ import annotations

import os
import sys

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
# The default flavour's commands (the man pages and docs/compat.md's Grid Engine tables are theirs).
COMMANDS = {**SLURM_COMMANDS, **GRIDENGINE_COMMANDS, **LSF_COMMANDS}
# --flavor: which batch system's commands go beside Slurm's (and LSF's).
FLAVORS = {"sge": COMMANDS, "pbs": {**SLURM_COMMANDS, **PBS_COMMANDS, **LSF_COMMANDS}}


def run(command: str, argv: list[str]) -> int:
    p = parser(command, "Install Slurm's and Grid Engine's (or PBS's) commands, backed by Drover, into a "
               "directory.", json_flag=False)
    p.add_argument("action", choices=["install"])
    p.add_argument("directory")
    p.add_argument("--force", action="store_true", help="replace files of the same names")
    p.add_argument("--flavor", choices=sorted(FLAVORS), default="sge",
                   help="qsub, qstat, qdel... as Grid Engine's (sge, the default) or as PBS Pro's and Torque's (pbs)")
    args = p.parse_args(argv)
    os.makedirs(args.directory, exist_ok=True)
    for name, (module, function) in FLAVORS[args.flavor].items():
        path = os.path.join(args.directory, name)
        if os.path.exists(path) and not args.force:
            raise BadRequest(f"{path} exists; --force replaces it")
        with open(path, "w") as file:
            file.write(f"#!{sys.executable}\nfrom drover.cli.pipes import quiet_on_broken_pipe\n"
                       f"from {module} import {function}\nraise SystemExit(quiet_on_broken_pipe({function}))\n")
        os.chmod(path, 0o755)
        print(path)
    return 0
