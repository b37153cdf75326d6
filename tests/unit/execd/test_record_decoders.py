"""The node's cleanup reads an attempt's records in its threads while the event loop reads them
too. msgspec works out how to decode a type on the type's first use, and two threads doing that
at once crashed the execd (a segmentation fault in msgspec.convert). attempt_records makes its
decoders as it is imported, so no thread is first."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.helpers.attempt_config import attempt_config

from drover.execd import attempt_records

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


def test_every_record_type_it_reads_has_a_decoder_made_at_import() -> None:
    read = {"EndRecord", "Usage", "AttemptConfig", "ContainmentRecord", "StagedOutRecord", "CleanupProgress",
            "FinalProgress"}
    made = {getattr(kind, "__name__", "") for kind in attempt_records.DECODERS}
    assert read <= made
    for kind in attempt_records.DECODERS:
        if isinstance(kind, type) and kind is not dict:
            assert "__msgspec_cache__" in vars(kind), f"{kind.__name__}'s decoding is worked out on first use"


def test_four_threads_reading_a_config_for_the_first_time_at_once_do_not_crash_the_process(tmp_path: Path) -> None:
    spool = tmp_path / "1.0.1"
    spool.mkdir()
    (spool / "config").write_text(json.dumps(attempt_config(str(tmp_path), "1.0.1")))
    # Before the decoders were made at import, about one process in seven died here.
    for run in range(20):
        done = subprocess.run([sys.executable, "-c", FIRST_READS_AT_ONCE, str(tmp_path)], capture_output=True,
                              text=True, timeout=60)
        assert done.returncode == 0, f"run {run}: exit {done.returncode}\n{done.stderr[-2000:]}"
