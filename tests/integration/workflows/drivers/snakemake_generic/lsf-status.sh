#!/bin/sh
# Snakemake's cluster-generic status command for LSF: lsf-status.sh JOBID prints running,
# success or failed from the job's status in `bjobs -noheader -o stat JOBID`.
case "$(bjobs -noheader -o stat "$1")" in
    DONE) echo success ;;
    EXIT) echo failed ;;
    *) echo running ;;  # PEND, RUN, PSUSP, USUSP, SSUSP, WAIT, UNKWN
esac
