"""Several controllers' addresses: the client keeps the one in use, goes where a standby says the
active controller is (if it may reach it), else to the next; a standby's refusal is told from
any other 503."""

from __future__ import annotations

import json

import pytest

from drover.client.addresses import Addresses, split, standby_answer
from drover.config_schema import ExecdSection


def test_addresses_are_split_on_commas_and_an_empty_list_is_refused() -> None:
    assert split(" /a.sock, https://b:7443 ,") == ["/a.sock", "https://b:7443"]
    assert split(["https://a:1"]) == ["https://a:1"]
    with pytest.raises(ValueError):
        split(" , ")


def test_a_standby_sends_the_client_to_the_active_one_or_the_next() -> None:
    addresses = Addresses("https://a:1,https://b:1,https://c:1")
    assert addresses.follow("https://c:1") and addresses.current == "https://c:1"
    assert addresses.follow(None) and addresses.current == "https://a:1"  # no one named: the next, round
    assert addresses.follow("https://elsewhere:1") and addresses.current == "https://b:1"  # not reachable: next
    assert addresses.order() == [1, 2, 0]


def test_a_client_with_the_clusters_ca_follows_an_active_controller_it_was_not_given() -> None:
    addresses = Addresses("https://a:1", may_reach=True)
    assert addresses.follow("https://b:1") and addresses.all == ["https://a:1", "https://b:1"]
    alone = Addresses("/a.sock")
    assert not alone.follow("https://b:1") and alone.current == "/a.sock"  # nowhere else to go


def test_only_a_standbys_refusal_is_one() -> None:
    reply = {"error": "the controller at B is a standby; the active controller is at A", "kind": "standby",
             "active": "https://a:1"}
    assert standby_answer(503, json.dumps(reply).encode()) == (True, "https://a:1")
    assert standby_answer(503, json.dumps({**reply, "active": None}).encode()) == (True, None)
    assert standby_answer(503, b'{"error": "the job store ...", "kind": "unavailable"}') == (False, None)
    assert standby_answer(200, json.dumps(reply).encode()) == (False, None)
    assert standby_answer(503, b"<html>") == (False, None)


def test_a_nodes_controller_is_one_address_or_a_list() -> None:
    assert ExecdSection().controllers() == []
    assert ExecdSection(controller="https://a:1").controllers() == ["https://a:1"]
    assert ExecdSection(controller=["https://a:1", "https://b:1"]).controllers() == ["https://a:1", "https://b:1"]
