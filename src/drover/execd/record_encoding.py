"""How the node daemon encodes the JSON records it writes to an attempt's spool (its config, the
final record, the output index's note): msgspec's encoder, which takes a sixth of the standard
library's time for a job's config, for the same JSON values (text as UTF-8 rather than escaped,
a float that is not a number as null rather than NaN, which is not JSON: the standard
library's reader takes it, stricter ones do not). The shepherd,
which imports only the standard library, writes its own with the standard library's
(spool/atomic.py `write_json`)."""

from __future__ import annotations

import json
from typing import Any

import msgspec

_ENCODER = msgspec.json.Encoder()


def encoded(record: Any) -> bytes:
    """`record` as compact JSON, UTF-8. What msgspec cannot encode (a key of a type JSON has no
    name for) is left to the standard library, which writes it or raises as it always did."""
    try:
        return _ENCODER.encode(record)
    except (TypeError, ValueError, OverflowError, msgspec.EncodeError):
        return json.dumps(record, separators=(",", ":")).encode()
