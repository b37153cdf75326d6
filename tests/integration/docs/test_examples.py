"""The docs' ```console examples run, each page against a fresh personal cluster, and print what
the page says they print (the conventions: tests/integration/docs/examples.py, and
docs/contributing.md, "Examples in the docs")."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.helpers import debian
from tests.helpers.cluster import LocalCluster
from tests.integration.docs.examples import Block, Command, console_blocks, difference, matches

ROOT = Path(__file__).resolve().parents[3]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# The pages whose every example must run: a newcomer follows them first.
MUST_RUN = ("README.md", "docs/getting-started.md", "docs/python-client.md")
BLOCK_TIMEOUT_S = 180
# Tools the examples use beyond Drover and a shell, and their Debian packages: the set-up installs
# those a page needs (a fresh machine may lack them), or the page's test skips, saying why.
TOOLS = {"curl": "curl"}


def _pages_with_examples() -> list[Path]:
    return [page for page in PAGES if console_blocks(page)]


def _marker(kind: str, number: int) -> str:
    return f"@@drover-docs-{kind}-{number}@@"


def script_of(block: Block) -> str:
    """One bash script for the block: each command between markers, so that its output and exit
    status are told apart from the others'."""
    parts = ["exec 2>&1 </dev/null"]
    for number, command in enumerate(block.commands):
        parts.append(f"printf '%s\\n' '{_marker('start', number)}'")
        parts.append(command.text)
        parts.append(f"printf '\\n{_marker('end', number)} %d\\n' \"$?\"")
    return "\n".join(parts) + "\n"


def outputs_of(block: Block, printed: str) -> list[tuple[list[str], int] | None]:
    """Each command's output lines and exit status; None for one that never finished (the block
    stopped or timed out before it)."""
    results: list[tuple[list[str], int] | None] = []
    for number in range(len(block.commands)):
        start = printed.find(_marker("start", number) + "\n")
        end = printed.find("\n" + _marker("end", number) + " ")
        if start < 0 or end < 0:
            results.append(None)
            continue
        text = printed[start + len(_marker("start", number)) + 1:end]
        status_line = printed[end + 1:].split("\n", 1)[0]
        results.append((text.splitlines(), int(status_line.rsplit(" ", 1)[1])))
    return results


def run_block(block: Block, env: dict[str, str], cwd: Path) -> tuple[list[str], str]:
    """Run a block; return the reports of the commands that did not print what the block says,
    and everything the block printed."""
    with subprocess.Popen(["bash", "-c", script_of(block)], env=env, cwd=cwd, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, process_group=0) as shell:
        try:
            printed, _ = shell.communicate(timeout=BLOCK_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.killpg(shell.pid, signal.SIGKILL)  # the block's commands too, not only its bash
            printed, _ = shell.communicate()
            return [f"{block.where()}: the block did not finish within {BLOCK_TIMEOUT_S} s:\n{printed}"], printed
    reports = []
    for command, result in zip(block.commands, outputs_of(block, printed), strict=True):
        if result is None:
            reports.append(f"{block.path}:{command.line}: $ {command.text}\n  did not run (the block stopped before it)")
            continue
        lines, status = result
        if status != 0 or not matches(command.expected, lines):
            reports.append(difference(command, block, lines, status))
    return reports, printed


def relative(page: Path) -> str:
    return str(page.relative_to(ROOT))


class PageCluster(LocalCluster):
    """A state directory whose daemons the page starts itself (`drover up`), with their spool
    where `drover up` puts it, so that the clean-up finds the jobs left there."""

    @property
    def spool(self) -> Path:
        from drover.config import Paths, default_spool

        return Path(default_spool(Paths(str(self.state_dir))))


@pytest.fixture
def page_cluster() -> Iterator[tuple[dict[str, str], Path]]:
    """A state directory no cluster runs in yet (the page's `drover up` starts it) and a working
    directory; whatever the page started is stopped afterwards, its jobs killed."""
    local = PageCluster()
    bin_dir = str(Path(sys.executable).parent)
    env = dict(local.env, PATH=f"{bin_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}", LANG="C.UTF-8",
               LC_ALL="C.UTF-8", TERM="dumb", COLUMNS="120", NO_COLOR="1")
    env.pop("DROVER_CONTROLLER", None)
    yield env, local.workdir
    subprocess.run(["bash", "-c", "drover down"], env=env, cwd=local.workdir, capture_output=True, timeout=60)
    spool = local.spool
    local.stop()
    shutil.rmtree(spool, ignore_errors=True)


@pytest.mark.timeout(900)
@pytest.mark.parametrize("page", _pages_with_examples(), ids=relative)
def test_the_examples_of_a_page_print_what_it_says(page: Path, page_cluster: tuple[dict[str, str], Path]) -> None:
    env, workdir = page_cluster
    used = {tool for block in console_blocks(page) for command in block.commands for tool in TOOLS
            if tool in command.text.split()}
    for tool in sorted(used):
        try:
            debian.tool(tool, TOOLS[tool])
        except debian.Unavailable as why:
            pytest.skip(f"{relative(page)}'s examples use {tool}: {why}")
    reports: list[str] = []
    for block in console_blocks(page):
        block.path = Path(relative(page))  # reports name the file as the repository does
        found, _ = run_block(block, env, workdir)
        reports += found
    if reports:
        pytest.fail(f"{len(reports)} example(s) of {relative(page)} differ from the docs:\n\n" + "\n\n".join(reports),
                    pytrace=False)


def test_the_pages_a_newcomer_follows_have_runnable_examples_only() -> None:
    """Their shell examples are ```console, so that the test above runs every one."""
    shown_only = []
    for name in MUST_RUN:
        page = ROOT / name
        lines = page.read_text().splitlines()
        for number, text in enumerate(lines, 1):
            if text.strip() in ("```sh", "```bash", "```shell"):
                shown_only.append(f"{name}:{number}: {text.strip()}")
        assert console_blocks(page), f"{name} has no ```console example"
    readme_only = [where for where in shown_only if where.startswith("README.md")]
    assert not [w for w in shown_only if not w.startswith("README.md")], "\n".join(shown_only)
    # The README shows the two set-up commands as ```sh (running `make test` in a test would
    # run the suite again); its tour is ```console.
    assert len(readme_only) <= 1, "\n".join(readme_only)
    assert "make test " in (ROOT / "README.md").read_text(), "the README names the test command CI runs"


def test_a_differing_example_is_reported_with_its_file_line_and_a_diff(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("Intro.\n\n```console\n$ echo one\none\n$ printf 'a\\nb\\n'\na\n...\n$ echo two\nthree\n```\n")
    (block,) = console_blocks(page)
    reports, _ = run_block(block, dict(os.environ), tmp_path)
    assert len(reports) == 1, reports
    assert reports[0].startswith(f"{page}:9 (block at line 3): $ echo two")
    assert "-three" in reports[0] and "+two" in reports[0]


def test_placeholders_and_wildcard_lines_match_what_varies() -> None:
    expected = ["Submitted job <id>", "...", "JOB STATE <...>", "<id> COMPLETED took <time>"]
    assert matches(expected, ["Submitted job 12", "x", "y", "JOB   STATE  ELAPSED", "12.3  COMPLETED took 0.2s"])
    assert matches(["a", "...", "b"], ["a", "b", ""])
    assert not matches(["Submitted job <id>"], ["Submitted job twelve"])
    assert not matches(["a"], ["a", "b"])
    commands = [Command(1, "true", [])]
    assert matches(commands[0].expected, [])
