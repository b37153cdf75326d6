"""The man pages and completion scripts the package ships are the ones the commands' parsers
make now (scripts/cli_files.py), and say what those parsers accept."""

from __future__ import annotations

import pathlib
import subprocess

import pytest
from tests.helpers import debian
from tests.helpers.scripts import script_module

from drover.cli.commands.compat import COMMANDS as FRONT_ENDS
from drover.cli.commands.compat import PBS_COMMANDS
from drover.cli.main import COMMANDS

ROOT = pathlib.Path(__file__).resolve().parents[3]
DATA = ROOT / "src" / "drover" / "data"


def needed(name: str, package: str | None = None) -> str:
    """A tool, installed by the set-up if need be; the test skips, saying why, if it cannot be."""
    try:
        return debian.tool(name, package)
    except debian.Unavailable as why:
        pytest.skip(str(why))


@pytest.fixture(scope="module")
def generated() -> dict[pathlib.Path, str]:
    return script_module("cli_files").wanted()


def test_the_shipped_files_are_the_generated_ones(generated: dict[pathlib.Path, str]) -> None:
    stale = [str(path.relative_to(DATA)) for path, text in generated.items()
             if not path.exists() or path.read_text() != text]
    assert not stale, f"out of date, run make cli-files: {stale}"
    shipped = {p for d in ("man/man1", "man/pbs/man1", "completion") for p in (DATA / d).iterdir()}
    assert shipped == set(generated), "files no command makes any more: run make cli-files"


def test_every_command_and_front_end_has_a_man_page(generated: dict[pathlib.Path, str]) -> None:
    names = {str(path.relative_to(DATA / "man")) for path in generated if path.suffix == ".1"}
    assert names == ({"man1/drover.1"} | {f"man1/drover-{c}.1" for c in COMMANDS} | {f"man1/{c}.1" for c in FRONT_ENDS}
                     | {f"pbs/man1/{c}.1" for c in PBS_COMMANDS})


def test_a_page_lists_the_options_its_parser_takes(generated: dict[pathlib.Path, str]) -> None:
    submit = generated[DATA / "man" / "man1" / "drover-submit.1"]
    assert "\\fB\\-\\-array\\fR" in submit and "\\fB\\-\\-dependency\\fR" in submit
    queue = generated[DATA / "man" / "man1" / "drover-queue.1"]
    assert ".SS create" in queue and "\\fB\\-\\-reason\\fR" in queue
    sbatch = generated[DATA / "man" / "man1" / "sbatch.1"]
    assert "\\fB\\-\\-job\\-name\\fR" in sbatch


def test_every_page_renders_without_warnings(generated: dict[pathlib.Path, str]) -> None:
    groff = needed("groff", "groff-base")
    for path, text in generated.items():
        if path.suffix == ".1":
            rendered = subprocess.run([groff, "-man", "-Tutf8", "-wmac", "-wchar", "-wescape", "-wdelim", "-Wbreak"],
                                      input=text, capture_output=True, text=True, check=True)
            assert rendered.stderr == "", (path.name, rendered.stderr)
            assert path.stem.upper() in rendered.stdout.replace("\u2010", "-")


def bash_completion(script: str, function: str, *words: str, path: pathlib.Path | None = None) -> list[str]:
    """What bash offers for the last of `words` with `script` loaded and its `function` asked;
    `path`: a directory put first on PATH (a fake `drover`), also the working directory."""
    line = f'COMP_WORDS=({" ".join(words)}); COMP_CWORD={len(words) - 1}'
    run = subprocess.run(["bash", "--norc", "-c", f'{script}\n{line}; {function}; printf "%s\\n" "${{COMPREPLY[@]}}"'],
                         capture_output=True, text=True, check=True, cwd=path,
                         env={"PATH": f"{path}:/usr/bin:/bin"} if path is not None else None)
    return run.stdout.split()


def fish_completion(fish: str, script: pathlib.Path, line: str) -> list[str]:
    """What fish offers for `line` with `script` sourced."""
    run = subprocess.run([fish, "--no-config", "-c", f"source {script}; complete -C {line!r}"],
                         capture_output=True, text=True, check=True)
    return [entry.split("\t")[0] for entry in run.stdout.splitlines()]


