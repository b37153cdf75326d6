"""srun: inside a job, a single-node job step (the command runs here, in the job's allocation,
with --output/--error patterns and the step's SLURM_* variables); outside one, the command runs
as a job of its own with its output streamed, like `drover run`. The exit code passes through."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

from drover.compat.slurm.common import fail


def _expand(pattern: str) -> str:
    job = os.environ.get("SLURM_JOB_ID", "0")
    values = {"j": job, "J": f"{job}.0", "A": os.environ.get("SLURM_ARRAY_JOB_ID", job),
              "a": os.environ.get("SLURM_ARRAY_TASK_ID", "4294967294"), "t": "0", "s": "0", "n": "0",
              "N": os.environ.get("SLURMD_NODENAME", ""), "x": os.environ.get("SLURM_JOB_NAME", ""),
              "u": os.environ.get("SLURM_JOB_USER", ""), "%": "%"}
    out, i = [], 0
    while i < len(pattern):
        if pattern[i] == "%" and i + 1 < len(pattern) and pattern[i + 1] in values:
            out.append(values[pattern[i + 1]])
            i += 2
        else:
            out.append(pattern[i])
            i += 1
    return "".join(out)


def main(argv: list[str] | None = None) -> int:
    args_in = list(sys.argv[1:] if argv is None else argv)
    p = argparse.ArgumentParser(prog="srun")
    p.add_argument("-o", "--output")
    p.add_argument("-e", "--error")
    p.add_argument("-u", "--unbuffered", action="store_true")
    p.add_argument("--pty", action="store_true")
    p.add_argument("-n", "--ntasks", type=int)
    p.add_argument("-N", "--nodes")
    p.add_argument("-c", "--cpus-per-task")
    p.add_argument("-J", "--job-name")
    p.add_argument("-t", "--time")
    p.add_argument("--mem")
    p.add_argument("command", nargs=argparse.REMAINDER)
    args = p.parse_args(args_in)
    if not args.command:
        return fail("srun", "no command given")
    if "SLURM_JOB_ID" not in os.environ:  # not in a job: run one
        from drover.cli.main import main as drover

        options = [f"--{k.replace('_', '-')}={v}" for k, v in (("name", args.job_name), ("time", args.time),
                                                               ("mem", args.mem), ("cpus", args.cpus_per_task)) if v]
        return drover(["run", *(["--pty"] if args.pty else []), *options, "--", *args.command])
    if args.ntasks and args.ntasks > 1:
        print(f"srun: warning: --ntasks={args.ntasks}: one task runs (Drover's steps are single tasks)", file=sys.stderr)
    env = dict(os.environ, SLURM_STEP_ID="0", SLURM_PROCID="0", SLURM_LOCALID="0", SLURM_NODEID="0",
               SLURM_NTASKS="1", SLURM_STEP_NUM_TASKS="1")
    out = open(_expand(args.output), "ab") if args.output else None
    err = open(_expand(args.error), "ab") if args.error else out
    try:
        return subprocess.call(args.command, env=env, stdout=out, stderr=err)
    finally:
        for file in {out, err} - {None}:
            file.close()  # type: ignore[union-attr]


if __name__ == "__main__":
    raise SystemExit(main())
