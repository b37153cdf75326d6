"""Files that travel through the controller: a job's staged-out files (and its output, when it
ran in a scratch directory on its node), kept as `<files dir>/<job>.<task>.<attempt>/<name>`
until the job is purged. The submitter fetches them with `drover fetch` and `drover logs`.

A node sends big files in chunks (StagedChunk), each written at its offset into
`<files dir>/.partial/<attempt>/<record>` and answered with how much of the file is held, so a
retry (of the node, or after either side restarted) goes on from there; the attempt's StagedOut
then names the whole files, which are checked against their digests and renamed into place.
Nothing of a file is ever under its final name before all of it is there, and an attempt never
holds more than the controller's limit (max_stage_out_bytes), partial files counted."""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil

from drover.core.errors import NotFound
from drover.core.ids import attempt_name, parse_attempt_name
from drover.core.limits import MIB
from drover.protocol.node_channel import ChunkKept, StagedChunk, StagedOut

PARTIAL_DIR = ".partial"  # not a job's name: listings and purges by job never mistake it for one
RECORD_DIGITS = 9  # a record is the file's number within its attempt (shepherd/transfer.py)


class NotKept(Exception):
    """The files of a StagedOut cannot be kept as they are (a chunk is missing or differs): it is
    not acknowledged, and the node's next try sends what the controller lacks."""


def attempt_dir(files_dir: str, job_id: int, index: int, attempt: int) -> str:
    return os.path.join(files_dir, f"{job_id}.{index}.{attempt}")


def attempt_dirs(files_dir: str, job_id: int) -> list[str]:
    """The directories of every attempt of the job that has files kept, or half sent."""
    prefix = f"{job_id}."
    found = []
    for directory in (files_dir, os.path.join(files_dir, PARTIAL_DIR)):
        try:
            found += [entry.path for entry in os.scandir(directory) if entry.name.startswith(prefix) and entry.is_dir()]
        except FileNotFoundError:
            pass
    return found


def keep_chunk(files_dir: str, chunk: StagedChunk, limit_bytes: int) -> ChunkKept:
    """Write one chunk at its offset (again, if it was written before: the same bytes) and say
    how much of its file is held. A file that would take the attempt over `limit_bytes` is
    refused whole and what was kept of it removed."""
    directory = partial_dir(files_dir, chunk.attempt)
    if not chunk.record.isdigit() or len(chunk.record) > RECORD_DIGITS:
        return ChunkKept(chunk.attempt, chunk.record, refused=f"{chunk.record!r} is not a file's record")
    path = os.path.join(directory, chunk.record)
    others = sum(entry.stat().st_size for entry in _entries(directory) if entry.name != chunk.record)
    end = chunk.offset + len(chunk.data)
    if chunk.offset < 0 or end > chunk.size or others + chunk.size > limit_bytes:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        return ChunkKept(chunk.attempt, chunk.record, refused=over_limit(limit_bytes) if end <= chunk.size
                         else f"a chunk past the file's size ({end} > {chunk.size} bytes)")
    os.makedirs(directory, mode=0o700, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        have = os.fstat(fd).st_size
        if chunk.offset <= have:  # else it lost what it had: the node goes on from `have`
            view = memoryview(chunk.data)
            position = chunk.offset
            while view:
                written = os.pwrite(fd, view, position)
                view, position = view[written:], position + written
            have = max(have, end)
    finally:
        os.close(fd)
    return ChunkKept(chunk.attempt, chunk.record, have=have)


def over_limit(limit_bytes: int) -> str:
    amount = f"{limit_bytes // MIB} MiB" if limit_bytes % MIB == 0 else f"{limit_bytes} bytes"
    return (f"over the controller's limit of {amount} staged out per attempt "
            "(max_stage_out_bytes in [controller] of drover.toml); not kept")


def keep(files_dir: str, report: StagedOut) -> None:
    """Keep every file durably under its name; a repeated report changes nothing. Raises
    NotKept when a file sent in chunks is not all there (nothing of it is renamed into place),
    OSError when the disk refuses."""
    partial = partial_dir(files_dir, report.attempt)  # checks the name: only an attempt's becomes a directory
    directory = os.path.join(files_dir, report.attempt)
    for file in report.files:  # small files, carried in the report itself
        path = _inside(directory, file.name)
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        temporary = path + ".part"
        with open(temporary, "wb") as out:
            out.write(file.data)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temporary, file.mode & 0o777)
        os.rename(temporary, path)
    checked = []
    for sent in report.sent:
        path = _inside(directory, sent.name)
        if not sent.record.isdigit() or len(sent.record) > RECORD_DIGITS:
            raise NotKept(f"{sent.name}: {sent.record!r} is not a file's record")
        source = os.path.join(partial, sent.record)
        if not os.path.exists(source) and _digest(path) == (sent.size, sent.sha256):
            continue  # kept by an earlier report whose acknowledgement was lost
        if _digest(source) != (sent.size, sent.sha256):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(source)  # the node's next try sends it again, whole
            raise NotKept(f"{sent.name}: the bytes the controller holds are not the node's; sent again")
        checked.append((source, path, sent.mode))
    for source, path, mode in checked:  # all there: only now does any of them take its name
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        with open(source, "rb") as held:
            os.fsync(held.fileno())
        os.chmod(source, mode & 0o777)
        os.rename(source, path)
    if report.sent:
        _fsync_directory(directory)
    forget_partial(files_dir, report.attempt)