def test_bash_completes_commands_subcommands_and_options(generated: dict[pathlib.Path, str]) -> None:
    script = generated[DATA / "completion" / "drover"]

    def complete(*words: str) -> list[str]:
        return bash_completion(script, "_shtab_drover", *words)

    assert complete("drover", "sub") == ["submit"]
    assert set(complete("drover", "queue", "s")) == {"show", "set", "stop", "start", "suspend"}
    assert complete("drover", "submit", "--arr") == ["--array"]
    assert complete("drover", "completion", "") == ["bash", "zsh", "fish"]


def test_bash_completes_a_job_argument_with_the_ids_drover_status_lists(generated: dict[pathlib.Path, str],
                                                                       tmp_path: pathlib.Path) -> None:
    _fake_status(tmp_path)
    script = generated[DATA / "completion" / "drover"]

    def complete(*words: str) -> list[str]:
        return bash_completion(script, "_shtab_drover", *words, path=tmp_path)

    assert complete("drover", "cancel", "13") == ["130", "131"]
    assert sorted(complete("drover", "logs", "''")) == ["12", "130", "131"]
    assert complete("drover", "status", "--before", "1") == ["12", "130", "131"]
    assert complete("drover", "submit", "--array", "13") == []  # not a job: nothing asked


def test_fish_completes_commands_subcommands_and_options(generated: dict[pathlib.Path, str],
                                                         tmp_path: pathlib.Path) -> None:
    fish = needed("fish")
    script = tmp_path / "drover.fish"
    script.write_text(generated[DATA / "completion" / "drover.fish"])

    def complete(line: str) -> list[str]:
        return fish_completion(fish, script, line)

    assert complete("drover sub") == ["submit"]
    assert set(complete("drover queue s")) == {"show", "set", "stop", "start", "suspend"}
    assert complete("drover submit --arr") == ["--array"]
    assert complete("drover completion ") == ["bash", "fish", "zsh"]


def test_the_zsh_script_parses(generated: dict[pathlib.Path, str], tmp_path: pathlib.Path) -> None:
    zsh = needed("zsh")
    script = tmp_path / "_drover"
    script.write_text(generated[DATA / "completion" / "_drover"])
    subprocess.run([zsh, "-n", str(script)], check=True)


def _fake_status(tmp_path: pathlib.Path) -> None:
    """A `drover` on PATH that prints what `drover status` prints: job ids in its first column."""
    fake = tmp_path / "drover"
    fake.write_text('#!/bin/sh\n[ "$1" = status ] || exit 9\n'
                    'printf "JOB  NAME  USER  STATE\\n12   a     u     RUNNING\\n130  b     u     PENDING\\n'
                    '131  c     u     HELD\\n"\n')
    fake.chmod(0o755)


def test_bash_completes_the_front_ends_options_and_their_jobs(generated: dict[pathlib.Path, str],
                                                            tmp_path: pathlib.Path) -> None:
    script = generated[DATA / "completion" / "front-ends.bash"]
    _fake_status(tmp_path)
    (tmp_path / "job.sh").write_text("true\n")

    def complete(*words: str) -> list[str]:
        return bash_completion(script, f"_drover_front_end {words[0]}", *words, path=tmp_path)

    assert complete("sbatch", "--job-na") == ["--job-name"]
    assert complete("qsub", "-hold_j") == ["-hold_jid", "-hold_jid_ad"]
    assert complete("scancel", "13") == ["130", "131"]
    assert complete("sbatch", "jo") == ["job.sh"]
    registered = subprocess.run(["bash", "--norc", "-c", f"{script}\ncomplete -p sbatch qdel"],
                                capture_output=True, text=True, check=True).stdout
    assert "_drover_front_end sbatch" in registered and "_drover_front_end" in registered.splitlines()[1]


def test_fish_and_zsh_complete_the_front_ends(generated: dict[pathlib.Path, str], tmp_path: pathlib.Path) -> None:
    fish = needed("fish")
    script = tmp_path / "front-ends.fish"
    script.write_text(generated[DATA / "completion" / "front-ends.fish"])

    def complete(line: str) -> list[str]:
        return fish_completion(fish, script, line)

    assert complete("sbatch --job-na") == ["--job-name"]
    assert "-hold_jid" in complete("qsub -hold_j")
    zsh_script = tmp_path / "_drover_front_ends"
    zsh_script.write_text(generated[DATA / "completion" / "_drover_front_ends"])
    subprocess.run([needed("zsh"), "-n", str(zsh_script)], check=True)


def test_drover_completion_prints_the_front_ends_script_on_request() -> None:
    from drover.cli.commands.completion import script

    assert script("bash", front_ends=True) == (DATA / "completion" / "front-ends.bash").read_text()
    assert "_drover_front_end" not in script("bash")
