"""HTCondor's file transfer, as the shepherd does it (seeds/htcondor-starter-what-happens-when-a-
job-exits.txt: the input transfer before the job, the output transfer after it). Every file of
the job's is opened as its owner, beneath its working directory, without following links
(userfiles): the shepherd is root on a shared node, and root never opens a path a user chose.
What goes back is copied into the attempt's spool, where the node's cleanup sends it on."""

from __future__ import annotations

import base64
import os
import sys

from drover.records import RefusedFile, StagedFile, StagedOutRecord
from drover.shepherd.config import ShepherdConfig
from drover.shepherd.failure import StartFailure
from drover.shepherd.identity import Identity, acting_as
from drover.shepherd.userfiles import matching, open_regular_for_reading, write_beneath
from drover.spool import layout
from drover.spool.atomic import read_json, write_json


def stage_in(files: list[tuple[str, int, bytes]], workdir_fd: int) -> None:
    """HTCondor's input transfer, as the owner (the caller acts as the owner): each file goes
    beneath the working directory, replaced whole, never written through a link."""
    for name, mode, data in files:
        try:
            write_beneath(workdir_fd, name, data, mode & 0o777)
        except OSError as error:
            raise StartFailure(f"cannot stage in {name}: {error.strerror or error}") from None


def staged_in_files(spool: layout.SpoolDir) -> list[tuple[str, int, bytes]]:
    """The execd's private `stage_in` record, decoded: (name, mode, data) per file."""
    record = read_json(spool.record(layout.STAGE_IN)) or []
    return [(f["name"], int(f["mode"]), base64.b64decode(f["data"])) for f in record]


def stage_out(spool: layout.SpoolDir, config: ShepherdConfig, workdir_fd: int, identity: Identity | None) -> None:
    """HTCondor's output transfer: the files matching the job's stage-out patterns (and its
    output files, when it ran in a scratch directory) are opened as the owner, beneath the
    working directory, regular files only, and copied into the spool's `staged_out.d/`, up to the
    attempt's limit. The `staged_out` record lists what was copied, skipped (over the limit)
    and refused (a link, a FIFO...)."""
    patterns = list(config.job["stage_out"])
    outputs = [config.stdout, config.stderr] if config.scratch else []
    scratch = [os.path.relpath(path, config.workdir) for path in outputs if path]
    if not patterns and not scratch:
        return
    limit = config.stage_out_limit_bytes
    with acting_as(identity):
        names = list(dict.fromkeys(matching(workdir_fd, patterns) + scratch))
    directory = spool.record(layout.STAGED_OUT_DIR)
    os.makedirs(directory, mode=0o700, exist_ok=True)
    copied: list[StagedFile] = []
    skipped: list[str] = []
    refused: list[RefusedFile] = []
    total = 0
    for name in names:
        try:
            with acting_as(identity):
                source = open_regular_for_reading(workdir_fd, name)
        except (FileNotFoundError, IsADirectoryError):
            continue  # gone since it matched, or a directory: nothing to copy
        except OSError as error:  # a link, a FIFO, a device, or not the owner's to read
            refused.append({"name": name, "reason": str(error.strerror)})
            continue
        try:
            info = os.fstat(source)
            if total + info.st_size > limit:
                skipped.append(name)
                continue
            record = str(len(copied))
            try:
                size = _copy_into(source, os.path.join(directory, record), limit - total)
            except OSError as error:  # the node's spool is full: name the file, keep the outcome
                _remove_quietly(os.path.join(directory, record))
                refused.append({"name": name, "reason": f"the node's spool: {error.strerror}"})
                continue
            copied.append({"name": name, "record": record, "mode": info.st_mode & 0o777, "size": size})
            total += size
        finally:
            os.close(source)
    collected: StagedOutRecord = {"files": copied, "skipped": skipped, "refused": refused}
    try:
        write_json(spool.record(layout.STAGED_OUT), collected)
    except OSError as error:  # the outcome matters more than the output files: say so, go on
        print(f"drover shepherd {spool.name}: cannot record the staged-out files: {error.strerror}",
              file=sys.stderr, flush=True)


def _remove_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _copy_into(source: int, path: str, at_most: int) -> int:
    """Copy an open file into a new spool file (the shepherd's own rights); its size, at most
    `at_most` bytes (the file may grow while it is read)."""
    target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    copied = 0
    try:
        while copied < at_most:
            chunk = os.read(source, min(1 << 20, at_most - copied))
            if not chunk:
                break
            view = memoryview(chunk)
            while view:
                view = view[os.write(target, view):]
            copied += len(chunk)
    finally:
        os.close(target)
    return copied
