"""`make demo`: start a personal cluster, run real jobs, show their results.

Every step is a `drover` command, printed before it runs, so the demo is also a tour.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import tempfile
import textwrap

DROVER = os.path.join(os.path.dirname(sys.executable), "drover")


def step(title: str, *args: str, check: bool = True) -> str:
    print(f"\n\033[1m# {title}\033[0m\n$ drover {' '.join(shlex.quote(a) for a in args)}", flush=True)
    result = subprocess.run([DROVER, *args], text=True, capture_output=True)
    sys.stdout.write(result.stdout)
    sys.stdout.write(result.stderr)
    if check and result.returncode != 0:
        raise SystemExit(f"demo: `drover {' '.join(args)}` failed with exit status {result.returncode}")
    print(f"(exit status {result.returncode})", flush=True)
    return result.stdout.strip()


def main() -> None:
    work = tempfile.mkdtemp(prefix="drover-demo-")
    os.chdir(work)
    with open("crunch.sh", "w") as script:
        script.write(textwrap.dedent("""\
            #!/bin/bash
            # A job script: sums numbers for a while, then reports where it ran.
            total=0
            for i in $(seq 1 200000); do total=$((total + i)); done
            echo "task ${DROVER_ARRAY_TASK_ID:-0} of job $DROVER_JOB_ID on $DROVER_NODE: total=$total"
            """))
    print(f"Jobs of this demo write their output to {work}")
    step("Start a personal cluster (a controller and one execd, in the background)", "up")
    step("The node, with the CPUs and memory it offers", "nodes")
    quick = step("Submit a command", "submit", "--parsable", "--name", "hello", "--", "echo", "hello from Drover")
    array = step("Submit a script as an array of 6 tasks, at most 2 at once", "submit", "--parsable",
                 "--array", "1-6%2", "--mem", "64M", "crunch.sh")
    failing = step("Submit a job that fails", "submit", "--parsable", "--name", "fails", "--", "bash", "-c", "exit 3")
    after = step("Submit a job that waits for the array to complete", "submit", "--parsable",
                 "--dependency", f"afterok:{array}", "--name", "after-array", "--", "echo", "the array is done")
    sleeper = step("Submit a long job, to cancel it", "submit", "--parsable", "--name", "long", "--", "sleep", "600")
    step("What the cluster is doing", "status")
    step("Cancel the long job (one not started yet just ends; a running one gets SIGTERM, a grace period, "
         "then SIGKILL)", "cancel", sleeper)
    step("Wait for the others: the exit status is the jobs'", "wait", quick, array, after)
    step("Waiting for the failing job gives its exit status", "wait", failing, check=False)
    step("The hello job's output", "logs", quick)
    step("One array task's output", "logs", f"{array}.3")
    step("Everything about the array: each task, each attempt, its usage", "show", array)
    step("What every job used", "history", "--limit", "12")
    print("\nThe personal cluster is still running: try `drover status --all`, `drover submit -- CMD`.")
    print("Stop it with `drover down` (from the virtual environment: .venv/bin/drover down).")


if __name__ == "__main__":
    main()
