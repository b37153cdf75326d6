"""drover compat install DIR: put Slurm's and Grid Engine's commands, backed by Drover, into
DIR. Opt-in, so they never shadow a real installation by accident."""

from __future__ import annotations

import os
import sys

from drover.cli.common import parser
from drover.core.errors import BadRequest

# command → (module, function). Each front end's module may hold OPTIONS, the option table its
# docs/compat.md section is generated from.
SLURM_COMMANDS = {
    "sbatch": ("drover.compat.slurm.sbatch", "main"), "squeue": ("drover.compat.slurm.squeue", "main"),
    "scancel": ("drover.compat.slurm.scancel", "main"), "sacct": ("drover.compat.slurm.sacct", "main"),
    "srun": ("drover.compat.slurm.srun", "main"), "scontrol": ("drover.compat.slurm.scontrol", "main"),
    "sinfo": ("drover.compat.slurm.sinfo", "main"),
    "sstat": ("drover.compat.slurm.sstat", "main"), "sprio": ("drover.compat.slurm.sprio", "main"),
    "sshare": ("drover.compat.slurm.sshare", "main"),
}
GRIDENGINE_COMMANDS = {
    "qsub": ("drover.compat.gridengine.qsub", "main"), "qstat": ("drover.compat.gridengine.qstat", "main"),
    "qdel": ("drover.compat.gridengine.actions", "qdel"), "qhold": ("drover.compat.gridengine.actions", "qhold"),
    "qrls": ("drover.compat.gridengine.actions", "qrls"), "qacct": ("drover.compat.gridengine.qacct", "main"),
    "qalter": ("drover.compat.gridengine.qalter", "main"), "qrsh": ("drover.compat.gridengine.qrsh", "main"),
}
COMMANDS = {**SLURM_COMMANDS, **GRIDENGINE_COMMANDS}


def run(command: str, argv: list[str]) -> int:
    p = parser(command, "Install Slurm's and Grid Engine's commands, backed by Drover, into a directory.",
               json_flag=False)
    p.add_argument("action", choices=["install"])
    p.add_argument("directory")
    p.add_argument("--force", action="store_true", help="replace files of the same names")
    args = p.parse_args(argv)
    os.makedirs(args.directory, exist_ok=True)
    for name, (module, function) in COMMANDS.items():
        path = os.path.join(args.directory, name)
        if os.path.exists(path) and not args.force:
            raise BadRequest(f"{path} exists; --force replaces it")
        with open(path, "w") as file:
            file.write(f"#!{sys.executable}\nfrom {module} import {function}\nraise SystemExit({function}())\n")
        os.chmod(path, 0o755)
        print(path)
    return 0
