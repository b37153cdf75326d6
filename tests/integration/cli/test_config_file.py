"""A drover.toml the daemons refuse: they exit with the file, line and key; `drover up` says so
and starts nothing. `drover config check` prints the settings in effect."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from tests.helpers.personal import drover_in, state_dir_for_test

MISTYPED = '[controller]\nnode_timeout_s = 60\nkill_grace_s = "ten"\n'
MISSPELT = '[execd]\ncpus = 2\n\nprologue = "echo hi"\n'


@pytest.fixture
def state_dir() -> Iterator[Path]:
    yield from state_dir_for_test()


def _daemons_of(root: Path) -> list[psutil.Process]:
    """Processes started for this state directory (the daemons name it on their command line)."""
    found = []
    for process in psutil.process_iter(["cmdline"]):
        if str(root) in " ".join(process.info["cmdline"] or []):
            found.append(process)
    return found


@pytest.mark.parametrize(("daemon", "text", "line"), [
    ("controller", MISTYPED, ':3: [controller] kill_grace_s must be a number from 0 to 3600, not "ten"'),
    ("execd", MISSPELT, ":4: [execd] unknown key 'prologue' (did you mean 'prolog'?)"),
])
def test_a_daemon_refuses_a_bad_file_in_one_line(state_dir: Path, daemon: str, text: str, line: str) -> None:
    (state_dir / "drover.toml").write_text(text)
    result = drover_in(state_dir, daemon, "--state-dir", str(state_dir))
    assert result.returncode != 0
    assert result.stderr == f"drover {daemon}: {state_dir / 'drover.toml'}{line}\n"
    assert not (state_dir / "api.sock").exists()


@pytest.mark.parametrize("text", [MISTYPED, MISSPELT, "[controller\nkill_grace_s = 1\n"])
def test_up_reports_the_bad_file_and_leaves_nothing_running(state_dir: Path, text: str) -> None:
    (state_dir / "drover.toml").write_text(text)
    result = drover_in(state_dir, "up")
    assert result.returncode == 1
    assert result.stderr.startswith(f"drover up: {state_dir / 'drover.toml'}:")
    assert len(result.stderr.splitlines()) == 1
    assert _daemons_of(state_dir) == []
    assert not any((state_dir / name).exists() for name in ("api.sock", "controller.pid", "execd.pid"))
    # The same when a submission would have started the cluster.
    submitted = drover_in(state_dir, "submit", "--", "true")
    assert submitted.returncode == 1 and submitted.stderr.startswith(f"drover submit: {state_dir / 'drover.toml'}:")
    assert _daemons_of(state_dir) == []


def test_config_check_prints_the_settings_in_effect(state_dir: Path) -> None:
    config = state_dir / "drover.toml"
    config.write_text('[controller]\nkill_grace_s = 2\n\n[execd]\nrlimits = {nofile = 512}\n'
                      '[queues.fast]\nprolog = "echo fast"\n')
    result = drover_in(state_dir, "config", "check")
    assert result.returncode == 0, result.stderr
    lines = [" ".join(line.split()) for line in result.stdout.splitlines()]
    assert lines[0] == f"# {config}: 'file' marks the values it sets; the others are defaults"
    assert any(line.startswith("kill_grace_s = 2.0 # file: seconds between SIGTERM and SIGKILL") for line in lines)
    assert any(line.startswith('sqlite_synchronous = "NORMAL" # default: ') for line in lines)
    assert any(line.startswith("max_array_size = 1000000 # default: ") for line in lines)
    assert any(line.startswith("# node_name (unset) # default: ") for line in lines)
    assert "[execd.rlimits]" in lines and any(line.startswith("nofile = 512 # file: ") for line in lines)
    assert "[queues.fast]" in lines and any(line.startswith('prolog = "echo fast" # file: ') for line in lines)
    assert "[compat]" in lines

    as_json = drover_in(state_dir, "config", "check", "--json", "--state-dir", str(state_dir))
    assert as_json.returncode == 0
    import json

    document = json.loads(as_json.stdout)
    assert document["config"]["controller"]["kill_grace_s"] == 2.0
    assert document["config"]["execd"]["rlimits"]["nofile"] == 512
    assert "execd.rlimits.nofile" in document["from_file"] and "controller.node_timeout_s" not in document["from_file"]


def test_config_check_refuses_a_bad_file_with_its_line(state_dir: Path) -> None:
    (state_dir / "drover.toml").write_text(MISSPELT)
    result = drover_in(state_dir, "config", "check")
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr == (f"drover config: {state_dir / 'drover.toml'}:4: [execd] unknown key 'prologue' "
                             "(did you mean 'prolog'?)\n")


def test_config_check_without_a_file_prints_the_defaults(state_dir: Path) -> None:
    result = drover_in(state_dir, "config", "check")
    assert result.returncode == 0
    assert result.stdout.startswith(f"# {state_dir / 'drover.toml'}: no such file; every value is a default")
    assert "# file:" not in result.stdout
