"""jobd's options for a job's output, carried out by the shepherd when the job is done (after its
epilogs), as the job's owner: root never opens a path a user chose.

- mailoutput (`--mail-output`): the output files are read, the last MAIL_OUTPUT_LIMIT bytes of
  each, into the spool's `mail_output` record, which the node's cleanup mails with the job's end;
- doneoutput (`--done-output FILE`): the output file (stdout and stderr together) is renamed to
  FILE, so FILE appears whole once the job is done (copied, then removed, across filesystems);
- zapthisjob (`--zap`): "delete script and script output on node after computation finishes":
  the output files are removed. (The script is the spool's copy, which the node removes in any
  case; --zap keeps no spool either.)

Each problem is a line for the attempt's trace: the job's outcome does not depend on them.
"""

from __future__ import annotations

import errno
import os
import stat

from drover.shepherd.config import ShepherdConfig
from drover.shepherd.identity import Identity, acting_as
from drover.shepherd.userfiles import open_output
from drover.spool import layout
from drover.spool.atomic import write_atomically

MAIL_OUTPUT_LIMIT = 256 * 1024  # of each output file: the end of it, where a failure says why


def finish(spool: layout.SpoolDir, config: ShepherdConfig, identity: Identity | None) -> list[str]:
    """Carry out the job's output options; what went wrong, as lines for the trace."""
    if not (config.job["mail_output"] or config.done_output or config.job["zap"]):
        return []
    paths = [path for path in dict.fromkeys([config.stdout, config.stderr]) if path and path != os.devnull]
    problems: list[str] = []
    if config.job["mail_output"]:
        text = b""
        for path in paths:
            with acting_as(identity):
                data = _tail(path, MAIL_OUTPUT_LIMIT, problems)
            if len(paths) > 1:
                text += f"--- {path} ---\n".encode()
            text += data
        try:
            write_atomically(spool.record(layout.MAIL_OUTPUT), text, mode=0o600)
        except OSError as error:
            problems.append(f"cannot keep the output for the mail: {error.strerror}")
    done = config.done_output
    if done and paths:
        with acting_as(identity):
            _move(paths[0], done, problems)
    if config.job["zap"]:
        with acting_as(identity):
            for path in paths:
                try:
                    os.unlink(path)
                except FileNotFoundError:
                    pass
                except OSError as error:
                    problems.append(f"--zap: cannot remove {path}: {error.strerror}")
    return problems


def _tail(path: str, limit: int, problems: list[str]) -> bytes:
    """The end of a regular file, read as the caller (the owner); b"" with a problem otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except FileNotFoundError:
        return b""
    except OSError as error:
        problems.append(f"--mail-output: cannot read {path}: {error.strerror}")
        return b""
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            problems.append(f"--mail-output: {path} is not a regular file")
            return b""
        start = max(0, info.st_size - limit)
        data = os.pread(fd, info.st_size - start, start)
        if start:
            data = f"[the first {start} bytes are left out]\n".encode() + data
        return data
    except OSError as error:
        problems.append(f"--mail-output: cannot read {path}: {error.strerror}")
        return b""
    finally:
        os.close(fd)


def _move(source: str, target: str, problems: list[str]) -> None:
    """Rename the output to --done-output's file (as the caller, the owner); across filesystems,
    copy it into a file opened as an output file is, then remove it."""
    try:
        os.rename(source, target)
        return
    except FileNotFoundError:
        return
    except OSError as error:
        if error.errno != errno.EXDEV:
            problems.append(f"--done-output: cannot move {source} to {target}: {error.strerror}")
            return
    try:
        reader = os.open(source, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
        try:
            writer = open_output(target, append=False)
            try:
                while chunk := os.read(reader, 1 << 20):
                    view = memoryview(chunk)
                    while view:
                        view = view[os.write(writer, view):]
            finally:
                os.close(writer)
        finally:
            os.close(reader)
        os.unlink(source)
    except OSError as error:
        problems.append(f"--done-output: cannot copy {source} to {target}: {error.strerror}")
