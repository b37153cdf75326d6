#!/usr/bin/env python3
"""Snakemake's cluster-generic status command for PBS Pro: pbs-status.py JOBID prints running,
success or failed from `qstat -x -f -F json JOBID` (-x: finished jobs too). A finished job
(job_state F) succeeded when its Exit_status is 0."""

import json
import subprocess
import sys

jobid = sys.argv[1]
out = subprocess.run(["qstat", "-x", "-f", "-F", "json", jobid], capture_output=True, text=True, check=True)
job = json.loads(out.stdout)["Jobs"]
(attributes,) = job.values()
if attributes["job_state"] != "F":
    print("running")  # Q, H, W, R, E (exiting): not done yet
elif attributes.get("Exit_status") == 0:
    print("success")
else:
    print("failed")
