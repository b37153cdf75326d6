"""The node's cleanup reads an attempt's records in its threads while the event loop reads them
too. msgspec works out how to decode a type on the type's first use, and two threads doing that
at once crashed the execd (a segmentation fault in msgspec.convert). Each daemon primes every type
its threads decode in one module (execd/decoders.py, controller/decoders.py), as it is imported,
so no thread is first."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from tests.helpers.attempt_config import attempt_config
from tests.helpers.decode_scan import scan

import drover
from drover.controller import decoders as controller_decoders
from drover.controller.reads import views
from drover.core.job import Attempt
from drover.execd import attempt_records, decoders
from drover.protocol.api import Usage
from drover.records import FinalRecord

FIRST_READS_AT_ONCE = textwrap.dedent("""
    import sys, threading
    sys.setswitchinterval(1e-6)  # the threads change places as often as the interpreter can
    from drover.execd import attempt_records
    from drover.spool import layout

    spool = layout.SpoolDir(sys.argv[1], "1.0.1")
    together = threading.Barrier(4)

    def read():
        together.wait()
        for _ in range(3):
            assert attempt_records.config(spool) is not None

    threads = [threading.Thread(target=read) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
""")


def test_every_record_type_it_reads_is_primed_at_import_and_no_other_is_worked_out_on_a_thread() -> None:
    """msgspec has no public way to ask whether a type was worked out already (only the private
    attribute it keeps on the type), so what is held here is that the records are read through
    the one Primed of the node daemon, made at import, which refuses a type it was not given."""
    read = {"EndRecord", "Usage", "AttemptConfig", "ContainmentRecord", "StagedOutRecord", "CleanupProgress",
            "FinalProgress"}
    assert attempt_records.RECORDS is decoders.RECORDS
    assert read <= {getattr(kind, "__name__", "") for kind in decoders.RECORDS.kinds}
    with pytest.raises(KeyError, match="not among the types"):
        decoders.RECORDS.decode(b"{}", FinalRecord)
    with pytest.raises(KeyError, match="not among the types"):
        decoders.RECORDS.convert({}, FinalRecord)


# Where a daemon may decode or convert to a type other than through its Primed: on its event
# loop alone, which is one thread (the API's request bodies; each is a type the threads never
# decode). Everywhere else in the daemons' packages, a call outside a function runs at import.
ON_THE_LOOP_ONLY = {"api/http.py"}
DAEMONS = ("execd", "controller", "store", "api", "protocol")


def test_no_daemon_works_out_a_type_on_a_thread_outside_its_primed_decoders() -> None:
    root = Path(drover.__file__).parent
    loose = []
    for package in DAEMONS:
        for path in sorted((root / package).rglob("*.py")):
            where = str(path.relative_to(root))
            if where in ON_THE_LOOP_ONLY or where == "protocol/primed.py":
                continue
            loose += [f"{where}:{finding}" for finding in scan(path.read_text()) if finding.loose]
    assert not loose, f"decoded or converted to a type outside the daemon's Primed (protocol/primed.py): {loose}"


def test_the_controllers_reading_threads_convert_through_its_primed_decoders() -> None:
    assert Usage in controller_decoders.READS.kinds
    assert views.usage_of(Attempt(1, 0, 1, "n1", (), 0.0, usage={  # type: ignore[typeddict-unknown-key]
        "user_cpu_s": 1.0, "sys_cpu_s": 0.0, "max_rss_kib": 1, "minor_faults": 0, "major_faults": 0,
        "voluntary_switches": 0, "involuntary_switches": 0, "wall_s": 1.0, "started_at": 1.0, "ended_at": 2.0,
        "newer_field": 1})) is not None


def test_four_threads_reading_a_config_for_the_first_time_at_once_do_not_crash_the_process(tmp_path: Path) -> None:
    spool = tmp_path / "1.0.1"
    spool.mkdir()
    (spool / "config").write_text(json.dumps(attempt_config(str(tmp_path), "1.0.1")))
    # Before the decoders were made at import, about one process in seven died here.
    for run in range(20):
        done = subprocess.run([sys.executable, "-c", FIRST_READS_AT_ONCE, str(tmp_path)], capture_output=True,
                              text=True, timeout=60)
        assert done.returncode == 0, f"run {run}: exit {done.returncode}\n{done.stderr[-2000:]}"
