"""Every type the node daemon decodes or converts on a thread, worked out as this module is
imported (protocol/primed.py says why): the records of an attempt's spool, which the cleanup's
threads read while the event loop reads them too (execd/attempt_records.py). The orders the loop
decodes have their decoder made at import (protocol/node_channel.py)."""

from __future__ import annotations

from typing import Any, NotRequired, TypedDict

from drover.protocol.primed import Primed
from drover.records import (
    AttemptConfig,
    CleanupProgress,
    ContainmentRecord,
    EndRecord,
    StagedOutRecord,
    Usage,
)


class FinalProgress(TypedDict):
    """What is read of the final record to resume a cleanup (it may be large: its config)."""

    cleanup: NotRequired[CleanupProgress]


RECORDS = Primed(EndRecord, Usage, AttemptConfig, ContainmentRecord, StagedOutRecord, CleanupProgress, FinalProgress,
                 dict[str, Any])
