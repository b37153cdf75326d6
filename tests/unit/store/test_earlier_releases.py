"""State written by earlier releases (tests/data/releases/<version>/, written by
scripts/write_release_state.py) loads with the current code and holds what that release wrote:
its SQLite store, migrated from a copy, and its execd's spool records."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.helpers.release_state import RELEASES, open_copy, spool_summary, store_summary

from drover.controller.state import ControllerState

COPIES = sorted(path for path in RELEASES.iterdir() if (path / "manifest.json").exists())


def manifest(release: Path) -> dict[str, Any]:
    return json.loads((release / "manifest.json").read_text())  # type: ignore[no-any-return]


def test_there_is_a_copy_of_state_from_a_release() -> None:
    assert COPIES, f"no release's state in {RELEASES}"


@pytest.mark.parametrize("release", COPIES, ids=lambda path: path.name)
def test_an_earlier_releases_store_loads_and_holds_its_jobs(release: Path, tmp_path: Path) -> None:
    wrote = manifest(release)
    jobs = wrote["jobs"]
    store = open_copy(release, tmp_path)
    try:
        read = store_summary(store, sorted(jobs.values()))
        assert read == wrote["store"]
        array, finished = read[str(jobs["array"])], read[str(jobs["finished"])]
        assert array["is_array"] and array["state"] == "completed" and array["tasks"] == {"completed": 3}
        assert [exit_code for _, _, exit_code, *_ in array["attempts"]] == [0, 0, 0]
        assert finished["state"] == "failed" and [a[2] for a in finished["attempts"]] == [3]
        running, held = read[str(jobs["running"])], read[str(jobs["held"])]
        assert running["tasks"] == {"running": 1} and [a[3:] for a in running["attempts"]] == [[True, False]]
        assert held["tasks"] == {"held": 1} and held["attempts"] == []
        # The controller starts on it: what it loads at start-up is whole and consistent.
        state = ControllerState.from_working_set(store.load_working_set())
        state.check_invariants()
        assert {jobs["running"], jobs["held"]} <= set(state.jobs)
    finally:
        store.close()


@pytest.mark.parametrize("release", COPIES, ids=lambda path: path.name)
def test_an_earlier_releases_spool_records_read_as_they_were_written(release: Path) -> None:
    wrote = manifest(release)
    read = spool_summary(release / "spool")
    assert read == wrote["spool"]
    finished, running = read[f"{wrote['jobs']['finished']}.0.1"], read[f"{wrote['jobs']['running']}.0.1"]
    assert finished["exit_status"]["exit_code"] == 3 and finished["usage"]
    assert finished["cleanup"] is not None and "report" in finished["cleanup"]["done"]
    assert running["config"]["name"] == "running" and running["exit_status"] is None and running["cleanup"] is None
