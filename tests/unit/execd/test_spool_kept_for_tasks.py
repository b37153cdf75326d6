"""The node's cleanup removes an attempt's spool but the subdirectories of its PE tasks, which
may still run and write there (GE process flow: "for each task a subdirectory <petaskid> is
created that holds the task specific spool files"); the task handler removes the rest."""

from __future__ import annotations

from pathlib import Path

from drover.execd.cleanup import _remove_all_but_tasks
from drover.spool import layout


def _attempt(tmp_path: Path, tasks: tuple[str, ...]) -> Path:
    attempt = tmp_path / "12.0.1"
    (attempt / "tmp").mkdir(parents=True)
    for record in ("config", "exit_status", "usage", "trace"):
        (attempt / record).write_text("{}")
    for task in tasks:
        (attempt / task / "out").mkdir(parents=True)
        (attempt / task / "exit_status").write_text("{}")
    return attempt


def test_gridengine_process_flow_petask_subdirectories_outlive_the_attempts_records(tmp_path: Path) -> None:
    attempt = _attempt(tmp_path, ("1", "2"))
    assert sorted(layout.petask_names(str(attempt))) == ["1", "2"]
    _remove_all_but_tasks(str(attempt))
    assert sorted(path.name for path in attempt.iterdir()) == ["1", "2", layout.MADE_FOR_TASKS]
    assert (attempt / "1" / "exit_status").exists() and (attempt / "2" / "out").is_dir()


def test_an_attempt_whose_tasks_are_gone_is_removed_whole(tmp_path: Path) -> None:
    attempt = _attempt(tmp_path, ())
    (attempt / "1x").mkdir()  # not a task's name: an ordinary directory of the attempt
    assert layout.petask_names(str(attempt)) == []
    _remove_all_but_tasks(str(attempt))
    assert not attempt.exists()
