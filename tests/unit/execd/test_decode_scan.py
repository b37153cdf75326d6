"""The scan that keeps each daemon's typed decodes in its Primed decoders
(tests/unit/execd/test_record_decoders.py) finds the raw decoding API under any name a module
gives it: a module or function imported under another name, a name bound to it, a chain of such
names, the type given by keyword; and reports the API where it cannot follow it. Each sample is
a small module's source, as a daemon's module might be written."""

from __future__ import annotations

import textwrap

import pytest
from tests.helpers.decode_scan import scan


def loose(source: str) -> list[str]:
    return [str(finding) for finding in scan(textwrap.dedent(source)) if finding.loose]


TYPED_IN_A_FUNCTION = {
    "the plain spelling": """
        import msgspec
        def read(data, kind):
            return msgspec.json.decode(data, type=kind)
        """,
    "a format imported from msgspec under another name": """
        from msgspec import msgpack as m
        def read(data, kind):
            return m.decode(data, type=kind)
        """,
    "a format module imported under another name": """
        import msgspec.msgpack as mp
        def read(data, kind):
            return mp.Decoder(kind).decode(data)
        """,
    "msgspec imported under another name": """
        import msgspec as m
        def read(value, kind):
            return m.convert(value, type=kind)
        """,
    "the Decoder class bound to a name at import": """
        import msgspec
        dec = msgspec.msgpack.Decoder
        def read(data, kind):
            return dec(kind).decode(data)
        """,
    "the Decoder class bound to a name in the function": """
        import msgspec
        def read(data, kind):
            dec = msgspec.json.Decoder
            return dec(kind).decode(data)
        """,
    "convert imported by name": """
        from msgspec import convert
        def read(value, kind):
            return convert(value, type=kind)
        """,
    "convert imported under another name": """
        from msgspec import convert as shape
        def read(value, kind):
            return shape(value, kind)
        """,
    "decode imported from a format under another name": """
        from msgspec.json import decode as d
        def read(data, kind):
            return d(data, type=kind)
        """,
    "a chain of names": """
        import msgspec
        fmt = msgspec.json
        def read(data, kind):
            loads = fmt.decode
            again = loads
            return again(data, type=kind)
        """,
    "msgspec imported in the function": """
        def read(data, kind):
            import msgspec.json as j
            return j.decode(data, type=kind)
        """,
    "a Decoder given its type by keyword": """
        import msgspec
        def read(data, kind):
            return msgspec.json.Decoder(type=kind).decode(data)
        """,
    "a decode given its options spread": """
        import msgspec
        def read(data, options):
            return msgspec.json.decode(data, **options)
        """,
    "a subscripted Decoder": """
        from typing import Any
        import msgspec
        def read(data, kind):
            return msgspec.json.Decoder[Any](kind).decode(data)
        """,
    "a lambda": """
        import msgspec
        read = lambda data, kind: msgspec.json.decode(data, type=kind)
        """,
    "a method of a class": """
        from msgspec import json as codec
        class Reader:
            def read(self, data, kind):
                return codec.decode(data, type=kind)
        """,
}


@pytest.mark.parametrize("source", TYPED_IN_A_FUNCTION.values(), ids=TYPED_IN_A_FUNCTION.keys())
def test_a_typed_decode_in_a_function_is_found_under_any_name(source: str) -> None:
    (found,) = loose(source)
    assert "typed msgspec." in found and "(in a function)" in found, found


ESCAPES = {
    "getattr on the module": """
        import msgspec
        def read(data, kind):
            return getattr(msgspec.json, "decode")(data, type=kind)
        """,
    "getattr on msgspec itself": """
        import msgspec as m
        def read(value, kind):
            return getattr(m, "convert")(value, type=kind)
        """,
    "partial": """
        import functools, msgspec
        def reader(kind):
            return functools.partial(msgspec.json.decode, type=kind)
        """,
    "an attribute": """
        import msgspec
        class Reader:
            def __init__(self):
                self.make = msgspec.msgpack.Decoder
        """,
    "a table at import": """
        import msgspec
        READERS = {"json": msgspec.json.decode, "msgpack": msgspec.msgpack.decode}
        """,
    "a star import": """
        from msgspec.json import *
        """,
    "import_module": """
        import importlib
        def read(data, kind):
            return importlib.import_module("msgspec.json").decode(data, type=kind)
        """,
    "__import__": """
        def read(value, kind):
            return __import__("msgspec").convert(value, type=kind)
        """,
}


@pytest.mark.parametrize("source", ESCAPES.values(), ids=ESCAPES.keys())
def test_the_api_where_the_scan_cannot_follow_it_is_reported(source: str) -> None:
    found = loose(source)
    assert any("escapes" in finding for finding in found), found


NOTHING_LOOSE = {
    "typed decoders made at import": """
        import msgspec
        from msgspec import json as j
        orders = msgspec.json.Decoder(list[int])
        replies = j.Decoder(type=dict[str, int])
        """,
    "an untyped decode in a function": """
        import msgspec
        from msgspec.json import decode
        def read(data):
            return msgspec.json.decode(data), decode(data, strict=False), msgspec.json.Decoder().decode(data)
        """,
    "a decoder made at import used in a function": """
        import msgspec
        orders = msgspec.json.Decoder(list[int])
        def read(data):
            return orders.decode(data)
        """,
    "the rest of msgspec": """
        import msgspec
        class Order(msgspec.Struct, tag="order"):
            attempt: str
        def write(order) -> bytes:
            try:
                return msgspec.json.encode(order)
            except msgspec.EncodeError:
                raise
        def holds(decoder: msgspec.json.Decoder[Order]) -> None:
            pass
        """,
    "a name of the standard library's": """
        import json
        def read(data, convert):
            return json.loads(data), convert(data, type=int)
        """,
}


@pytest.mark.parametrize("source", NOTHING_LOOSE.values(), ids=NOTHING_LOOSE.keys())
def test_what_works_out_no_type_on_a_thread_is_not_reported(source: str) -> None:
    assert loose(source) == []
