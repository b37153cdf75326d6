"""A personal cluster whose store is PostgreSQL (the private test server): jobs run to the end
through `drover submit`, `drover wait` and `drover history`, survive a controller restart, and
a controller that cannot open its store says why in one line."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.helpers.cluster import LocalCluster, serve


@pytest.fixture
def pg_cluster(request: pytest.FixtureRequest, postgres_url: str) -> Iterator[LocalCluster]:
    yield from serve(request, LocalCluster(config_toml=f'[store]\nurl = "{postgres_url}"\n'))


def test_jobs_run_to_the_end_on_a_postgresql_store(pg_cluster: LocalCluster, postgres_url: str) -> None:
    """1. Submit three jobs (one fails) and a two-task array. 2. `drover wait` for them.
    3. `drover history` lists every attempt with its exit code. 4. Restart the controller: it
    loads the same jobs from the server. 5. `drover store check` counts them; no SQLite file."""
    cluster = pg_cluster
    jobs = [cluster.submit("--", "echo", "hello"), cluster.submit("--", "sh", "-c", "exit 3"),
            cluster.submit("--array", "1-2", "--", "sh", "-c", "echo task $DROVER_TASK_ID")]
    waited = cluster.drover("wait", *map(str, jobs), check=False)
    assert waited.returncode != 0  # one job failed: wait says so
    assert (cluster.workdir / f"drover-{jobs[0]}.out").read_text() == "hello\n"
    history = cluster.drover_json("history")
    rows = history["rows"] if isinstance(history, dict) else history
    ended = {(row["job_id"], row["index"]): row for row in rows}
    assert set(ended) >= {(jobs[0], 0), (jobs[1], 0), (jobs[2], 1), (jobs[2], 2)}
    assert ended[jobs[1], 0]["state"] == "failed" and ended[jobs[0], 0]["state"] == "completed"

    cluster.kill("controller", signal.SIGTERM)
    cluster.start_controller()
    cluster.wait_node_up()
    assert [cluster.drover_json("show", str(job))["state"] for job in jobs] == ["completed", "failed", "completed"]
    later = cluster.submit("--", "true")
    assert cluster.drover("wait", str(later)).returncode == 0

    checked = cluster.drover("store", "check", "--state-dir", str(cluster.state_dir))
    assert "schema version" in checked.stdout and "(current)" in checked.stdout
    assert not (cluster.state_dir / "drover.db").exists()


def controller_refusing(tmp_path: Path, url: str, *prelude: str) -> subprocess.CompletedProcess[str]:
    """`drover controller` on a state directory whose drover.toml names `url`; `prelude`: Python
    run before it in the same interpreter."""
    state = tmp_path / "state"
    state.mkdir()
    (state / "drover.toml").write_text(f'[store]\nurl = "{url}"\n')
    code = "; ".join([*prelude, "from drover.cli.main import main", "import sys",
                      f"sys.exit(main(['controller', '--state-dir', {str(state)!r}]))"])
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)


def test_a_controller_whose_postgresql_is_unreachable_says_so_in_one_line(tmp_path: Path) -> None:
    result = controller_refusing(tmp_path, "postgresql://drover:secret@127.0.0.1:1/drover?connect_timeout=3")
    assert result.returncode != 0
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("drover controller: the job store postgresql://drover@127.0.0.1:1/drover")
    assert "PostgreSQL cannot be reached" in line and "secret" not in line


def test_a_controller_without_psycopg_says_how_to_install_it(tmp_path: Path) -> None:
    result = controller_refusing(tmp_path, "postgresql://drover@127.0.0.1:1/drover",
                                 "import sys", "sys.modules['psycopg'] = None")  # as if it were not installed
    (line,) = result.stderr.strip().splitlines()
    assert result.returncode != 0 and "needs psycopg" in line and "drover[postgres]" in line
