"""Decoders made before a daemon's threads start, for every type its threads decode or convert.

msgspec works out how to decode a type on the type's first use and keeps that on the type; two
threads using a type for the first time at once can crash the process (a segmentation fault in
msgspec.convert, seen in the execd when a cleanup thread and the event loop first read an
attempt's config at the same moment). So each daemon names, in one module, the types its threads
decode or convert (execd/decoders.py, controller/decoders.py), and a `Primed` made as that module
is imported does the work for all of them at once, on the importing thread. Its threads then
decode and convert through it: a type it was not given is refused at once (KeyError), never
worked out on a thread (tests/unit/execd/test_record_decoders.py)."""

from __future__ import annotations

from typing import Any, TypeVar, cast

import msgspec

T = TypeVar("T")


class Primed:
    def __init__(self, *kinds: object) -> None:
        # A decoder made for a type works out the type, and every type within it, for good.
        self._decoders: dict[object, msgspec.json.Decoder[Any]] = {kind: msgspec.json.Decoder(kind) for kind in kinds}

    @property
    def kinds(self) -> frozenset[object]:
        return frozenset(self._decoders)

    def decode(self, data: bytes | str, kind: type[T]) -> T:
        """`data`, JSON, as a `kind`; raises msgspec.DecodeError if it is not one."""
        return cast(T, self._decoder(kind).decode(data))

    def convert(self, value: object, kind: type[T]) -> T:
        """`value` (decoded already, or built) as a `kind`; raises msgspec.ValidationError."""
        self._decoder(kind)
        return msgspec.convert(value, type=kind)

    def _decoder(self, kind: object) -> msgspec.json.Decoder[Any]:
        decoder = self._decoders.get(kind)
        if decoder is None:
            raise KeyError(f"{kind!r} is not among the types this daemon primes for its threads: add it to "
                           "the daemon's decoders module")
        return decoder
