#!/bin/sh
# Snakemake's cluster-generic submit command for LSF: lsf-submit.sh BSUB-OPTIONS... JOBSCRIPT
# runs bsub and prints the job id alone, out of "Job <ID> is submitted to default queue <normal>."
bsub "$@" | sed -n 's/^Job <\([0-9]*\)> is submitted.*/\1/p'
