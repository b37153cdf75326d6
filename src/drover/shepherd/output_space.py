"""Whether a job's output files had room: a job whose stdout or stderr is on a filesystem that
filled up loses what it wrote after that (its writes fail with ENOSPC, and most programs go on
or die without a word anywhere the owner looks). The shepherd looks at each output file's
filesystem once the job and its epilogs are done, through the descriptor the job wrote to, and
says so in the attempt's record, which `drover show` prints. Standard library only."""

from __future__ import annotations

import os
import stat

from drover.shepherd.config import ShepherdConfig


def full_outputs(config: ShepherdConfig, stdout: int, stderr: int, uid: int) -> list[str]:
    """A note for each output file whose filesystem has no block left for the job's owner (root
    may use the blocks the filesystem keeps back; anyone else only the available ones)."""
    notes = []
    files = [(config.stdout, stdout)] + ([(config.stderr, stderr)] if config.stderr else [])
    for path, fd in files:
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):  # /dev/null takes everything
                continue
            space = os.fstatvfs(fd)
        except OSError:
            continue
        free = space.f_bfree if uid == 0 else space.f_bavail
        if free == 0:
            notes.append(f"the output file {path} could not be written: No space left on device "
                         "(its filesystem was full when the job ended)")
    return notes
