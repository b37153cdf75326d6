"""State an earlier release wrote, checked in under tests/data/releases/<version>/, that the current
code must still load: its SQLite store (`drover.db`), its execd's spool (`spool/<attempt>/`: the
records of a finished attempt and of a running one) and `manifest.json`, what that release said
the store and the records held. scripts/write_release_state.py writes the next release's copy.

`store_summary` and `spool_summary` read them with the code at hand; the script wrote their
output, as that release read it, into the manifest, and tests/unit/store/test_earlier_releases.py
compares."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from drover.execd import attempt_records
from drover.spool import layout
from drover.store.base import Store, open_store

RELEASES = Path(__file__).resolve().parents[1] / "data" / "releases"


def open_copy(release: Path, into: Path) -> Store:
    """The release's store, opened (and migrated) from a copy: the checked-in file stays as it was."""
    copy = into / "drover.db"
    shutil.copyfile(release / "drover.db", copy)
    return open_store(f"sqlite://{copy}")


def store_summary(store: Store, job_ids: list[int]) -> dict[str, Any]:
    """Each job's name, state, task states and its attempts' ends, as the store holds them."""
    jobs: dict[str, Any] = {}
    for job_id in job_ids:
        job = store.load_job(job_id)
        assert job is not None, f"job {job_id} is not in the store"
        jobs[str(job_id)] = {
            "name": job.name, "is_array": job.is_array, "state": job.state.value if job.state else None,
            "tasks": job.task_counts(),
            "attempts": sorted([f"{a.job_id}.{a.index}.{a.number}", a.node, a.exit["exit_code"] if a.exit else None,
                                a.started_at is not None, a.ended_at is not None]
                               for a in store.attempts_of(job_id)),
        }
    return jobs


def spool_summary(spool_root: Path) -> dict[str, Any]:
    """Each attempt directory's records, read as the node reads them."""
    attempts: dict[str, Any] = {}
    for directory in sorted(p for p in spool_root.iterdir() if p.is_dir()):
        spool = layout.SpoolDir(str(spool_root), directory.name)
        config = attempt_records.config(spool)
        usage = attempt_records.usage(spool)
        ended = (directory / layout.EXIT_STATUS).exists()
        attempts[directory.name] = {
            "config": None if config is None else {**{key: config[key] for key in  # type: ignore[literal-required]
                                                      ("attempt", "job_id", "task_index", "name", "cpus")},
                                                   "queue": config["job"]["queue"]},
            "job_script": (directory / layout.JOB_SCRIPT).read_text(),
            "exit_status": attempt_records.exit_status(spool) if ended else None,
            "usage": None if usage is None else sorted(usage),
            "cleanup": attempt_records.cleanup_progress(spool) if (directory / layout.CLEANUP).exists() else None,
        }
    return attempts
