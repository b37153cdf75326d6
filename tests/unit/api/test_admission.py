"""Which connections the controller takes: per local user or address, all together, and the
connections kept for nodes and admins."""

from __future__ import annotations

from drover.api.admission import Admission, Slot, local_peer, tcp_peer, within_open_files

OWN_UID = 990


def admitted(admission: Admission, peer: object, count: int) -> list[Slot]:
    slots = [admission.admit(peer) for _ in range(count)]  # type: ignore[arg-type]
    assert all(isinstance(slot, Slot) for slot in slots), slots
    return slots  # type: ignore[return-value]


def test_one_user_gets_their_share_and_another_user_is_still_served() -> None:
    admission = Admission(max_connections=100, reserved=10, per_peer=5)
    admitted(admission, local_peer(1001, OWN_UID), 5)
    refusal = admission.admit(local_peer(1001, OWN_UID))
    assert refusal == "it has 5 connections open already (max_connections_per_peer)"
    assert isinstance(admission.admit(local_peer(1002, OWN_UID)), Slot)


def test_a_closed_connection_gives_its_place_back_once() -> None:
    admission = Admission(max_connections=100, reserved=10, per_peer=1)
    [slot] = admitted(admission, local_peer(1001, OWN_UID), 1)
    slot.release()
    slot.release()  # a second release changes nothing
    assert admission.open == 0 and not admission.by_peer
    admitted(admission, local_peer(1001, OWN_UID), 1)


def test_the_reserve_is_kept_for_root_the_controllers_user_and_known_nodes() -> None:
    admission = Admission(max_connections=20, reserved=5, per_peer=100)
    admitted(admission, local_peer(1001, OWN_UID), 15)
    assert "kept for nodes and admins" in str(admission.admit(local_peer(1002, OWN_UID)))
    assert "kept for nodes and admins" in str(admission.admit(tcp_peer("10.0.0.9")))
    admitted(admission, local_peer(0, OWN_UID), 2)
    admitted(admission, local_peer(OWN_UID, OWN_UID), 1)
    node = admission.admit(tcp_peer("10.0.0.2"))
    assert isinstance(node, str)
    admission.node_addresses.add("10.0.0.2")
    admitted(admission, tcp_peer("10.0.0.2"), 2)
    assert "its limit (max_connections)" in str(admission.admit(local_peer(0, OWN_UID)))


def test_a_node_channel_marks_its_address_for_the_reserve() -> None:
    admission = Admission(max_connections=20, reserved=5, per_peer=100)
    [slot] = admitted(admission, tcp_peer("10.0.0.2"), 1)
    slot.is_node()
    assert admission.node_addresses == {"10.0.0.2"}
    [local] = admitted(admission, local_peer(0, OWN_UID), 1)
    local.is_node()  # the local socket has no address: its peers are known by uid
    assert admission.node_addresses == {"10.0.0.2"}


def test_root_and_the_controllers_user_are_not_counted_per_peer() -> None:
    admission = Admission(max_connections=100, reserved=10, per_peer=2)
    admitted(admission, local_peer(0, OWN_UID), 10)
    admitted(admission, local_peer(OWN_UID, OWN_UID), 10)
    assert not admission.by_peer


def test_an_ipv6_host_is_counted_by_its_64_and_a_mapped_ipv4_as_ipv4() -> None:
    assert tcp_peer("2001:db8:1:2::5").key == tcp_peer("2001:db8:1:2:ffff::9").key == "2001:db8:1:2::/64"
    assert tcp_peer("2001:db8:1:3::5").key != tcp_peer("2001:db8:1:2::5").key
    assert tcp_peer("::ffff:10.0.0.2").key == "10.0.0.2"
    admission = Admission(max_connections=100, reserved=10, per_peer=1)
    admitted(admission, tcp_peer("2001:db8:1:2::5"), 1)
    assert isinstance(admission.admit(tcp_peer("2001:db8:1:2::6")), str)


def test_the_limit_stays_under_the_open_files_limit() -> None:
    assert within_open_files(8192, 1_048_576) == 8192
    assert within_open_files(8192, 1024) == 768
    assert within_open_files(8192, 100) == 16


def test_a_max_lowered_by_the_open_files_limit_keeps_half_open_to_all() -> None:
    admission = Admission(max_connections=within_open_files(8192, 1024), reserved=512, per_peer=1000)
    assert (admission.max_connections, admission.reserved) == (768, 384)
    admitted(admission, local_peer(1001, OWN_UID), 384)
    assert isinstance(admission.admit(local_peer(1001, OWN_UID)), str)
