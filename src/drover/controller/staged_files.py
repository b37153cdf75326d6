"""Files that travel through the controller: a job's staged-out files (and its output, when it
ran in a scratch directory on its node), kept as `<files dir>/<job>.<task>.<attempt>/<name>`
until the job is purged. The submitter fetches them with `drover fetch` and `drover logs`."""

from __future__ import annotations

import os

from drover.core.errors import NotFound
from drover.protocol.node_channel import StagedOut


def attempt_dir(files_dir: str, job_id: int, index: int, attempt: int) -> str:
    return os.path.join(files_dir, f"{job_id}.{index}.{attempt}")


def attempt_dirs(files_dir: str, job_id: int) -> list[str]:
    """The directories of every attempt of the job that has files kept."""
    prefix = f"{job_id}."
    try:
        return [entry.path for entry in os.scandir(files_dir) if entry.name.startswith(prefix) and entry.is_dir()]
    except FileNotFoundError:
        return []


def keep(files_dir: str, report: StagedOut) -> None:
    """Write every file durably; rewriting them on a repeated report changes nothing."""
    directory = os.path.join(files_dir, report.attempt)
    for file in report.files:
        path = _inside(directory, file.name)
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        temporary = path + ".part"
        with open(temporary, "wb") as out:
            out.write(file.data)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temporary, file.mode & 0o777)
        os.rename(temporary, path)


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


def _inside(directory: str, name: str) -> str:
    path = os.path.normpath(os.path.join(directory, name))
    if not path.startswith(directory + os.sep):
        raise NotFound(f"{name!r} is not inside the job's files")
    return path
