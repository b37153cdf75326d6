"""Slurm's commands, as far as scripts and programs can see: sbatch, squeue, scancel, sacct."""
