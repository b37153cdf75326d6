"""The workflow tools' copies every user can run (tests/helpers/user_tools.py): one per test run,
made by whichever worker needs it first while the others wait, readable by everyone, and gone
when the run ends."""

from __future__ import annotations

import os
import stat
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from tests.helpers import run_wide
from tests.helpers.user_tools import SYSTEM_PYTHON, SharedTools
from tests.helpers.workflow_tools import ToolEnv


def cached_tool(where: Path) -> ToolEnv:
    """A cached environment as workflow_tools.install leaves it: a package and a console script."""
    prefix = where / "tool-0123456789ab"
    package = prefix / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages" / "toolpkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("ANSWER = 42\n")
    (prefix / "bin").mkdir()
    (prefix / "bin" / "tool").write_text(f"#!{prefix}/bin/python\nimport toolpkg\nprint(toolpkg.ANSWER)\n")
    (prefix / "bin" / "tool").chmod(0o700)
    return ToolEnv("tool", prefix, 0.0)


def test_a_tool_is_copied_once_per_run_for_all_its_workers_and_removed_at_its_end(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if not SYSTEM_PYTHON.exists():
        pytest.skip(f"no {SYSTEM_PYTHON}")
    cached = cached_tool(tmp_path)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    monkeypatch.setenv(run_wide.RUN_DIR_VARIABLE, str(run_dir))
    # Two workers at once, each with its own SharedTools, as each xdist worker's session has.
    with ThreadPoolExecutor(2) as pool:
        made = list(pool.map(lambda _: SharedTools().usable(cached), range(2)))
    assert made[0].prefix == made[1].prefix
    copy = made[0].prefix
    assert copy.parent == Path((run_dir / "tools.shared-directory").read_text())
    assert copy.name == cached.prefix.name  # named like the cache it comes from
    # A later module of the run finds the copy made: nothing copied again.
    kept = next(copy.glob("lib/python*/site-packages")) / "kept"
    kept.touch()
    again = SharedTools()
    assert again.usable(cached).prefix == copy and kept.exists()
    again.remove()  # a module's end leaves the run's copy alone
    assert kept.exists()
    # Every user can enter the copy and run its commands, with the copy's own Python.
    for path in (copy.parent, copy, copy / "bin" / "tool", kept.parent / "toolpkg" / "__init__.py"):
        assert os.stat(path).st_mode & stat.S_IROTH, path
    assert (copy / "bin" / "tool").read_text().startswith(f"#!{copy}/bin/python\n")
    run_wide.remove_shared_directories(run_dir)
    assert not copy.parent.exists()
