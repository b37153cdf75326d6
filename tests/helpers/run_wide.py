"""What one test run shares between its processes: with pytest-xdist (`-n N`) the tests run in
N worker processes, but the machine-wide things they use are made once per run and removed by
the process that started it, after every worker is done.

- a directory for the run (its path in DROVER_TEST_RUN_DIR, set before the workers start, so
  they inherit it);
- Drover installed for all users (tests/helpers/system_install.py): the first worker to need it
  installs it, under a lock, and the others reuse it; an install that cannot be made is tried
  once, and every worker skips with its reason;
- the service user `drover` the install makes: a worker never removes it (another worker's
  shared cluster runs as it), the run's end does;
- directories every user may enter (tests/helpers/user_tools.py keeps the workflow tools' copies
  in one), made by the first worker to ask for them and removed when the run ends;
- the tmpfs spools personal clusters leave (`drover down` leaves them for the jobs that go on
  running): those the run made go when it ends.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path

from tests.helpers import system_install as installer
from tests.helpers.cgroups_left import remove_cgroups_of
from tests.helpers.system_install import InstallUnavailable, SystemInstall

RUN_DIR_VARIABLE = "DROVER_TEST_RUN_DIR"
_INSTALL_RECORD = "system-install.json"
_SPOOLS_BEFORE = "spools-before.json"
_SHARED_SUFFIX = ".shared-directory"


def start() -> None:
    """In the process that starts the run: make the run's directory, note the spools there are."""
    run_dir = Path(tempfile.mkdtemp(prefix="drover-run-"))
    os.environ[RUN_DIR_VARIABLE] = str(run_dir)
    base = _spool_base()
    before = sorted(os.listdir(base)) if base is not None and os.path.isdir(base) else []
    (run_dir / _SPOOLS_BEFORE).write_text(json.dumps(before))


def finish() -> None:
    """In the process that started the run, once every worker is done: remove what it made."""
    run_dir = _run_dir()
    if run_dir is None:
        return
    record = run_dir / _INSTALL_RECORD
    if record.exists():
        made = json.loads(record.read_text())
        if "prefix" in made:
            _from_record(made).remove()
    remove_shared_directories(run_dir)
    base = _spool_base()
    before = set(json.loads((run_dir / _SPOOLS_BEFORE).read_text())) if (run_dir / _SPOOLS_BEFORE).exists() else set()
    if base is not None and os.path.isdir(base):
        for name in set(os.listdir(base)) - before:
            if not _node_listens(os.path.join(base, name)):  # another test run's cluster, still up
                shutil.rmtree(os.path.join(base, name), ignore_errors=True)
    shutil.rmtree(run_dir, ignore_errors=True)
    os.environ.pop(RUN_DIR_VARIABLE, None)


def remove_own_cgroups(tag: str) -> None:
    """rmdir the empty cgroups drover-<tag> (and below) that this process's shepherds made,
    in every hierarchy (v2, and each v1 controller's)."""
    remove_cgroups_of(tag)


def system_install() -> tuple[SystemInstall, bool]:
    """The run's install for all users, and whether this call made it. Raises
    InstallUnavailable (the same reason in every worker) when it cannot be made."""
    run_dir = _run_dir()
    if run_dir is None:  # not started by tests/conftest.py (a bare import): an install of its own
        return installer.install(), True
    record = run_dir / _INSTALL_RECORD
    with _locked(run_dir / "system-install.lock"):
        if record.exists():
            made = json.loads(record.read_text())
            if "unavailable" in made:
                raise InstallUnavailable(made["unavailable"])
            return _from_record(made), False
        try:
            installed = installer.install()
        except InstallUnavailable as why:
            record.write_text(json.dumps({"unavailable": str(why)}))
            raise
        record.write_text(json.dumps({"root": str(installed.root), "prefix": str(installed.prefix),
                                      "bindir": str(installed.bindir), "seconds": installed.seconds,
                                      "made_service_user": installed.made_service_user}))
        return installed, True


def shared_directory(name: str) -> Path | None:
    """The run's directory `name` (mode 0755, root's, under /tmp), made by the first process that
    asks and removed at the run's end; None outside a run tests/conftest.py started."""
    run_dir = _run_dir()
    if run_dir is None:
        return None
    noted = run_dir / f"{name}{_SHARED_SUFFIX}"
    with _locked(run_dir / f"{name}.lock"):
        if noted.exists():
            return Path(noted.read_text())
        made = Path(tempfile.mkdtemp(prefix=f"drover-{name}-", dir="/tmp"))
        os.chmod(made, 0o755)
        noted.write_text(str(made))
        return made


def remove_shared_directories(run_dir: Path) -> None:
    """Remove the run's directories `shared_directory` made."""
    for noted in run_dir.glob(f"*{_SHARED_SUFFIX}"):
        shutil.rmtree(noted.read_text(), ignore_errors=True)
        noted.unlink()


def _from_record(made: dict[str, object]) -> SystemInstall:
    return SystemInstall(Path(str(made["root"])), Path(str(made["prefix"])), Path(str(made["bindir"])),
                         float(str(made["seconds"])), bool(made["made_service_user"]))


def _run_dir() -> Path | None:
    value = os.environ.get(RUN_DIR_VARIABLE)
    return Path(value) if value and os.path.isdir(value) else None


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with open(path, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _spool_base() -> str | None:
    """Where personal clusters keep their spools on tmpfs; None where they keep them in their
    state directories (no tmpfs here)."""
    from drover.config import Paths, default_spool

    base = os.path.dirname(default_spool(Paths(tempfile.gettempdir())))
    return base if os.path.basename(base).startswith("drover") else None


def _node_listens(spool: str) -> bool:
    """Whether a live node daemon has the spool: its shepherds' notification socket takes a
    datagram (every cluster this run started has stopped by now)."""
    from drover.spool.layout import NOTIFY_SOCKET

    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(os.path.join(spool, NOTIFY_SOCKET))
        except OSError:
            return False
    return True
