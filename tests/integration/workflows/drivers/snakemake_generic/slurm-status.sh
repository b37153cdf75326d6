#!/bin/sh
# Snakemake's cluster-generic status command for Slurm: slurm-status.sh JOBID prints running,
# success or failed from the job's state in `sacct -j JOBID -X -n -P -o State`.
state=$(sacct -j "$1" -X -n -P -o State | head -n 1)
case "$state" in
    COMPLETED) echo success ;;
    PENDING|RUNNING|REQUEUED|RESIZING|SUSPENDED|CONFIGURING|COMPLETING|"") echo running ;;
    *) echo failed ;;  # FAILED, CANCELLED by N, TIMEOUT, OUT_OF_MEMORY, NODE_FAIL...
esac
