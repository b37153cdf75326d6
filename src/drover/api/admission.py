"""Which connections the controller takes, decided the moment it accepts one, before a byte of
it is read: no peer may hold more than its share, and a crowd of them cannot take the
descriptors that nodes and admins need.

A peer is a local user, by the uid the kernel gives for the Unix socket (SO_PEERCRED), or an
address on TCP (an IPv6 one by its /64, which one host is usually given whole). Root and the
controller's own user on the local socket are "reserved" peers: they are the cluster's admins
and its local nodes, not counted per peer, and they may use the connections kept back
(`reserved`). On TCP, nothing is known of a peer before its TLS handshake: an address from which
a node's channel was accepted may use the reserve too (a node that reconnects finds room), but
is counted per address like any other. Pure: no sockets here, only counts.
"""

from __future__ import annotations

import ipaddress
from collections import Counter
from dataclasses import dataclass

SLOT = "connection"  # the per-connection ASGI state's key for its Slot (a node's channel marks it)


@dataclass(frozen=True, slots=True)
class Peer:
    key: str  # what is counted: "uid 1001", "10.0.0.2", "2001:db8:1:2::/64"
    reserved: bool = False  # root or the controller's user on the local socket
    address: str = ""  # on TCP: the address itself


def local_peer(uid: int, own_uid: int) -> Peer:
    return Peer(f"uid {uid}", reserved=uid in (0, own_uid))


def tcp_peer(address: str) -> Peer:
    """The peer of a TCP connection from `address`."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return Peer(address, address=address)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if isinstance(ip, ipaddress.IPv6Address):
        return Peer(str(ipaddress.ip_network(f"{ip}/64", strict=False)), address=str(ip))
    return Peer(str(ip), address=str(ip))


class Slot:
    """One admitted connection; `release` once it is closed (a second call does nothing)."""

    __slots__ = ("admission", "peer", "_held")

    def __init__(self, admission: Admission, peer: Peer) -> None:
        self.admission = admission
        self.peer = peer
        self._held = True

    def release(self) -> None:
        if self._held:
            self._held = False
            self.admission._release(self.peer)

    def is_node(self) -> None:
        """A node's channel was accepted on this connection: its address may use the reserve."""
        if self.peer.address:
            self.admission.node_addresses.add(self.peer.address)


class Admission:
    def __init__(self, max_connections: int, reserved: int, per_peer: int) -> None:
        self.max_connections = max_connections
        # Where the open-files limit lowered max_connections, half of them at least stay open to all.
        self.reserved = min(reserved, max_connections // 2)
        self.per_peer = per_peer
        self.open = 0
        self.by_peer: Counter[str] = Counter()
        self.node_addresses: set[str] = set()

    def admit(self, peer: Peer) -> Slot | str:
        """A slot for the connection, or why it is refused (a sentence for the log and the peer)."""
        if self.open >= self.max_connections:
            return f"the controller has {self.open} connections open, its limit (max_connections)"
        reserved = peer.reserved or (bool(peer.address) and peer.address in self.node_addresses)
        if not reserved and self.open >= self.max_connections - self.reserved:
            return (f"the controller has {self.open} connections open; the last {self.reserved} are kept for "
                    "nodes and admins (max_connections, reserved_connections)")
        if not peer.reserved and self.by_peer[peer.key] >= self.per_peer:
            return f"it has {self.per_peer} connections open already (max_connections_per_peer)"
        self.open += 1
        if not peer.reserved:
            self.by_peer[peer.key] += 1
        return Slot(self, peer)

    def _release(self, peer: Peer) -> None:
        self.open -= 1
        if not peer.reserved:
            self.by_peer[peer.key] -= 1
            if self.by_peer[peer.key] <= 0:
                del self.by_peer[peer.key]


SPARE_DESCRIPTORS = 256  # the store, the logs, the reading threads' connections, munged, pipes


def within_open_files(max_connections: int, open_files: int) -> int:
    """`max_connections`, lowered where the process may not open that many descriptors (its
    RLIMIT_NOFILE) and still have the spare ones the controller needs besides connections."""
    return max(16, min(max_connections, open_files - SPARE_DESCRIPTORS))
