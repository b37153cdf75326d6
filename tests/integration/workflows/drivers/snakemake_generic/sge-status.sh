#!/bin/sh
# Snakemake's cluster-generic status command for Grid Engine: sge-status.sh JOBID prints
# running, success or failed. A job qstat still knows (pending, running, held) is running; once
# it left qstat, qacct's record says how it ended (`failed` 0 and `exit_status` 0: success).
jobid="$1"
if qstat -j "$jobid" >/dev/null 2>&1; then
    echo running
    exit 0
fi
if ! record=$(qacct -j "$jobid" 2>/dev/null); then
    echo running  # ended a moment ago, not yet in the accounting file
    exit 0
fi
failed=$(echo "$record" | awk '$1 == "failed" { print $2 }')
status=$(echo "$record" | awk '$1 == "exit_status" { print $2 }')
if [ "$failed" = 0 ] && [ "$status" = 0 ]; then
    echo success
else
    echo failed
fi
