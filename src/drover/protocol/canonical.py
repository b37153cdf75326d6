"""The canonical encoding of job data: one byte string for one value, whoever encodes it.

A job's spec and an attempt's order are what a cluster's controller will sign and its nodes
verify, so two encoders must agree on every byte: JSON, object keys sorted by code point at every
depth, no whitespace, strings as UTF-8 (never \\u-escaped, except what JSON requires), integers
as digits, floats in their shortest round-trip form. Non-finite floats have no JSON form and are
refused rather than silently written as null.
"""

from __future__ import annotations

import math
from typing import Any

import msgspec

_encoder = msgspec.json.Encoder(order="sorted")


def canonical(value: Any) -> bytes:
    """`value` (builtins, TypedDicts, Structs) in the canonical encoding."""
    _refuse_non_finite(value)
    return _encoder.encode(value)


def _refuse_non_finite(value: Any) -> None:
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{value} has no canonical encoding")
    elif isinstance(value, dict):
        for item in value.values():
            _refuse_non_finite(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _refuse_non_finite(item)
