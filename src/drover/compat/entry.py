"""The front ends as the installed package's commands (`sbatch`, `qsub`, ...: the console scripts
of pyproject.toml), each entered as `drover` is: quietly ended by a closed pipe, and importing
only its own module."""

from __future__ import annotations

import importlib


def _enter(module: str) -> int:
    from drover.cli.pipes import quiet_on_broken_pipe

    return quiet_on_broken_pipe(importlib.import_module(module).main)


def sbatch() -> int:
    return _enter("drover.compat.slurm.sbatch")

def srun() -> int:
    return _enter("drover.compat.slurm.srun")

def salloc() -> int:
    return _enter("drover.compat.slurm.salloc")

def squeue() -> int:
    return _enter("drover.compat.slurm.squeue")

def scancel() -> int:
    return _enter("drover.compat.slurm.scancel")

def sacct() -> int:
    return _enter("drover.compat.slurm.sacct")

def sinfo() -> int:
    return _enter("drover.compat.slurm.sinfo")

def scontrol() -> int:
    return _enter("drover.compat.slurm.scontrol")

def sstat() -> int:
    return _enter("drover.compat.slurm.sstat")

def sprio() -> int:
    return _enter("drover.compat.slurm.sprio")

def sshare() -> int:
    return _enter("drover.compat.slurm.sshare")

def qsub() -> int:
    return _enter("drover.compat.gridengine.qsub")

def qstat() -> int:
    return _enter("drover.compat.gridengine.qstat")

def qdel() -> int:
    return _enter("drover.compat.gridengine.qdel")

def qhold() -> int:
    return _enter("drover.compat.gridengine.qhold")

def qrls() -> int:
    return _enter("drover.compat.gridengine.qrls")

def qacct() -> int:
    return _enter("drover.compat.gridengine.qacct")

def qalter() -> int:
    return _enter("drover.compat.gridengine.qalter")

def qrsh() -> int:
    return _enter("drover.compat.gridengine.qrsh")

def qmod() -> int:
    return _enter("drover.compat.gridengine.qmod")

def qselect() -> int:
    return _enter("drover.compat.gridengine.qselect")

def qhost() -> int:
    return _enter("drover.compat.gridengine.qhost")

def qconf() -> int:
    return _enter("drover.compat.gridengine.qconf")
