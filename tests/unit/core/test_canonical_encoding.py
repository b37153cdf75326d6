"""One value, one byte string: what a signature over a job's spec or an attempt's order covers."""

from __future__ import annotations

import json

import msgspec
import pytest
from tests.helpers.attempt_config import attempt_config

from drover.protocol.canonical import canonical
from drover.records import AttemptOrder


def test_key_order_and_insertion_history_do_not_change_the_bytes() -> None:
    a = {"b": 1, "a": {"d": 1.5, "c": [3, "é"]}}
    b = {"a": {"c": [3, "é"], "d": 1.5}, "b": 1}
    assert canonical(a) == canonical(b) == '{"a":{"c":[3,"é"],"d":1.5},"b":1}'.encode()


def test_an_attempt_order_round_trips_through_its_type_byte_for_byte() -> None:
    order = attempt_config("/home/ann/run", "12.3.1", environment={"LANG": "de_DE.UTF-8", "NOTE": "Grüße\n\t\""})
    encoded = canonical(order)
    decoded = msgspec.json.decode(encoded, type=AttemptOrder)  # the node's decoder, fields it does not know ignored
    assert canonical({**order, **decoded}) == encoded
    assert json.loads(encoded) == order  # plain JSON that any reader can verify


def test_numbers_take_their_shortest_exact_form() -> None:
    assert canonical([0.1, 1e21, 1.0, -0.0, 10**20]) == b"[0.1,1e21,1.0,-0.0,100000000000000000000]"


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), {"a": [float("-inf")]}])
def test_values_without_a_json_form_are_refused_not_written_as_null(bad: object) -> None:
    with pytest.raises(ValueError, match="no canonical encoding"):
        canonical(bad)
