"""Thin front ends with the commands people already know (sbatch, squeue, ...), over Drover's
own client API: no second scheduler, no access to the store."""