def forget_partial(files_dir: str, attempt: str) -> None:
    """What was sent of an attempt's files and not kept (its stage-out was given up, or is done)."""
    with contextlib.suppress(ValueError):
        shutil.rmtree(partial_dir(files_dir, attempt), ignore_errors=True)


def partial_dir(files_dir: str, attempt: str) -> str:
    """Raises ValueError for anything but an attempt's name, as a node's string becomes a
    directory's name here."""
    if attempt_name(*parse_attempt_name(attempt)) != attempt:
        raise ValueError(f"{attempt!r} is not an attempt's name")
    return os.path.join(files_dir, PARTIAL_DIR, attempt)


def listing(files_dir: str, job_id: int) -> list[tuple[int, int, str, int]]:
    """(task, attempt, name, size) of every file kept for the job."""
    found = []
    prefix = f"{job_id}."
    try:
        entries = sorted(os.scandir(files_dir), key=lambda e: e.name)
    except FileNotFoundError:
        return []
    for entry in entries:
        if not entry.name.startswith(prefix):
            continue
        _, index, attempt = entry.name.split(".")
        for root, _, names in os.walk(entry.path):
            for name in sorted(names):
                path = os.path.join(root, name)
                found.append((int(index), int(attempt), os.path.relpath(path, entry.path), os.path.getsize(path)))
    return found


def read(files_dir: str, job_id: int, index: int, attempt: int, name: str) -> bytes:
    path = _inside(attempt_dir(files_dir, job_id, index, attempt), name)
    try:
        with open(path, "rb") as file:
            return file.read()
    except (FileNotFoundError, IsADirectoryError):
        raise NotFound(f"job {job_id} has no file {name!r} from task {index}, attempt {attempt}") from None


def _entries(directory: str) -> list[os.DirEntry[str]]:
    try:
        return list(os.scandir(directory))
    except FileNotFoundError:
        return []


def _digest(path: str) -> tuple[int, str] | None:
    """(size, sha256) of a file, or None where there is none."""
    try:
        with open(path, "rb") as file:
            digest = hashlib.file_digest(file, "sha256")
            return file.tell(), digest.hexdigest()
    except (FileNotFoundError, IsADirectoryError):
        return None


def _fsync_directory(path: str) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _inside(directory: str, name: str) -> str:
    path = os.path.normpath(os.path.join(directory, name))
    if not path.startswith(directory + os.sep):
        raise NotFound(f"{name!r} is not inside the job's files")
    return path
