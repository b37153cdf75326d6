#!/bin/sh
# Snakemake's cluster-generic status command for HTCondor: condor-status.sh JOBID prints running,
# success or failed. A job still in the queue is asked condor_q; one that left it, condor_history.
jobid="$1"
set -- $(condor_q "$jobid" -af JobStatus ExitCode)
if [ $# -eq 0 ]; then
    set -- $(condor_history "$jobid" -af JobStatus ExitCode)
fi
case "$1" in
    4) if [ "$2" = 0 ]; then echo success; else echo failed; fi ;;  # completed
    3|5|7) echo failed ;;  # removed, held, suspended... held waits on a person: report it failed
    *) echo running ;;  # idle, running, transferring output, or not seen yet
esac
