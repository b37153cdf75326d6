"""drover fetch JOB: bring back the files a job staged out (kept by the controller)."""

from __future__ import annotations

import os

from drover.cli.common import client, job_ids, parser, print_json
from drover.core.errors import NotFound


def run(command: str, argv: list[str]) -> int:
    p = parser(command, "Copy the files a job staged out (--stage-out) into a directory: by default "
                        "the directory it was submitted from.")
    p.add_argument("job", metavar="JOB")
    p.add_argument("--to", metavar="DIR", help="where to put them (default: the job's submit directory)")
    args = p.parse_args(argv)
    (job_id,) = job_ids([args.job])
    with client() as api:
        job = api.job(job_id)
        listing = api.staged_files(job_id)
        latest = {t.index: max((a.number for a in t.attempts), default=0) for t in job.tasks}
        chosen = [f for f in listing if latest.get(f.task) == f.attempt]
        if not chosen:
            raise NotFound(f"job {job_id} has no staged-out files (yet)")
        target = os.path.abspath(args.to or job.submit_dir or job.workdir or os.getcwd())
        written = []
        for entry in chosen:
            data = api.staged_file(job_id, entry.task, entry.attempt, entry.name)
            if data is None:
                raise NotFound(f"job {job_id}: {entry.name} is no longer kept")
            path = os.path.join(target, entry.name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as file:
                file.write(data)
            written.append(path)
    if args.json:
        print_json({"written": written})
    else:
        for path in written:
            print(path)
    return 0
