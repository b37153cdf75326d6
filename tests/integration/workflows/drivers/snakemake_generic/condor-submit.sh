#!/bin/sh
# Snakemake's cluster-generic submit command for HTCondor: condor-submit.sh CPUS MEMORY_MB JOBSCRIPT
# writes a submit description for the job script beside it, submits it and prints the cluster id.
# The job's output, errors and event log go to logs/ (snakemake removes its job scripts' directory).
cpus="$1" memory="$2" jobscript="$3"
mkdir -p logs
cat > "$jobscript.sub" <<SUBMIT
executable = $jobscript
request_cpus = $cpus
request_memory = $memory
getenv = True
environment = "CLUSTER_ID=\$(ClusterId)"
output = logs/\$(ClusterId).out
error = logs/\$(ClusterId).err
log = logs/\$(ClusterId).log
queue
SUBMIT
condor_submit -terse "$jobscript.sub" | cut -d. -f1
