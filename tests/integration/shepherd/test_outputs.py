"""jobd's --mail-output, --done-output and --zap, carried out by the shepherd as the job's owner
(shepherd/outputs.py): a root shepherd never reads, moves or removes a user's path as root."""

from __future__ import annotations

import pwd
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.helpers.shared_dirs import directory_in_tmp
from tests.helpers.spools import exit_status
from tests.integration.shepherd.test_identity import spool_for


@pytest.fixture
def root_dir() -> Iterator[Path]:
    """A spool root the owner can traverse, and a file of root's only, the owner may not read."""
    with directory_in_tmp("drv-spool-", 0o711) as root:
        yield root


def run(spool: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "drover.shepherd", str(spool)], timeout=60)
    assert done.returncode == 0, (spool / "error").read_text()


def test_jobd_mailoutput_and_zap_act_as_the_owner_never_as_root(root_dir: Path, users: tuple[str, str]) -> None:
    """The job's epilog (as its owner) swaps its output file for a link to a file only root may
    read: the mail's copy is read as the owner, so it holds none of that file, and --zap removes
    the link, not the file."""
    alice, _ = users
    secret = root_dir / "secret"
    secret.write_text("root's secret\n")
    secret.chmod(0o600)
    out = Path(f"/tmp/{alice}-work/out.txt")
    spool = spool_for(root_dir, alice, "echo the output\n", mail_output=True, zap=True,
                      epilog=f"rm -f {out}; ln -s {secret} {out}")
    run(spool)
    assert exit_status(spool)["exit_code"] == 0
    assert (spool / "mail_output").read_bytes() == b""
    assert f"--mail-output: cannot read {out}: Permission denied" in (spool / "trace").read_text()
    assert not out.is_symlink() and not out.exists()
    assert secret.read_text() == "root's secret\n"


def test_jobd_mailoutput_copies_the_owners_output_into_the_spool(root_dir: Path, users: tuple[str, str]) -> None:
    alice, _ = users
    spool = spool_for(root_dir, alice, "echo out; echo err >&2\n", mail_output=True)
    run(spool)
    assert (spool / "mail_output").read_text() == "out\nerr\n"
    assert Path(f"/tmp/{alice}-work/out.txt").read_text() == "out\nerr\n"  # kept without --zap


def test_jobd_doneoutput_is_moved_as_the_owner(root_dir: Path, users: tuple[str, str]) -> None:
    """--done-output into a directory of root's the owner may not write: not moved, and said."""
    alice, _ = users
    closed = root_dir / "closed"
    closed.mkdir(mode=0o755)
    spool = spool_for(root_dir, alice, "echo out\n", done_output=str(closed / "done.txt"))
    run(spool)
    assert not (closed / "done.txt").exists()
    assert Path(f"/tmp/{alice}-work/out.txt").read_text() == "out\n"
    assert "--done-output: cannot move" in (spool / "trace").read_text()
    (root_dir / "again").mkdir(mode=0o711)
    spool = spool_for(root_dir / "again", alice, "echo out\n", done_output=f"/tmp/{alice}-work/done.txt")
    run(spool)
    assert Path(f"/tmp/{alice}-work/done.txt").read_text() == "out\n"
    assert Path(f"/tmp/{alice}-work/done.txt").stat().st_uid == pwd.getpwnam(alice).pw_uid
