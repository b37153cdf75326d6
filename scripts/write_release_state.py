"""Write this release's state for tests/data/releases/<version>/: a real personal cluster runs a
few jobs of different kinds (an array, a finished job that failed, a running one, a held one),
then its SQLite store, the spool directories of a finished attempt and of a running one, and
manifest.json (what this release reads in them) are copied there. The tests open every copy with
the code of their day (tests/unit/store/test_earlier_releases.py), so state written by a release
stays loadable by the next ones.

    .venv/bin/python scripts/write_release_state.py            # the version in pyproject.toml
    .venv/bin/python scripts/write_release_state.py 0.2.0      # or name it
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import sys
import tempfile
import tomllib
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPOSITORY))

from tests.helpers.cluster import LocalCluster  # noqa: E402
from tests.helpers.release_state import RELEASES, open_copy, spool_summary, store_summary  # noqa: E402
from tests.helpers.wait import wait_until  # noqa: E402

# No job takes the environment of whoever runs this: nothing of theirs is checked in.
PLAIN = ("--export", "NONE", "--keep-spool")


def main(argv: list[str]) -> int:
    version = argv[0] if argv else tomllib.loads((REPOSITORY / "pyproject.toml").read_text())["project"]["version"]
    out = RELEASES / version
    if out.exists():
        print(f"{out} exists: remove it first to write it again", file=sys.stderr)
        return 1
    cluster = LocalCluster(cpus=2).start()
    try:
        jobs = {
            "array": cluster.submit(*PLAIN, "-J", "array", "--array", "1-3", "--", "echo", "hello"),
            "finished": cluster.submit(*PLAIN, "-J", "finished", "--", "sh", "-c", "echo done; exit 3"),
        }
        cluster.drover("wait", str(jobs["array"]), str(jobs["finished"]), check=False)
        finished_attempt = f"{jobs['finished']}.0.1"
        kept = cluster.spool / "kept" / finished_attempt
        wait_until(lambda: cluster.drover_json("show", str(jobs["finished"]))["state"] == "failed"
                   and (kept / "cleanup").exists(), describe="the finished job's cleanup")
        jobs["running"] = cluster.submit(*PLAIN, "-J", "running", "--", "sleep", "600")
        running_attempt = f"{jobs['running']}.0.1"
        wait_until(lambda: cluster.drover_json("show", str(jobs["running"]))["state"] == "running"
                   and (cluster.spool / running_attempt / "job_pid").exists(), describe="the running job")
        jobs["held"] = cluster.submit(*PLAIN, "-J", "held", "--hold", "--", "true")
        wait_until(lambda: cluster.drover_json("show", str(jobs["held"]))["state"] == "held", describe="the hold")

        out.mkdir(parents=True)
        database = next(cluster.state_dir.rglob("drover.db"))
        with sqlite3.connect(database) as source, sqlite3.connect(out / "drover.db") as copy:
            source.backup(copy)  # whole and consistent while the controller writes
        for name, directory in ((finished_attempt, kept), (running_attempt, cluster.spool / running_attempt)):
            shutil.copytree(directory, out / "spool" / name, ignore=_not_regular_files)
    finally:
        problems = cluster.stop()
    with tempfile.TemporaryDirectory() as scratch:
        store = open_copy(out, Path(scratch))
        try:
            manifest = {"release": version, "jobs": jobs, "store": store_summary(store, sorted(jobs.values())),
                        "spool": spool_summary(out / "spool")}
        finally:
            store.close()
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    print(f"wrote {out}" + (f" ({'; '.join(problems)})" if problems else ""))
    return 0


def _not_regular_files(directory: str, names: list[str]) -> list[str]:
    """Sockets and the like, which are not records, and the room kept for the records of the end
    (256 KiB of nothing)."""
    return [name for name in names if name == "reserve"
            or not (Path(directory) / name).is_file() and not (Path(directory) / name).is_dir()]


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
